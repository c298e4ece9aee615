"""`adaptsim study` (adaptsim/report/study.py) on constructed sessions of a two-method study (the design of
adaptsim.serve.study, one session per translator): a planted effect is found with the exact p of the design's
randomisation, translator and document effects alone give none (the square cancels them where a comparison within
one translator would not), too few documents say "cannot tell", and sessions of another study are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adaptsim.cli import main
from adaptsim.errors import UserError
from adaptsim.report import study
from adaptsim.serve.study import assign

METHODS = ["full", "lasso"]


def session(root: Path, translator: int, docs: list[str], seconds, seed: int = 7) -> Path:
    """A finished session of translator `translator`: each document two segments of 10 words; `seconds(t, doc,
    method)` the time per segment."""
    out = root / f"t{translator}"
    assignment = assign(docs, METHODS, seed, translator)
    out.mkdir(parents=True)
    (out / "study.json").write_text(json.dumps({"session": f"s{translator}", "methods": METHODS, "seed": seed,
                                                "translator": translator, "assignment": assignment}))
    for method in METHODS:
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
    delta, p = result.differences["s/word"]["lasso"]
    assert delta == pytest.approx(0.5)  # 5 s more per 10-word segment
    # only the observed draw and its mirror (every block flipped) are as extreme: p = 2/64, by hand
    assert result.exact and result.draws == 64 and p == pytest.approx(2 / 64)
    assert result.differences["KSMR"]["lasso"] == (0.0, 1.0)  # no effect on the keystrokes: every draw ties


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
    assert "exact over all 64 draws" in said and "Cannot tell" not in said


def test_too_few_documents_cannot_tell_and_another_study_is_refused(tmp_path):
    docs = [f"d{i}" for i in range(8)]  # 4 blocks: 16 draws, smallest p 2/16
    sessions = [session(tmp_path / "a", t, docs, lambda t, d, m: 20 + (9 if m == "lasso" else 0)) for t in (0, 1)]
    loaded, methods, seed = study.load(sessions)
    result = study.test(loaded, methods, seed, {"s/word": study.cell_statistics(loaded, "s/word")}, 1000, 1)
    said = study.text(loaded, methods, ["s/word"], result, {})
    assert result.floor == pytest.approx(2 / 16) and "Cannot tell" in said
    other = session(tmp_path / "b", 2, docs, lambda t, d, m: 20, seed=8)
    with pytest.raises(UserError, match="another study"):
        study.load([*sessions, other])
    with pytest.raises(UserError, match="translator=0 again"):
        study.load([sessions[0], sessions[0]])
