"""Which method adapts on which document of a serve session, and study.json, its record.

`serve.methods: null` gives every document to `method`. A list gives the documents to its methods blind and
balanced: the documents, in the dataset's order, are cut into blocks of as many documents as methods, and each block
gets the methods in a random order drawn with `seed` (a last, shorter block gets the first ones of a random order).
So each method has the same number of documents (±1), in every part of the session (a translator who speeds up is
no advantage to one method), and nothing the translator sees says which method a document has. Each method's
documents form one run directory, `<session>/<method>/`, a run of its own (its stream, its θ0 restarts, its
records): the reports read each as a run; a paired comparison of two of them is refused, as their documents differ
(docs/serve.md, "Study design").
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from adaptsim.errors import UserError
from adaptsim.outputs import write_json_atomic

FILE = "study.json"


def methods_of(cfg) -> list[str]:
    """The methods of the session: `serve.methods`, or `method` alone; one line for a bad list."""
    chosen = cfg.serve.methods
    if chosen is None:
        return [str(cfg.method.name)]
    if isinstance(chosen, str) or not all(isinstance(m, str) for m in chosen) or not chosen:
        raise UserError(f"serve.methods={chosen}: a list of method names, e.g. serve.methods=[full,lasso]")
    if len(set(chosen)) != len(chosen):
        raise UserError(f"serve.methods={list(chosen)}: names a method twice")
    return [str(m) for m in chosen]


def assign(doc_ids: list[str], methods: list[str], seed: int) -> dict[str, str]:
    """{doc_id: method}: balanced blocks in random orders (module docstring)."""
    rng = random.Random(seed)
    out = {}
    for start in range(0, len(doc_ids), len(methods)):
        order = rng.sample(methods, len(methods))
        for doc_id, method in zip(doc_ids[start:start + len(methods)], order):
            out[doc_id] = method
    return out


def load_or_create(directory: Path, doc_ids: list[str], methods: list[str], seed: int, resume: bool) -> dict[str, str]:
    """The assignment of the session in `directory`: created (and written) for a new session; read and checked for a
    resumed one, whose documents and methods must be the recorded ones."""
    path = Path(directory) / FILE
    if resume and path.is_file():
        recorded = json.loads(path.read_text(encoding="utf-8"))
        if recorded.get("methods") != methods or list(recorded.get("assignment", {})) != doc_ids:
            raise UserError(f"{path}: the session was started with methods {recorded.get('methods')} on "
                            f"{len(recorded.get('assignment', {}))} documents; resume it with the same methods and "
                            "dataset")
        return dict(recorded["assignment"])
    assignment = assign(doc_ids, methods, seed)
    write_json_atomic(path, {"methods": methods, "seed": seed, "design": "balanced blocks in random orders, blind",
                             "assignment": assignment})
    return assignment
