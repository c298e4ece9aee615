"""`adaptsim study` (adaptsim/report/study.py) on constructed sessions of a two-method study (the design of
adaptsim.serve.study, one session per translator): a planted effect is found with the exact p of the design's
randomisation, translator and document effects alone give none (the square cancels them where a comparison within
one translator would not), too few documents say "cannot tell" beside the observed p (two translators on four
documents: the four draws enumerated by hand), the cells with data, the sessions finished early and the partial
documents are counted, and sessions of another study are refused."""

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


def session(root: Path, translator: int, docs: list[str], seconds, seed: int = 7, methods=METHODS, words: int = 10,
            lengths: dict | None = None, validated: int | None = None) -> Path:
    """The session of translator `translator` as `adaptsim serve` records it: each document `lengths[doc]` segments (2)
    of `words` words, `seconds(t, doc, method)` the time per segment. `validated`: the segments the translator
    validated, in the session's order, before finishing early (Finish now: study.json's and the runs' ended_early, a
    run with none validated interrupted; adaptsim/serve/state.py `finish`); None: every one."""
    out = root / f"t{translator}"
    assignment = assign(docs, methods, seed, translator)
    lengths = lengths or {}
    out.mkdir(parents=True)
    recorded = {"session": f"s{translator}", "methods": methods, "seed": seed, "translator": translator,
                "assignment": assignment}
    total = sum(lengths.get(d, 2) for d in docs)
    if validated is not None:
        recorded["ended_early"] = {"validated": validated, "segments": total}
    (out / "study.json").write_text(json.dumps(recorded))
    rows = {m: [] for m in methods}
    for doc in docs:
        for seg in range(lengths.get(doc, 2)):
            if validated is not None and sum(map(len, rows.values())) == validated:
                break
            method = assignment[doc]
            effort = {"KS": 5, "WS": 1, "MA": 1, "chars": 60, "words": words, "decoder_calls": 1, "capped": False,
                      "level": "human", "costs": "human", "seconds": seconds(translator, doc, method)}
            rows[method].append({"doc_id": doc, "seg_id": str(seg), "reference": f"{doc}-{seg}", "effort": effort,
                                 "R0_num": 1, "R0_den": 2})
    for method in methods:
        run = out / method
        run.mkdir()
        assigned = sum(lengths.get(d, 2) for d in docs if assignment[d] == method)
        if not rows[method]:  # finished early before any of its segments
            (run / "summary.json").write_text(json.dumps({
                "command": "serve", "status": "interrupted", "method": method, "segments": assigned,
                "error": "the translator finished the session before any of this method's segments"}))
            continue
        (run / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[method]))
        early = {"ended_early": {"validated": len(rows[method]), "assigned": assigned}} \
            if len(rows[method]) < assigned else {}
        (run / "summary.json").write_text(json.dumps({
            "command": "serve", "status": "finished", "method": method, "dataset": "demo", "model_path": "m",
            "data_fingerprint": f"{translator}-{method}", "segments": len(rows[method]), "scores": {"R0": 50.0},
            "signatures": {}, "cost": {"interactive": {"mode": "human", "costs": "human", "max_corrections": 0}},
            "metrics_scope": "document", **early}))
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
    row = next(line for line in said.splitlines() if line.startswith("| lasso − full |"))
    assert "+0.00, p 1.000 (every draw gives this difference)" in row, said  # within each block the square cancels
    assert "exact over all 64 draws" in said and ": cannot tell" not in row


def test_too_few_documents_cannot_tell_and_another_study_is_refused(tmp_path):
    docs = [f"d{i}" for i in range(8)]  # 4 blocks: 16 draws, smallest p 2/16
    sessions = [session(tmp_path / "a", t, docs, lambda t, d, m: 20 + (9 if m == "lasso" else 0)) for t in (0, 1)]
    loaded, methods, seed = study.load(sessions)
    result = study.test(loaded, methods, seed, {"s/word": study.cell_statistics(loaded, "s/word")}, 1000, 1)
    said = study.text(loaded, methods, ["s/word"], result, {})
    assert result.differences["s/word"]["lasso"][2] == pytest.approx(2 / 16)
    assert "| +0.90, p 0.125 (smallest possible 0.125): cannot tell |" in said  # the largest |Δ| of all: p its floor
    other = session(tmp_path / "b", 2, docs, lambda t, d, m: 20, seed=8)
    with pytest.raises(UserError, match="another study"):
        study.load([*sessions, other])
    with pytest.raises(UserError, match="translator=0 again"):
        study.load([sessions[0], sessions[0]])


F, L = "full", "lasso"


@pytest.mark.parametrize("translator_1, expected, p", [
    # lasso's seconds minus full's over the 64 words each method has in every draw (4 cells of 2 segments of 8
    # words), by hand, in the order of DRAWS:
    # (45+55+80+70) − (60+50+80+70) = −10, (45+50+80+70) − (60+55+80+70) = −20, (60+55+80+70) − (45+50+80+70) = +20,
    # observed (60+50+80+70) − (45+55+80+70) = +10: all four at least as far from 0, p 4/4
    ({"d0": 80, "d1": 80, "d2": 70, "d3": 70}, [-10, -20, 20, 10], "+0.16, p 1.000 (smallest possible 0.500)"),
    # translator 1's d2 10 s quicker: −20, −10, +10, observed +20: only it and its mirror, p 2/4
    ({"d0": 80, "d1": 80, "d2": 60, "d3": 70}, [-20, -10, 10, 20], "+0.31, p 0.500 (smallest possible 0.500)"),
])
def test_two_translators_on_four_documents_have_four_draws_enumerated_by_hand(tmp_path, capsys, translator_1,
                                                                              expected, p):
    """The reviewer's study: two translators, four documents (two blocks of two). The design has four draws of the
    block orders, written out here; the printed p is the observed one (1.000 where the observed difference is the
    smallest of the draws', as the reviewer's −0.313, −0.156, +0.156, +0.313 s/word gave), not the design's minimum
    0.500, which is printed beside it and still says "cannot tell"."""
    docs = ["d0", "d1", "d2", "d3"]
    # seed 7 draws (lasso, full) for both blocks; translator 1's orders are translator 0's rotated by one
    assert assign(docs, METHODS, 7, 0) == {"d0": L, "d1": F, "d2": L, "d3": F}
    assert assign(docs, METHODS, 7, 1) == {"d0": F, "d1": L, "d2": F, "d3": L}
    draws = [  # (block 1's order, block 2's) for translator 0, and every cell's label under it: translator: d0..d3
        (((F, L), (F, L)), {0: [F, L, F, L], 1: [L, F, L, F]}),
        (((F, L), (L, F)), {0: [F, L, L, F], 1: [L, F, F, L]}),
        (((L, F), (F, L)), {0: [L, F, F, L], 1: [F, L, L, F]}),
        (((L, F), (L, F)), {0: [L, F, L, F], 1: [F, L, F, L]}),  # the observed one
    ]
    for orders, labels in draws:  # (the labels as the design's own `label` gives them)
        assert all(design.label(docs, list(orders), t) == dict(zip(docs, labels[t])) for t in (0, 1))
    cell = {**{(0, d): v for d, v in {"d0": 60, "d1": 45, "d2": 50, "d3": 55}.items()},
            **{(1, d): v for d, v in translator_1.items()}}  # a cell's seconds, whatever its method

    def difference(labels: dict) -> float:
        total = {F: 0, L: 0}
        for t in (0, 1):
            for d, m in zip(docs, labels[t]):
                total[m] += cell[(t, d)]
        return (total[L] - total[F]) / 64

    assert [difference(labels) for _, labels in draws] == pytest.approx([e / 64 for e in expected])
    observed = difference(draws[-1][1])
    exact = sum(abs(difference(labels)) >= abs(observed) for _, labels in draws) / 4

    sessions = [session(tmp_path, t, docs, lambda t, d, m: cell[(t, d)] / 2, words=8) for t in (0, 1)]
    loaded, methods, seed = study.load(sessions)
    result = study.test(loaded, methods, seed, {"s/word": study.cell_statistics(loaded, "s/word")}, 1000, 1)
    assert result.exact and result.draws == 4
    assert result.differences["s/word"]["lasso"] == pytest.approx((observed, exact, 2 / 4))
    with pytest.raises(SystemExit) as exit_:
        main(["study", *map(str, sessions), "--metrics", "s/word"])
    assert exit_.value.code == 0
    said = capsys.readouterr().out
    assert f"| lasso − full | {p}: cannot tell |" in said, said
    full = sum(v for (t, d), v in cell.items() if assign(docs, METHODS, 7, t)[d] == F) / 64
    assert f"| full | {full:.2f} |" in said and f"| lasso | {full + observed:.2f} |" in said
    assert "| full | 4 of 4 | 4 of 4 | 8 | 2 of 2 documents, 4 segments | 2 of 2 documents, 4 segments |" in said
    assert "- s/word: seconds per word: the translator's time" in said and "lower is better" in said
    assert "finished early" not in said and "no data" not in said


def test_the_cells_with_data_and_the_sessions_finished_early_are_counted(tmp_path, capsys):
    """Translator 1 finished early after four of nine segments: d0 (full, its three) and one of d1's two (lasso). The
    table counts each method's cells, documents and segments with data by translator; the lines name the session and
    the runs that ended early, the documents without data and the partial one — whose length translator 0's whole
    runs tell. Without them, no record tells d0's or d2's length, and the report says so."""
    docs, lengths = ["d0", "d1", "d2", "d3"], {"d0": 3}
    t0 = session(tmp_path, 0, docs, lambda t, d, m: 20, words=8, lengths=lengths)
    t1 = session(tmp_path, 1, docs, lambda t, d, m: 30, words=8, lengths=lengths, validated=4)
    with pytest.raises(SystemExit):
        main(["study", str(t0), str(t1), "--metrics", "s/word,KSMR,MAR,R0"])
    said = capsys.readouterr().out
    lines = said.splitlines()
    assert "| method | cells | documents | segments | translator 0 | translator 1 |" in lines
    # full: translator 0's d1 and d3 (2 + 2 segments), translator 1's d0 (its 3); lasso: d0 and d2 (3 + 2), d1 (1 of 2)
    assert "| full | 3 of 4 | 3 of 4 | 7 | 2 of 2 documents, 4 segments | 1 of 2 documents, 3 segments |" in lines
    assert "| lasso | 3 of 4 | 3 of 4 | 6 | 2 of 2 documents, 5 segments | " \
           "1 of 2 documents (1 partial), 1 segment |" in lines, said
    assert f"- Translator 1 ({t1}) finished early: 4 of 9 segments validated; full: 3 of its 5 segments; lasso: 1 of " \
           "its 4 segments." in lines, said
    assert "- Translator 1: no data for d2 (full), d3 (lasso); partial: d1 (lasso, 1 of 2 segments)." in lines
    assert not any(line.startswith(("- Translator 0", "- Translator 1: no data for d0")) for line in lines)
    assert any(line.startswith("_Which cells are missing or partial may depend on the method") for line in lines)
    for measure in ("s/word", "KSMR", "MAR", "R0"):
        assert f"- {measure}: {study.meaning(measure, {'document'})}" in lines
    for measure, better in (("s/word", "lower"), ("KSMR", "lower"), ("KSR", "lower"), ("WSR", "lower"),
                            ("MAR", "lower"), ("R0", "higher"), ("R1", "higher"), ("R0+1", "higher"),
                            ("BLEU", "higher"), ("novel.R0", "higher"), ("TER", "lower")):
        assert study.meaning(measure, {"document"}).endswith(f"; {better} is better"), measure
    assert "mouse actions (clicks in the text and on the page's buttons) / words" in said  # MAR: per word
    assert "for the first time in the document" in said  # R0, in these runs' metrics_scope
    assert "for the second time in the run's stream of documents" in study.meaning("R1", {"corpus"})

    shutil.rmtree(t0 / "lasso")  # translator 0's lasso run gone: d0 and d2 went whole through no run that is left
    with pytest.raises(SystemExit):
        main(["study", str(t0), str(t1), "--metrics", "s/word"])
    lines = capsys.readouterr().out.splitlines()
    assert f"- Translator 0 ({t0}): lasso: no run (no lasso/summary.json), left out." in lines
    assert "- Translator 0: no data for d0 (lasso), d2 (lasso)." in lines
    assert "- Translator 1: no data for d2 (full), d3 (lasso); partial: d1 (lasso, 1 of 2 segments); perhaps partial " \
           "(its length recorded nowhere readable): d0 (full, 3 segments)." in lines

    t2 = session(tmp_path / "b", 1, docs, lambda t, d, m: 30, lengths=lengths, validated=2)  # within d0: lasso none
    loaded, _, _ = study.load([str(t0), str(t2)])
    assert study.coverage(loaded)[(1, "d0")] == study.Cell("full", 2, None, True)  # (its whole run is gone)
    with pytest.raises(SystemExit):
        main(["study", str(tmp_path / "t0"), str(t2), "--metrics", "s/word"])
    assert f"- Translator 1 ({t2}) finished early: 2 of 9 segments validated; full: 2 of its 5 segments; lasso: no " \
           "finished run (status interrupted), left out." in capsys.readouterr().out.splitlines()


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
