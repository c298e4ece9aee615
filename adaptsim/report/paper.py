"""The paper's own effect sizes (Simianer et al. 2019, Table 5: each adapted method's score relative to the
baseline's, in percent, rounded to whole percent as printed), for `findings --effects` and `--power`.

Which of the paper's sets a stream is compared with (`PAPER_SET`): TED with TED, the software-documentation stream
(Business Central, adaptsim's stand-in for the unpublished Autodesk set, and its held-out articles) with Autodesk;
every other stream with the mean over the five sets, since the paper has no counterpart for it.
"""

from __future__ import annotations

METRICS = ("BLEU", "SBLEU", "TER", "R0+1", "R0", "R1")  # Table 5's columns
METHODS = ("bias", "full", "lasso", "fixed", "top")
TABLE5 = {  # set: method: relative % per METRICS; "baseline": the absolute scores
    "User 1": {"baseline": (35.7, 55.2, 52.4, 44.3, 42.8, 50.3), "bias": (8, 6, -4, -5, -5, -4),
               "full": (36, 18, -22, -4, -7, 6), "lasso": (38, 18, -23, 1, -1, 8), "fixed": (34, 18, -22, -6, -9, 4),
               "top": (29, 16, -17, -5, -8, 4)},
    "User 2": {"baseline": (35.5, 56.2, 51.0, 43.6, 41.0, 51.2), "bias": (0, 0, 0, 0, 0, -1),
               "full": (0, 5, 5, -3, -5, 4), "lasso": (6, 6, -6, 2, 0, 7), "fixed": (-5, 4, 13, -4, -7, 1),
               "top": (-3, 3, 4, -5, -7, -2)},
    "Autodesk": {"baseline": (40.3, 49.3, 45.2, 41.0, 39.3, 44.9), "bias": (0, 0, 0, 0, 0, 1),
                 "full": (17, 13, -3, 1, -9, 22), "lasso": (15, 10, -6, 4, 3, 8), "fixed": (17, 13, -9, 0, -9, 16),
                 "top": (7, 10, 10, -2, -9, 12)},
    "TED": {"baseline": (25.9, 56.0, 54.2, 42.6, 39.5, 53.2), "bias": (1, 0, 0, 0, 0, 0),
            "full": (0, 1, 1, -3, -6, 3), "lasso": (4, 2, -2, -1, -3, 4), "fixed": (-3, 0, 4, -4, -7, 2),
            "top": (-6, 0, 9, -2, -5, 5)},
    "Patent": {"baseline": (53.5, 62.1, 31.7, 51.8, 49.7, 57.3), "bias": (2, 1, -2, 0, 0, 0),
               "full": (3, 2, -2, -2, -5, 7), "lasso": (4, 2, -4, 0, -2, 5), "fixed": (2, 1, 1, -4, -7, 4),
               "top": (2, 1, -1, -3, -5, 2)},
}
MEAN = "mean of the five sets"
PAPER_SET = {"ted": "TED", "autodesk": "Autodesk", "business-central": "Autodesk",  # dataset name → Table 5 set
             "business-central-heldout": "Autodesk"}  # the same documentation's held-out articles


def paper_set(dataset: str) -> str:
    return PAPER_SET.get(dataset, MEAN)


def relative(set_name: str, method: str, metric: str) -> float | None:
    """The paper's relative difference of `method` to its baseline, in percent (None: not in Table 5)."""
    if method not in METHODS or metric not in METRICS:
        return None
    column = METRICS.index(metric)
    sets = TABLE5 if set_name == MEAN else {set_name: TABLE5[set_name]}
    return sum(rows[method][column] for rows in sets.values()) / len(sets)
