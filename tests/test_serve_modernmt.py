"""`adaptsim serve serve.api=modernmt`: ModernMT's API on the session (adaptsim/serve/modernmt.py, client.py), driven
by ModernMT's official Python client, unmodified (`modernmt` on PyPI), pointed at a real server: the records are a
simulation's of the same pairs, the adapted term changes as in the demo, a SIGKILL and resume=true lose nothing;
in-process (Starlette's test client, requests shaped as the client's): memories are documents, bad requests get one
ModernMT line and change nothing."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="serve's API needs the serve extra: pip install -e \".[serve]\"")
pytest.importorskip("httpx", reason="Starlette's test client needs httpx (the test extra)")
modernmt = pytest.importorskip("modernmt", reason="ModernMT's official client (pip install modernmt==1.5.2, in the "
                                                  "test extra) is not installed")

from starlette.testclient import TestClient  # noqa: E402

from adaptsim.cli import main  # noqa: E402
from adaptsim.commands.serve import configs  # noqa: E402
from adaptsim.errors import UserError  # noqa: E402
from adaptsim.serve.client import ClientSession  # noqa: E402
from adaptsim.serve.modernmt import create_api_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KEY = "api-key-of-the-session"
TIMINGS = ("translate_s", "update_s", "moment_s")  # what differs between two runs of the same steps


def demo_document() -> list[tuple[str, str]]:
    """The demo's first document: (source, reference) of its 15 segments."""
    with open(ROOT / "data" / "demo" / "docs.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(r["source"], r["reference"]) for r in rows if r["doc_id"] == rows[0]["doc_id"]]


def steps(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]


def untimed(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMINGS} for r in records]


def md5s(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def simulate(tmp_path: Path, name: str, *overrides: str) -> Path:
    out = tmp_path / name
    with pytest.raises(SystemExit) as exit_:
        main(["run", f"hydra.run.dir={out}", "progress=false", "threads=1", *overrides])
    assert exit_.value.code == 0
    return out


def serve(tmp_path: Path, name: str, *overrides: str) -> tuple[subprocess.Popen, str, str]:
    """`adaptsim serve` with ModernMT's API, started as a user starts it: the process, its base URL and API key."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(tmp_path / f"{name}.err", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "adaptsim", "serve", "serve.api=modernmt", "threads=1",
                                 *overrides], stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    line = proc.stdout.readline()
    address = re.search(r"ModernMT's API at (http://127\.0\.0\.1:\d+) \(the base URL\), API key (\S+)", line)
    if not address:
        proc.kill()
        raise AssertionError(line + (tmp_path / f"{name}.err").read_text())
    return proc, *address.groups()


def client(base: str, key: str):
    """ModernMT's client as its users make it, its base address (one private attribute) the local server's."""
    mmt = modernmt.ModernMT(key)
    mmt._ModernMT__base_url = base
    return mmt


def test_the_official_client_drives_a_session_recorded_as_a_simulation_of_its_pairs(tmp_path):
    """The demo's first document translated segment by segment with ModernMT's client, each reference added to a
    memory (a SIGKILL after the 8th, then resume=true): the client got θ_{i−1}'s translations, the records equal
    `adaptsim run`'s over the same pairs (hypotheses, perplexities, scores; timings aside), and the repeated term
    the demo adapts changes as it does (character: Figur under θ0, Zeichen by the 12th segment). A wrong key is 401,
    an option adaptsim cannot honour one ModernMT line."""
    document, directory = demo_document(), tmp_path / "s"
    started = [f"serve.dir={directory}", "serve.port=0", "model=demo", "method=lasso"]
    proc, base, key = serve(tmp_path, "first", *started)
    shown = []
    try:
        mmt = client(base, key)
        assert mmt.list_supported_languages() == ["en", "de"]
        before = mmt.translate("en", "de", document[14][0])  # θ0's, before any pair: no memory named yet
        assert "Figur" in before.translation and before.characters == len(document[14][0])
        memory = mmt.memories.create("demo project")
        assert [m.id for m in mmt.memories.list()] == [memory.id] and mmt.memories.get(memory.id).name == "demo project"
        for source, reference in document[:8]:
            shown.append(mmt.translate("en", "de", source, hints=[memory.id]).translation)
            job = mmt.memories.add(memory.id, "en", "de", source, reference)
            assert (job.memory, job.size, job.progress) == (memory.id, 1, 1.0)
            assert mmt.memories.get_import_status(job.id).id == job.id
        with pytest.raises(modernmt.ModernMTException) as refused:
            client(base, "a-wrong-key").translate("en", "de", "A driver.")
        assert refused.value.status == 401 and refused.value.type == "AuthenticationException"
        with pytest.raises(modernmt.ModernMTException) as refused:
            mmt.translate("en", "de", "A driver.", options={"glossaries": "1"})
        assert refused.value.status == 400 and refused.value.message == "glossaries: adaptsim does not offer glossaries"
    finally:
        proc.kill()  # SIGKILL
        proc.wait(timeout=60)
    proc, again, same = serve(tmp_path, "second", *started, "resume=true")
    try:
        mmt = client(again, same)
        assert same == key and [m.id for m in mmt.memories.list()] == [memory.id]
        for source, reference in document[8:]:
            shown.append(mmt.translate("en", "de", source, hints=str(memory.id)).translation)
            mmt.memories.add(memory.id, "en", "de", source, reference)
        proc.send_signal(signal.SIGTERM)  # stopped: the run `interrupted`, resume=true goes on
        proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=60)
    run = directory / "lasso"
    assert json.loads((run / "summary.json").read_text())["status"] == "interrupted"
    with pytest.raises(SystemExit) as exit_:
        main(["serve", f"serve.dir={directory}", "resume=true", "serve.finish=true"])
    assert exit_.value.code == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["dataset"] == "modernmt" and summary["segments"] == 15
    assert summary["timing"]["resumed_after_steps"] == 15
    human = [json.loads(line) for line in (run / "human.jsonl").read_text().splitlines()]
    assert [h["hypothesis_from"] for h in human] == ["translate"] * 15
    assert [h["translated_after"] for h in human] == list(range(15)) and {h["memory"] for h in human} == {memory.id}
    assert {(h["platform"], h["platform_version"]) for h in human} == {("modernmt-python", "1.5.2")}
    # the same pairs simulated: the same records, and the demo's own run translated as the client was answered
    sim = simulate(tmp_path, "sim", "method=lasso", "dataset=tsv", f"dataset.path={run / 'references.tsv'}")
    assert untimed(steps(sim)) == untimed(steps(run))
    assert summary["data_fingerprint"] == json.loads((sim / "summary.json").read_text())["data_fingerprint"]
    assert summary["scores"] == json.loads((sim / "summary.json").read_text())["scores"]
    demo = simulate(tmp_path, "demo", "method=lasso", "dataset=demo", "dataset.max_documents=1")
    assert [r["hypothesis"] for r in steps(demo)] == shown == [r["hypothesis"] for r in steps(run)]
    assert "Figur" in shown[0] and "Zeichen" in shown[11] and "Zeichen" in shown[14]  # the term, adapted
    with pytest.raises(UserError, match="the session is finished"):  # a finished session is not resumed
        ClientSession(*_configs(directory, "resume=true"))


def _configs(directory: Path, *more: str) -> tuple[dict, list[str]]:
    argv = [f"serve.dir={directory}", "serve.api=modernmt", "model=demo", "decode.beam_size=2",
            "decode.max_length=40", "threads=1", *more]
    return configs(argv), argv


def open_session(directory: Path, *more: str) -> tuple[ClientSession, TestClient]:
    session = ClientSession(*_configs(directory, *more))
    return session, TestClient(create_api_app(session, KEY, ["testserver"], 4096), headers={"MMT-ApiKey": KEY})


def ask(api: TestClient, method: str, path: str, data: dict | None = None, **kwargs):
    """A request as ModernMT's client sends it: a POST, the method in X-HTTP-Method-Override, a JSON body."""
    response = api.post(path, json=data, headers={"X-HTTP-Method-Override": method, **kwargs.pop("headers", {})},
                        **kwargs)
    return response.status_code, response.json()


PAIRS = [("Does a developer edit a character?", "Bearbeitet eine Entwicklerin ein Zeichen?"),
         ("Their driver downloads a character from the toolbar.", "Ihr Treiber lädt ein Zeichen aus der "
                                                                  "Symbolleiste herunter."),
         ("My ticket is visible.", "Mein Ticket ist sichtbar."),
         ("The crash is old.", "Der Absturz ist alt."), ("The crash is new.", "Der Absturz ist neu.")]


def test_memories_are_documents_and_a_killed_session_resumes_by_replay(tmp_path):
    """Two memories, two documents (θ0 again for the second: reset=document): a translate whose hints name the
    second memory begins its document (a real GET with the query string, as Weblate's connector sends it), the
    first memory then takes no more (409), and the records equal a simulation of the two documents. Killed after
    the second document began (a translation, no pair yet; its line in translations.jsonl cut short), a resumed
    session goes on in it with the same θ and the translations given: the records equal those of the session never
    killed."""
    def session(name: str, kill: bool) -> Path:
        directory = tmp_path / name
        s, api = open_session(directory)
        for memory in ("first", "second"):
            assert ask(api, "post", "/memories", {"name": memory})[0] == 200
        for source, reference in PAIRS[:2]:
            assert ask(api, "get", "/translate", {"source": "en-US", "target": "de-DE", "q": source,
                                                  "hints": "1"})[0] == 200
            assert ask(api, "post", "/memories/1/content", {"source": "en-US", "target": "de-DE", "sentence": source,
                                                            "translation": reference})[0] == 200
        got = api.get("/translate", params={"source": "en", "target": "de", "q": [PAIRS[2][0], PAIRS[3][0]],
                                            "hints": "2"})
        assert got.status_code == 200 and len(got.json()["data"]) == 2
        if kill:
            del s, api  # (no close: as a kill leaves it, here in the middle of a translation's line)
            with open(directory / "lasso" / "translations.jsonl", "a") as torn:
                torn.write('{"after": 2, "doc_id": "2", "sou')
            s, api = open_session(directory, "resume=true")
        late = {"source": "en", "target": "de", "sentence": "A crash.", "translation": "Ein Absturz."}
        status, refused = ask(api, "post", "/memories/1/content", late)
        assert status == 409 and refused["error"]["type"] == "ConflictException"
        for source, reference in PAIRS[2:]:  # the last one never translated before
            assert ask(api, "post", "/memories/2/content", {"source": "en", "target": "de", "sentence": source,
                                                            "translation": reference})[0] == 200
        s.close()
        with pytest.raises(SystemExit):
            main(["serve", f"serve.dir={directory}", "resume=true", "serve.finish=true"])
        return directory / "lasso"

    whole, resumed = session("whole", kill=False), session("killed", kill=True)
    assert untimed(steps(resumed)) == untimed(steps(whole))
    lines = [[{k: v for k, v in json.loads(line).items() if k != "import_job"}  # (its id: the session's own)
              for line in (run / "human.jsonl").read_text().splitlines()] for run in (whole, resumed)]
    assert lines[0] == lines[1]
    assert [(h["memory"], h["hypothesis_from"], h["source_lang"]) for h in lines[0]] == [
        (1, "translate", "en-US"), (1, "translate", "en-US"), (2, "translate", "en"), (2, "translate", "en"),
        (2, "add", "en")]
    assert [h["translated_after"] for h in lines[0]] == [0, 1, 2, 2, 4]  # the batch's second: θ_2's, not θ_3's
    summary = json.loads((whole / "summary.json").read_text())
    assert [d["doc_id"] for d in summary["per_document"]] == ["1", "2"] and summary["documents"] == 2
    sim = simulate(tmp_path, "sim", "method=lasso", "dataset=tsv", f"dataset.path={whole / 'references.tsv'}",
                   "decode.beam_size=2", "decode.max_length=40")
    simulated = untimed(steps(sim))
    hypotheses = [r["hypothesis"] for r in steps(whole)]
    assert [r["hypothesis"] for i, r in enumerate(simulated) if i != 3] == hypotheses[:3] + hypotheses[4:]
    assert [r["ppl_after"] for r in simulated] == [r["ppl_after"] for r in steps(whole)]  # θ0 again at memory 2
    translations = [json.loads(line) for line in (whole / "translations.jsonl").read_text().splitlines()]
    assert [(t["after"], t["doc_id"]) for t in translations] == [(0, "1"), (1, "1"), (2, "2"), (2, "2")]


def test_bad_requests_get_one_modernmt_line_and_change_nothing(tmp_path):
    session, api = open_session(tmp_path / "s")
    assert ask(api, "post", "/memories", {"name": "m"})[0] == 200
    good = {"source": "en", "target": "de", "sentence": PAIRS[0][0], "translation": PAIRS[0][1]}
    assert ask(api, "post", "/memories/1/content", good)[0] == 200
    assert api.get("/languages").json() == {"status": 200, "data": {"en": ["de"]}}  # (Weblate's connector reads it)
    before = md5s(tmp_path / "s")
    translate = {"source": "en", "target": "de", "q": "A driver."}
    cases = [
        (("get", "/translate", {**translate, "context_vector": "1:0.5"}), 400, "UnsupportedOptionException"),
        (("get", "/translate", {**translate, "alt_translations": 3}), 400, "UnsupportedOptionException"),
        (("get", "/translate", {**translate, "format": "text/xml"}), 400, "UnsupportedOptionException"),
        (("get", "/translate", {**translate, "q": "A driver.\nA crash."}), 400, "UnsupportedOptionException"),
        (("get", "/translate", {**translate, "colour": "red"}), 400, "UnsupportedOptionException"),
        (("get", "/translate", {**translate, "target": "fr"}), 400, "UnsupportedLanguageException"),
        (("get", "/translate", {**translate, "source": None}), 400, "ParameterParsingException"),
        (("get", "/translate", {**translate, "q": "x" * 2001}), 413, "PayloadTooLargeException"),
        (("get", "/translate", {**translate, "q": "A \x07 driver."}), 400, "ParameterParsingException"),
        (("get", "/translate", {**translate, "hints": "7"}), 404, "NotFoundException"),
        (("get", "/translate", {**translate, "hints": "one"}), 400, "ParameterParsingException"),
        (("post", "/memories/1/content", {**good, "translation": " "}), 400, "ParameterParsingException"),
        (("post", "/memories/1/content", {**good, "session": "s1"}), 400, "UnsupportedOptionException"),
        (("post", "/memories/9/content", good), 404, "NotFoundException"),
        (("get", "/import-jobs/00000000-0000-0000-0000-000000000000", None), 404, "NotFoundException"),
        (("delete", "/memories/1", None), 501, "NotImplementedException"),
        (("get", "/translate/detect", {"q": "A driver."}), 501, "NotImplementedException"),
        (("post", "/memories/1/glossary", {"terms": []}), 501, "NotImplementedException"),
        (("get", "/nowhere", None), 404, "ApiNotFoundException"),
        (("patch", "/memories", None), 405, "ApiNotFoundException"),
        (("post", "/memories", {"name": ""}), 400, "ParameterParsingException"),
    ]
    for (method, path, data), status, kind in cases:
        code, answer = ask(api, method, path, data)
        assert (code, answer["status"], answer["error"]["type"]) == (status, status, kind), (path, data, answer)
        assert "\n" not in answer["error"]["message"]
    bare = TestClient(api.app)
    for headers in ({}, {"MMT-ApiKey": "guess"}):
        response = bare.post("/memories", json={"name": "x"}, headers={"X-HTTP-Method-Override": "post", **headers})
        assert response.status_code == 401 and response.json()["error"]["type"] == "AuthenticationException"
    response = api.get("/memories", headers={"Host": "evil.example"})
    assert response.status_code == 400 and response.json()["status"] == 400
    response = api.post("/memories", content=b"name=x", headers={"Content-Type": "application/x-www-form-urlencoded",
                                                                 "X-HTTP-Method-Override": "post"})
    assert response.status_code == 415
    response = api.post("/memories", json={"name": "x"}, headers={"Origin": "http://evil.example"})
    assert response.status_code == 403 and response.json()["error"]["type"] == "ForbiddenException"
    response = api.post("/translate", json={**translate, "q": ["A driver."] * 400},
                        headers={"X-HTTP-Method-Override": "get"})
    assert response.status_code == 413  # over serve.max_request_bytes
    assert md5s(tmp_path / "s") == before
    assert ask(api, "get", "/translate", {**translate, "q": "A driver.\nA crash.", "multiline": False})[1]["data"][
        "characters"] == len("A driver.\nA crash.")  # one segment, its whitespace collapsed
    session.close()


def test_settings_the_api_cannot_take_are_refused_in_one_line(tmp_path, capsys):
    def refused(argv: list[str], said: str) -> None:
        with pytest.raises(SystemExit) as exit_:
            main(["serve", *argv])
        err = capsys.readouterr().err
        assert exit_.value.code == 1 and said in err and err.count("\n") == 1, err

    for more, said in ((["serve.methods=[full,lasso]"], "a study"), (["dataset=demo"], "reads no dataset"),
                       (["serve.translator=1"], "a study")):
        with pytest.raises(UserError, match=said):
            ClientSession(*_configs(tmp_path / "s", *more))
    refused([f"serve.dir={tmp_path / 's'}", "serve.finish=true"], "serve.finish=true: finishes a session of serve's "
                                                                   "API (serve.api=modernmt resume=true")
    session, api = open_session(tmp_path / "s")
    session.close()
    refused([f"serve.dir={tmp_path / 's'}", "resume=true", "serve.finish=true"], "no pair was added to a memory")
    study = json.loads((tmp_path / "s" / "study.json").read_text())
    assert study["api"] == "modernmt"
    refused([f"serve.dir={tmp_path / 's'}", "resume=true", "serve.api=null"], "started with serve.api=modernmt")
