"""Recall by how similar the sentence is to where the word was seen (`table --bands-by-match`).

Does adaptation carry a correction beyond near-identical sentences? For every reference word at its second or a
later occurrence (R1's and R2…'s words, R0/R1's counting in the run's scope), the fuzzy score between the
current source and the source of the segment of the word's previous occurrence (rapidfuzz `fuzz.ratio`, 0–100,
as `tm` retrieves) puts it in one of the bands CAT tools use: 100, 95–99, 75–94, < 75. Per band: R1 (second
occurrences) and R1+ (every later occurrence), recalled words / words, resampled like R0/R1 (document bootstrap,
† against the baseline).
"""

from __future__ import annotations

import numpy as np
from rapidfuzz import fuzz

from adaptsim.metrics.roles import Roles
from adaptsim.report import significance as sig
from adaptsim.report.markdown import head
from adaptsim.report.stats import Series, compare, ratio, units_of

BANDS = (("100", 100.0), ("95–99", 95.0), ("75–94", 75.0), ("<75", 0.0))  # name, lowest score


def band(score: float) -> int:
    return next(j for j, (_, low) in enumerate(BANDS) if score >= low)


def statistics(roles: Roles, rows: list[dict]) -> dict[str, np.ndarray]:
    """Per segment and band: (recalled, words) of second occurrences (R1) and of all later ones (R1+)."""
    n = len(rows)
    out = {f"{m} {name}": np.zeros((n, 2)) for m in ("R1", "R1+") for name, _ in BANDS}
    scores: dict[tuple[int, int], float] = {}
    for i, row in enumerate(rows):
        hyp = roles.words(row.get("hypothesis") or "")
        for word, back in roles.previous[i].items():
            j = i - back
            if (i, j) not in scores:
                scores[i, j] = fuzz.ratio(row["source"], rows[j]["source"])
            name = BANDS[band(scores[i, j])][0]
            hit = (word in hyp, 1)
            out[f"R1+ {name}"][i] += hit
            if word in roles.levels[i][1]:
                out[f"R1 {name}"][i] += hit
    return out


def analyse(runs, cfg: sig.Settings):
    steps = sig.paired(runs)
    base = steps[0]
    roles = Roles.of_run(base)
    per_run = [statistics(roles, s.rows) for s in steps]
    names = list(per_run[0])
    index, n_units = units_of(base.doc_ids, cfg.unit)
    result = compare([Series(m, ratio(100.0), [r[m] for r in per_run]) for m in names], index, n_units, cfg)
    words = {m: int(per_run[0][m][:, 1].sum()) for m in names}
    return result, names, words


def render(block, labels: list[str], analysis) -> str:
    result, names, words = analysis
    out = [f"**{block.dataset}: recall of repeated words by the fuzzy match between the sentence and the one where "
           "the word was last seen**", "",
           *head("method", [f"{m} ({words[m]})" for m in names])]
    for i, label in enumerate(labels):
        out.append(f"| {label} | " + " | ".join(sig.cell(result, i, m) for m in names) + " |")
    return "\n".join(out + ["", f"_R1: second occurrences, R1+: all later ones; in brackets the words in each band; "
                                f"{sig.footer(result)}._", ""])
