"""A serve session whose documents come from a client (serve.api=modernmt; adaptsim/serve/modernmt.py speaks the
protocol): any source translated by the current θ, and each confirmed (source, target) the client adds to a memory a
step of the session's one run — the method adapts on it exactly as on a validation in the page (`Simulation.begin`,
`commit`: θ_{i−1} → θ_i) and the step is recorded as the page's are (steps.jsonl, hyps.txt, human.jsonl).

What the protocol leaves open, decided here:

- A memory is a document. ModernMT adapts a translation to the memories its `hints` name, and a CAT tool adds each
  confirmed segment to its project's memory; adaptsim adapts one θ along one stream of documents (θ0 again at each
  one under reset=document). So the pairs added to one memory in a row form a document (doc_id: the memory's id,
  seg_id: 1, 2, … in it), and a document begins with the first request that names a memory whose document has not
  begun: an addition to it, or a translation whose `hints` do not name the current document's memory (the first
  such hint). A document with pairs ends when another begins, and its memory then takes no more (409: a document of
  a run is never continued once left; create another memory); an empty one is simply replaced. memories.json keeps
  the memories and the current document's, so that a resume begins it again.
- A translation is the next step's: the segment begun as the loop begins it (its document started, θ0 where `reset`
  says; the method's moment entered, tm's; its prompt's pairs chosen, icl's) and translated as the page translates,
  then left uncommitted. Without hints it is the current document's next segment (before any document, the first).
- An addition is the step: begun the same way, committed with the confirmed target as the reference, and as its
  hypothesis the model's last translation of that same sentence given through /translate (the client's, used by one
  step only: a sentence added again needs a translate again) or, with none, the sentence translated then by the
  step's θ. human.jsonl says which (`hypothesis_from`: translate | add) and after how many steps the hypothesis was
  translated (`translated_after`: the step's own index where it is θ_{i−1}'s, as in a simulation), and what the
  client sent besides (the memory, the languages as named, a tuid, the platform headers, the texts as sent where
  collapsing their whitespace changed them). No effort is recorded: a CAT tool reports none.
- Texts' whitespace is collapsed to single spaces (references.tsv, the run's data for `run`, holds them so) and a text
  longer than the model accepts is refused (`run` would skip it), so that `adaptsim run dataset=tsv
  dataset.path=<run>/references.tsv` simulates the same steps.
- Every translation given is recorded, in order, before it is answered (translations.jsonl: what the client was
  shown, added or not, and after how many steps), and the last one of each sentence (of the last TRANSLATIONS_KEPT
  sentences) waits there for its addition, so a resume after a kill at any point gives the steps to come the
  hypotheses they would have had: the records are those of the session never killed (timings aside).
- Nothing a client sends ends the session: stopping the server leaves its run `interrupted` (resume=true goes on);
  `resume=true serve.finish=true` replays it and finishes it on what was added (every step scored, summary.json,
  curves.csv, references.tsv), without serving; a finished session cannot be resumed.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from adaptsim.data.types import Document, Segment
from adaptsim.errors import UserError
from adaptsim.fingerprints import model_fingerprint
from adaptsim.launch import resume
from adaptsim.loop.learner import Learner, prepare
from adaptsim.loop.settings import validate
from adaptsim.loop.simulation import Simulation
from adaptsim.models import Translation, load_model
from adaptsim.records import read_summary, write_json_atomic, written_records
from adaptsim.serve import study
from adaptsim.serve.human import HUMAN_FILE, HumanSimulation, append_lines
from adaptsim.serve.state import COMMAND, NOT_TEXT, MethodRun, Refused, ServeSession, _records, run_part

MEMORIES_FILE = "memories.json"  # <serve.dir>/memories.json: the memories, and the current document's
TRANSLATIONS_FILE = "translations.jsonl"  # <run>/translations.jsonl: every translation given, in order
DATASET = "modernmt"  # the run's dataset.name: the documents a ModernMT client sent
TRANSLATIONS_KEPT = 10_000  # the sentences whose last translation is kept for their addition
DESIGN = "documents sent by a client of serve's ModernMT API: a memory's pairs in a row are a document"


@dataclass
class Shown:
    """A translation given to the client: what a step takes as its hypothesis, its seconds, and the steps the run
    had made when it was translated."""
    translation: Translation
    seconds: float
    after: int


class ClientSimulation(HumanSimulation):
    """`HumanSimulation` of a stream the client sends as it goes (module docstring): its documents grow, one ends when
    the next begins, no effort is measured, and human.jsonl holds what the client sent (`sent`)."""

    open_stream = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.interactive, self.interactive_costs = "off", self.cfg.metrics.interactive_costs  # no effort
        self.sent: dict = {}  # human.jsonl's fields of the step being committed

    def commit(self, turn, translation: Translation, seconds: float, reference: str) -> None:
        """`Simulation.commit` of the confirmed `reference`, with no effort (`sent`: human.jsonl's fields)."""
        Simulation.commit(self, turn, translation, seconds, reference=reference)

    def human_line(self, seg, effort) -> dict:
        return {"index": self.index, "doc_id": seg.doc_id, "seg_id": seg.seg_id, **self.sent}

    @property
    def current(self) -> Document | None:
        """The document the cursor is in (None before the first)."""
        d = self.cursor[0]
        return self.documents[d] if d < len(self.documents) else None

    def begin_document(self, doc_id: str) -> None:
        """A new document after the current one (which ends, if it has segments; an empty one is replaced)."""
        d, j = self.cursor
        if self.current is None:
            self.documents.append(Document(doc_id, []))
        elif j:  # (every segment of the current document is committed: one turn at a time)
            self.end_document(self.current)
            self.documents.append(Document(doc_id, []))
            self.cursor = (d + 1, 0)
        else:
            self.documents[d] = Document(doc_id, [])

    def append(self, source: str, reference: str = "") -> Segment:
        """The current document's next segment (a document without a memory, "", if none has begun: `remove` takes
        it back with the segment)."""
        if self.current is None:
            self.documents.append(Document("", []))
        doc = self.current
        seg = Segment(doc.doc_id, str(len(doc) + 1), source, reference)
        doc.segments.append(seg)
        self.segments.append(seg)
        return seg

    def remove(self, seg: Segment) -> None:
        """Take back the segment `append` gave last (a translation's, never committed)."""
        doc = self.current
        assert doc.segments[-1] is seg and self.segments[-1] is seg
        doc.segments.pop()
        self.segments.pop()
        if not doc.segments and not doc.doc_id:
            self.documents.pop()

    def _advance(self) -> None:
        """The cursor past the step; a document ends when the next one is there (a resume's replay), else the current
        one stays open for the client's next pair."""
        d, j = self.cursor
        if j + 1 == len(self.documents[d]) and d + 1 < len(self.documents):
            self.end_document(self.documents[d])
            self.cursor = (d + 1, 0)
        else:
            self.cursor = (d, j + 1)

    def finish(self, **timing) -> dict:
        """The current document ended where the client left it, then `HumanSimulation.finish`."""
        d, j = self.cursor
        if j:
            self.end_document(self.documents[d])
        self.job.update(documents=len(self.per_doc), segments=len(self.validated))
        return super().finish(**timing)


class ClientRun(MethodRun):
    """The session's one run: its documents are the client's, never complete (a client can always add more)."""

    @property
    def finished(self) -> bool:
        return False


def documents_of(records: list[dict]) -> list[Document]:
    """The documents of a run's recorded steps (a document's steps are in a row: module docstring)."""
    documents: list[Document] = []
    for r in records:
        if not documents or documents[-1].doc_id != r["doc_id"]:
            documents.append(Document(r["doc_id"], []))
        documents[-1].segments.append(Segment(r["doc_id"], r["seg_id"], r["source"], r["reference"]))
    return documents


def client_config(cfg: DictConfig) -> DictConfig:
    """The run's settings as recorded: `dataset` is the client's (nothing is read), and serve.finish, what this
    process does rather than a setting of the run, left out (a resume that finishes has the same settings)."""
    out = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    with open_dict(out):
        out.dataset = {"name": DATASET}
        del out.serve["finish"]
    return out


class Memories:
    """<serve.dir>/memories.json: the session's memories (ModernMT's Memory objects, ids 1, 2, … in creation order)
    and the memory whose document is the current one; written atomically before the answer that reports a change."""

    def __init__(self, directory: Path, resume: bool):
        self.path = Path(directory) / MEMORIES_FILE
        recorded = {}
        if resume and self.path.is_file():
            try:
                recorded = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as e:
                raise UserError(f"{self.path}: not a readable record of memories ({getattr(e, 'strerror', None) or e})"
                                ) from None
        self.items: dict[int, dict] = {int(m["id"]): m for m in recorded.get("memories", [])}
        self.document: int | None = recorded.get("document")

    def create(self, name: str, description: str | None, external_id: str | None) -> dict:
        memory = {"id": len(self.items) + 1, "name": name, "description": description,
                  "creationDate": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        if external_id is not None:
            memory["externalId"] = external_id
        self._write({**self.items, memory["id"]: memory}, self.document)
        self.items[memory["id"]] = memory
        return memory

    def set_document(self, memory: int) -> None:
        self._write(self.items, memory)
        self.document = memory

    def _write(self, items: dict, document: int | None) -> None:
        write_json_atomic(self.path, {"memories": list(items.values()), "document": document})


class ClientSession(ServeSession):
    """A session of serve's API (module docstring): one method's run on the documents the client sends."""

    simulation = ClientSimulation

    def _open(self, cfgs: dict[str, DictConfig]) -> None:
        method, given = next(iter(cfgs.items()))
        validate(given, "serve")  # (one method: a study is refused there)
        named = [o for o in self.overrides if o.split("=", 1)[0].lstrip("+~").split(".")[0] == "dataset"]
        if named:
            raise UserError(f"{named[0]}: serve.api={given.serve.api} reads no dataset; the client sends the documents")
        self._check_dir()
        cfg = self.cfg = client_config(given)
        run_dir = self.dir / method
        if self.resume and read_summary(run_dir).get("status") == "finished":
            raise UserError(f"serve.dir={self.dir}: the session is finished (serve.finish=true); start a new one in "
                            "another serve.dir")
        part = run_part(cfg)
        prepare(part)
        model = load_model(part.model, part.device)
        self.count_tokens, self.max_tokens = model.count_tokens, model.max_tokens
        self.skipped, self.documents, self.order = {}, [], []
        self.dir.mkdir(parents=True, exist_ok=True)
        _, self.id = study.load_or_create(self.dir, [], [method], int(cfg.seed), 0, self.resume, self.overrides,
                                          api=str(cfg.serve.api), design=DESIGN)
        self.memories = Memories(self.dir, self.resume)
        run = ClientRun(method, cfg, documents_of(_records(run_dir)) if self.resume else [])
        self.runs = {method: run}
        learner = Learner(model, method_cfg=part.method, update_cfg=part["update"], reset=part.reset, seed=part.seed)
        if self.resume:
            self._check_resume(run, learner)
        self.translations: OrderedDict[str, Shown] = OrderedDict()
        self.jobs: dict[str, tuple[int, int]] = {}  # import job id → (memory, step)
        try:
            self._open_run(run, part, learner, self.resume)
            human = _lines(run_dir / HUMAN_FILE)
            for line in human:
                self.jobs[line["import_job"]] = (line["memory"], line["index"])
            self._recall_translations(run_dir, human)
            current = self.memories.document
            if current is not None and (run.sim.current is None or run.sim.current.doc_id != str(current)):
                run.sim.begin_document(str(current))  # begun before the kill, with no pair yet
        except BaseException:
            self.close()
            raise

    def _check_resume(self, run: MethodRun, learner: Learner) -> None:
        """The one resume rule (adaptsim/launch/resume.py `check`), the data aside: they are the records themselves."""
        run_dir = self.dir / run.method
        previous = read_summary(run_dir)
        current = {"model_fingerprint": model_fingerprint(run.cfg.model.path),
                   "data_fingerprint": previous.get("data_fingerprint"), "method_info": learner.method.info()}
        resume.check(run_dir, previous, run.cfg, COMMAND, current=current, beside_steps=(HUMAN_FILE,))

    @property
    def run(self) -> MethodRun:
        return next(iter(self.runs.values()))

    @property
    def ended(self) -> str | None:
        """`finished` once serve.finish=true has finished the run; None while the client may go on."""
        return "finished" if self.run.writer is None and self.run.job.data.get("status") == "finished" else None

    # -- what the client asks ------------------------------------------------------------------------------------

    def check_languages(self, source, target) -> None:
        """The client's language codes name the model's pair (the primary subtag compared: en-US is en, pt_BR pt);
        any, where the model's languages are not configured."""
        for side, code in (("source", source), ("target", target)):
            if not isinstance(code, str) or not code:
                raise Refused(f"{side}: a language code is required (adaptsim detects no language)")
            wanted = self.languages[f"{side}_lang"]
            if wanted is not None and _primary(code) != _primary(wanted):
                raise Refused(f"{side}={code[:20]}: this session translates {self.languages['source_lang']} → "
                              f"{self.languages['target_lang']} only", 400, "language")

    def text(self, text, what: str, empty: bool = False) -> str:
        """A text the client sent, its whitespace collapsed (module docstring); one line if it is not one, longer than
        serve.max_chars or, unless `empty`, empty. (Its tokens are counted under the lock: `_fits`.)"""
        if not isinstance(text, str):
            raise Refused(f"{what}: a string")
        if len(text) > self.max_chars:
            raise Refused(f"{what}: {len(text)} characters; at most serve.max_chars={self.max_chars}", 413, "too_large")
        if bad := NOT_TEXT.search(text):
            raise Refused(f"{what}: character {bad.start() + 1} is U+{ord(bad.group()):04X}, a control character or "
                          "half of a surrogate pair, not text")
        text = " ".join(text.split())
        if not text and not empty:
            raise Refused(f"{what}: empty")
        return text

    def _fits(self, texts: dict[str, str]) -> None:
        """One line for the first text ({what: text}) longer than the model accepts (`run` would skip its pair)."""
        for what, text in texts.items():
            if text and (n := self.count_tokens(text)) > self.max_tokens:
                raise Refused(f"{what}: {n} tokens, more than the model accepts ({self.max_tokens})")

    def languages_offered(self) -> tuple[str | None, str | None]:
        return self.languages["source_lang"], self.languages["target_lang"]

    def translate(self, sources: list[str], hints: list[int]) -> list[str]:
        """θ's translation of each source (already `text`), each as the next step would translate it, the document
        the `hints` name begun first where it must be (module docstring); "" for an empty one."""
        with self.lock:
            self._live()
            self._fits({f"q[{i}]" if len(sources) > 1 else "q": s for i, s in enumerate(sources)})
            self._hinted(hints)
            run, given = self.run, {}
            try:
                for source in dict.fromkeys(s for s in sources if s):  # (a source given twice: translated once)
                    seg = run.sim.append(source)
                    try:
                        with run.sim.begin() as turn:
                            given[source] = self._translated(turn)
                    finally:
                        run.sim.remove(seg)
                doc = run.sim.current.doc_id if run.sim.current is not None else ""
                if given:
                    append_lines(self.dir / run.method / TRANSLATIONS_FILE, [
                        {"after": shown.after, "doc_id": doc, "source": source, "hypothesis": shown.translation.text,
                         "pieces": shown.translation.pieces, "cut": shown.translation.cut,
                         **({"reasoning": True} if shown.translation.reasoning else {}), "translate_s": shown.seconds}
                        for source, shown in given.items()])
            except Exception as e:  # (θ is as it was, but a model or a disk that failed is not trusted)
                raise self._stopped(e, run, "translating", f"; resume=true serve.dir={self.dir} goes on") from None
            for source, shown in given.items():
                self._keep(source, shown)
            return [given[s].translation.text if s else "" for s in sources]

    def add(self, memory: int, sentence: str, translation: str, sent: dict) -> dict:
        """The confirmed pair (already `text`) added to `memory`: the session's next step (module docstring), on disk
        before the answer; ModernMT's ImportJob of it. `sent`: what human.jsonl records of the request besides."""
        with self.lock:
            self._live()
            self._fits({"sentence": sentence, "translation": translation})
            self._memory(memory)
            if self._ended(memory):
                raise self._ended_refusal(memory)
            run = self.run
            if self._current() != memory:
                self._begin(memory)
            index = run.sim.index
            job = str(uuid.uuid5(uuid.NAMESPACE_URL, f"adaptsim:{self.id}:{index}"))  # (the same at a replay)
            shown = self.translations.pop(sentence, None)
            try:
                run.sim.append(sentence, translation)
                turn = run.sim.begin()
                how = "translate" if shown is not None else "add"
                if shown is None:
                    shown = self._translated(turn)
                run.sim.sent = {"memory": memory, "hypothesis_from": how, "translated_after": shown.after, **sent,
                                "import_job": job}
                run.sim.commit(turn, shown.translation, shown.seconds, translation)
                run.writer.sync()  # on disk before the answer
                run.texts.append(translation)
                self.jobs[job] = (memory, index)
                self._keep_time()
            except Exception as e:  # the step is taken whole or the session stops (resume=true goes on)
                raise self._stopped(e, run, f"adding step {index + 1}",
                                    f"; resume=true serve.dir={self.dir} goes on") from None
            return self.import_job(job)

    def create_memory(self, name: str, description: str | None, external_id: str | None) -> dict:
        with self.lock:
            self._live()
            return self.memories.create(name, description, external_id)

    def memory(self, memory: int) -> dict:
        with self.lock:
            return self._memory(memory)

    def memory_list(self) -> list[dict]:
        with self.lock:
            return list(self.memories.items.values())

    def import_job(self, job: str) -> dict:
        if job not in self.jobs:
            raise Refused(f"import job {job[:40]}: none such in this session", 404, "no_resource")
        return {"id": job, "memory": self.jobs[job][0], "size": 1, "progress": 1.0}

    def finish_session(self) -> None:
        """serve.finish=true: the run finished on the pairs added (module docstring)."""
        with self.lock:
            run = self.run
            if not run.done:
                raise UserError(f"serve.dir={self.dir}: no pair was added to a memory in this session; nothing to "
                                "finish")
            self._finish(run)

    # -- its parts -----------------------------------------------------------------------------------------------

    def _keep(self, source: str, shown: Shown) -> None:
        """The sentence's last translation, waiting for its addition (module docstring)."""
        self.translations.pop(source, None)
        self.translations[source] = shown
        if len(self.translations) > TRANSLATIONS_KEPT:
            self.translations.popitem(last=False)

    def _recall_translations(self, run_dir: Path, human: list[dict]) -> None:
        """The translations waiting for their additions as the killed process had them: translations.jsonl's lines
        kept in order, each step taking its sentence's where it took a translation (a line with `after` ≤ i was
        given before step i); a last line a kill cut short is cut off."""
        path = run_dir / TRANSLATIONS_FILE
        lines, whole = written_records(path, "translation")
        if path.is_file() and path.stat().st_size > whole:
            os.truncate(path, whole)
        steps = _records(run_dir)
        at = 0
        for i, (step, line) in enumerate(zip(steps, human)):
            while at < len(lines) and lines[at]["after"] <= i:
                self._keep(lines[at]["source"], _shown(lines[at]))
                at += 1
            if line.get("hypothesis_from") == "translate":
                self.translations.pop(step["source"], None)
        for line in lines[at:]:
            self._keep(line["source"], _shown(line))

    def _live(self) -> None:
        if self.failed:
            raise Refused(f"the session stopped: {self.failed}", 409, "stopped")
        if self.ended:
            raise Refused("the session is finished", 409, "finished")

    def _translated(self, turn) -> Shown:
        """The turn's source translated as the page translates it (`ServeSession._show_next`)."""
        run = self.run
        start = time.perf_counter()
        translation = run.learner.model.translate(turn.seg.source, context=turn.pairs, **run.sim.cfg.decode)
        return Shown(translation, time.perf_counter() - start, run.sim.index)

    def _memory(self, memory: int) -> dict:
        if memory not in self.memories.items:
            raise Refused(f"memory {memory}: none such in this session", 404, "no_resource")
        return self.memories.items[memory]

    def _current(self) -> int | None:
        """The memory of the current document."""
        doc = self.run.sim.current
        return int(doc.doc_id) if doc is not None and doc.doc_id else None

    def _ended(self, memory: int) -> bool:
        """Whether the memory's document has pairs and another document began after it."""
        return memory != self._current() and any(d.doc_id == str(memory) and d.segments
                                                 for d in self.run.sim.documents)

    def _ended_refusal(self, memory: int) -> Refused:
        return Refused(f"memory {memory}: its document ended when memory {self._current()}'s began (a run adapts "
                       "along one document at a time, θ0 again where reset says); create a new memory to go on",
                       409, "memory_ended")

    def _begin(self, memory: int) -> None:
        """The memory's document begins (recorded first: a resume begins it again)."""
        self.memories.set_document(memory)
        self.run.sim.begin_document(str(memory))

    def _hinted(self, hints: list[int]) -> None:
        """The document a translation's `hints` name begun, where they do not name the current one (module
        docstring)."""
        if not hints or self._current() in hints:
            return
        for memory in hints:
            self._memory(memory)
        fresh = [m for m in hints if not self._ended(m)]
        if not fresh:
            raise self._ended_refusal(hints[0])
        self._begin(fresh[0])


def _shown(line: dict) -> Shown:
    translation = Translation(line["hypothesis"], line["pieces"], line["cut"], line.get("reasoning", False))
    return Shown(translation, line["translate_s"], line["after"])


def _primary(code: str) -> str:
    return code.replace("_", "-").split("-")[0].lower()


def _lines(path: Path) -> list[dict]:
    """The whole lines of a run's human.jsonl (cut to its steps when the run was opened)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
