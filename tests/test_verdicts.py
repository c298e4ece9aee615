"""The findings' verdicts and the tests behind them (adaptsim/report/findings.py, stats.py): each label where it must
appear, the same verdict under every seed, floors that include the corrections, the exact randomisation test
against a hand enumeration, its inverted interval against its p, and Holm's adjustment against a hand computation.
The power to show a finding: tests/test_power.py; the coverage simulation: tests/test_coverage.py."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from adaptsim.report import findings
from adaptsim.report.findings import Part
from adaptsim.report.stats import Difference, Series, Settings, compare, min_units, ratio

PAGES = Path(__file__).resolve().parents[1] / "docs" / "results" / "base-ende" / "runs" / "gnome_help_pages"


def part(diff: float, p: float, sign: int = 1, plus: str = "full") -> Part:
    return Part("R0", plus, None, sign, Difference(diff, (diff - 0.5, diff + 0.5), 0.0, (0.0, 0.0), p))


@pytest.mark.parametrize("parts,direction,p", [
    ([part(+1.0, 0.01)], +1, 0.01),
    ([part(-1.0, 0.01)], -1, 0.01),
    ([part(0.0, 1.0)], 0, 1.0),  # a tie is no direction
    # every part must hold: the largest p decides; one part against: Bonferroni over the parts
    ([part(+1.0, 0.01), part(+2.0, 0.03)], +1, 0.03),
    ([part(+1.0, 0.01), part(-2.0, 0.02)], -1, 0.04),
    ([part(+1.0, 0.01), part(0.0, 1.0)], 0, 1.0),  # one part tied, none against: a tie
])
def test_each_rule_gives_the_direction_and_the_p_of_its_test(parts, direction, p):
    got, got_p, decided, _ = findings.verdict([parts])
    assert (got, got_p) == (direction, pytest.approx(p))


def test_a_finding_that_can_hold_through_any_way_is_the_other_way_only_when_every_way_fails():
    held = [[part(+1.0, 0.01, plus="full")], [part(-1.0, 0.001, plus="top")]]
    assert findings.verdict(held)[:2] == (1, pytest.approx(0.02))  # 2 ways: p × 2
    against = [[part(-1.0, 0.01, plus="full")], [part(-1.0, 0.2, plus="top")]]
    assert findings.verdict(against)[:2] == (-1, pytest.approx(0.2))
    tied = [[part(-1.0, 0.01, plus="full")], [part(0.0, 1.0, plus="bias")]]  # a tied way fails, with no direction
    assert findings.verdict(tied)[:2] == (-1, pytest.approx(1.0))


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
    # all five up: the smallest p five documents allow, 2/32 = 0.0625, above 0.05, so nothing can be rejected and
    # the test's interval is unbounded
    up = base + np.c_[np.ones(5), np.zeros(5)]
    d = compare([Series("R0", ratio(100), [base, up])], np.arange(5), 5,
                Settings(1000, "document", 1, "exact")).differences[1]["R0"]
    assert d.p == pytest.approx(0.0625) and min_units("exact") == 6 and d.ci == (-np.inf, np.inf)


@pytest.mark.parametrize("test,n,counts", [("exact", 12, True), ("ar", 40, True), ("exact", 7, False),
                                            ("exact", 8, False)])
def test_the_interval_is_the_test_inverted(test, n, counts):
    """The interval excludes 0 exactly when p < 0.05, and its ends are where the test of H0: Δ = end stops
    rejecting: p at an end is ≥ 0.05, and just beyond it < 0.05 (shared denominators: the exact sign-flip test).
    `counts`: recall-like integer statistics; otherwise SBLEU-like sums of fractional scores in which some documents
    do not differ, so that swapping them gives |δ'| = |δ| up to rounding (p = 0.0625 once had an interval from
    +1.7e-13)."""
    rng = np.random.default_rng(n)
    for seed in range(12 if counts else 60):
        den = rng.integers(5, 30, n)
        base = np.c_[rng.binomial(den, 0.3), den].astype(float)
        method = np.c_[rng.binomial(den, 0.3 + 0.03 * (seed % 4)), den].astype(float)
        if not counts:
            base = np.c_[rng.random(n) * 3, np.ones(n)]
            method = base + np.c_[rng.choice([0, 0.1, 0.3], n), np.zeros(n)]
        d = compare([Series("R0", ratio(100), [base, method])], np.arange(n), n,
                    Settings(50, "document", seed, test, trials=4000)).differences[1]["R0"]
        assert (d.ci[0] > 0 or d.ci[1] < 0) == (d.p < 0.05)
        for end, out in ((d.ci[0], -1e-6), (d.ci[1], 1e-6)):
            assert d.p_at(end)[0] >= 0.05 > d.p_at(end + out * max(1.0, abs(end)))[0]


def test_monte_carlo_p_near_a_level_is_drawn_on_until_it_is_settled():
    """A p close to 0.05 on 40 documents: the first 10,000 trials cannot say which side it is on, so the test draws
    more until its Monte Carlo interval excludes 0.05; with the most trials capped low it says it is unsettled."""
    n = 40
    diffs = np.r_[np.full(26, 1.0), np.full(13, -1.0), 0.0]  # 26 of 40 up, 13 down: a sign test's p ≈ 0.055
    base = np.c_[np.full(n, 5.0), np.full(n, 10.0)]
    method = base + np.c_[diffs, np.zeros(n)]
    series = [Series("R0", ratio(100), [base, method])]
    settled = compare(series, np.arange(n), n, Settings(50, "document", 1, "auto")).differences[1]["R0"]
    assert settled.trials > 10_000 and not settled.straddles(0.05)
    capped = compare(series, np.arange(n), n, Settings(50, "document", 1, "auto", trials=2000)).differences[1]["R0"]
    assert capped.trials == 2000 and capped.straddles(0.05)


def _verdicts(out: str) -> dict[int, str]:
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| ") and "#" not in line
            and "--" not in line]
    return {int(r[0][2:]): r[-2] for r in rows}


def test_the_verdicts_do_not_move_with_the_seed(capsys):
    """The case that a Monte Carlo draw used to decide: GNOME help's 76 pages, finding 1 (full raises R1) at
    p ≈ 0.012, which Holm's step puts just above 0.05. 1,000 draws said "reproduced" under one seed in eight; the
    sequential test gives one answer whatever the seed."""
    from adaptsim.cli import main

    seen = []
    for seed in (1, 3):
        with pytest.raises(SystemExit) as exit_:
            main(["findings", str(PAGES), "--seed", str(seed)])
        assert exit_.value.code == 0
        seen.append(_verdicts(capsys.readouterr().out))
    assert seen[0] == seen[1] and seen[0][1] == "same direction"


def _stream(n: int, up: int, parts: int = 1):
    """A block-like set of findings with n documents in which full's R1 rises in `up` of them, for `_label`."""
    diffs = np.r_[np.full(up, 1.0), np.full(n - up, -1.0)]
    base = np.c_[np.full(n, 5.0), np.full(n, 10.0)]
    d = compare([Series("R1", ratio(100), [base, base + np.c_[diffs, np.zeros(n)]])], np.arange(n), n,
                Settings(50, "document", 1, "auto")).differences[1]["R1"]
    return [Part("R1", f"m{k}", None, +1, d) for k in range(parts)]


@pytest.mark.parametrize("n,label", [(6, "cannot tell"), (8, "cannot tell"), (9, "reproduced")])
def test_too_few_documents_for_the_corrected_test_cannot_tell(n, label, monkeypatch):
    """Seven findings adjusted by Holm: every document up gives the smallest p the exact test allows, 2/2ⁿ, and
    7 × 2/2ⁿ is below 0.05 only from 9 documents (6: 0.22; 8: 0.055). Below, the direction would be printed whatever
    the data, so the label is "cannot tell" and says why."""
    monkeypatch.setattr(findings, "paper_shows", lambda *a: True)
    family = [findings.Finding(k, "c", "e", None, "", [_stream(n, n)]) for k in range(1, 8)]
    findings._label(family, "TED", None, 1 / 2 ** (n - 1), n, "document")
    assert family[0].verdict == label
    if label == "cannot tell":
        assert family[0].why.startswith(f"too few documents: {n} give p ≥")


def test_an_any_method_finding_reaches_what_holm_allows_it(monkeypatch):
    """Five ways (finding 8's methods): its p is × 5, but Holm's step leaves it last at max(7, 5) × the smallest p
    when every other finding is at the smallest p, so 8 documents are too few and 9 enough, as for one part (a floor of
    7 × 5 would call 9 and 10 documents "cannot tell" beside an adjusted p of 0.027 and 0.014)."""
    monkeypatch.setattr(findings, "paper_shows", lambda *a: True)
    for n, label in ((8, "cannot tell"), (9, "reproduced"), (10, "reproduced")):
        ways = [_stream(n, n) for _ in range(5)]
        family = [findings.Finding(8, "c", "e", None, "", ways)] + [
            findings.Finding(k, "c", "e", None, "", [_stream(n, n)]) for k in range(1, 7)]
        findings._label(family, "TED", None, 1 / 2 ** (n - 1), n, "document")
        assert family[0].verdict == label


def test_a_weak_contrary_part_does_not_hide_strong_supporting_ones(monkeypatch):
    """Every part must hold: one part the other way without significance makes the finding "opposite direction"
    by the rule, and the table says that the other part was significantly the paper's way on its own."""
    monkeypatch.setattr(findings, "paper_shows", lambda *a: True)
    strong, weak = _stream(20, 20)[0], _stream(20, 9)[0]
    weak.plus = "top"
    f = findings.Finding(6, "c", "e", None, "", [[strong, weak]])
    findings._label([f], "TED", None, 1 / 2 ** 19, 20, "document")
    assert f.verdict == "opposite direction" and f.why.startswith("mixed: m0 R1 significantly the paper's way")


def test_a_tie_is_not_a_direction(monkeypatch):
    monkeypatch.setattr(findings, "paper_shows", lambda *a: True)
    tie = Part("R0", "full", None, -1, Difference(0.0, (-0.5, 0.5), 0.0, (0.0, 0.0), 1.0))
    f = findings.Finding(2, "c", "e", None, "", [[tie]])
    findings._label([f], "TED", None, 1 / 2 ** 19, 20, "document")
    assert f.verdict == "tie" and f.p == 1.0


def test_the_paper_not_showing_a_finding_is_its_own_label(monkeypatch):
    monkeypatch.setattr(findings, "paper_shows", lambda *a: False)
    f = findings.Finding(7, "c", "e", None, "", [_stream(20, 20)])
    findings._label([f], "TED", None, 1 / 2 ** 19, 20, "document")
    assert f.verdict == "not the paper's" and f.adjusted is None and "Table 5 (TED)" in f.why


def test_findings_refuse_a_bootstrap_test_in_one_line(capsys):
    """The verdicts' closeness, intervals and floors are the randomisation test's: --test ci is refused, not half
    applied."""
    from adaptsim.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["findings", str(PAGES), "--test", "ci"])
    assert exit_.value.code != 0
    assert "findings decides by the randomisation test" in capsys.readouterr().err


def test_a_p_still_straddling_a_level_at_the_most_trials_cannot_tell(monkeypatch):
    """Labels are computed at both ends of every Monte Carlo interval; where they differ the finding says so."""
    monkeypatch.setattr(findings, "paper_shows", lambda *a: True)
    near = Difference(1.0, (0.1, 1.9), 0.0, (0.0, 0.0), 0.049, p_range=(0.046, 0.052), trials=2000)
    f = findings.Finding(1, "c", "e", None, "", [[Part("R1", "full", None, +1, near)]])
    findings._label([f], "TED", None, 1 / 2001, 40, "document")
    assert f.verdict == "cannot tell" and f.why.startswith("Monte Carlo error: adjusted p between 0.0460 and 0.0520")
    clear = Difference(1.0, (0.1, 1.9), 0.0, (0.0, 0.0), 0.02, p_range=(0.017, 0.023), trials=2000)
    f = findings.Finding(1, "c", "e", None, "", [[Part("R1", "full", None, +1, clear)]])
    findings._label([f], "TED", None, 1 / 2001, 40, "document")
    assert f.verdict == "reproduced"


def test_closeness_is_tested_against_both_bounds(monkeypatch):
    """Finding 5's part: within ±1, its p is the larger of the tests of Δ = −1 and Δ = +1 (small only when its
    interval lies inside ±1); beyond, the test of the nearer bound. Four metrics well inside and one beyond: the
    finding goes the other way, at that metric's p × 5, and the close ones are named as "mixed"."""
    monkeypatch.setattr(findings, "paper_shows", lambda *a: True)
    n = 16
    base = np.c_[np.full(n, 50.0), np.full(n, 100.0)]

    def bias(shifts):
        return compare([Series("R0", ratio(100), [base, base + np.c_[shifts, np.zeros(n)]])], np.arange(n), n,
                       Settings(50, "document", 1, "exact")).differences[1]["R0"]

    inside = bias(np.tile([0.2, -0.1], n // 2))    # +0.05 points, every document within a fraction of a point
    beyond = bias(np.tile([3.0, 2.0], n // 2))     # +2.5 points
    part_in, part_out = Part("R0", "bias", None, 0, inside), Part("TER", "bias", None, 0, beyond)
    assert part_in.way() == 1 and part_out.way() == -1
    assert part_in.p() == pytest.approx(max(inside.p_at(-1.0)[0], inside.p_at(1.0)[0])) and part_in.p() < 0.001
    assert part_out.p() == pytest.approx(beyond.p_at(1.0)[0]) and part_out.p() < 0.001
    f = findings.Finding(5, "c", "e", None, "", [[part_in] * 4 + [part_out]])
    findings._label([f], "TED", None, 1 / 2 ** 15, n, "document")
    assert (f.direction, f.factor, f.verdict) == (-1, 5, "contradicted") and f.why.startswith("mixed: bias R0")
    f = findings.Finding(5, "c", "e", None, "", [[part_in] * 5])
    findings._label([f], "TED", None, 1 / 2 ** 15, n, "document")
    assert (f.direction, f.verdict) == (1, "reproduced")


def test_every_level_a_label_can_be_decided_at_is_drawn_on():
    """The levels are α over each Holm step and each Bonferroni factor up to finding 8's methods and 5's metrics."""
    at = findings.levels(8, findings.FACTOR)
    assert findings.FACTOR == 5 and max(at) == 0.05 and min(at) == pytest.approx(0.05 / 40)
    assert 0.05 / 7 in at and 0.05 / 15 in at and 0.05 / 36 not in at
