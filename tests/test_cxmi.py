"""CXMI (adaptsim.metrics.cxmi, `adaptsim cxmi`): what the recorded log-probabilities say, and how runs are joined."""

import json
import math

import numpy as np
import pytest

from adaptsim.cli import main
from adaptsim.errors import UserError
from adaptsim.metrics import cxmi
from adaptsim.report import significance as sig
from adaptsim.report.blocks import check_joinable
from adaptsim.report.runs import discover


def _steps(run_dir):
    return [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]


def _runs(*dirs):
    found = discover(list(dirs))
    assert not found.problems
    return {r.summary["method"]: r for r in found.runs}


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """The demo's first two documents with none, full, bias and memory, each run alone."""
    root = tmp_path_factory.mktemp("cxmi")
    for method in ("none", "full", "bias", "memory"):
        with pytest.raises(SystemExit) as exit_:
            main(["run", f"hydra.run.dir={root / method}", "progress=false", "decode.beam_size=2",
                  "dataset.max_documents=2", f"method={method}"])
        assert exit_.value.code == 0
    return root


def test_every_method_records_one_log_probability_per_reference_piece_summing_to_ppl_before(demo_runs):
    for method in ("none", "full", "bias", "memory"):
        for row in _steps(demo_runs / method):
            assert len(row["logprobs"]) == len(row["ref_pieces"]) and row["ref_pieces"][-1] == "</s>"
            # the same forward measured ppl_before: its mean negative log-probability
            assert -np.mean(row["logprobs"]) == pytest.approx(math.log(row["ppl_before"]), abs=1e-4)


def test_the_baseline_scores_zero_and_an_adapted_model_gains_on_what_it_saw(demo_runs):
    runs = _runs(demo_runs)
    ordered = [runs["none"], runs["full"], runs["bias"], runs["memory"]]
    sig.scores(ordered, ["CXMI", "CXMI/seg"])
    assert runs["none"].scores["CXMI"] == 0 and runs["none"].scores["CXMI/seg"] == 0
    for method in ("full", "bias", "memory"):
        assert runs[method].scores["CXMI"] > 0, method
    # per segment: the first segment of each document is translated by θ0 itself (reset=document), so every
    # method's log-probabilities there are the baseline's, exactly
    base = _steps(demo_runs / "none")
    for method in ("full", "bias", "memory"):
        rows = _steps(demo_runs / method)
        values = cxmi.token_values(base, rows, method)
        firsts = [i for i, r in enumerate(rows) if i == 0 or rows[i - 1]["doc_id"] != r["doc_id"]]
        assert all(not values[i].any() for i in firsts), method
        # the segment's CXMI is the sum of its words' values: every piece belongs to exactly one word
        for i, row in enumerate(rows):
            positions = sorted(j for _, js in cxmi.piece_words(row["ref_pieces"]) for j in js)
            assert positions == list(range(len(row["ref_pieces"])))


def test_a_pair_adapted_on_is_more_likely_when_it_comes_again(run_adaptsim, tmp_path, tiny_corpus, tiny_model_dir):
    src, ref = tiny_corpus[3]
    data = tmp_path / "again.tsv"
    data.write_text("doc_id\tseg_id\tsource\treference\n" + f"d\t1\t{src}\t{ref}\nd\t2\t{src}\t{ref}\n")
    common = ("dataset=tsv", f"dataset.path={data}", f"model.path={tiny_model_dir}", "model.name=tiny")
    base, _ = run_adaptsim("none", "method=none", *common)
    full, _ = run_adaptsim("full", "method=full", *common)
    values = cxmi.token_values(_steps(base), _steps(full), "full")
    assert values[0].sum() == 0 and values[1].sum() > 0.1  # nats gained on the segment seen before


def test_the_join_refuses_runs_that_cannot_be_compared(demo_runs, run_adaptsim):
    runs = _runs(demo_runs)
    with pytest.raises(UserError, match="baseline \\(method=none\\)"):
        check_joinable(runs["full"], runs["bias"])
    other, _ = run_adaptsim("beam3", "method=full", "dataset.max_documents=2", "decode.beam_size=3")
    with pytest.raises(UserError, match="same decode"):
        check_joinable(runs["none"], _runs(other)["full"])
    fewer, _ = run_adaptsim("fewer", "method=full", "dataset.max_documents=1")
    with pytest.raises(UserError, match="same data"):
        check_joinable(runs["none"], _runs(fewer)["full"])


def test_cxmi_report_and_table_column(demo_runs, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["cxmi", str(demo_runs), "--resamples", "100", "--out", str(tmp_path / "cxmi.png")])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "| baseline | 0.000 [0.000, 0.000]" in out and "| second, missed |" in out and "| 1 |" in out
    assert (tmp_path / "cxmi.png").stat().st_size > 0
    runs = _runs(demo_runs)
    sig.scores([runs["none"], runs["full"]], ["CXMI"])
    with pytest.raises(SystemExit):
        main(["table", str(demo_runs), "--metrics", "R1,CXMI", "--relative"])
    full_row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| full |"))
    # R1 relative to the baseline in percent, CXMI absolute in nats (a relative change of 0 would be meaningless)
    assert full_row.replace("*", "").rstrip(" |").endswith(f"{runs['full'].scores['CXMI']:.3f}")


def test_pieces_group_into_words_as_the_roles_need_them():
    words = cxmi.piece_words(["▁In", "▁eine", "r", "▁Zeit", ",", "▁", "2020", "▁EU", "-", "Organe", "</s>"])
    assert [w for w, _ in words] == ["In", "einer", "Zeit", ",", "2020", "EU", "-", "Organe", ""]
    assert words[4][1] == [5, 6]  # a bare ▁ opens the word its next piece continues


def test_byte_level_pieces_group_into_words_by_their_bytes():
    """GPT-2/Qwen pieces: Ġ is the space byte, and ü's two bytes may fall in two pieces (the word is whole)."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    to_chars = bytes_to_unicode()

    def piece(text: str) -> str:
        return "".join(to_chars[b] for b in text.encode())

    u = piece("ü")
    pieces = [piece("Der"), piece(" Tr"), piece("eiber"), piece(" ist"), piece(" gr"), u[:1], u[1:], piece("n"),
              piece("."), "<|im_end|>"]
    assert cxmi.is_byte_level(pieces) and not cxmi.is_byte_level(["▁Der", "▁ist"])
    assert cxmi.piece_words(cxmi.sentencepiece_style(pieces)) == [
        ("Der", [0]), ("Treiber", [1, 2]), ("ist", [3]), ("grün", [4, 5, 6, 7]), (".", [8]), ("", [9])]


def test_a_forced_language_token_is_left_out_and_a_diverged_step_keeps_its_first_forward(run_adaptsim):
    assert cxmi.forced({"model": {"languages": {"target_token": "deu_Latn"}}}) == 1
    assert cxmi.forced({"model": {"languages": {"target_token": None}}}) == 0
    base = [{"logprobs": [-9.0, -1.0, -2.0], "ref_pieces": ["deu_Latn", "▁Ja", "</s>"]}]
    run = [{"logprobs": [-0.1, -0.5, -2.0], "ref_pieces": ["deu_Latn", "▁Ja", "</s>"]}]
    assert cxmi.token_values(base, run, "x", skip=1)[0].tolist() == [0.5, 0.0]
    out, summary = run_adaptsim("diverged", "method=full", "method.lr=1e12", "update.on_divergence=rollback",
                                "dataset.max_documents=1")
    diverged = [row for row in _steps(out) if row.get("diverged")]
    assert summary["divergences"] and all(row["logprobs"] for row in diverged)


def test_three_figures_the_papers_equation_its_code_and_adaptsims():
    # a 4-token segment that gained 0.3 nats on each token, a 2-token one that gained nothing on balance, and one
    # without log-probabilities (left out of all three)
    values = [np.array([0.3, 0.3, 0.3, 0.3]), np.array([-0.1, 0.1]), None]
    point = {m: cxmi.statistics(m, values).sum(axis=0) for m in cxmi.METRICS}
    point = {m: num / den for m, (num, den) in point.items()}
    assert point["CXMI"] == pytest.approx(1.2 / 6)        # adaptsim's: tokens pooled
    assert point["CXMI/seg"] == pytest.approx(1.2 / 2)    # the paper's equation: a sentence's log-ratio, averaged
    assert point["CXMI.sent"] == pytest.approx((0.3 + 0.0) / 2)  # its code: fairseq's per-sentence mean, averaged


def test_cxmi_sent_is_the_mean_of_the_segments_per_token_gain(demo_runs, capsys):
    runs = _runs(demo_runs)
    sig.scores([runs["none"], runs["full"]], ["CXMI.sent"])
    values = cxmi.token_values(_steps(demo_runs / "none"), _steps(demo_runs / "full"), "full")
    assert runs["full"].scores["CXMI.sent"] == pytest.approx(np.mean([v.mean() for v in values]))
    with pytest.raises(SystemExit):
        main(["cxmi", str(demo_runs), "--resamples", "20"])
    out = capsys.readouterr().out
    assert "CXMI.sent (nats/token; paper's code)" in out and "CXMI/seg (nats; paper's eq.)" in out
    with pytest.raises(SystemExit):
        main(["table", str(demo_runs), "--metrics", "R1,CXMI.sent"])
    full_row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| full |"))
    assert full_row.replace("*", "").rstrip(" |").endswith(f"{runs['full'].scores['CXMI.sent']:.3f}")


def test_word_roles_of_a_text_free_record_are_one_line():
    """The committed records keep log-probabilities but not the pieces (scripts/experiments/export_runs.py): cxmi's
    roles cannot be had from them, and it says so instead of a KeyError traceback."""
    from adaptsim.errors import UserError

    with pytest.raises(UserError, match="text-free record"):
        cxmi.words(None, [{"doc_id": "d", "logprobs": [-1.0, -0.5]}], [None])


def test_a_second_occurrence_is_recalled_by_the_baseline_s_hypothesis_not_by_the_measured_run_s():
    """Splitting P-CXMI by whether the measured run's own hypothesis recalled the word selects on the outcome (a word
    the context made likelier is the more likely recalled): the split is by the baseline's hypothesis, or none."""
    from adaptsim.metrics.roles import Roles

    references = ["Treiber laufen.", "Treiber hängen."]
    roles = Roles({"lang": "de"}, references, ["d", "d"], "document")
    pieces = [["▁Treiber", "▁laufen", ".", "</s>"], ["▁Treiber", "▁hängen", ".", "</s>"]]
    run = [{"ref_pieces": p, "hypothesis": "Treiber hängen."} for p in pieces]  # the run recalls "Treiber"
    base = [{"ref_pieces": p, "hypothesis": "Fahrer hängen."} for p in pieces]  # the baseline does not
    values = [np.ones(4), np.ones(4)]

    def role(found):
        return next(w.role for w in found if w.segment == 1 and w.role.startswith("second"))

    assert role(cxmi.words(roles, run, values, base)) == "second, missed"
    assert role(cxmi.words(roles, run, values, run)) == "second, recalled"
    assert role(cxmi.words(roles, run, values)) == "second"


def test_compare_flips_are_the_occurrences_behind_a_recall_difference(demo_runs, capsys):
    """`compare --flips`: gained − lost is the difference in R0's and R1's hits, whatever the net hides."""
    runs = _runs(demo_runs)
    with pytest.raises(SystemExit) as exit_:
        main(["compare", str(demo_runs / "none"), str(demo_runs / "full"), "--flips", "--json", "--resamples", "50"])
    assert exit_.value.code == 0
    found = json.loads(capsys.readouterr().out)["flips"]["full"]
    for level in ("R0", "R1"):
        hits = runs["full"].summary["counts"][level]["num"] - runs["none"].summary["counts"][level]["num"]
        assert found[level]["gained"] - found[level]["lost"] == hits, level
        assert found[level]["occurrences"] == runs["none"].summary["counts"][level]["den"]
    assert found["R0"]["gained"] + found["R0"]["lost"] > 0
