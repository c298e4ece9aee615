"""What a resume must match (docs/design.md §6): all of an interrupted run, or nothing. The one rule, `check`, for
every command that resumes: run, bench and select-fixed (adaptsim/launch/hydra_app.py, a sweep's jobs before Hydra
starts), lockstep's jobs (adaptsim/launch/jobs.py), serve's runs (adaptsim/serve/state.py) and train's checkpoint
(adaptsim/basemodel/trainer.py, which keeps what it compares in the checkpoint instead of a summary.json).

`resume=true` goes on with the run its directory records. Its steps are replayed and checked against the recorded
perplexities, but most settings do not show in those (the beam, the metrics, a TM consulted only before translating,
the data after the interruption), and a run that went on under other settings would record one setting for steps
made under another. So before anything is written — summary.json, Hydra's .hydra/ files, a step — the requested run
is compared with the recorded one: every resolved setting but those in `FREE` and the command's `COMMAND_FREE`, which
cannot change an output, the content of every file a setting names (adaptsim/fingerprints.py), the fingerprints of
what the settings only name (the model's files, the data's segments, a method's external resources such as tm's
`method.external`), and the records themselves (whole steps; serve's human.jsonl a line per step). Any difference
refuses with one line naming the directory (or the file) and each differing key, recorded → requested, and the
directory stays as it was, byte for byte. A setting added later is compared without a word here.
"""

from __future__ import annotations

import json
from pathlib import Path

from adaptsim.fingerprints import changed, model_fingerprint
from adaptsim.errors import UserError
from adaptsim.records import (SIMULATIONS, check_resumable, job_fields, read_records, written_records,
                              written_steps)
from adaptsim.rules import flatten

# The settings a resumed run may change: they cannot change an output (steps, hypotheses, scores, summary figures
# other than timings). The one list of them; everything else is compared.
FREE = ("threads", "progress", "progress_every", "allocator", "resume", "malloc_tuning", "compress")
# What a command may change besides: serve the session's address (and the path it is reached by), train when it
# stops, how often it says so and the paths its output directory is reached by.
COMMAND_FREE = {
    "serve": ("serve.host", "serve.port", "serve.dir"),
    "train": ("train.resume", "train.overwrite", "train.max_steps", "train.max_epochs", "train.max_minutes",
              "train.patience", "train.checkpoint_minutes", "train.log_every", "train.out", "model.path"),
}
# How a refused resume starts again instead, by command.
AGAIN = {"serve": "start a new session in another serve.dir", "train": "train.overwrite=true starts again"}
NEW_RUN = "start a new run in another directory"
STEP_KEYS = ("index", "doc_id", "seg_id")  # what names a step in steps.jsonl and in a file of a line per step


def differences(recorded: dict, requested: dict, also_free: tuple[str, ...] = ()) -> list[str]:
    """`key: recorded → requested` for every compared key (not in `FREE` nor `also_free`) whose values differ (a key
    only one side has: absent)."""
    a, b = flatten(recorded), flatten(requested)
    free = (*FREE, *also_free)

    def compared(key: str) -> bool:
        return not any(key == f or key.startswith(f + ".") for f in free)

    def show(d: dict, key: str) -> str:
        return json.dumps(d.get(key, "(absent)"), sort_keys=True, default=str)

    return [f"{k}: {_show(a.get(k, '(absent)'))} → {_show(b.get(k, '(absent)'))}"
            for k in sorted({*a, *b}) if compared(k) and show(a, k) != show(b, k)]


def _show(value) -> str:
    return "null" if value is None else str(value)


def recorded_fingerprints(summary: dict) -> dict:
    """The fingerprints a run's summary.json records: its model's files, its data, and every resource of its method
    with one (`method_info.<name>.fingerprint`, e.g. tm's external TM; `method_info.weights_info.external.fingerprint`
    under icl)."""
    out = {k: summary[k] for k in ("model_fingerprint", "data_fingerprint") if summary.get(k)}
    for key, value in flatten(summary.get("method_info") or {}, "method_info").items():
        if key.endswith(".fingerprint") and value:  # at any depth: icl's weights method's (`weights_info`) too
            out[key] = value
    return out


def check(run_dir: Path, previous: dict, cfg, command: str, computed: dict | None = None, *,
          current: dict | None = None, beside_steps: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Refuse (one line) to resume the run `previous` records (its summary.json, or what train's checkpoint keeps; {}
    if none) in `run_dir` with `cfg` unless it is there to resume (`check_resumable`: no steps without a summary,
    no process still writing them) and they agree on every setting but `FREE` and the command's `COMMAND_FREE`, on
    every file a setting names and every recorded fingerprint, and its records resume whole (`check_records`;
    `beside_steps`: files of a line per step, serve's human.jsonl). Reads only. `current`: the model's, data's and
    method's fingerprints in summary.json's shape where the command has them at hand (serve's session: its method's
    share of the documents), else computed from `cfg` (`computed`: what was computed already; the jobs of one sweep
    share it). Returns the records as found (summary.json, .hydra/, the log: what a refusal by the replay gives back;
    the job keeps them, `JobSummary.found`)."""
    check_resumable(run_dir, previous)
    if not previous:
        return {}
    fields = job_fields(command, cfg, [])
    where, again = f"{run_dir}: cannot resume", AGAIN.get(command, NEW_RUN)
    check_settings(where, previous, fields["config"], command, again)
    check_inputs(where, previous, fields["input_fingerprints"], again)
    check_records(run_dir, beside_steps, again)
    recorded = recorded_fingerprints(previous)
    if current is None and recorded:
        current = _fingerprints(cfg, command, {} if computed is None else computed,
                                any(k.startswith("method_info.") for k in recorded), previous)
    check_fingerprints(where, previous, current or {}, again)
    return read_records(run_dir)


def check_settings(where: str, previous: dict, requested: dict, command: str, again: str) -> None:
    """Every resolved setting the run recorded is the requested one, but those the command may change (a model known
    by its files: where the run recorded their fingerprint, another path to them is the same model)."""
    if "config" not in previous:
        raise UserError(f"{where}: its records name no settings to check (written by an older adaptsim); {again}")
    free = (*COMMAND_FREE.get(command, ()), *(("model.path",) if previous.get("model_fingerprint") else ()))
    differ = differences(previous["config"], requested, free)
    if differ:
        raise UserError(f"{where} with other settings than its own ({'; '.join(differ)}; recorded → requested); "
                        f"change only {', '.join(dict.fromkeys((*FREE, *free)))}, or {again}")


def check_inputs(where: str, previous: dict, requested: dict, again: str) -> None:
    """Every file a setting names has the content the run read (`input_fingerprints`)."""
    if "input_fingerprints" not in previous:
        raise UserError(f"{where}: its records hold no fingerprints of the files it read (written by an older "
                        f"adaptsim, or before it began); {again}")
    differ = changed(previous["input_fingerprints"], requested)
    if differ:
        raise UserError(f"{where}: a file it read has changed ({'; '.join(differ)}; recorded → now); restore it, "
                        f"or {again}")


def check_records(run_dir: Path, beside_steps: tuple[str, ...] = (), again: str = NEW_RUN) -> None:
    """The run's records resume whole: steps.jsonl and select-fixed's simulations.jsonl up to a torn last line at most
    (`written_records`), and each file of `beside_steps` (serve's human.jsonl, whose line is written before its step's)
    a whole line naming each step, and one more at most."""
    steps, _ = written_steps(run_dir)
    written_records(Path(run_dir) / SIMULATIONS, "simulation")
    for name in beside_steps:
        path = Path(run_dir) / name
        lines, _ = written_records(path, "line")
        if not len(steps) <= len(lines) <= len(steps) + 1:
            raise UserError(f"{path}: {len(lines)} whole lines for the {len(steps)} steps of steps.jsonl (a line per "
                            f"step, written before it); cannot resume: restore it, or {again}")
        for n, (line, step) in enumerate(zip(lines, steps), 1):
            if [line.get(k) for k in STEP_KEYS] != [step.get(k) for k in STEP_KEYS]:
                raise UserError(f"{path}:{n}: names {_step(line)}, steps.jsonl's line {n} {_step(step)}; cannot "
                                f"resume: restore it, or {again}")


def _step(record: dict) -> str:
    return f"step {record.get('index')} (document {record.get('doc_id')}, segment {record.get('seg_id')})"


def check_fingerprints(where: str, previous: dict, current: dict, again: str) -> None:
    """The model's files, the data and the method's resources are the ones the run recorded (`current`: theirs now, in
    summary.json's shape)."""
    now = recorded_fingerprints(current)
    differ = [f"{k}: {v} → {now.get(k)}" for k, v in recorded_fingerprints(previous).items() if now.get(k) != v]
    if differ:
        raise UserError(f"{where}: the same settings name other files now ({'; '.join(differ)}; recorded → "
                        f"requested: another model, other data or another resource at the same path); {again}")


def _fingerprints(cfg, command: str, computed: dict, resources: bool, previous: dict) -> dict:
    """The fingerprints a run with `cfg` would record (in summary.json's shape), computed as the run
    computes them: the model's files, the data as the run reads it (lengths checked, a bench's first segments) and,
    if `resources`, the method's resources (its method built on a model of its own: building may change a model).
    The model is loaded only where it must be: where the documents as read and the model's files are the ones
    `previous` (the run's summary.json) records, the length check keeps what it kept then, and its data
    fingerprint holds (the settings that shape the check are compared before). `computed`: what was read and
    computed already, by the settings, for the jobs of a sweep that share them."""
    from omegaconf import OmegaConf

    from adaptsim.data import check_lengths, load_documents
    from adaptsim.data.types import fingerprint

    key = json.dumps([OmegaConf.to_container(cfg.model, resolve=True),
                      OmegaConf.to_container(cfg.dataset, resolve=True), command, cfg.get("segments")],
                     sort_keys=True, default=str)
    if key not in computed:
        documents = load_documents(cfg.dataset)
        computed[key] = {"documents": documents, "data_read_fingerprint": fingerprint(documents),
                         "model_fingerprint": model_fingerprint(cfg.model.path)}
    known = computed[key]
    out = {"model_fingerprint": known["model_fingerprint"]}
    if all(previous.get(k) is not None and previous.get(k) == known[k]
           for k in ("data_read_fingerprint", "model_fingerprint")):
        out["data_fingerprint"] = previous.get("data_fingerprint")  # the same check of the same documents
    else:
        if "data_fingerprint" not in known:
            from adaptsim.models import load_model

            model = load_model(cfg.model)
            known["data_fingerprint"] = fingerprint(check_lengths(
                known["documents"], cfg.dataset, model.over_length,
                cfg.segments if command == "bench" else None)[0])
        out["data_fingerprint"] = known["data_fingerprint"]
    if resources:
        from adaptsim import methods
        from adaptsim.models import load_model

        out["method_info"] = methods.build(cfg.method, load_model(cfg.model)).info()
    return out
