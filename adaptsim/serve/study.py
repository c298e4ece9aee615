"""Which method adapts on which document of a serve session, and study.json, its record.

`serve.methods: null` gives every document to `method`. A list gives the documents to its methods blind and
balanced: the documents, in the dataset's order, are cut into blocks of as many documents as methods, and each block
gets the methods in a random order drawn with `seed` (a last, shorter block gets the first ones of a random order),
rotated by `serve.translator`: translator t's block order is the drawn one shifted by t places, so translators
0..k−1 (k methods) at the same seed form a Latin square — every document gets every method once — and method and
document are not confounded across translators. So each method has the same number of documents (±1), in every
part of the session (a translator who speeds up is no advantage to one method), and nothing the translator sees says
which method a document has. study.json also holds the session's id (a random uuid, kept across resumes: the page's
drafts are keyed by it, as every session on the same address shares the browser's storage) and the command line's
overrides the session was started with, the one record of them a resume starts from (`recorded_overrides`:
`resume=true serve.dir=DIR` alone goes on with a study). Each method's
documents form one run directory, `<session>/<method>/`, a run of its own (its stream, its θ0 restarts, its
records): the reports read each as a run; a paired comparison of two of them is refused, as their documents differ
(docs/serve.md, "Study design").
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

from adaptsim.errors import UserError
from adaptsim.records import write_json_atomic

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


def assign(doc_ids: list[str], methods: list[str], seed: int, translator: int) -> dict[str, str]:
    """{doc_id: method}: balanced blocks in random orders, rotated by `translator` (module docstring)."""
    rng = random.Random(seed)
    orders = [rng.sample(methods, len(methods)) for _ in range(0, len(doc_ids), len(methods))]
    return label(doc_ids, orders, translator)


def label(doc_ids: list, orders: list, translator: int) -> dict:
    """{doc_id: method} given each block's order of the methods (`orders`, one per block of len(order) documents),
    rotated by `translator`: the design's assignment for one draw of the orders (`assign`'s, and every other draw's
    that `adaptsim study` tests against)."""
    out = {}
    for b, order in enumerate(orders):
        shift = translator % len(order)
        rotated = list(order[shift:]) + list(order[:shift])
        out.update(zip(doc_ids[b * len(order):(b + 1) * len(order)], rotated))
    return out


def read(directory: Path) -> dict:
    """The session's study.json; one line if it is not one."""
    path = Path(directory) / FILE
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise UserError(f"{path}: not a readable session record ({getattr(e, 'strerror', None) or e})") from None
    if not isinstance(recorded, dict):
        raise UserError(f"{path}: not a session record (a JSON object)")
    return recorded


def recorded_overrides(directory: Path) -> list[str]:
    """The command line's overrides the session in `directory` was started with ([] where there is no session, or
    it was recorded before study.json kept them)."""
    if not (Path(directory) / FILE).is_file():
        return []
    return [str(o) for o in read(directory).get("overrides") or []]


DESIGN = "balanced blocks in random orders rotated by translator (a Latin square across translators), blind"


def load_or_create(directory: Path, doc_ids: list[str], methods: list[str], seed: int, translator: int,
                   resume: bool, overrides: list[str] = (), api: str | None = None,
                   design: str = DESIGN) -> tuple[dict[str, str], str]:
    """The assignment and id of the session in `directory`: created (and written, with the command line's
    `overrides`, and `api`: serve.api where a client sends the documents, with its `design`) for a new session; read
    and checked for a resumed one, whose documents, methods, translator and API must be the recorded ones."""
    path = Path(directory) / FILE
    if resume and path.is_file():
        recorded = read(directory)
        if recorded.get("api") != api:
            raise UserError(f"{path}: the session was started with serve.api={recorded.get('api') or 'null'}; resume "
                            "it with the same")
        if ended := recorded.get("ended_early"):
            raise UserError(f"serve.dir={directory}: the translator finished this session early ({ended['validated']} "
                            f"of {ended['segments']} segments validated); start a new one in another serve.dir")
        if recorded.get("methods") != methods or list(recorded.get("assignment", {})) != doc_ids \
                or recorded.get("translator", 0) != translator:
            raise UserError(f"{path}: the session was started with methods {recorded.get('methods')} on "
                            f"{len(recorded.get('assignment', {}))} documents for serve.translator="
                            f"{recorded.get('translator', 0)}; resume it with the same methods, dataset and translator")
        # (a session recorded without an id: one derived from its directory, the same at every resume)
        sid = recorded.get("session") or str(uuid.uuid5(uuid.NAMESPACE_URL, str(path.resolve())))
        return dict(recorded["assignment"]), sid
    assignment, sid = assign(doc_ids, methods, seed, translator), str(uuid.uuid4())
    write_json_atomic(path, {"session": sid, "methods": methods, "seed": seed, "translator": translator,
                             "design": design, "assignment": assignment, **({"api": api} if api else {}),
                             "overrides": [str(o) for o in overrides]})
    return assignment, sid


def mark_ended(directory: Path, validated: int, segments: int) -> None:
    """Record in study.json that the translator finished the session early (Finish now): it cannot be resumed."""
    path = Path(directory) / FILE
    write_json_atomic(path, {**read(directory), "ended_early": {"validated": validated, "segments": segments}})
