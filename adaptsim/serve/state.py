"""A serve session: the simulated post-editing loop (adaptsim/loop/simulation.py `loop`) cut where its translator acts.

Each segment goes through the steps of a simulation's (`Simulation.begin` and `commit`, the one definition of the
per-segment order): the run begins the segment the page shows (its document started, θ0 where `reset` says; the
method's moment of adaptation entered, tm's) and its source is translated by θ_{i−1}; while the translator edits,
`complete` runs the prefix-constrained search the simulated translator uses (`Model.completions`,
adaptsim/models/decode/prefix.py) on that same θ; on validation the run commits the validated text (the moment left, the
method adapted on (source, validated text), the step recorded: adaptsim/serve/human.py), on disk before the next
segment is translated.

A session killed at any point goes on with `resume=true serve.dir=DIR`: each run's steps are replayed as `resume=true`
replays a simulation's (`Simulation.recall`, `Simulation.replay_next`: the updates done again and checked against
the recorded perplexities), which restores θ exactly, and the page shows the first segment not validated. Before
anything is written, every run is checked by the one resume rule (adaptsim/launch/resume.py `check`: the settings, the
server's address aside, every file a setting names, the model, the data, the method's resources, and human.jsonl
against steps.jsonl).

Every change happens under one lock: the model is one, and a completion computed for one θ must not be served for
another (each answer names the position it was computed for; a request for another position is refused).

A validation adapts at most once: the segment leaves the page before the update, and anything that fails after it
(a full disk, the next segment's translation) stops the session (its run `failed`, one line to the page, every
later request refused) rather than leave a θ the records do not explain; resume=true then goes on from the records.

The translator may finish the session early (`finish`): each run's records then cover what was validated (its summary
says `ended_early`), nothing more is translated, and the session cannot be resumed.

The translator may correct a validation (`reopen`): the segment validated last comes back to the page, once — one step
back, not further — while the session is at the position after it, and only where that validation was this server's
(not one replayed by a resume) and did not complete its run's documents (a finished run's summary is final). The step
is taken back entirely, so that the adapted model never holds what the records no longer show: its lines are cut from
steps.jsonl (atomically; human.jsonl and hyps.txt follow it as at a resume), and θ_{i−1} is restored by the resume's
own mechanism — the run's learner built again from θ0 (the model loaded again, or a study's base model cloned again)
and the records left replayed (`Simulation.replay_next`, each update checked against its recorded perplexities).
That costs a replay of the run's steps, where keeping a copy of every θ_{i−1} would cost a model's memory per step.
The page gets the text that had been validated and the effort it had sent, and sends the sum with the corrected
validation; human.jsonl counts the reopenings of each step (`reopened`).

Every refusal is a `Refused` with a `code` (`CODES`: what the page tells the translator; the message is the technical
line, which the server's log keeps).
"""

from __future__ import annotations

import gc
import json
import logging
import re
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from adaptsim.data.types import fingerprint
from adaptsim.errors import UserError
from adaptsim.fingerprints import model_fingerprint
from adaptsim.launch import resume
from adaptsim.loop.learner import Learner, cloned_learners, load
from adaptsim.loop.settings import validate
from adaptsim.loop.simulation import ReplayRefused, Turn
from adaptsim.models import Translation
from adaptsim.records import (JobSummary, RecordWriter, job_fields, read_records, read_summary, write_bytes_atomic,
                              write_json_atomic)
from adaptsim.serve import study
from adaptsim.serve.human import COUNTS, HUMAN_FILE, HumanSimulation, effort_of

log = logging.getLogger("adaptsim")

COMMAND = "serve"
COMPLETIONS_KEPT = 256  # completions kept per segment (a prefix asked again is answered from them)
CLOSE_WAIT_S = 30.0  # how long closing waits for the work in progress before leaving the records as a kill would
# no text holds these: control characters (whitespace aside: the validated text's is collapsed) and halves of surrogate
# pairs, which JSON can carry and no tokenizer, file or TSV line can
NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


# The codes of refusals (each answer's `code`), by what the page does about them; the message is the technical line.
CODES = {
    "stale": "the position is not the session's: another tab validated, or the page is behind (reload)",
    "finished": "the session is finished (every segment validated, or Finish now)",
    "stopped": "the session stopped on a failure (resume=true goes on)",
    "token": "the session token is missing or wrong",
    "host": "the Host header is not one this server answers to",
    "origin": "a change not from the page: its Origin, Sec-Fetch-Site or Content-Type",
    "too_large": "the request or a text is over serve.max_request_bytes or serve.max_chars",
    "bad_request": "a malformed body or field, an empty text, control characters",
    "not_found": "no such address (404), or not with that method (405)",
    "not_reopenable": "api/reopen: not the segment validated last by this server, or its run is finished",
}


REOPENS_FILE = "reopens.json"  # <serve.dir>/reopens.json: position → the times its segment was reopened


def _read_reopens(path) -> dict:
    """reopens.json as written at each reopening ({} where there is none yet)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: unreadable ({type(e).__name__}: {e}); restore it, or remove it to count no "
                        "reopening") from None


class Refused(UserError):
    """A request that cannot be served as it is (stale, too long, malformed); nothing was changed. `status`: the
    HTTP status it is answered with; `code`: one of `CODES`."""

    def __init__(self, message: str, status: int = 400, code: str = "bad_request"):
        super().__init__(message)
        self.status, self.code = status, code


@dataclass
class MethodRun:
    """One method's run of the session: its documents (in the session's order), its session (model, method, θ0),
    its records, and where it is."""
    method: str
    cfg: DictConfig
    documents: list
    learner: Learner | None = None
    job: JobSummary | None = None
    writer: RecordWriter | None = None
    sim: HumanSimulation | None = None
    texts: list = field(default_factory=list)  # the validated texts, in order

    @property
    def done(self) -> int:
        """Segments validated."""
        return len(self.texts)

    @property
    def finished(self) -> bool:
        return self.done == sum(len(d) for d in self.documents)


@dataclass
class Pending:
    """The segment on the page: its run, the run's turn (`Simulation.begin`), θ_{i−1}'s translation and the
    completions of its prefixes."""
    run: MethodRun
    turn: Turn
    translation: Translation
    seconds: float
    completions: object
    cache: dict = field(default_factory=dict)


@dataclass
class Validation:
    """The segment validated last by this process, which `reopen` may take back: its run, its position, the text and
    the effort counts the page sent (given back to the page, which goes on counting from them)."""
    run: MethodRun
    position: int
    text: str
    effort: dict


def run_part(cfg: DictConfig) -> DictConfig:
    """The config without the serve block: what a run is given (adaptsim/loop/settings.py knows run's keys)."""
    return OmegaConf.masked_copy(cfg, [k for k in cfg if k != "serve"])


class ServeSession:
    """The session of one translator (module docstring). `cfgs`: one composed serve config per method, in
    serve.methods' order; `overrides`: the command line's, recorded with each run."""

    simulation = HumanSimulation  # a run's bookkeeping (serve's API: adaptsim/serve/client.py ClientSimulation)

    def __init__(self, cfgs: dict[str, DictConfig], overrides: list[str]):
        first = next(iter(cfgs.values()))
        self.cfg = first
        self.dir = Path(str(first.serve.dir))
        self.resume = bool(first.resume)
        self.max_chars = int(first.serve.max_chars)
        # the languages as configured (`model.source_lang`, `model.target_lang`; None where unset): the page's `lang`
        self.languages = {f"{side}_lang": None if (code := OmegaConf.select(first, f"model.{side}_lang")) in (None, "")
                          else str(code) for side in ("source", "target")}
        self.lock = threading.Lock()
        self.failed: str | None = None
        self.pending: Pending | None = None
        self.ended_early = False
        self.overrides = list(overrides)
        self.last: Validation | None = None  # the validation `reopen` may take back
        # position → the times its segment was reopened (human.jsonl `reopened`), kept on disk at each reopening, so
        # that a kill between a reopening and the segment's validation again does not lose the count
        self.reopens = {int(k): int(v) for k, v in _read_reopens(self.dir / REOPENS_FILE).items()}
        self.base = None  # a study's base model, never trained (its runs adapt clones): `reopen` clones it again
        self._open(cfgs)

    # -- opening: new, or resumed by replay ---------------------------------------------------------------------

    def _open(self, cfgs: dict[str, DictConfig]) -> None:
        for cfg in cfgs.values():
            validate(cfg, "serve")  # every setting, serve's own among them, by the one table (loop/settings.py)
        self._check_dir()
        model, documents = load(run_part(self.cfg))
        model.piece_index()  # completions spell the word begun: a vocabulary that cannot fails here, in one line
        self.skipped = dict(documents.skipped)
        self.documents = list(documents)
        methods = list(cfgs)
        if len(methods) > len(self.documents):
            raise UserError(f"serve.methods={methods}: {len(methods)} methods for {len(self.documents)} documents; "
                            "a study needs at least one document per method")
        self.dir.mkdir(parents=True, exist_ok=True)
        assignment, self.id = study.load_or_create(self.dir, [d.doc_id for d in self.documents], methods,
                                                   int(self.cfg.seed), int(self.cfg.serve.translator), self.resume,
                                                   self.overrides)
        self.runs = {m: MethodRun(m, cfgs[m], [d for d in self.documents if assignment[d.doc_id] == m])
                     for m in methods}
        self.order = [self.runs[assignment[d.doc_id]] for d in self.documents]  # the run of each document
        parts = [run_part(cfgs[m]) for m in methods]
        if len(methods) > 1:
            self.base = model
        learners = self._learners(model, parts)
        if self.resume:  # every run checked before any is written to
            for run, learner in zip(self.runs.values(), learners):
                self._check_resume(run, learner)
        try:
            for run, part, learner in zip(self.runs.values(), parts, learners):
                self._open_run(run, part, learner, self.resume)
            self._show_next()
        except BaseException:
            self.close()
            raise

    def _check_dir(self) -> None:
        """serve.dir holds this session to resume, or nothing yet for a new one; one line otherwise."""
        if self.dir.exists() and not self.dir.is_dir():
            raise UserError(f"serve.dir={self.dir}: a file is in the way")
        if self.resume and not (self.dir / study.FILE).is_file():
            raise UserError(f"serve.dir={self.dir}: no session to resume here (no {study.FILE})")
        if not self.resume and (self.dir / study.FILE).exists():
            raise UserError(f"serve.dir={self.dir}: holds another session; resume=true goes on with it, or choose "
                            "another serve.dir")

    def _learners(self, model, parts: list[DictConfig]) -> list[Learner]:
        """A learner per run: on the model itself for one method, on clones of it for a study (as lockstep's)."""
        if len(parts) == 1:
            part = parts[0]
            return [Learner(model, method_cfg=part.method, update_cfg=part["update"], reset=part.reset,
                            seed=part.seed)]
        return cloned_learners(model, parts)

    def _open_run(self, run: MethodRun, part: DictConfig, learner: Learner, resume: bool) -> None:
        """The run's records opened, new or resumed (its steps replayed: θ as they left it)."""
        run_dir = self.dir / run.method
        fields = job_fields(COMMAND, run.cfg, self.overrides)
        found = read_records(run_dir) if resume else {}
        recorded_bytes = found.get("summary.json")
        run.learner = learner
        run.job = JobSummary(run_dir, fields, resume=resume, found=found)
        if run.job.finished:  # the texts the page shows for its documents
            run.texts = [r["reference"] for r in _records(run_dir)]
            return
        run.writer = RecordWriter(run_dir, resume=resume)
        cfg = OmegaConf.create(OmegaConf.to_container(part, resolve=True))
        cfg.resume = resume  # (`reopen` replays a run of a session that was not resumed)
        run.sim = self.simulation(cfg, run.job, run.writer, learner, run.documents, self.skipped)
        if recorded_bytes is not None:  # the run's time in the earlier processes, as the last one recorded it
            timing = json.loads(recorded_bytes).get("timing") or {}
            run.sim.earlier_s = float(timing.get("total_s") or 0.0)
        run.sim.recall()
        if (run_dir / HUMAN_FILE).is_file():
            run.job.keep({HUMAN_FILE: (run_dir / HUMAN_FILE).read_bytes()})
        _keep_lines(run_dir / HUMAN_FILE, len(run.sim.recorded))
        try:
            while run.sim.replays_next:  # θ as the interrupted session left it
                run.sim.replay_next()
                run.texts.append(run.sim.validated[-1].reference)
        except ReplayRefused:
            run.job.give_back()  # summary.json, steps.jsonl, hyps.txt and human.jsonl as the resume found them
            raise
        if run.finished:  # killed between its last step and its summary
            self._finish(run)

    def _check_resume(self, run: MethodRun, learner: Learner) -> None:
        """The one resume rule (adaptsim/launch/resume.py `check`) for a run not finished, with what the session has
        at hand: its model's files, its method's share of the documents and its method's resources (tm's TM), and
        human.jsonl checked against its steps. (A finished run is left as it is: nothing of it is done again.)"""
        run_dir = self.dir / run.method
        previous = read_summary(run_dir)
        if previous.get("status") == "finished":
            return
        current = {"model_fingerprint": model_fingerprint(run.cfg.model.path),
                   "data_fingerprint": fingerprint(run.documents), "method_info": learner.method.info()}
        resume.check(run_dir, previous, run.cfg, COMMAND, current=current, beside_steps=(HUMAN_FILE,))

    def _finish(self, run: MethodRun) -> None:
        run.sim.finish()
        run.writer.close()
        run.writer = None

    # -- the segment on the page ---------------------------------------------------------------------------------

    def _where(self) -> tuple[int, int] | None:
        """(document index in the session, segment index in it) of the first segment not validated; None at the end."""
        seen = {m: 0 for m in self.runs}
        for k, doc in enumerate(self.documents):
            run = self.order[k]
            if run.done < seen[run.method] + len(doc):
                return k, run.done - seen[run.method]
            seen[run.method] += len(doc)
        return None

    def _show_next(self) -> None:
        """Translate the next segment with its run's θ_{i−1} (the loop's order: document start, moment, search)."""
        where = self._where()
        if where is None:
            self.pending = None
            return
        run = self.order[where[0]]
        with ExitStack() as stack:  # the turn's moment left again if the translation fails
            turn = stack.enter_context(run.sim.begin())
            source, decode = turn.seg.source, run.sim.cfg.decode
            t = time.perf_counter()
            translation = run.learner.model.translate(source, context=turn.pairs, **decode)
            seconds = time.perf_counter() - t
            completions = run.learner.model.completions(source, context=turn.pairs, **decode)
            stack.pop_all()
        self.pending = Pending(run, turn, translation, seconds, completions)

    @property
    def position(self) -> int:
        """Segments validated in the session so far: what the page names a segment by."""
        return sum(run.done for run in self.runs.values())

    def state(self) -> dict:
        """What the page shows (never the method: the study is blind)."""
        with self.lock:
            return self._state()

    @property
    def ended(self) -> str | None:
        """How the translator ended the session, if they did: `finished` (Finish now) or `complete` (every segment
        validated, every run finished); None while it goes on, or after a failure (resume=true goes on)."""
        if self.ended_early:
            return "finished"
        if not self.failed and all(run.finished and run.writer is None for run in getattr(self, "runs", {}).values()):
            return "complete"
        return None

    def _state(self) -> dict:
        total = sum(len(d) for d in self.documents)
        out = {"session": self.id, "position": self.position, "segments_total": total,
               "documents": len(self.documents), "max_chars": self.max_chars, "failed": self.failed, **self.languages,
               "reopenable": self._reopen_refusal() is None}
        if self.pending is None:
            return out | {"finished": True, "ended_early": self.ended_early}
        k, j = self._where()
        doc, run = self.documents[k], self.order[k]
        return out | {"finished": False, "document": k + 1, "segment": j,
                      "sources": [s.source for s in doc.segments],
                      "validated": run.texts[len(run.texts) - j:] if j else [],
                      "hypothesis": self.pending.translation.text}

    # -- requests ------------------------------------------------------------------------------------------------

    def _check(self, position) -> Pending:
        if not isinstance(position, int) or isinstance(position, bool):  # a malformed request, not a stale page
            raise Refused(f"position {position!r}: an integer (the segments validated so far)")
        if self.failed:
            raise Refused(f"the session stopped: {self.failed}", 409, "stopped")
        if self.pending is None:
            raise Refused("the session is finished: " + ("the translator finished it" if self.ended_early
                                                         else "every segment is validated"), 409, "finished")
        if position != self.position:
            raise Refused(f"position {position!r}: the session is at position {self.position} (segments validated "
                          "so far; reload the page)", 409, "stale")
        return self.pending

    def _text(self, text, what: str) -> str:
        if not isinstance(text, str):
            raise Refused(f"{what}: a string")
        if len(text) > self.max_chars:
            raise Refused(f"{what}: {len(text)} characters; at most serve.max_chars={self.max_chars}", 413,
                          "too_large")
        if bad := NOT_TEXT.search(text):
            raise Refused(f"{what}: character {bad.start() + 1} is U+{ord(bad.group()):04X}, a control character or "
                          "half of a surrogate pair, not text")
        return text

    def complete(self, position, prefix) -> dict:
        """The system's hypothesis that begins with `prefix` (the text before the cursor), by the prefix-constrained
        search of the simulated translator."""
        prefix = self._text(prefix, "prefix")
        with self.lock:
            pending = self._check(position)
            if prefix not in pending.cache:
                if len(pending.cache) >= COMPLETIONS_KEPT:
                    pending.cache.pop(next(iter(pending.cache)))
                pending.cache[prefix] = pending.completions.propose(prefix)
            return {"position": position, "prefix": prefix, "completion": pending.cache[prefix]}

    def validate(self, position, text, effort) -> dict:
        """Record the validated `text` as the segment's reference, with the page's `effort`, adapt on it, and show the
        next segment; nothing changes if any of it is refused, and a failure after the update stops the session
        (module docstring)."""
        text = " ".join(self._text(text, "text").split())
        if not text:
            raise Refused("text: the translation is empty")
        with self.lock:
            pending = self._check(position)
            run = pending.run
            measured, accepted = effort_of(effort, text, run.sim.evaluator.words.segmenter)
            self.pending = None  # from here on the segment is off the page: it is adapted on once at most
            self.last = None
            at = run  # the run whose work fails, if any
            try:
                run.sim.commit(pending.turn, pending.translation, pending.seconds, text, measured, accepted,
                               self.reopens.get(position, 0))
                run.writer.sync()  # on disk before the next segment is shown
                run.texts.append(text)
                self.last = Validation(run, position, text, sent_effort(effort))
                if run.finished:
                    self._finish(run)
                self._keep_time()
                where = self._where()
                at = self.order[where[0]] if where else run
                self._show_next()
            except Exception as e:  # a divergence under on_divergence=stop, a full disk, …: the session stops here
                raise self._stopped(e, at, f"validating segment {position + 1}",
                                    f"; resume=true serve.dir={self.dir} goes on") from None
            return self._state()

    def finish(self, position) -> dict:
        """The translator ends the session at the segment on the page (not validated): each run with validated segments
        is finished on them (the document it was in, as far as it went), a run with none is closed as `interrupted`,
        and nothing more is translated. A failure stops the session as in `validate`."""
        with self.lock:
            pending = self._check(position)
            self.pending = self.last = None
            at = pending.run
            try:
                pending.turn.close()
                # first the session's record (a kill from here on leaves a session that refuses to resume), then runs
                study.mark_ended(self.dir, self.position, sum(len(d) for d in self.documents))
                for run in self.runs.values():
                    at = run
                    if run.writer is not None:
                        self._finish_early(run)
                self.ended_early = True
            except Exception as e:
                raise self._stopped(e, at, "finishing the session") from None
            return self._state()

    def reopen(self, position) -> dict:
        """Take back the validation of the segment before `position` (module docstring): the state for that segment
        again, with `reopened`: the text that had been validated and the effort counts the page had sent for it. A
        failure while taking it back stops the session as in `validate`."""
        with self.lock:
            pending = self._check(position)
            if why := self._reopen_refusal():
                raise Refused(why, 409, "not_reopenable")
            last, self.pending, self.last = self.last, None, None
            # the text leaves the records: the log keeps it, should taking it back fail (the page has no draft of it)
            log.info("serve: segment %d is being reopened; the text validated for it was: %s", position, last.text)
            try:
                pending.turn.close()  # the segment on the page (maybe another run's) is left
                del pending  # (its completions hold the model, which one method's take-back loads again)
                self._take_back(last.run)
                self.reopens[last.position] = self.reopens.get(last.position, 0) + 1
                write_json_atomic(self.dir / REOPENS_FILE, {str(k): v for k, v in self.reopens.items()})
                self._show_next()
            except Exception as e:
                raise self._stopped(e, last.run, f"reopening segment {position}",
                                    f"; resume=true serve.dir={self.dir} goes on") from None
            log.info("serve: segment %d reopened (%d time(s)): its validation is taken back, θ restored by replay",
                     position, self.reopens[last.position])
            return self._state() | {"reopened": {"text": last.text, "effort": last.effort}}

    def _reopen_refusal(self) -> str | None:
        """Why api/reopen would be refused now; None if it would be accepted."""
        if self.failed or self.pending is None:
            return "the session is over"
        if self.last is None:
            return (f"position {self.position}: no segment is validated yet" if not self.position else
                    f"position {self.position}: only the segment validated last by this server can be reopened, one "
                    "step back (not one validated before a resume, nor the one before a reopened segment)")
        if self.last.run.writer is None:
            return (f"position {self.position}: its validation completed its run's documents, whose records are "
                    "final (summary.json); it cannot be reopened")
        return None

    def _take_back(self, run: MethodRun) -> None:
        """The run's last step taken back as a resume would find it without that step: its line cut from
        steps.jsonl (atomically; human.jsonl and hyps.txt are cut to it by the replay, as at a resume), then a
        learner from θ0 (the model loaded again, or a study's base cloned again) and the run's records left
        replayed (`_open_run`, resumed: each update checked against its recorded perplexities). The run's time, and
        its steps resumed from an earlier process (none unless the session was resumed), go on from where they were."""
        run_dir, part = self.dir / run.method, run_part(run.cfg)
        start, earlier, resumed = run.sim.timing.start, run.sim.earlier_s, run.sim.resumed_after
        run.writer.close()
        run.writer = run.sim = run.learner = None  # (one method's model is freed before it is loaded again)
        run.texts = []
        steps = run_dir / "steps.jsonl"
        write_bytes_atomic(steps, b"".join(steps.read_bytes().splitlines(keepends=True)[:-1]))
        if self.base is None:
            gc.collect()
            from adaptsim.models import load_model

            learner = self._learners(load_model(part.model, part.device), [part])[0]
        else:  # a clone of the study's untouched base, as every run of the study has: the base itself never trains
            learner = cloned_learners(self.base, [part])[0]
        self._open_run(run, part, learner, resume=True)
        # its time goes on, and only an earlier process's steps count as resumed (summary.json timing)
        run.sim.timing.start, run.sim.earlier_s, run.sim.resumed_after = start, earlier, resumed

    def _keep_time(self) -> None:
        """Every open run's time so far into its summary.json (`HumanSimulation.elapsed`): what a resume goes on
        from, should this process be killed."""
        for run in self.runs.values():
            if run.writer is not None:
                run.job.update(timing=run.sim.elapsed())

    def _stopped(self, e: Exception, at: MethodRun, doing: str, then: str = "") -> Refused:
        """The session stopped by a failure in the middle of a change: the run `at` failed (unless it had ended), every
        later request refused; the page's one line."""
        if not isinstance(e, UserError):
            log.exception("serve: %s failed", doing)
        self.failed = " ".join(str(e).split()) or type(e).__name__
        self.pending = self.last = None
        if at.job is not None and at.job.data.get("status") == "running":
            if at.sim is not None:
                at.job.data["timing"] = at.sim.elapsed()
            at.job.close("failed", self.failed)
        return Refused(f"the session stopped: {self.failed}{then}", 500, "stopped")

    def _finish_early(self, run: MethodRun) -> None:
        assigned = sum(len(d) for d in run.documents)
        if not run.done:  # nothing to finish a run on: closed, with the time it was open and why
            run.writer.close()
            run.writer = None
            run.job.data.update(ended_early={"validated": 0, "assigned": assigned}, timing=run.sim.elapsed())
            run.job.close("interrupted", "the translator finished the session before any of this method's segments")
            return
        d, j = run.sim.cursor
        if j:  # it ended in the middle of a document
            run.sim.end_document(run.documents[d], j)
        run.job.update(ended_early={"validated": run.done, "assigned": assigned}, segments=run.done,
                       documents=len(run.sim.per_doc))
        self._finish(run)

    def close(self, why: str = "the server stopped", wait: float = CLOSE_WAIT_S) -> None:
        """Leave the moment, close the files; a run not finished is `interrupted` (resume=true goes on with it). Work
        still in progress after `wait` seconds is left alone: the records stay as a kill leaves them (`running`, which
        resume=true also goes on with)."""
        if not self.lock.acquire(timeout=wait):
            log.warning("serve: still busy after %.0f s; the records are left as a kill leaves them, and resume=true "
                        "serve.dir=%s goes on", wait, self.dir)
            return
        try:
            if self.pending is not None:
                self.pending.turn.close()
                self.pending = None
            for run in getattr(self, "runs", {}).values():
                if run.writer is not None:
                    run.writer.close()
                    run.writer = None
                if run.job is not None and run.job.data.get("status") == "running":
                    if run.sim is not None:
                        run.job.data["timing"] = run.sim.elapsed()  # what a resume adds its time to
                    run.job.close("interrupted", f"{why}; resume=true serve.dir={self.dir} goes on")
        finally:
            self.lock.release()


def sent_effort(sent: dict) -> dict:
    """The effort counts the page sent for a validation (checked by `effort_of`), as `reopen` gives them back."""
    return {key: sent.get(key, 0) for key in (*COUNTS, "accepted_completions")} | {"seconds": sent.get("seconds", 0.0)}


def _records(run_dir: Path) -> list[dict]:
    from adaptsim.records import written_steps

    return written_steps(run_dir)[0]


def _keep_lines(path: Path, n: int) -> None:
    """The first `n` whole lines of `path` (a resumed run's human.jsonl, cut back to its steps)."""
    if not path.is_file():
        return
    lines = path.read_bytes().splitlines(keepends=True)
    write_bytes_atomic(path, b"".join(ln for ln in lines[:n] if ln.endswith(b"\n")))
