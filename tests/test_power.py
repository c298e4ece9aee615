"""Effect sizes beside the paper's and the power to show them (`findings --effects/--power`,
adaptsim/report/power.py): the paper's numbers are Table 5's, the documents needed shrink as the effect grows, and
a stream that cannot tell is told apart from one where the finding fails (the sample sizes themselves:
tests/test_verdicts.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from adaptsim.cli import main
from adaptsim.report import paper

TED = Path(__file__).resolve().parents[1] / "docs" / "results" / "runs" / "ted"  # committed, text-free


def test_the_paper_column_is_table_5_and_streams_meet_their_counterpart():
    assert paper.paper_set("ted") == "TED" and paper.paper_set("business-central") == "Autodesk"
    assert paper.paper_set("business-central-heldout") == "Autodesk"  # the same documentation, held out
    assert paper.relative("Autodesk", "full", "R1") == 22 and paper.relative("TED", "lasso", "R0") == -3
    assert paper.relative(paper.MEAN, "full", "R0") == pytest.approx((-7 - 5 - 9 - 6 - 5) / 5)
    assert paper.relative("TED", "l2", "R0") is None  # beyond the paper: no number


def test_findings_with_effects_and_power_on_the_committed_ted_runs(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["findings", str(TED), "--effects", "--power"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    effects = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
               for line in out.split("Relative to the baseline")[1].split("Power on")[0].splitlines()
               if line.startswith("| ") and "here" not in line}
    assert [effects["full"][i] for i in (1, 3, 5, 7, 9)] == ["+0", "+1", "-6", "+3", "-3"]  # Table 5, TED, full
    rows = {int(line.split("|")[1]): [c.strip() for c in line.split("|")[2:-1]]
            for line in out.split("Power on 13 documents")[1].splitlines() if line.startswith("| ") and "#" not in line}
    assert sorted(rows) == list(range(1, 9))
    verdict, detectable, effect, needed = rows[2]
    assert verdict == "same direction" and effect == "full R0 -0.7"
    # the paper's effect is smaller than what 13 talks can detect, so it needs more talks than there are
    assert float(detectable) > 0.7 and int(needed.replace(",", "")) > 13
    assert math.isclose(float(detectable), 1.10, abs_tol=0.01)  # half of finding 2's interval [-1.9, +0.3]
    assert rows[3][3].startswith("– (the paper")  # on TED the paper's own bias beat lasso's R0
