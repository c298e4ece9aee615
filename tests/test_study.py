"""`adaptsim study` (adaptsim/report/study.py) on constructed sessions of a two-method study (the design of
adaptsim.serve.study, one session per translator): a planted effect is found with the exact p of the design's
randomisation, translator and document effects alone give none (the square cancels them where a comparison within
one translator would not), too few documents say "cannot tell", and sessions of another study are refused."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from adaptsim.cli import main
from adaptsim.errors import UserError
from adaptsim.report import study
from adaptsim.serve import study as design
from adaptsim.serve.study import assign

METHODS = ["full", "lasso"]


def session(root: Path, translator: int, docs: list[str], seconds, seed: int = 7, methods=METHODS) -> Path:
    """A finished session of translator `translator`: each document two segments of 10 words; `seconds(t, doc,
    method)` the time per segment."""
    out = root / f"t{translator}"
    assignment = assign(docs, methods, seed, translator)
    out.mkdir(parents=True)
    (out / "study.json").write_text(json.dumps({"session": f"s{translator}", "methods": methods, "seed": seed,
                                                "translator": translator, "assignment": assignment}))
    for method in methods:
        rows = []
        for doc in [d for d in docs if assignment[d] == method]:
            for seg in range(2):
                effort = {"KS": 5, "WS": 1, "MA": 1, "chars": 60, "words": 10, "decoder_calls": 1, "capped": False,
                          "level": "human", "costs": "human", "seconds": seconds(translator, doc, method)}
                rows.append({"doc_id": doc, "seg_id": str(seg), "reference": f"{doc}-{seg}", "effort": effort,
                             "R0_num": 1, "R0_den": 2})
        run = out / method
        run.mkdir()
        (run / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (run / "summary.json").write_text(json.dumps({
            "command": "serve", "status": "finished", "method": method, "dataset": "demo", "model_path": "m",
            "data_fingerprint": f"{translator}-{method}", "segments": len(rows), "scores": {"R0": 50.0},
            "signatures": {}, "cost": {"interactive": {"mode": "human", "costs": "human", "max_corrections": 0}}}))
    return out


def hard(doc: str) -> float:
    return 2.0 * (int(doc[1:]) % 3)  # some documents take longer, whatever the method


def test_a_planted_effect_has_the_design_s_exact_p(tmp_path):
    docs = [f"d{i}" for i in range(12)]  # 6 blocks of two: 2⁶ draws of the block orders
    sessions = [session(tmp_path, t, docs, lambda t, d, m: 20 + 10 * t + hard(d) + (5 if m == "lasso" else 0))
                for t in (0, 1)]
    loaded, methods, seed = study.load(sessions)
    cells = {m: study.cell_statistics(loaded, m) for m in ("s/word", "KSMR")}
    result = study.test(loaded, methods, seed, cells, draws=1000, rng_seed=1)
    delta, p, floor = result.differences["s/word"]["lasso"]
    assert delta == pytest.approx(0.5)  # 5 s more per 10-word segment
    # only the observed draw and its mirror (every block flipped) are as extreme: p = 2/64, by hand
    assert result.exact and result.draws == 64 and p == pytest.approx(2 / 64) == pytest.approx(floor)
    assert result.differences["KSMR"]["lasso"][:2] == (0.0, 1.0)  # no effect on the keystrokes: every draw ties

    shutil.rmtree(sessions[1] / "lasso")  # translator 1's lasso documents missing: fewer draws can be as extreme
    loaded, methods, seed = study.load(sessions)
    result = study.test(loaded, methods, seed, {"s/word": study.cell_statistics(loaded, "s/word")}, 1000, 1)
    _, p, floor = result.differences["s/word"]["lasso"]
    assert floor > 2 / 64 and p >= floor


def test_translator_and_document_effects_alone_give_no_difference(tmp_path, capsys):
    docs = [f"d{i}" for i in range(12)]
    sessions = [session(tmp_path, t, docs, lambda t, d, m: 20 + 10 * t + hard(d)) for t in (0, 1)]
    loaded, methods, seed = study.load(sessions)
    alone = [c for c in study.cell_statistics(loaded, "s/word").items() if c[0][0] == 1]
    assert len({v[0] for _, v in alone}) > 1  # translator 1's documents differ in time: within it, methods would too
    with pytest.raises(SystemExit) as exit_:
        main(["study", *map(str, sessions), "--metrics", "s/word,KSMR"])
    assert exit_.value.code == 0
    said = capsys.readouterr().out
    row = next(line for line in said.splitlines() if line.startswith("| lasso |"))
    assert "(+0.00, p 1.000)" in row, said
    assert "exact over all 64 draws" in said and "cannot tell: p" not in said


def test_too_few_documents_cannot_tell_and_another_study_is_refused(tmp_path):
    docs = [f"d{i}" for i in range(8)]  # 4 blocks: 16 draws, smallest p 2/16
    sessions = [session(tmp_path / "a", t, docs, lambda t, d, m: 20 + (9 if m == "lasso" else 0)) for t in (0, 1)]
    loaded, methods, seed = study.load(sessions)
    result = study.test(loaded, methods, seed, {"s/word": study.cell_statistics(loaded, "s/word")}, 1000, 1)
    said = study.text(loaded, methods, ["s/word"], result, {})
    assert result.differences["s/word"]["lasso"][2] == pytest.approx(2 / 16) and "cannot tell: p ≥ 0.125" in said
    other = session(tmp_path / "b", 2, docs, lambda t, d, m: 20, seed=8)
    with pytest.raises(UserError, match="another study"):
        study.load([*sessions, other])
    with pytest.raises(UserError, match="translator=0 again"):
        study.load([sessions[0], sessions[0]])


def test_p_is_the_share_of_the_design_s_draws_as_extreme(tmp_path, monkeypatch):
    """Three methods, 7 documents (a short last block), translators 0–4 (3 and 4 rotate as 0 and 1): for each
    comparison study's p is the share of all draws of the block orders — each labelled by `assign` itself — whose
    difference is at least the observed one."""
    methods, docs = ["full", "lasso", "top"], [f"d{i}" for i in range(7)]
    effect = {"full": 0.0, "lasso": 3.0, "top": 0.5}

    def seconds(t, d, m):
        return 20 + effect[m] + 1.5 * t + hard(d)

    sessions = [session(tmp_path, t, docs, seconds, methods=methods) for t in range(5)]
    loaded, _, seed = study.load(sessions)
    result = study.test(loaded, methods, seed, {"s/word": study.cell_statistics(loaded, "s/word")}, 1000, 1)
    assert result.exact and result.draws == 6 ** 3

    observed = {t: assign(docs, methods, seed, t) for t in range(5)}

    def differences(labels: dict) -> dict:  # {method: Δ to full} of the cells labelled so; cells keep their time
        per = {m: [0.0, 0] for m in methods}
        for t in range(5):
            for d in docs:
                per[labels[t][d]][0] += 2 * seconds(t, d, observed[t][d])
                per[labels[t][d]][1] += 20
        return {m: per[m][0] / per[m][1] - per["full"][0] / per["full"][1] for m in methods[1:]}

    seen = differences(observed)
    extreme = {m: 0 for m in methods[1:]}
    for draw in itertools.product(itertools.permutations(methods), repeat=3):
        class Drawn:  # assign's random orders, replaced by this draw's
            def __init__(self, _seed):
                self.orders = list(draw)

            def sample(self, population, k):
                return list(self.orders.pop(0))

        monkeypatch.setattr(design.random, "Random", Drawn)
        drawn = differences({t: assign(docs, methods, seed, t) for t in range(5)})
        for m in extreme:
            extreme[m] += abs(drawn[m]) >= abs(seen[m]) - 1e-9
    for m in methods[1:]:
        delta, p, _ = result.differences["s/word"][m]
        assert delta == pytest.approx(seen[m]) and p == pytest.approx(extreme[m] / 6 ** 3), m


def planted(translators: int, blocks: int, effect: float, studies: int, seed: int = 0) -> float:
    """The share of constructed two-method studies (cells: translator level + document level + `effect` under lasso
    + N(0, 1) noise) in which the design's own test finds the difference at p < 0.05."""
    import numpy as np

    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(2 * blocks)]
    sessions = [study.SessionRecord(Path(f"t{t}"), t, assign(docs, METHODS, 7, t), {}) for t in range(translators)]
    found = 0
    for _ in range(studies):
        level, hardness = rng.normal(0, 2, translators), rng.normal(0, 2, len(docs))
        cells = {(s.translator, d): np.array([level[s.translator] + hardness[i] + effect * (s.assignment[d] == "lasso")
                                              + rng.normal(), 1.0]) for s in sessions for i, d in enumerate(docs)}
        result = study.test(sessions, METHODS, 7, {"s/word": cells}, 1000, 1)
        found += result.differences["s/word"]["lasso"][1] < 0.05
    return found / studies


def test_the_plan_s_difference_is_found_about_as_often_as_it_promises():
    """--plan's figure (a t approximation) against the design's randomisation test on studies
    with that difference planted: found in about 80% of them; with none, in about 5%."""
    effect = study.detectable(2, 4, 8)  # 4 translators, 16 documents
    assert 0.7 <= planted(4, 8, effect, 300) <= 0.9
    assert planted(4, 8, 0.0, 200, seed=1) <= 0.1
    assert planted(4, 8, 2 * effect, 100, seed=2) > 0.95


def test_the_plan_says_cannot_tell_where_the_design_cannot_resolve(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["study", "--plan", "2"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in out.splitlines() if line.startswith("| ")}
    assert all(c.strip() == "cannot tell" for c in [rows["2"][0], rows["16"][0]])  # 8 documents: p ≥ 2/16
    assert float(rows["4"][2].split()[0]) == pytest.approx(study.detectable(2, 4, 8), abs=0.01)
    assert float(rows["16"][-1].split()[0]) < float(rows["2"][-1].split()[0])  # more translators, smaller
    with pytest.raises(SystemExit):
        main(["study", "--plan", "1"])
    assert "--plan METHODS (2 or more)" in capsys.readouterr().err
