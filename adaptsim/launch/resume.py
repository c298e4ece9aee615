"""What a resume must match (docs/design.md §6): all of an interrupted run, or nothing.

`resume=true` goes on with the run its directory records. Its steps are replayed and checked against the recorded
perplexities, but most settings do not show in those (the beam, the metrics, a TM consulted only before translating,
the data after the interruption), and a run that went on under other settings would record one setting for steps
made under another. So before anything is written — summary.json, Hydra's .hydra/ files, a step — the requested run
is compared with the recorded one: every resolved setting but those in `FREE`, which cannot change an output, and the
fingerprints of what the settings only name (the model's files, the data's segments, a method's external resources
such as tm's `method.external`, and the content of every file a setting names: adaptsim/fingerprints.py). Any difference
refuses with one line listing each differing key, recorded → requested, and the directory stays as it was, byte for
byte. A setting added later is compared without a word here.
"""

from __future__ import annotations

import json
from pathlib import Path

from adaptsim import fingerprints as inputs
from adaptsim.errors import UserError
from adaptsim.rules import flatten

# The settings a resumed run may change: they cannot change an output (steps, hypotheses, scores, summary figures
# other than timings). The one list of them; everything else is compared.
FREE = ("threads", "progress", "progress_every", "allocator", "resume", "malloc_tuning", "compress")


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


def check(run_dir: Path, previous: dict, cfg, command: str, computed: dict | None = None) -> None:
    """Refuse (one line) to resume the run `previous` (its summary.json) in `run_dir` with `cfg` unless they agree on
    every setting but `FREE` and every recorded fingerprint, and its steps.jsonl can be resumed whole. Reads only.
    `computed`: the model's and data's fingerprints computed already (the jobs of one sweep share them); a
    directory this process checked already with the same config and whose summary.json is unchanged since (a
    sweep's job, checked before Hydra started it) is not checked again. What passes is remembered (`recorded`)."""
    from adaptsim.records import SIMULATIONS, job_fields, written_records, written_steps
    from adaptsim.records.summary import _PASSED, _records

    fields = job_fields(command, cfg, [])
    requested = fields["config"]
    key = json.dumps([requested, fields["input_fingerprints"]], sort_keys=True, default=str)
    if not previous:
        return
    if (Path(run_dir) / "summary.json").read_bytes() == _PASSED.get((str(run_dir), key), {}).get("summary.json"):
        return  # checked already, and unchanged since
    where = f"{run_dir}: cannot resume"
    if "config" not in previous:
        raise UserError(f"{where}: its summary.json records no settings to check (written by an older adaptsim); "
                        "run it again in a new directory")
    # a model is known by its files: where the run recorded their fingerprint, another path to them is the same model
    differ = differences(previous["config"], requested,
                         ("model.path",) if previous.get("model_fingerprint") else ())
    if differ:
        raise UserError(f"{where} with other settings than its own ({'; '.join(differ)}; recorded → requested); "
                        f"change only {', '.join(FREE)}, or start a new run in another directory")
    if "input_fingerprints" not in previous:
        raise UserError(f"{where}: its summary.json records no fingerprints of the files it read (written by an "
                        "older adaptsim, or before it began); run it again in a new directory")
    differ = inputs.changed(previous["input_fingerprints"], fields["input_fingerprints"])
    if differ:
        raise UserError(f"{where}: a file it read has changed ({'; '.join(differ)}; recorded → now); restore it, "
                        "or start a new run in another directory")
    written_steps(run_dir)
    written_records(Path(run_dir) / SIMULATIONS, "simulation")  # select-fixed's
    recorded = recorded_fingerprints(previous)
    if recorded:
        current = _fingerprints(cfg, command, {} if computed is None else computed,
                                any(k.startswith("method_info.") for k in recorded), previous)
        differ = [f"{k}: {v} → {current.get(k)}" for k, v in recorded.items() if current.get(k) != v]
        if differ:
            raise UserError(f"{where}: the same settings name other files now ({'; '.join(differ)}; recorded → "
                            "requested: another model, other data or another resource at the same path); start a "
                            "new run in another directory")
    for checked in [k for k in _PASSED if k[0] == str(run_dir)]:
        del _PASSED[checked]
    _PASSED[(str(run_dir), key)] = _records(run_dir)


def _fingerprints(cfg, command: str, computed: dict, resources: bool, previous: dict) -> dict:
    """The fingerprints a run with `cfg` would record (as `recorded_fingerprints` reads them), computed as the run
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
                         "model_fingerprint": inputs.model_fingerprint(cfg.model.path)}
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
                known["documents"], cfg.dataset, model.count_tokens, model.max_tokens,
                cfg.segments if command == "bench" else None)[0])
        out["data_fingerprint"] = known["data_fingerprint"]
    if resources:
        from adaptsim import methods
        from adaptsim.models import load_model

        out["method_info"] = methods.build(cfg.method, load_model(cfg.model)).info()
    return recorded_fingerprints(out)
