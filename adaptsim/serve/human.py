"""A simulation's bookkeeping (adaptsim/loop/simulation.py `Simulation`) for a translator in the loop, and the effort
the page measures.

A simulation knows every reference before it starts; here each arrives when the translator validates it, and a
step's scores depend on the references after it too (the truecaser is trained on all of them, as a simulation's on
all of its own). So a step is scored once, when the run ends: until then its line holds what the step did and the
page's effort, not its scores; at the end one evaluator over all the validated references scores every step and
steps.jsonl is written again with the scores (atomically), so steps.jsonl, curves.csv and summary.json agree as a
simulation's do, and a session's work per step does not grow with its length. summary.json's data_fingerprint
becomes that of the documents with the validated texts, which the run also writes as references.tsv: `adaptsim run
dataset=tsv dataset.path=<run>/references.tsv` simulates the same documents with the translator's references (the
same data fingerprint, so `compare` takes both).

The effort is recorded in steps.jsonl's `effort` as a simulated translator's is (adaptsim/metrics/effort.py), so the
evaluator turns it into KSMR, KSR, WSR and MAR unchanged, with `level` and `costs` "human": KS the keystrokes typed
in the text box (a composed character: one), MA the mouse actions (clicks in it and on the page's buttons), WS the
words begun by typing, `decoder_calls` the completions the page asked for, `seconds` the translator's time on the
segment (paused time left out); chars and words are the validated text's (whitespace collapsed). Accepted completions
(Tab, Ctrl+.) have no field there: human.jsonl keeps them, one line per step, with the times the translator reopened
the segment before validating it as it stands (adaptsim/serve/state.py).

A session's run may span several processes (a kill, Ctrl-C, resume=true), and its `timing` is the session's: each
process's time for the run is kept in summary.json while it runs (`timing.total_s` so far, written at every validation
and when the process stops), a resume starts from it (`earlier_s`), and the finished run's `total_s` and
`segments_per_s` are over every process (a killed process's time counts up to its last validation).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

from adaptsim.data.types import Document, fingerprint
from adaptsim.errors import UserError
from adaptsim.loop.simulation import Simulation
from adaptsim.metrics import Evaluator, resolve_scope
from adaptsim.metrics.effort import Effort
from adaptsim.metrics.segmenters import Segmenter
from adaptsim.metrics.words import is_word
from adaptsim.records import write_bytes_atomic, written_steps

HUMAN_FILE = "human.jsonl"  # per step: the completions the page asked for and those accepted
HUMAN = "human"  # Effort.level and Effort.costs of a translator's measured effort
COUNTS = {"keystrokes": "KS", "mouse_actions": "MA", "word_strokes": "WS", "completion_requests": "decoder_calls"}
MAX_COUNT = 10**6  # a count above this is no typing
MAX_SECONDS = 7 * 24 * 3600.0


def effort_of(sent, text: str, segmenter: Segmenter | None = None) -> tuple[Effort, int]:
    """The page's measurements (a dict of counts and seconds) as an Effort on the validated `text`, and the accepted
    completions; one line naming the first bad field. The text's words are counted as the simulated translator counts
    them: whitespace words, or where the language is written without spaces its `segmenter`'s words that hold a letter
    or digit (adaptsim/loop/interactive.py `count`), so WSR, MAR and seconds per word are per word in every language."""
    if not isinstance(sent, dict):
        raise UserError("effort: an object of counts")
    values = {}
    for key in (*COUNTS, "accepted_completions"):
        v = sent.get(key, 0)
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_COUNT:
            raise UserError(f"effort.{key}={v!r}: a whole number from 0 to {MAX_COUNT}")
        values[key] = v
    seconds = sent.get("seconds", 0.0)
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 0 <= seconds <= MAX_SECONDS:
        raise UserError(f"effort.seconds={seconds!r}: seconds from 0 to {MAX_SECONDS:g}")
    words = len(text.split()) if segmenter is None else sum(map(is_word, segmenter.words(text)))
    effort = Effort(**{field: values[key] for key, field in COUNTS.items()}, chars=len(text), words=words,
                    level=HUMAN, costs=HUMAN, seconds=float(seconds))
    return effort, values["accepted_completions"]


class HumanSimulation(Simulation):
    """`Simulation` whose references are the translator's validated texts (module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.interactive = HUMAN  # every step has an effort: replayed from its record, summed in the summary
        self.interactive_costs = HUMAN  # (summary.json cost.interactive names the counting)
        self.validated: list = []  # the segments so far, each with its validated text as reference
        self.accepted = 0  # the completions accepted on the segment being committed (human.jsonl)
        self.reopened = 0  # the times the segment being committed was reopened (human.jsonl)
        self.earlier_s = 0.0  # the run's time in the session's earlier processes (module docstring)

    def elapsed(self) -> dict:
        """summary.json `timing` while the run goes on: its time in the session so far, every process's."""
        return {"total_s": self.earlier_s + time.perf_counter() - self.timing.start, "earlier_s": self.earlier_s}

    def revealed_segment(self, seg, record: dict):
        """A replayed step's segment with the text the translator validated as its reference."""
        return replace(seg, reference=record["reference"])

    def commit(self, turn, translation, seconds: float, reference: str, effort: Effort, accepted: int,
               reopened: int = 0) -> None:
        """`Simulation.commit` of the text the translator validated, with the page's `effort`; `accepted`: the
        completions accepted, and `reopened`: the times the segment was reopened, which human.jsonl records beside
        the step."""
        self.accepted, self.reopened = accepted, reopened
        super().commit(turn, translation, seconds, reference=reference, effort=effort)

    def human_line(self, seg, effort: Effort | None) -> dict:
        """The step's human.jsonl line: what the page sent that `effort` has no field for."""
        return {"index": self.index, "doc_id": seg.doc_id, "seg_id": seg.seg_id, "accepted_completions": self.accepted,
                "completion_requests": effort.decoder_calls, "reopened": self.reopened}

    def step(self, seg, translation, *args, write: bool = True, **kwargs) -> dict:
        """`Simulation.step`; a new step's human.jsonl line (`human_line`) is on disk before its steps.jsonl line (a
        resume cuts human.jsonl back to the steps)."""
        self.validated.append(seg)
        if write:
            append_line(self.writer.dir / HUMAN_FILE, self.human_line(seg, kwargs.get("effort")))
        return super().step(seg, translation, *args, write=write, **kwargs)

    def scored(self, i: int, translation, effort: Effort) -> tuple[dict, None]:
        """No scores before the run ends (module docstring): the line holds the page's effort, which a resume
        replays (none from serve's API)."""
        return ({"effort": effort.record()} if effort is not None else {}), None

    def finish(self, **timing) -> dict:
        """Every step scored once, over all the validated references (steps.jsonl written again with the scores, each
        line's keys in a simulation's order), references.tsv and the data fingerprint of the documents as validated,
        then `Simulation.finish` (summary.json `finished` last: a kill before it leaves a run to resume)."""
        metrics = self.cfg.metrics
        self.evaluator = Evaluator.from_config(metrics, [s.reference for s in self.validated],
                                               [s.doc_id for s in self.validated],
                                               subword_tokenize=self.learner.model.pieces,
                                               scope=resolve_scope(metrics.scope, self.cfg.reset))
        records, _ = written_steps(self.writer.dir)
        if len(records) != len(self.validated):
            raise UserError(f"{self.writer.dir}/steps.jsonl: {len(records)} steps for {len(self.validated)} segments")
        lines = []
        for i, record in enumerate(records):
            effort = Effort.of_record(record["effort"]) if "effort" in record else None  # (serve's API: none)
            scores = self.evaluator.segment(i, record["hypothesis"], record["pieces"], effort)
            lines.append(json.dumps({k: v for k, v in record.items() if k not in scores} | scores,
                                    ensure_ascii=False) + "\n")
        write_bytes_atomic(self.writer.dir / "steps.jsonl", "".join(lines).encode("utf-8"))
        write_references(self.writer.dir / "references.tsv", self.validated)
        documents: dict[str, list] = {}
        for s in self.validated:
            documents.setdefault(s.doc_id, []).append(s)
        self.job.data["data_fingerprint"] = fingerprint([Document(d, segs) for d, segs in documents.items()])
        total = self.elapsed()["total_s"]  # the session's, every process's (module docstring)
        return super().finish(**timing | {"total_s": total, "segments_per_s": len(self.hyps) / total,
                                          "earlier_s": self.earlier_s})


def write_references(path: Path, segments: list) -> None:
    """The documents as validated, as a tsv dataset (doc_id, seg_id, source, reference; adaptsim's tsv has no quoting:
    the texts' whitespace, tabs included, is collapsed to single spaces)."""
    rows = [["doc_id", "seg_id", "source", "reference"]]
    rows += [[" ".join(str(v).split()) for v in (s.doc_id, s.seg_id, s.source, s.reference)] for s in segments]
    write_bytes_atomic(path, "".join("\t".join(row) + "\n" for row in rows).encode("utf-8"))


def append_line(path: Path, record: dict) -> None:
    """One line appended and on disk; a failure (a full disk) is one line naming the file."""
    append_lines(path, [record])


def append_lines(path: Path, records: list[dict]) -> None:
    """Lines appended and on disk (one fsync); a failure (a full disk) is one line naming the file."""
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise UserError(f"{path}: cannot write ({e.strerror or e})") from None
