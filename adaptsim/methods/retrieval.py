"""What a method that keeps the translator's post-edits and retrieves from them adds to `Method` (tm, icl): the
loop asks `isinstance(method, Retrieval)`, so a method that only trains implements none of it, and one that retrieves
implements `revealed` and what it uses of the rest:

    method.revealed(source, reference, doc_id, step, hypothesis) -> once per pair, after its update: the post-edit
                                    is revealed (the method keeps it); `hypothesis`, where the loop gives it, is the
                                    machine translation the post-edit corrected (icl's glossary), else None
    method.matches(source)       -> before the segment is translated: earlier (source, reference, score) pairs, or an
                                    external TM's, to fine-tune on for a moment (tm's retrieval) with the rate and
                                    stopping rule `method.moment`; the learner adapts, translates and restores θ
                                    (adaptsim/loop/learner.py `adapted_for`)
    method.context(source, doc_id) -> before the segment is translated: earlier (source, post-edit, label) pairs to
                                    put into the prompt of a model that reads context (icl's retrieval), the label
                                    what the step's `context` records: the step that revealed the pair, or where
                                    else it comes from (icl: "tm line 12", "glossary")
"""

from __future__ import annotations


class Retrieval:
    """A method's retrieval side, mixed in beside `Method` (class Tm(Retrieval, Method))."""

    # the moment of adaptation on `matches`: its learning rate at a score of 100, and (ppl_threshold, max_updates);
    # None: no moment (summary.json `cost.temporary` only where there is one)
    moment: tuple[float, tuple[float, int]] | None = None

    def revealed(self, source: str, reference: str, doc_id: str | None = None, step: int | None = None,
                 hypothesis: str | None = None) -> None:
        raise NotImplementedError

    def matches(self, source: str) -> list[tuple[str, str, float]]:
        return []

    def context(self, source: str, doc_id: str) -> list[tuple[str, str, int | str | None]]:
        return []
