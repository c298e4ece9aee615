"""What a reader of a table must know about a run that its scores do not say: an external TM that held references of
the test stream and was kept (`method.external.on_overlap=warn`, adaptsim/methods/tm.py): its references were
seen before their segments were translated, so its scores are not a simulation without look-ahead."""

from __future__ import annotations


def note(run, label: str) -> str | None:
    """The note on `run` (shown as `label`), or None."""
    info = run.summary.get("method_info") or {}
    external = info.get("external") or (info.get("weights_info") or {}).get("external")  # tm's, or under icl
    overlap = (external or {}).get("overlap") or {}
    if overlap.get("on_overlap") == "warn" and overlap.get("leaks"):
        return (f"{label}: its external TM held {overlap['leaks']} of the test stream's references as targets, kept "
                "(method.external.on_overlap=warn): look-ahead, its references were seen before translating")
    return None


def notes(rows) -> list[str]:
    """The notes on `rows` of (label, run), in order."""
    return [n for n in (note(run, label) for label, run in rows) if n]
