"""`adaptsim run`: the simulated post-editing loop (docs/design.md §1).

For each document, from θ0: translate segment i with θ_{i-1}, reveal the reference, adapt on the pair
(adaptsim/update.py), score the hypothesis, log the step. Data flows one way:
data → model → method/updater → metrics → outputs.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import statistics
import time
import traceback
from pathlib import Path
from typing import NamedTuple

import torch
from omegaconf import DictConfig
from tqdm import tqdm

from adaptsim import methods
from adaptsim.data import Dataset, check_lengths, load_documents
from adaptsim.errors import UserError
from adaptsim.metrics import Evaluator, resolve_scope, write_curves
from adaptsim.model import Seq2SeqModel
from adaptsim.offsets import save_offsets
from adaptsim.outputs import RunWriter, alive, recorded_process
from adaptsim.update import Diverged, Snapshot, Updater, UpdateResult
from adaptsim.validate import validate

log = logging.getLogger("adaptsim")

def main(argv: list[str]) -> int:
    from adaptsim.hydra_app import launch

    return launch(task, "run", argv, "run")


def task(cfg: DictConfig) -> None:
    """One Hydra job: simulate into the job's output directory; a failure or an interruption (SIGINT,
    SIGTERM) is recorded in summary.json, not lost, and a directory holding another run is refused."""
    from hydra.core.hydra_config import HydraConfig

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    if cfg.resume and _finished(run_dir):
        log.info("%s: finished already; nothing to resume", run_dir)
        return
    writer = RunWriter(run_dir, resume=cfg.resume)
    try:
        simulate(cfg, writer)
    except UserError as e:
        _record(writer, _failure(cfg, str(e)))
        raise
    except KeyboardInterrupt as e:  # SIGINT, or SIGTERM as Terminated (adaptsim.hydra_app)
        _record(writer, {**(writer.last_summary or _identity(cfg)), "status": "interrupted",
                         "error": f"interrupted by {getattr(e, 'signal_name', 'SIGINT')}"})
        raise
    except Exception:
        _record(writer, _failure(cfg, traceback.format_exc()))
        raise
    finally:
        writer.close()


def _finished(run_dir: Path) -> bool:
    """Whether run_dir holds a finished run (resume=true then leaves it alone); refuses a live one."""
    import json
    import os

    path = run_dir / "summary.json"
    if not path.is_file():
        return False
    summary = json.loads(path.read_text(encoding="utf-8"))
    pid = recorded_process(summary)
    if pid is not None and pid != os.getpid() and alive(pid):
        raise UserError(f"{run_dir}: the run is still going (process {pid}); cannot resume it")
    return summary.get("status") == "finished"


def _record(writer: RunWriter, summary: dict) -> None:
    """Write a final summary on the way out; if that fails too (disk full), the first error is the one to
    report."""
    try:
        writer.summary(summary)
    except UserError as e:
        log.error("%s", e)


def _failure(cfg: DictConfig, error: str) -> dict:
    return {"status": "failed", "error": error, **_identity(cfg)}


def _identity(cfg: DictConfig) -> dict:
    return {"method": cfg.method.name, "model": cfg.model.name, "model_path": str(cfg.model.path),
            "dataset": cfg.dataset.name}


def fingerprint(documents) -> str:
    """A short hash of the data itself, so reports can refuse to compare runs on different data."""
    h = hashlib.sha256()
    for doc in documents:
        for s in doc.segments:
            h.update(f"{s.doc_id}\t{s.source}\t{s.reference}\n".encode())
    return h.hexdigest()[:16]


class Setup(NamedTuple):
    model: Seq2SeqModel
    documents: Dataset
    method: methods.Method
    updater: Updater
    theta0: Snapshot


def load(cfg: DictConfig) -> tuple[Seq2SeqModel, Dataset]:
    """Settings checked, seed, threads, data and model: what every command that adapts starts with (`run`,
    `bench`, `select-fixed`)."""
    validate(cfg)  # every setting checked before data and model are loaded
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    documents = load_documents(cfg.dataset)  # before the model: bad data fails fast
    model = Seq2SeqModel.from_config(cfg.model, cfg.device)
    documents, _ = check_lengths(documents, cfg.dataset, model.count_tokens, model.max_tokens)
    return model, documents


def prepare(cfg: DictConfig) -> Setup:
    """`load`, then the method, the update rule and θ0."""
    model, documents = load(cfg)
    method = methods.build(cfg.method, model)
    updater = Updater(model, method, **cfg["update"])  # cfg.update is DictConfig.update
    return Setup(model, documents, method, updater, Snapshot(method.parameters()))


def simulate(cfg: DictConfig, writer: RunWriter, limit: int | None = None) -> dict:
    """Run the loop over the dataset (the first `limit` segments if given) and return the summary.

    With `resume: true` the steps an interrupted run wrote are not translated again: their updates are
    replayed (the same computation, checked against the recorded perplexities), which restores the
    adapted model exactly, whatever the method's state; the run then goes on from the next segment."""
    model, documents, method, updater, theta0 = prepare(cfg)
    skipped = dict(documents.skipped)
    if limit is not None:
        documents = _first_segments(documents, limit)
    segments = [s for d in documents for s in d.segments]
    if not segments:
        raise UserError(f"dataset={cfg.dataset.name}: no segments to translate")
    done = writer.resume_steps() if cfg.resume else []
    if len(done) > len(segments):
        raise UserError(f"{writer.dir}: cannot resume: it holds {len(done)} steps, the data has {len(segments)}")
    if any("pieces" not in record for record in done):
        raise UserError(f"{writer.dir}: cannot resume: its steps were written by an adaptsim that did not record "
                        "the generated pieces; run it again in a new directory")
    if done and cfg.get("save_offsets"):  # rewritten, identically, as the replay passes each document's end
        shutil.rmtree(writer.dir / "offsets", ignore_errors=True)

    scope = resolve_scope(cfg.metrics.get("scope"), cfg.reset)
    evaluator = Evaluator.from_config(cfg.metrics, [s.reference for s in segments], [s.doc_id for s in segments],
                                      subword_tokenize=model.pieces, scope=scope)
    summary = {"status": "running", **_identity(cfg), "reset": cfg.reset, "metrics_scope": scope,
               "data_fingerprint": fingerprint(documents),
               "documents": len(documents), "segments": len(segments), "skipped": skipped,
               "model_parameters": sum(p.numel() for p in model.net.parameters()),
               "trainable_parameters": sum(p.numel() for p in updater.params)}
    writer.summary(summary)
    log.info("%s: %d documents, %d segments, %d trainable parameters%s", cfg.method.name, len(documents),
             len(segments), summary["trainable_parameters"], f", resuming after {len(done)}" if done else "")

    def restart():
        theta0.restore()
        method.start_document(theta0.initial)

    def adapt(seg, i: int) -> tuple[UpdateResult, bool]:
        """The update on segment i's pair, and whether it diverged (then the document restarts from θ0)."""
        try:
            return updater(model.pair(seg.source, seg.reference)), False
        except Diverged as e:
            where = f"document {seg.doc_id}, segment {seg.seg_id} (step {i + 1})"
            if updater.on_divergence == "stop":
                raise UserError(f"{where}: adaptation diverged after {e.updates} update(s): {e.what}; lower "
                                f"method.lr={cfg.method.lr} or set update.on_divergence=rollback") from None
            log.warning("%s: adaptation diverged (%s); the document restarts from θ0", where, e.what)
            restart()
            return UpdateResult(e.updates, e.ppl_before, None, 0.0), True

    hyps, pieces, translate_s, update_s, per_doc = [], [], [], [], []
    divergences = 0
    start = time.perf_counter()
    bar = tqdm(total=len(segments), disable=not cfg.progress, desc=cfg.method.name, unit="seg", dynamic_ncols=True)
    for d, doc in enumerate(documents):
        if cfg.reset == "document" or d == 0:
            restart()
        for seg in doc.segments:
            i = len(hyps)
            if i < len(done):  # resuming: replay the recorded step's update
                record = done[i]
                hyp, hyp_pieces, seconds = record["hypothesis"], record["pieces"], record["translate_s"]
                result, diverged = adapt(seg, i)
                _check_replay(writer.dir, record, seg, result, diverged)
            else:
                t = time.perf_counter()
                hyp, hyp_pieces = model.translate(seg.source, **cfg.decode)  # before its reference is seen
                seconds = time.perf_counter() - t
                result, diverged = adapt(seg, i)
            translate_s.append(seconds)
            update_s.append(result.seconds)
            hyps.append(hyp)
            pieces.append(hyp_pieces)
            divergences += diverged
            scores = evaluator.segment(i, hyp, hyp_pieces)
            if i >= len(done):
                writer.step({"doc_id": seg.doc_id, "seg_id": seg.seg_id, "index": i, "source": seg.source,
                             "reference": seg.reference, "hypothesis": hyp, "pieces": hyp_pieces,
                             "updates": result.updates, "ppl_before": result.ppl_before,
                             "ppl_after": result.ppl_after, **({"diverged": True} if diverged else {}),
                             "translate_s": seconds, "update_s": result.seconds, **scores})
            bar.set_postfix(_headline(evaluator.running()), refresh=False)
            bar.update()
        per_doc.append({"doc_id": doc.doc_id, "segments": len(doc), "changed_parameters": theta0.changed()})
        if cfg.get("save_offsets"):  # the document's adapted offsets θ − θ0, changed groups only
            per_doc[-1]["offsets_bytes"] = save_offsets(theta0, writer.dir / "offsets", str(doc.doc_id))
    bar.close()
    total = time.perf_counter() - start

    write_curves(evaluator.curves(hyps, pieces), writer.dir / "curves.csv")
    corpus = evaluator.corpus(hyps, pieces)
    summary.update(
        status="finished", scores=corpus["scores"], counts=corpus["counts"], signatures=corpus["signatures"],
        divergences=divergences, per_document=per_doc,
        changed_parameters_max=max(p["changed_parameters"] for p in per_doc), method_info=method.info(),
        timing={"total_s": total, "segments_per_s": len(segments) / total,
                "translate_median_s": statistics.median(translate_s), "update_median_s": statistics.median(update_s),
                "translate_total_s": sum(translate_s), "update_total_s": sum(update_s),
                **({"resumed_after_steps": len(done)} if done else {})})
    writer.summary(summary)
    log.info("finished %s in %.1f s: %s", cfg.method.name, total,
             {k: round(v, 2) for k, v in evaluator.running().items() if v is not None})
    return summary


def _check_replay(run_dir: Path, record: dict, seg, result: UpdateResult, diverged: bool) -> None:
    """A replayed step must be the recorded one: same segment, same updates and perplexities (bit for bit;
    anything else means other settings, threads or software than the interrupted run's)."""
    same_segment = (record["doc_id"], record["seg_id"], record["source"], record["reference"]) == (
        seg.doc_id, seg.seg_id, seg.source, seg.reference)
    replayed = (result.updates, result.ppl_before, result.ppl_after, diverged)
    recorded = (record["updates"], record["ppl_before"], record["ppl_after"], record.get("diverged", False))
    if not same_segment or replayed != recorded:
        what = "another segment" if not same_segment else f"updates/perplexities {replayed[:3]}, recorded {recorded[:3]}"
        raise UserError(f"{run_dir}: cannot resume: step {record['index'] + 1} replays to {what}; resume with "
                        "the interrupted run's settings, threads and software")


def _headline(scores: dict) -> dict:
    """The running scores shown on the progress bar."""
    return {k: f"{scores[k]:.1f}" for k in ("R0", "R1", "R0+1", "BLEU") if scores.get(k) is not None}


def _first_segments(documents, limit: int):
    out, left = [], limit
    for doc in documents:
        if left <= 0:
            break
        out.append(type(doc)(doc.doc_id, doc.segments[:left]))
        left -= len(out[-1])
    return out
