"""The findings' verdicts and the tests behind them (adaptsim/report/findings.py, stats.py, power.py): each label where
it must appear, the exact randomisation test against a hand enumeration, Holm's adjustment against a hand
computation, the power of a t test, and the coverage simulation as a command."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from adaptsim.report import findings, power
from adaptsim.report.findings import Part
from adaptsim.report.stats import Difference, Series, Settings, compare, min_units, ratio
from conftest import script_module


def part(diff: float, p: float, sign: int = 1, half: float = 0.5, plus: str = "full") -> Part:
    return Part("R0", plus, None, sign, Difference(diff, (diff - half, diff + half), 0.0, (0.0, 0.0), p))


@pytest.mark.parametrize("parts,label,p", [
    ([part(+1.0, 0.01)], "reproduced", 0.01),
    ([part(+1.0, 0.20)], "same direction", 0.20),
    ([part(-1.0, 0.20)], "opposite direction", 0.20),
    ([part(-1.0, 0.01)], "contradicted", 0.01),
    ([part(0.0, 1.0)], "opposite direction", 1.0),  # a tie is not the paper's direction, in every finding alike
    # every part must hold: the largest p decides; one part against: Bonferroni over the parts
    ([part(+1.0, 0.01), part(+2.0, 0.03)], "reproduced", 0.03),
    ([part(+1.0, 0.01), part(-2.0, 0.02)], "contradicted", 0.04),
    ([part(+1.0, 0.01), part(-2.0, 0.04)], "opposite direction", 0.08),
])
def test_each_label_follows_direction_and_significance(parts, label, p):
    got, got_p, decided = findings.verdict([parts])
    assert (got, got_p) == (label, pytest.approx(p))
    assert decided == "full R0"


def test_a_finding_that_can_hold_through_any_way_is_contradicted_only_when_every_way_is():
    held = [[part(+1.0, 0.01, plus="full")], [part(-1.0, 0.001, plus="top")]]
    assert findings.verdict(held)[:2] == ("reproduced", pytest.approx(0.02))  # 2 ways: p × 2
    against = [[part(-1.0, 0.01, plus="full")], [part(-1.0, 0.2, plus="top")]]
    assert findings.verdict(against)[:2] == ("opposite direction", pytest.approx(0.2))
    assert findings.verdict([[part(-1.0, 0.01)], [part(-1.0, 0.02)]])[:2] == ("contradicted", pytest.approx(0.02))


def test_closeness_labels():
    inside = [part(0.2, 1.0, 0, half=0.5), part(-0.3, 1.0, 0, half=0.5)]
    assert findings.closeness(inside) == "reproduced"
    assert findings.closeness([part(0.2, 1.0, 0, half=1.5)]) == "same direction"
    assert findings.closeness([part(1.4, 1.0, 0, half=0.6)]) == "opposite direction"
    assert findings.closeness([part(-2.0, 1.0, 0, half=0.5)]) == "contradicted"


def test_holm_against_a_hand_computation():
    # sorted 0.01, 0.03, 0.04, 0.5 → ×4, ×3, ×2, ×1 = 0.04, 0.09, 0.08→0.09 (monotone), 0.5
    assert findings.holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert findings.holm([0.3, 0.9]) == pytest.approx([0.6, 0.9]) and findings.holm([]) == []


def test_the_exact_test_against_a_hand_enumeration_at_five_documents():
    """R0 over 5 documents of 10 words each; the method finds one more word in four of them and one fewer in the
    fifth. Swapping a document's two runs flips the sign of its difference: 12 of the 32 swap patterns give
    |δ'| ≥ |δ| (no swap, the fifth alone, the fifth with any one of the first four, and the complements of these)."""
    base = np.array([[5, 10], [4, 10], [6, 10], [5, 10], [3, 10]], float)
    shift = np.array([1, 1, 1, 1, -1])
    method = base + np.c_[shift, np.zeros(5)]
    observed = abs(shift.sum()) * 100 / 50
    hand = sum(abs(sum(s * d for s, d in zip(signs, shift))) * 100 / 50 >= observed - 1e-12
               for signs in itertools.product((1, -1), repeat=5))
    result = compare([Series("R0", ratio(100), [base, method])], np.arange(5), 5,
                     Settings(1000, "document", 1, "exact"))
    assert hand == 12 and result.differences[1]["R0"].p == pytest.approx(hand / 32)
    # all five up: the smallest p five documents allow, 2/32 = 0.0625, above 0.05
    up = base + np.c_[np.ones(5), np.zeros(5)]
    result = compare([Series("R0", ratio(100), [base, up])], np.arange(5), 5, Settings(1000, "document", 1, "exact"))
    assert result.differences[1]["R0"].p == pytest.approx(0.0625) and min_units("exact") == 6


def test_auto_is_randomisation_below_100_documents_and_the_bootstrap_from_there():
    auto = Settings(100, "document", 1, "auto")
    assert [auto.effective(n) for n in (5, 20, 21, 99, 100)] == ["exact", "exact", "ar", "ar", "ci"]
    assert auto.signature(5).startswith("test:exact|") and auto.signature(100).startswith("test:ci|")


def test_power_follows_the_t_distribution_and_never_goes_below_what_the_test_resolves():
    n = 40
    one = [part(0.0, 1.0, half=1.0)]  # σ = (1.0 / 1.96) · √40 per document
    big = power.needed(one, [3.0], n, 1.0, 6)
    small = power.needed(one, [0.5], n, 1.0, 6)
    assert 6 <= big < n < small  # a larger effect needs fewer documents; never fewer than the test can resolve
    sigma = 1.0 / power.Z_ALPHA * np.sqrt(n)
    for m in (small - 1, small):  # small is the first n at which the t test's power reaches 80%
        reached = power.t_power(0.5, sigma, m) >= 0.8
        assert reached == (m == small)
    assert power.needed(one, [30.0], n, 1.0, 6) == 6  # a huge effect: still the test's floor
    both = [part(0.0, 1.0, half=1.0), part(0.0, 1.0, half=1.0, plus="top")]
    assert power.needed(both, [0.5, 0.5], n, 1.0, 6) > small  # joint power of two parts needs more
    assert power.needed(one, [-0.5], n, 1.0, 6) is None  # the paper's effect points the other way


def test_the_coverage_simulation_is_a_reproducible_command():
    coverage = script_module("scripts/coverage.py")
    base, other = coverage.per_document(coverage.SWEEP, "R0", ["none", "bias"])
    assert base.shape == (100, 2)  # the committed Business Central records: 100 articles
    rows = coverage.simulate(base, other, "R0", [5], replications=12, resamples=200, seed=3)
    again = coverage.simulate(base, other, "R0", [5], replications=12, resamples=200, seed=3)
    assert rows == again
    assert {r["scenario"] for r in rows} == {"planted", "null"} and all(r["randomised"] == 0 for r in rows)
    assert "| 5 | null | +0.00 |" in coverage.markdown(rows, "R0", ["none", "bias"], 12)
