"""Effect sizes beside the paper's and the power to show them (`findings --effects/--power`,
adaptsim/report/power.py): the paper's numbers are Table 5's; the documents printed give 80% power under the test
that decides, at the level it is applied at (simulated); never fewer documents than the corrected test can resolve;
finding 5's closeness power; a stream that cannot tell is told apart from one where the finding fails."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from adaptsim.cli import main
from adaptsim.report import paper, power
from adaptsim.report.findings import SKEW, Finding, Part
from adaptsim.report.power import POWER
from adaptsim.report.stats import Difference, Series, Settings, compare, randomisation_level, ratio

TED = Path(__file__).resolve().parents[1] / "docs" / "results" / "runs" / "ted"  # committed, text-free
HOLM = 0.05 / 7  # Holm's first step over seven findings, a finding with one way
CFG = Settings(50, "document", 1, "auto", trials=4000)


def part(diff: float, sd: float | None, sign: int = 1, plus: str = "full", metric: str = "R0", n: int = 40,
         margin: float = 1.0) -> Part:
    """A part whose randomisation standard error on n documents makes `power.sigma` `sd` (None: no se); a closeness
    part (sign 0) has the margin ±`margin`."""
    se = None if sd is None else math.sqrt((sd * sd * (n - 1) / n + diff * diff) / n)
    return Part(metric, plus, None, sign, Difference(diff, (diff - 1, diff + 1), 0.0, (0.0, 0.0), 0.5, se=se),
                margin if sign == 0 else None)


def stream(rng: np.random.Generator, n: int, effect: float, sd: float) -> tuple[np.ndarray, np.ndarray]:
    """One segment per document, 100 words to recall in each: the method recalls d_u ~ N(effect, sd) more words
    in 100 than the baseline, so its R0 difference is the documents' mean d_u (an additive statistic)."""
    base = np.c_[np.full(n, 50.0), np.full(n, 100.0)]
    return base, base + np.c_[rng.normal(effect, sd, n), np.zeros(n)]


def measured(base: np.ndarray, method: np.ndarray, seed: int) -> Difference:
    n = len(base)
    return compare([Series("R0", ratio(100), [base, method])], np.arange(n), n,
                   Settings(50, "document", seed, "auto", trials=4000)).differences[1]["R0"]


def rejected(n: int, effect: float, sd: float, alpha: float, reps: int, seed: int, close: bool = False) -> float:
    """How often the real test (exact up to 20 documents, Monte Carlo beyond) is significant at `alpha` in the
    paper's direction (close: both one-sided tests of H0: Δ = ±1 reject at `alpha`, the TOST of finding 5,
    findings.Part.p_within) on `reps` simulated streams."""
    rng = np.random.default_rng(seed)
    hits = 0
    for r in range(reps):
        d = measured(*stream(rng, n, effect, sd), seed=r)
        hits += (Part("R0", "bias", None, 0, d, 1.0).p_within() < alpha and abs(d.diff) < 1) if close else \
            (d.p < alpha and d.diff > 0)
    return hits / reps


def enough(rate: float, reps: int) -> bool:
    """The rate is consistent with 80% power: at most three binomial standard errors below."""
    return rate >= POWER - 3 * math.sqrt(POWER * (1 - POWER) / reps)


def test_sigma_is_the_spread_of_the_documents_differences_from_the_randomisation_standard_error():
    """The exact test's se on 16 documents is exact: se·√n is the documents' root mean square difference, σ their
    standard deviation (about the mean), which is what the test's power follows."""
    rng = np.random.default_rng(5)
    base, method = stream(rng, 16, 1.0, 1.0)
    d = method[:, 0] - base[:, 0]
    diff = measured(base, method, seed=1)
    assert diff.se * 4 == pytest.approx(np.sqrt(np.mean(d ** 2)))
    assert power.sigma(Part("R0", "full", None, 1, diff), 16) == pytest.approx(np.std(d, ddof=1))


@pytest.mark.parametrize("effect,size", [
    (1.6, 10),   # up to 12 documents: the exact test's power, simulated
    (1.15, 14),  # the noncentral t from 13; the exact test decides up to 20
    (0.5, 54),   # Monte Carlo test
])
def test_the_documents_printed_give_80_percent_power_under_the_real_test(effect, size):
    """Per-document sd 1, the planted effect in the paper's direction, one part at α/7: the documents printed, then
    400 streams of that many documents through stats.compare: the test finds the effect in 80% of them (within three
    binomial standard errors)."""
    n = power.needed([part(effect, 1.0)], [effect], 40, HOLM, power.fewest_units(CFG, 7))
    assert n == size
    assert power.joint_power([part(effect, 1.0)], [effect], [1.0], n, HOLM) >= POWER
    reps = 400
    at_n = rejected(n, effect, 1.0, HOLM, reps, seed=1)
    assert enough(at_n, reps)
    if n > 40:  # half the documents (Monte Carlo again): clearly less often
        assert rejected(n // 2, effect, 1.0, HOLM, reps // 2, seed=2) < min(0.6, at_n - 0.2)


def test_the_t_test_alone_would_promise_too_much_near_the_floor():
    """At 9 documents and α/7 the exact test rejects only when every document goes the paper's way: a t test says
    87% for an effect of 1.6 σ, the test gives Φ(1.6)⁹ = 60%, and so does the simulation `--power` uses."""
    assert power.t_power(1.6, 1.0, 9, HOLM) > 0.85
    assert power.direction_power(1.6, 9, HOLM) == pytest.approx(norm.cdf(1.6) ** 9, abs=0.03)
    rate = rejected(9, 1.6, 1.0, HOLM, 200, seed=4)  # stats.compare: about 0.6 as well, not the t test's 0.87
    assert rate == pytest.approx(norm.cdf(1.6) ** 9, abs=0.1) and rate < 0.75


def test_never_fewer_documents_than_the_corrected_test_can_resolve():
    # exact test: smallest p 1/2ⁿ⁻¹; m · f · that < 0.05 from 6 (no correction), 9 (Holm over 7), 11 (× 5 methods)
    assert [power.fewest_units(CFG, k) for k in (1, 7, 35)] == [6, 9, 11]
    assert power.fewest_units(Settings(50, "document", 1, "auto", trials=100), 35) is None  # 35/101 ≥ 0.05 beyond 20
    huge = [part(30.0, 1.0)]  # the effect is found on very few documents …
    assert power.needed(huge, [30.0], 40, HOLM, power.fewest_units(CFG, 7)) == 9  # … but not fewer than the floor
    assert power.needed(huge, [30.0], 40, 0.05 / 35, power.fewest_units(CFG, 35)) == 11
    one = [part(0.0, 1.0)]
    small, big = (power.needed(one, [e], 40, HOLM, 9) for e in (0.5, 1.5))
    assert 9 <= big < small  # a larger effect needs fewer documents
    assert power.needed(one, [0.5], 40, 0.05, 6) < small  # the uncorrected level asks for fewer
    both = [part(0.0, 1.0), part(0.0, 1.0, plus="top")]
    assert power.needed(both, [0.5, 0.5], 40, HOLM, 9) > small  # two parts must both hold: joint power
    assert power.needed(one, [-0.5], 40, HOLM, 9) is None  # the paper's effect points the other way
    no_spread = Part("R0", "full", None, 1, Difference(0.5, (0, 1), 0, (0, 0), 0.5, se=0.0))
    broken = [part(math.nan, 1.0), part(0.5, None), no_spread]
    for p in broken:
        assert power.sigma(p, 40) is None and power.needed([p], [0.5], 40, HOLM, 9) is None


def test_detectable_is_the_difference_found_with_80_percent_power_not_the_half_width():
    for n in (10, 30):  # simulated exact test; t test
        d = power.detectable(2.0, n, HOLM)
        assert power.direction_power(d / 2.0, n, HOLM) == pytest.approx(POWER, abs=0.01)
        assert power.direction_power(0.9 * d / 2.0, n, HOLM) < POWER
    half_width = student_t.ppf(0.975, 29) * 2.0 / math.sqrt(30)  # the 95% interval's: found half of the time
    assert power.t_power(half_width, 2.0, 30, 0.05) == pytest.approx(0.5)
    assert power.detectable(2.0, 30, HOLM) > 1.5 * half_width


def test_closeness_power_at_a_true_difference_of_zero():
    """Finding 5's power grows with the documents; the documents printed are the first to reach 80% by the formula;
    every metric must hold; a spread too wide for ±1 ever to be shown is printed as more than a million."""
    sigmas = [0.75, 0.5, 1.5]
    way = [part(0.0, s, sign=0, plus="bias", metric=m) for s, m in zip(sigmas, ("BLEU", "R0", "R1"))]
    powers = [power.close_power(way, sigmas, n, HOLM) for n in range(13, 200)]
    assert powers[0] < 0.1 and all(a <= b for a, b in zip(powers, powers[1:])) and powers[-1] > 0.9
    n = power.needed(way, [0.0, 0.0, 0.0], 40, HOLM, 9)
    assert power.close_power(way, sigmas, n, HOLM) >= POWER > power.close_power(way, sigmas, n - 1, HOLM)
    # every metric must be close: each factor ≤ 1, so never fewer documents than the hardest metric alone
    assert n >= power.needed(way[2:], [0.0], 40, HOLM, 9)
    assert power.needed(way, [0.0, 1.5, 0.0], 40, HOLM, 9) is None  # the paper's own beyond ±1
    wide = [part(0.0, 5000.0, sign=0, plus="bias")]  # σ = 5,000 points: ±1 is never shown
    assert power.needed(wide, [0.0], 40, HOLM, 9) is None
    finding = Finding(5, "bias stays close", "", "inconclusive", [wide])
    assert power.row(finding, "Autodesk", {"R0": 40.0}, 40, 7, CFG).endswith("| over 1,000,000 |")


@pytest.mark.parametrize("sd,size", [(0.65, 10), (1.0, 18)])  # simulated exact test; the normal model
def test_closeness_power_against_the_real_test(sd, size):
    """One metric, per-document sd `sd`, true difference 0: at the documents printed, both one-sided tests of
    H0: Δ = ±1 reject at α/7 (finding 5's TOST) in about 80% of streams."""
    n = power.needed([part(0.0, sd, sign=0, plus="bias")], [0.0], 40, HOLM, 9)
    assert n == size
    reps = 300
    assert enough(rejected(n, 0.0, sd, HOLM, reps, seed=3, close=True), reps)


def test_a_row_never_crashes_and_says_why_it_has_no_number():
    scores = {"R0": 40.0, "R1": 30.0, "BLEU": 30.0}
    cases = {  # (part, the row's end)
        "no difference": (part(math.nan, 1.0), "| – (no σ: no randomisation test or no spread) |"),
        "no se": (part(-1.0, None, sign=-1), "| – (no σ: no randomisation test or no spread) |"),
        "other way": (part(1.0, 1.0, sign=+1), "| – (the paper: 0 or the other way) |"),
    }
    for name, (p, end) in cases.items():
        text = power.row(Finding(2, name, "", "inconclusive", [[p]]), "Autodesk", scores, 30, 7, CFG)
        assert text.endswith(end), text
    few = power.row(Finding(2, "few", "", "inconclusive", [[part(-1.0, 1.0, sign=-1, n=8)]]), "Autodesk",
                    scores, 8, 7, CFG)
    assert "| 0% | – (fewer than 9 documents) |" in few  # 8 documents cannot be significant at α/7
    assert power.row(Finding(6, "missing", "no fixed run", "cannot tell"), "Autodesk", scores, 30, 7,
                     CFG) == "| 6 | cannot tell | – | – | – | – | – |"


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
    table = out.split("Power on 13 documents")[1]
    rows = {int(line.split("|")[1]): [c.strip() for c in line.split("|")[2:-1]]
            for line in table.splitlines() if line.startswith("| ") and "#" not in line}
    assert sorted(rows) == list(range(1, 9))
    # the step-down's family: the findings with parts that the paper shows on TED (3, 4 and 7 are not the paper's)
    m = sum(verdict != "not the paper's" for verdict, *_ in rows.values())
    assert m == 5 and f"m = {m} findings in the step-down" in table
    assert {rows[k][1] for k in (1, 2, 5, 6)} == {"0.01 (α/5)"} and rows[8][1] == "0.002 (α/25)"  # 8: × 5 methods
    verdict, level, here, detectable, effect, needed = rows[2]
    assert verdict == "inconclusive" and effect == "full R0 -0.7"
    # the paper's effect is far below what 13 talks detect with 80% power at α/5, so its power here is small and
    # it needs many more talks than there are
    assert float(detectable) > 2 * 0.7 and int(here.rstrip("%")) < 20 and int(needed.replace(",", "")) > 4 * 13
    assert float(detectable) == pytest.approx(2.65, abs=0.01)
    # the columns tell one story: σ from "detectable", then the paper's effect has the power printed here and 80%
    # at the documents needed (to the rounding of the printed numbers), R0's tails held at its skew bound: the
    # randomisation test at the level whose held p is α/5
    def at(n: int) -> float:
        return randomisation_level(0.01, n, dict(SKEW)["R0"])

    sigma = float(detectable) / power.detectable(1.0, 13, at(13))
    assert power.direction_power(0.7 / sigma, 13, at(13)) == pytest.approx(int(here.rstrip("%")) / 100, abs=0.02)
    assert power.direction_power(0.65 / sigma, int(needed), at(int(needed))) < POWER <= \
        power.direction_power(0.75 / sigma, int(needed), at(int(needed)))  # the effect printed is -0.7
    assert rows[3][5].startswith("– (the paper")  # on TED the paper's own bias beat lasso's R0
    assert rows[5][3] == "–" and rows[5][4].startswith("0 assumed on each metric")  # closeness: its power here
    assert int(rows[5][5].replace(",", "")) > 13 and int(rows[8][5].replace(",", "")) >= 11  # 8: ≥ its floor
