"""The simulated post-editing loop (docs/design.md §1), what `run`, `bench` and lockstep sweeps do.

For each document, from θ0: translate segment i with θ_{i-1}, reveal the reference, adapt on the pair
(adaptsim/loop/learner.py, adaptsim/loop/update.py), score the hypothesis, log the step. One `loop` drives K runs of
one model
(a run alone is K = 1, `simulate`; a lockstep sweep K runs, adaptsim/loop/lockstep.py), and one `Simulation` per
simulation keeps what it records. Data flows one way: data → model → method/updater → metrics → outputs.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import statistics
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace

import torch
from omegaconf import DictConfig, OmegaConf

from adaptsim import allocator
from adaptsim.data.types import Segment, fingerprint
from adaptsim.errors import UserError
from adaptsim.fingerprints import model_fingerprint
from adaptsim.loop import interactive
from adaptsim.loop.learner import Learner, cloned_learners, describe_device, load
from adaptsim.loop.offsets import save_offsets
from adaptsim.loop.settings import validate
from adaptsim.loop.update import UpdateResult
from adaptsim.metrics import Evaluator, resolve_scope
from adaptsim.metrics.effort import Effort
from adaptsim.metrics.forgetting import Probe
from adaptsim.models import Model, Translation
from adaptsim.progress import progress
from adaptsim.records import JobSummary, RecordWriter, compress_records, speaking_for

log = logging.getLogger("adaptsim")
RSS_EVERY = 100  # segments between two readings of the resident memory (summary.json timing.rss_mb)
# a decoder-only model's prompt in a step's record: its tokens, the earlier steps it quoted (icl), the reference's
# log-probabilities under θ_{i−1} with those in the prompt (beside `logprobs`, without: CXMI of the context), and how
# many of the pairs the method chose were left out for the prompt to fit model.prompt.max_tokens (where any were)
PROMPT_FIELDS = ("prompt_tokens", "context", "logprobs_context", "dropped_pairs")


class ReplayRefused(UserError):
    """A resumed run's replayed step is not the recorded one (other software or arithmetic: what no setting names).
    Its records are given back as the resume found them (adaptsim/launch/resume.py), so the refusal changes nothing."""


def simulate(cfg: DictConfig, job: JobSummary, limit: int | None = None) -> dict:
    """One run alone over the dataset (the first `limit` segments if given) into the job's directory: `simulate_runs`
    with K = 1. Returns the summary; a failed run raises its one-line error."""
    simulate_runs([cfg], [job], limit)
    if job.data.get("status") == "failed":
        raise UserError(job.data["error"])
    return job.data


def simulate_runs(cfgs: list[DictConfig], jobs: list[JobSummary], limit: int | None = None, **timing) -> None:
    """K runs of one model on one stream, each into its job's directory, K ≥ 1 (alone: `simulate`; a lockstep sweep:
    adaptsim/loop/lockstep.py): the settings checked, each run's files opened, the data and the model loaded once, a
    learner per run (K > 1: on clones of the model that share the tensors no run trains, `cloned_learners`), `loop`,
    and each finished run's records compressed where its `compress` says. A run that fails is closed as failed and the
    others go on; `timing`: more fields for each summary's timing. Only the first run shows progress."""
    for cfg in cfgs[1:]:
        validate(cfg)  # the first: by `load`
    with ExitStack() as stack:
        writers = [stack.enter_context(RecordWriter(job.dir, resume=cfg.resume)) for cfg, job in zip(cfgs, jobs)]
        base, documents = load(cfgs[0], limit)
        one = cfgs[0]  # alone, the model itself (cfg.update is DictConfig.update)
        learners = cloned_learners(base, cfgs) if len(cfgs) > 1 else [
            Learner(base, method_cfg=one.method, update_cfg=one["update"], reset=one.reset, seed=one.seed)]
        skipped = dict(documents.skipped)
        runs = []
        for k, (cfg, job, writer, learner) in enumerate(zip(cfgs, jobs, writers, learners)):
            with speaking_for(job.dir):
                runs.append(Simulation(cfg if k == 0 else OmegaConf.merge(cfg, {"progress": False}), job, writer,
                                       learner, documents, skipped))
        loop(base, runs, **timing)
    for cfg, job in zip(cfgs, jobs):
        if cfg.compress and job.data.get("status") == "finished":
            compress_records(job.dir)


def loop(base: Model, runs: list[Simulation], **timing) -> None:
    """The simulated post-editing loop (docs/design.md §1) for K runs on one stream, K ≥ 1: at every segment each
    run begins it (`Simulation.begin`), the source is translated with every run's θ_{i−1} in one joint search over
    the runs' models (clones of `base`; adaptsim/loop/lockstep.py), a simulated translator corrects each hypothesis
    where
    `metrics.interactive` asks for it (on the same θ), and each run commits the revealed pair (`Simulation.commit`:
    adapt, record).

    With `resume: true` the steps an interrupted run wrote are not translated again: their updates are replayed
    (`Simulation.replay_next`: the same computation, checked against the recorded perplexities), which restores the
    adapted model exactly, whatever the method's state; the run joins the search at its first unwritten segment. A
    run whose step fails with a one-line error (its search or its translator, a divergence under on_divergence=stop,
    a replay that does not match, a document's end that cannot be written) is closed as failed and the others go on.
    `timing`: more fields for each summary's timing."""
    for run in runs:
        run.recall()
    active = list(runs)
    decode = runs[0].cfg.decode
    for _ in runs[0].segments:
        with ExitStack() as moments:  # each fresh run's moment, left by its commit (or here, if the search fails)
            turns = {}
            for run in active:
                if not run.replays_next:
                    turns[run] = moments.enter_context(run.begin())
            hyps, efforts, seconds = {}, {}, {}
            failed: dict[Simulation, UserError] = {}  # a run's search or translator failed: it alone stops
            if turns:  # each run with its own prompt (icl's context); its share of the searches' seconds
                source = next(iter(turns.values())).seg.source
                found = base.translate_runs([r.learner.model for r in turns], source, [t.pairs for t in turns.values()],
                                            **decode)
                for run, (hyp, seconds[run]) in zip(turns, found):
                    if isinstance(hyp, UserError):
                        failed[run] = hyp
                    else:
                        hyps[run] = hyp
            for run, turn in turns.items():
                try:
                    efforts[run] = None if run in failed else run.interact(turn.seg, hyps[run], turn.pairs)
                except UserError as e:
                    failed[run] = e
            for run in list(active):
                try:
                    if run in failed:
                        turns[run].close()
                        raise failed[run]
                    if run in turns:
                        run.commit(turns[run], hyps[run], seconds[run], effort=efforts[run])
                    else:
                        run.replay_next()
                except UserError as e:
                    with speaking_for(run.job.dir):
                        run.job.close("failed", str(e), refused=True)
                        if len(runs) > 1:  # alone, its command reports the error
                            log.error("%s: %s", run.job.dir, e)
                    active.remove(run)
                    if not active:
                        return
    for run in active:
        run.finish(**timing)


@dataclass(eq=False)
class Turn:
    """A segment a run has begun and not yet committed (the one at its cursor), the method's moment of adaptation
    entered for it (tm's; `moment`: its record, `Learner.adapted_for`'s), left on exit, and the earlier pairs its
    prompt quotes (icl's `context`: (source, post-edit, step)), after the first `dropped` the method chose, which did
    not fit."""
    seg: Segment
    moment: dict | None
    stack: ExitStack
    context: list[tuple[str, str, int | None]] = field(default_factory=list)
    dropped: int = 0

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The context as the model takes it: (source, post-edit) pairs, oldest first."""
        return [(s, t) for s, t, _ in self.context]

    def __enter__(self) -> Turn:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Leave the moment (idempotent: a committed turn has left it already)."""
        self.stack.close()


def own_log(method):
    """A `Simulation` method whose log lines are its run's (adaptsim/records/ `speaking_for`: in a lockstep sweep,
    that job's log only)."""
    @functools.wraps(method)
    def speaking(self, *args, **kwargs):
        with speaking_for(self.job.dir):
            return method(self, *args, **kwargs)
    return speaking


@dataclass
class Timing:
    """Where a run's time goes, step by step (summary.json `timing`, and `cost.step_ms_median`)."""
    start: float = field(default_factory=time.perf_counter)
    translate_s: list[float] = field(default_factory=list)  # per step
    update_s: list[float] = field(default_factory=list)  # per step
    step_s: list[float] = field(default_factory=list)  # per SGD step
    probe_s: float = 0.0  # the forgetting probe's, in all
    rss: dict[int, float | None] = field(default_factory=dict)  # resident MB every RSS_EVERY steps

    def add(self, translate_s: float, result: UpdateResult) -> None:
        self.translate_s.append(translate_s)
        self.update_s.append(result.seconds)
        self.step_s += result.step_s
        if len(self.translate_s) % RSS_EVERY == 0:
            self.rss[len(self.translate_s)] = resident_mb()

    def summary(self, cfg: DictConfig, probed: bool, resumed: int) -> dict:
        total = time.perf_counter() - self.start
        timing = {"total_s": total, "segments_per_s": len(self.translate_s) / total,
                  "threads": torch.get_num_threads(), "device": describe_device(cfg.device),
                  "allocator": allocator.active(),  # what ran, not what `allocator` asked for
                  "translate_median_s": statistics.median(self.translate_s),
                  "update_median_s": statistics.median(self.update_s), "translate_total_s": sum(self.translate_s),
                  "update_total_s": sum(self.update_s), "rss_mb": self.rss}
        if probed:
            timing["probe_total_s"] = self.probe_s
        if resumed:
            timing["resumed_after_steps"] = resumed
        return timing


class Simulation:
    """One simulation over a stream: the per-segment order (`begin`, `commit`, `replay_next`) and the bookkeeping —
    the evaluator, the step records, the timings and costs, and the summary — whether it runs alone, in lockstep
    with others or under a translator (adaptsim/serve/). The caller translates between `begin` and `commit`."""

    open_stream = False  # True: the segments arrive as the run goes (serve's API: its client sends them), none at first

    def __init__(self, cfg: DictConfig, job: JobSummary, writer: RecordWriter, learner: Learner, documents,
                 skipped: dict):
        self.cfg, self.job, self.writer, self.learner = cfg, job, writer, learner
        self.documents = list(documents)
        self.segments = [s for d in documents for s in d.segments]
        self.cursor = (0, 0)  # (document, segment in it) of the next step
        self.recorded: list[dict] = []  # an interrupted run's steps, replayed before anything new (`recall`)
        self.resumed_after = 0  # of them, those an earlier process wrote (serve's reopen replays this process's too)
        self.open: Turn | None = None  # the turn begun and not yet committed
        if not self.segments and not self.open_stream:
            raise UserError(f"dataset={cfg.dataset.name}: no segments to translate")
        model = learner.model
        learner.method.check_stream(self.segments)
        scope = resolve_scope(cfg.metrics.scope, cfg.reset)
        self.evaluator = Evaluator.from_config(cfg.metrics, [s.reference for s in self.segments],
                                               [s.doc_id for s in self.segments], subword_tokenize=model.pieces,
                                               scope=scope)
        job.update(reset=cfg.reset, metrics_scope=scope, data_fingerprint=fingerprint(documents),
                   data_read_fingerprint=getattr(documents, "read_fingerprint", None),
                   model_fingerprint=model_fingerprint(cfg.model.path),
                   documents=len(documents), segments=len(self.segments), skipped=skipped,
                   model_parameters=sum(p.numel() for p in model.net.parameters()),
                   generation_reset=model.reset_generation,
                   trainable_parameters=sum(p.numel() for p in learner.updater.params),
                   method_info=learner.method.info())  # at once: a resume checks what the run was given (tm's TM)
        log.info("%s: %d documents, %d segments, %d trainable parameters", cfg.method.name, len(documents),
                 len(self.segments), job.data["trainable_parameters"])
        self.hyps, self.pieces, self.per_doc = [], [], []
        self.cut = 0  # hypotheses cut at decode.max_length
        self.reasoning = 0  # replies of reasoning only (their hypothesis empty)
        self.interactive = interactive.mode_of(cfg.metrics.interactive)
        self.interactive_costs = cfg.metrics.interactive_costs  # how an effort is counted (serve: a person's)
        if self.interactive != "off":
            # a vocabulary the simulated translator cannot spell with fails before the first segment
            model.piece_index()
        self.efforts: list[Effort] = []  # what the simulated translator spent on each segment (metrics.interactive)
        # a decoder-only model's prompt per step: (tokens, context pairs, pairs left out for the budget)
        self.prompts: list[tuple[int, int, int]] = []
        self.probe = Probe.from_config(cfg.metrics.get("probe"), cfg.model.source_lang, cfg.model.target_lang,
                                       cfg.metrics.get("tokenize"))  # BLEU tokenised as the stream's
        if self.probe is not None:
            self.probe.fit(model.over_length, cfg.dataset, cfg.model.source_lang,
                           cfg.model.target_lang)
        self.probes: list[dict] = []  # the probe's points so far (metrics.probe), and the one for the next step
        self.probed: dict | None = None
        self.unwritten_curves: list[dict] = []  # curves.csv rows since its last write (`step`)
        self.curves_started = False  # whether this process has written curves.csv (then it appends)
        self.divergences = 0
        self.timing = Timing()
        self.bar = progress(len(self.segments), cfg.method.name, "seg", cfg.progress, cfg.progress_every)

    @property
    def index(self) -> int:
        return len(self.hyps)

    def where(self, seg) -> str:
        return f"document {seg.doc_id}, segment {seg.seg_id} (step {self.index + 1})"

    @own_log
    def recall(self) -> None:
        """The steps an interrupted run in this directory wrote (`resume: true`; none otherwise), checked to fit the
        data, to be replayed before anything new; their number goes into the summary as
        `timing.resumed_after_steps`. (That the settings, the model, the data and tm's TM are the interrupted run's
        was checked before anything was written: adaptsim/launch/resume.py.)"""
        if not self.cfg.resume:
            return
        done, found = self.writer.resume_steps()
        self.job.keep(found)
        if len(done) > len(self.segments):
            raise UserError(f"{self.writer.dir}: cannot resume: it holds {len(done)} steps, the data has "
                            f"{len(self.segments)}")
        if any("pieces" not in record for record in done):
            raise UserError(f"{self.writer.dir}: cannot resume: its steps were written by an adaptsim that did not "
                            "record the generated pieces; run it again in a new directory")
        if done:
            log.info("%s: resuming after %d steps", self.cfg.method.name, len(done))
        self.recorded = done
        self.resumed_after = len(done)

    @property
    def replays_next(self) -> bool:
        """Whether the next step is one an interrupted run wrote (`replay_next`, not `begin`)."""
        return self.index < len(self.recorded)

    def _next(self) -> Segment:
        """The next step's segment, its document started at its first segment (θ0 where `reset` says). One turn at a
        time: a caller that begins another, or replays, before committing the one begun is a bug."""
        if self.open is not None:
            raise RuntimeError(f"{self.writer.dir}: step {self.index + 1} was begun and not committed")
        if self.index == len(self.segments):
            raise RuntimeError(f"{self.writer.dir}: the stream's {self.index} steps are done; nothing to begin")
        d, j = self.cursor
        if j == 0:
            self.learner.start_document(d)
        return self.documents[d].segments[j]

    def _adapt(self, seg: Segment, hypothesis: str,
                pairs: Sequence[tuple[str, str]] = ()) -> tuple[UpdateResult, bool]:
        """The method's update on the revealed pair (`Learner.adapt`): without context, or after the earlier `pairs`
        the prompt quoted where the method trains with them (icl's `weights_with_prompt`); the method is then given
        the pair with the machine translation it corrected (icl's glossary)."""
        return self.learner.adapt(self.learner.model.pair(seg.source, seg.reference, context=pairs), self.where(seg),
                                  (seg.source, seg.reference, seg.doc_id, self.index, hypothesis))

    @property
    def _trains_with_prompt(self) -> bool:
        """Whether the update reads the pair after the prompt's earlier pairs (icl's `weights_with_prompt`)."""
        return bool(getattr(self.learner.method, "weights_with_prompt", False))

    @own_log
    def begin(self) -> Turn:
        """The next segment begins: its document starts if it is new, θ as the stream has left it is probed where
        `metrics.probe` says (adaptsim/metrics/forgetting.py), and the method's moment of adaptation for the source
        is entered (tm's), before the source is translated, and the earlier pairs its prompt quotes are chosen (icl's
        context). The turn leaves the moment on exit or at `commit`. The first one is where the job began its work
        (`JobSummary.began`: a failure from here on is the run's, recorded as such)."""
        self.job.began()
        seg = self._next()
        if self.probe is not None and self.probe.due(self.index):
            self.probed = self._probe()
        stack = ExitStack()
        try:
            moment = stack.enter_context(self.learner.adapted_for(seg.source))
            self.open = Turn(seg, moment, stack, *self._context(seg))
        except BaseException:
            stack.close()
            raise
        stack.callback(setattr, self, "open", None)  # the turn is over once its moment is left, however
        return self.open

    @own_log
    def commit(self, turn: Turn, translation: Translation, seconds: float, reference: str | None = None,
               effort: Effort | None = None) -> None:
        """The turn's segment ends: the moment is left, the method adapts on (source, reference) — the data's
        reference, or the one a translator validated — and the step is recorded (`step`): the hypothesis the turn's
        θ translated in `seconds`, and what correcting it cost (`effort`, if a translator works)."""
        if turn is not self.open:
            raise RuntimeError(f"{self.writer.dir}: step {self.index + 1}: committing a turn that is not the open one")
        turn.close()
        if turn.moment:  # counted with its step (a turn left uncommitted was none: Learner.add_moment)
            self.learner.add_moment(turn.moment)
        seg = turn.seg if reference is None else replace(turn.seg, reference=reference)
        model = self.learner.model
        prompt = None
        if model.reads_context:  # the prompt's size, and the reference scored by θ_{i−1} with its context (CXMI)
            prompt = {"prompt_tokens": model.prompt_tokens(seg.source, turn.pairs)}
            if turn.context:
                prompt |= {"context": [step for _, _, step in turn.context],
                           "logprobs_context": self.learner.logprobs(model.pair(seg.source, seg.reference,
                                                                                context=turn.pairs))}
            if turn.dropped:
                prompt["dropped_pairs"] = turn.dropped
        trained = turn.pairs if self._trains_with_prompt else ()
        # `logprobs` are the pair's without context (the history's CXMI); an update after the prompt reads it with
        without = self.learner.logprobs(model.pair(seg.source, seg.reference)) if trained else None
        result, diverged = self._adapt(seg, translation.text, trained)
        if without is not None:
            result = replace(result, logprobs=without)
        self.step(seg, translation, seconds, result, diverged, effort=effort, moment=turn.moment, prompt=prompt)
        self._advance()

    @own_log
    def replay_next(self) -> None:
        """The next step an interrupted run wrote, done again: the update on its pair, which must be the recorded
        one bit for bit (anything else means other settings, threads or software than the interrupted run's), and
        the step recorded as it was, nothing written: its hypothesis scored again must give the scores its line holds
        (the hypothesis is not translated again, so an edited line would otherwise go into the finished run)."""
        record = self.recorded[self.index]
        seg = self.revealed_segment(self._next(), record)
        # (the pairs the prompt quoted, chosen again: the memory is as it was, rebuilt by the replayed steps)
        trained = [(s, t) for s, t, _ in self._context(seg)[0]] if self._trains_with_prompt else ()
        result, diverged = self._adapt(seg, record["hypothesis"], trained)
        same_segment = (record["doc_id"], record["seg_id"], record["source"], record["reference"]) == (
            seg.doc_id, seg.seg_id, seg.source, seg.reference)
        replayed = (result.updates, result.ppl_before, result.ppl_after, diverged)
        recorded = (record["updates"], record["ppl_before"], record["ppl_after"], record.get("diverged", False))
        if not same_segment or replayed != recorded:
            what = ("another segment" if not same_segment
                    else f"updates/perplexities {replayed[:3]}, recorded {recorded[:3]}")
            raise ReplayRefused(f"{self.writer.dir}: cannot resume: step {record['index'] + 1} replays to {what}; "
                                "resume with the interrupted run's settings, threads and software")
        # the translator's level and counting are the recorded run's: resume.check compared every setting
        effort = Effort.of_record(record["effort"]) if self.interactive != "off" and "effort" in record else None
        if "moment" in record:
            self.learner.add_moment({**record["moment"], "seconds": record.get("moment_s", 0.0)})
        self.probed = record.get("probe")  # the interrupted run's probe before this step
        prompt = {k: record[k] for k in PROMPT_FIELDS if k in record} or None
        scores = self.step(seg, Translation(record["hypothesis"], record["pieces"], record.get("cut", False),
                                       record.get("reasoning", False)),
                           record["translate_s"], result, diverged, write=False, effort=effort, prompt=prompt)
        rescored = json.loads(json.dumps(scores))  # (as the line holds them: tuples as lists)
        differ = sorted(k for k, v in rescored.items() if record.get(k, v) != v)
        if differ:  # the hypothesis (or its scores) is not what the step recorded: its line was changed
            raise ReplayRefused(f"{self.writer.dir}: cannot resume: step {record['index'] + 1}'s hypothesis scores "
                                f"{', '.join(f'{k} {rescored[k]}' for k in differ[:3])}, recorded "
                                f"{', '.join(f'{k} {record[k]}' for k in differ[:3])}: its record was changed "
                                "since it was written; restore it, or start a new run in another directory")
        self._advance()

    def revealed_segment(self, seg: Segment, record: dict) -> Segment:
        """The segment of a replayed step as it was revealed: the data's (a translator's run: the recorded text)."""
        return seg

    def _context(self, seg: Segment) -> tuple[list[tuple[str, str, int | None]], int]:
        """The earlier pairs the method quotes before `seg` (icl), as many as fit, and how many were left out: a prompt
        may take at most what a source may (`Model.max_tokens`: a decoder-only model's prompt budget, at most half its
        position table), so the first pairs of the prompt's order (the oldest, or the weakest matches) are left out
        until it fits (`Model.fitting`); the step records the ones quoted and the number left out."""
        retrieval, model = self.learner.retrieval, self.learner.model
        context = retrieval.context(seg.source, seg.doc_id) if retrieval else []
        dropped = model.fitting(seg.source, [(s, t) for s, t, _ in context]) if context else 0
        return context[dropped:], dropped

    def _advance(self) -> None:
        d, j = self.cursor
        if j + 1 < len(self.documents[d]):
            self.cursor = (d, j + 1)
        else:
            self.end_document(self.documents[d])
            self.cursor = (d + 1, 0)

    def _probe(self) -> dict:
        start = time.perf_counter()
        point = {"after": self.index, **self.probe.score(self.learner.model, self.cfg.decode)}
        self.timing.probe_s += time.perf_counter() - start
        return point

    @own_log
    def interact(self, seg, translation: Translation, context: Sequence[tuple[str, str]] = ()) -> Effort | None:
        """The simulated translator's corrections of this hypothesis (`metrics.interactive`; None when off), with
        the model and the prompt's context as it translated it."""
        if self.interactive == "off":
            return None
        system = self.learner.model.completions(seg.source, context=context, **self.cfg.decode)
        return interactive.simulate(self.interactive, self.interactive_costs, seg.reference,
                                    translation.text, system.propose, self.cfg.metrics.max_corrections,
                                    lambda: system.calls, self.evaluator.words.segmenter)

    def step(self, seg, translation: Translation, seconds: float, result: UpdateResult, diverged: bool,
             write: bool = True, effort: Effort | None = None, moment: dict | None = None,
             prompt: dict | None = None) -> dict:
        """Record segment `seg`: its hypothesis (translated in `seconds`), what correcting it cost the simulated
        translator (`effort`, if one works), the adaptation on its pair, what the moment's adaptation before
        translating it did (`moment`: tm's retrieval record of this step, `Learner.adapted_for`'s; the step's
        line keeps it, so a resumed run's summary counts the replayed steps' moments too), and a decoder-only
        model's prompt (`PROMPT_FIELDS`: its tokens, the earlier steps it quoted, the reference's log-probabilities
        with them). Returns its scores (a replayed step's are checked against its line)."""
        i = self.index
        hyp, hyp_pieces = translation.text, translation.pieces
        self.timing.add(seconds, result)
        self.hyps.append(hyp)
        self.pieces.append(hyp_pieces)
        self.divergences += diverged
        self.cut += translation.cut
        self.reasoning += translation.reasoning
        if effort is not None:
            self.efforts.append(effort)
        if prompt is not None:
            self.prompts.append((prompt["prompt_tokens"], len(prompt.get("context", ())),
                                 prompt.get("dropped_pairs", 0)))
        probed, self.probed = self.probed, None
        if probed is not None:
            self.probes.append(probed)
        scores, running = self.scored(i, translation, effort)
        if write:
            line = {"doc_id": seg.doc_id, "seg_id": seg.seg_id, "index": i, "source": seg.source,
                    "reference": seg.reference, "hypothesis": hyp, "pieces": hyp_pieces, "updates": result.updates,
                    "ppl_before": result.ppl_before, "ppl_after": result.ppl_after}
            if diverged:  # the optional fields only where they say something, each in its place
                line["diverged"] = True
            line |= {"logprobs": result.logprobs, "ref_pieces": self.learner.model.label_pieces(seg.reference)}
            if translation.cut:
                line["cut"] = True
            if translation.reasoning:
                line["reasoning"] = True
            if moment:
                line |= {"moment": {k: v for k, v in moment.items() if k != "seconds"}, "moment_s": moment["seconds"]}
            if prompt is not None:
                line |= prompt
            if probed is not None:
                line["probe"] = probed
            self.writer.step(line | {"translate_s": seconds, "update_s": result.seconds} | scores)
        if running is not None:
            self.unwritten_curves.append({"segment": self.index, "doc_id": self.evaluator.doc_ids[i], **running})
            if self.index % RSS_EVERY == 0 and write:  # an interrupted run keeps its curves this far: the first write
                # (after any replayed steps) replaces what an earlier process wrote, later ones append
                self.writer.curves(self.unwritten_curves, append=self.curves_started)
                self.unwritten_curves, self.curves_started = [], True
            self.bar.set_postfix(_headline(running), refresh=False)
        self.bar.update()
        return scores

    def scored(self, i: int, translation: Translation, effort: Effort | None) -> tuple[dict, dict | None]:
        """Step i's scores for its line, and the running scores after it: the curve's next row (what `finish` writes
        whole) and the bar's."""
        scores = self.evaluator.segment(i, translation.text, translation.pieces, effort)
        return scores, self.evaluator.running()

    def end_document(self, doc, segments: int | None = None) -> None:
        """The document's record; `segments`: how many of its segments the run went through, if not all (a serve
        session the translator finished in the middle of a document)."""
        learner = self.learner
        self.per_doc.append({"doc_id": doc.doc_id, "segments": len(doc) if segments is None else segments,
                             "changed_parameters": learner.theta0.changed(), "state_bytes": learner.state_bytes()})
        if self.cfg.save_offsets:  # the document's adapted offsets θ − θ0, changed groups only
            self.per_doc[-1]["offsets_bytes"] = save_offsets(learner.theta0, self.writer.dir / "offsets",
                                                                str(doc.doc_id))

    @own_log
    def finish(self, **more_timing) -> dict:
        """Curves and corpus scores written; the summary filled in and returned."""
        self.bar.close()
        if self.probe is not None:  # the final θ's
            self.probes.append(self._probe())
            self.job.update(probe={**self.probe.info(), "points": self.probes})
        timing = self.timing.summary(self.cfg, self.probe is not None, self.resumed_after) | more_timing
        efforts = self.efforts or None
        self.writer.curves(self.evaluator.curves(self.hyps, self.pieces, efforts))
        corpus = self.evaluator.corpus(self.hyps, self.pieces, efforts)
        empty = self._empty_hypotheses()
        self.job.update(
            status="finished", scores=corpus["scores"], counts=corpus["counts"], signatures=corpus["signatures"],
            divergences=self.divergences, cut_hypotheses=self.cut, empty_hypotheses=empty, per_document=self.per_doc,
            changed_parameters_max=max(p["changed_parameters"] for p in self.per_doc),
            method_info=self.learner.method.info(), cost=self._cost(), timing=timing)
        log.info("finished %s in %.1f s: %s; outputs in %s", self.cfg.method.name, timing["total_s"],
                 {k: round(v, 2) for k, v in self.evaluator.running().items() if v is not None}, self.writer.dir)
        return self.job.data

    def _empty_hypotheses(self) -> dict:
        """summary.json `empty_hypotheses`: hypotheses with no word (an empty or whitespace reply, a reply that ended
        before its text) and replies of reasoning only, warned about: each scores as a translation that says nothing."""
        empty = sum(not h.strip() for h in self.hyps) - self.reasoning
        if empty or self.reasoning:
            log.warning("%s: %d of %d hypotheses are empty%s; each is scored as a translation with no word",
                        self.cfg.method.name, empty + self.reasoning, len(self.hyps),
                        f" ({self.reasoning} replies of reasoning only: ask without it, e.g. model.prompt.chat_vars."
                        "enable_thinking=false, or let the reply run on with model.prompt.stop=end)"
                        if self.reasoning else "")
        return {"empty": empty, "reasoning_only": self.reasoning}

    def _cost(self) -> dict:
        """summary.json `cost`: what adapting took per step and what the adapted state weighs."""
        step_s, per_doc = self.timing.step_s, self.per_doc
        cost = {"step_ms_median": 1000 * statistics.median(step_s) if step_s else None, "steps": len(step_s),
                "state_bytes_median": statistics.median(p["state_bytes"] for p in per_doc),
                "state_bytes_max": max(p["state_bytes"] for p in per_doc)}
        if self.learner.retrieval and self.learner.retrieval.moment:  # tm's moments, zeros too
            cost["temporary"] = self.learner.temporary
        if self.prompts:  # a decoder-only model's prompts (icl's cost is their length) and its translations' seconds
            tokens, pairs, dropped = zip(*self.prompts)
            cost["prompt"] = {"tokens_per_segment": statistics.mean(tokens), "tokens_max": max(tokens),
                              "context_pairs_per_segment": statistics.mean(pairs), "dropped_pairs": sum(dropped),
                              "translate_s_per_segment": statistics.mean(self.timing.translate_s)}
        if self.efforts:
            metrics = self.cfg.metrics
            cost["interactive"] = interactive_cost(self.efforts, self.interactive, self.interactive_costs,
                                                   metrics.max_corrections)
        return cost


def interactive_cost(efforts: list[Effort], mode: str, costs: str, max_corrections: int) -> dict:
    """What the simulated translator's sessions cost the system: prefix searches and seconds per segment (with the
    settings that make runs' efforts comparable)."""
    n = len(efforts)
    calls, seconds = [e.decoder_calls for e in efforts], [e.seconds for e in efforts]
    return {"mode": mode, "costs": costs, "max_corrections": max_corrections, "decoder_calls_total": sum(calls),
            "decoder_calls_per_segment": sum(calls) / n, "seconds_total": sum(seconds),
            "seconds_per_segment": sum(seconds) / n,
            "ms_per_decoder_call": 1000 * sum(seconds) / sum(calls) if sum(calls) else None,
            "capped_segments": sum(e.capped for e in efforts)}


def resident_mb() -> float | None:
    """The process's resident memory now (MB; Linux's /proc, None elsewhere): recorded every RSS_EVERY segments,
    so that memory growing with the stream shows in summary.json (peaks alone would hide it)."""
    try:
        with open("/proc/self/statm") as f:
            return round(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return None


def _headline(scores: dict) -> dict:
    """The running scores shown on the progress bar."""
    return {k: f"{scores[k]:.1f}" for k in ("R0", "R1", "R0+1", "BLEU") if scores.get(k) is not None}
