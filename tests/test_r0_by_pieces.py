"""scripts/experiments/r0_by_pieces.py: the R0 occurrences a run won and lost against the baseline."""

from __future__ import annotations

from conftest import script_module


def test_won_minus_lost_is_the_r0_difference_and_shows_a_loss_the_net_hides():
    r0 = script_module("scripts/experiments/r0_by_pieces.py")
    classes = [{"Datei": 0, "Ordner": 1}, {"Treiber": 1, "Drucker": 0, "Lager": 1}]
    base = [{"Datei": True, "Ordner": False}, {"Treiber": True, "Drucker": False, "Lager": True}]
    run = [{"Datei": False, "Ordner": True}, {"Treiber": True, "Drucker": True, "Lager": False}]
    wl = r0.won_lost(run, base, classes)
    # pieces seen: Datei lost, Drucker won; a new piece: Ordner won, Lager lost
    assert wl.tolist() == [[1, 1], [1, 1]]
    diff = r0.class_stats(run, classes)[:, :, 0].sum(axis=0) - r0.class_stats(base, classes)[:, :, 0].sum(axis=0)
    assert (wl[:, 0] - wl[:, 1]).tolist() == diff.tolist() == [0, 0]  # R0 unchanged, four words changed
