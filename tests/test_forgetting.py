"""Forgetting (metrics.probe, adaptsim/metrics/forgetting.py): a general-domain probe scored with θ0, θ_i every N
segments and the final θ; a model that never changes forgets nothing, one that adapts does move; a resumed run's
probe record is the uninterrupted run's; `adaptsim forgetting` reports it."""

from __future__ import annotations

import json
import re

import pytest
from test_resume import cut, last_error, run


@pytest.fixture
def probe(tmp_path, tiny_corpus):
    """A probe set of 4 pairs the stream does not hold (the tiny corpus's last ones)."""
    pairs = tiny_corpus[-4:]
    for side, lang in enumerate(("en", "de")):
        (tmp_path / f"probe.{lang}").write_text("".join(p[side] + "\n" for p in pairs))
    return tmp_path / "probe"


@pytest.fixture
def stream(tmp_path, tiny_corpus):
    from conftest import tsv_of
    return tsv_of(tmp_path / "stream.tsv",
                  [(f"doc{d}", i, *tiny_corpus[5 * d + i]) for d in range(2) for i in range(5)])


@pytest.fixture
def probed(common, tiny_model_dir, stream, probe):
    """`probed(*extra)`: the overrides of a short run with the probe, every 4 segments, over one stream."""
    def overrides(*extra):
        return common(tiny_model_dir, stream, f"metrics.probe.path={probe}", "metrics.probe.every=4",
                      "metrics.probe.segments=3", "reset=never", *extra)
    return overrides


def points(out) -> list[dict]:
    return json.loads((out / "summary.json").read_text())["probe"]["points"]


def test_probe_points_along_the_stream_and_only_adaptation_moves_them(tmp_path, probed):
    base = points(run(tmp_path / "none", *probed("method=none")))
    assert [p["after"] for p in base] == [0, 4, 8, 10]  # θ0, before segments 5 and 9, the final θ
    assert len({(p["BLEU"], p["chrF"], p["nll"]) for p in base}) == 1  # θ never changed: nothing forgotten
    full = points(run(tmp_path / "full", *probed("method=full", "method.lr=0.5")))
    assert full[0] == base[0]  # the same θ0
    assert full[-1]["nll"] != base[-1]["nll"]  # adapting on the stream moved the probe


def test_a_resumed_run_keeps_the_interrupted_runs_probes(tmp_path, probed):
    args = probed("method=full", "method.lr=0.5")
    whole = run(tmp_path / "whole", *args)
    resumed = run(cut(whole, tmp_path / "cut", 6), *args, "resume=true")
    assert points(resumed) == points(whole)
    steps = [json.loads(line) for line in (resumed / "steps.jsonl").read_text().splitlines()]
    assert [s["index"] for s in steps if "probe" in s] == [0, 4, 8]


def test_a_probe_that_cannot_be_read_is_one_line_and_runs_nothing(tmp_path, tiny_model_dir, stream, common, capsys):
    run(tmp_path / "bad", *common(tiny_model_dir, stream, f"metrics.probe.path={tmp_path}/nothing"), code=1)
    error = last_error(capsys)
    assert "metrics.probe.path=" in error and "nothing.en" in error and "PATH.en" in error
    (tmp_path / "short.en").write_text("a\nb\n")
    (tmp_path / "short.de").write_text("a\n")
    run(tmp_path / "short", *common(tiny_model_dir, stream, f"metrics.probe.path={tmp_path}/short"), code=1)
    assert "must pair up" in last_error(capsys)
    steps = tmp_path / "short" / "steps.jsonl"
    assert not steps.exists() or not steps.read_text()  # no segment was translated


def test_the_forgetting_report_puts_the_probe_beside_the_stream(tmp_path, probed, capsys):
    from adaptsim.cli import main
    for method in ("none", "full"):
        run(tmp_path / "sweep" / method, *probed(f"method={method}", "method.lr=0.5"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["forgetting", str(tmp_path / "sweep"), "--out", str(tmp_path / "f.png")])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in out.splitlines() if line.startswith("| ")}
    assert rows["baseline"][3].strip() == "+0.0" and rows["baseline"][5].strip() == "+0.000"  # nothing forgotten
    assert rows["full"][5].strip() != "+0.000" and rows["full"][0].strip() == "4"  # four probes, the last one moved
    assert (tmp_path / "f.png").stat().st_size > 0

    # an unprobed baseline beside the probed one (same stream scores: one row of a table) keeps the probed row;
    # a run without a probe is named, not dropped silently
    run(tmp_path / "sweep" / "none_plain", *probed("method=none", "metrics.probe.path=null"))
    run(tmp_path / "sweep" / "lasso_plain", *probed("method=lasso", "metrics.probe.path=null"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["forgetting", str(tmp_path / "sweep")])
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in out.splitlines() if line.startswith("| ")}
    assert rows["baseline"][3].strip() == "+0.0" and "_Left out, no probe recorded: lasso._" in out
    # another interval is another probe: refused, not shown under the first one's header
    run(tmp_path / "sweep" / "top", *probed("method=top", "metrics.probe.every=2"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["forgetting", str(tmp_path / "sweep")])
    assert exit_.value.code == 1
    assert re.search(r"runs probed differently \(every: 4 in .*, 2 in .*top\)", capsys.readouterr().err)


@pytest.mark.parametrize("setting", ["metrics.probe.every=1.5", "metrics.probe.segments=0"])
def test_a_probe_interval_that_is_no_whole_number_is_one_line(tmp_path, tiny_model_dir, stream, probe, common, capsys,
                                                              setting):
    """1.5 was taken as 1 and recorded so: a whole number of at least 1 or a one-line refusal (the settings' rules,
    adaptsim/loop/settings.py), before translating."""
    run(tmp_path / "bad", *common(tiny_model_dir, stream, f"metrics.probe.path={probe}", setting), code=1)
    key, value = setting.split("=")
    assert last_error(capsys) == f"adaptsim run: error: {key}={value}: must be an integer ≥ 1"
    steps = tmp_path / "bad" / "steps.jsonl"
    assert not steps.exists() or not steps.read_text()


def test_a_probe_line_longer_than_the_model_accepts_follows_on_too_long(tmp_path, tiny_model_dir, stream, probe,
                                                                        common, capsys):
    """A one-line error naming the line, or the line skipped and counted."""
    from adaptsim.models import Seq2SeqModel
    limit = Seq2SeqModel.load(str(tiny_model_dir)).max_tokens
    lines = probe.with_suffix(".en").read_text().splitlines()
    lines[1] = " ".join(["the dog"] * limit)
    probe.with_suffix(".en").write_text("".join(line + "\n" for line in lines))
    args = common(tiny_model_dir, stream, f"metrics.probe.path={probe}", "metrics.probe.every=4")
    run(tmp_path / "error", *args, code=1)
    assert re.search(rf"probe\.en:2: source has \d+ tokens, more than the model's positions \({limit}\); set "
                     r"dataset.on_too_long=skip", last_error(capsys))
    run(tmp_path / "skip", *args, "dataset.on_too_long=skip")
    info = json.loads((tmp_path / "skip" / "summary.json").read_text())["probe"]
    assert info["segments"] == 3 and info["skipped"] == 1
