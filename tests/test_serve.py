"""`adaptsim serve` through its web API (Starlette's test client) on the demo model: the records are a simulation's,
a killed session resumes by replay, bad requests change nothing, a study assigns methods blind and balanced, and the
command prints an address whose token every request needs. (The page itself, in Chromium: test_serve_browser.py.)"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from conftest import tsv_of  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from adaptsim.cli import main  # noqa: E402
from adaptsim.commands.serve import allowed_hosts, configs  # noqa: E402
from adaptsim.errors import UserError  # noqa: E402
from adaptsim.serve import study  # noqa: E402
from adaptsim.serve.app import create_app  # noqa: E402
from adaptsim.serve.state import ServeSession  # noqa: E402

METHODS = ("full", "lasso")
SMALL = ["dataset.max_documents=2", "dataset.max_segments=2", "decode.beam_size=2", "decode.max_length=40"]
TOKEN = "secret-token"
EFFORT = {"keystrokes": 4, "mouse_actions": 2, "word_strokes": 1, "seconds": 2.5, "accepted_completions": 1,
          "completion_requests": 3}


def open_session(directory: Path, *overrides: str) -> tuple[ServeSession, TestClient]:
    argv = [f"serve.dir={directory}", *SMALL, *overrides]
    session = ServeSession(configs(argv), argv)
    client = TestClient(create_app(session, TOKEN, ["testserver"], 4096), headers={"X-Adaptsim-Token": TOKEN})
    return session, client


def edit(hypothesis: str) -> str:
    """What our translator makes of a hypothesis: the last word replaced (a correction the method can learn)."""
    words = hypothesis.split()
    return " ".join(words[:-1] + ["Ticket."])


def validate(client: TestClient) -> dict:
    state = client.get("/api/state").json()
    response = client.post("/api/validate", json={"position": state["position"], "text": edit(state["hypothesis"]),
                                                   "effort": EFFORT})
    assert response.status_code == 200, response.text
    return response.json()


def steps(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]


def test_a_session_records_what_a_simulation_of_its_references_records(tmp_path):
    session, client = open_session(tmp_path / "s", "method=full")
    first = client.get("/api/state").json()
    assert first["position"] == 0 and first["document"] == 1 and first["segment"] == 0 and first["hypothesis"]
    assert (first["source_lang"], first["target_lang"], first["reopenable"]) == ("en", "de", False)
    done = client.post("/api/complete", json={"position": 0, "prefix": "Bearbeitet eine"}).json()
    assert done["completion"].startswith("Bearbeitet eine") and len(done["completion"]) > len("Bearbeitet eine")
    shown = []
    while not (state := client.get("/api/state").json())["finished"]:
        shown.append(state["hypothesis"])
        validate(client)
    session.close()
    run = tmp_path / "s" / "full"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["command"] == "serve" and summary["segments"] == 4
    from adaptsim.records import JOB_KEYS, RUN_KEYS

    assert set(summary) <= {*JOB_KEYS, *RUN_KEYS}  # a run's schema, nothing undeclared
    records = steps(run)
    assert [r["hypothesis"] for r in records] == shown  # θ_{i−1}'s translations, as the page showed them
    assert [r["reference"] for r in records] == [edit(h) for h in shown]
    assert all(r["effort"]["KS"] == 4 and r["effort"]["level"] == "human" for r in records)
    assert summary["scores"]["KSMR"] is not None
    assert [json.loads(line)["accepted_completions"]
            for line in (run / "human.jsonl").read_text().splitlines()] == [1] * 4
    # the simulation of the same documents with the translator's references: the same hypotheses, updates and data
    out, simulated = _run(tmp_path, "sim", "method=full", "dataset=tsv", f"dataset.path={run / 'references.tsv'}",
                          "metrics.interactive=char")
    assert [r["hypothesis"] for r in steps(out)] == shown
    assert [r["ppl_after"] for r in steps(out)] == [r["ppl_after"] for r in records]
    assert simulated["data_fingerprint"] == summary["data_fingerprint"]
    for key in ("BLEU", "R0", "R1", "TER"):
        assert simulated["scores"][key] == pytest.approx(summary["scores"][key])
    assert [r["R0_num"] for r in steps(out)] == [r["R0_num"] for r in records]  # steps rescored over all references
    for command in (["table", str(tmp_path / "s")], ["compare", str(run), str(out), "--metrics", "BLEU,KSMR,MAR"]):
        with pytest.raises(SystemExit) as exit_:  # the translator's effort against what the simulation predicts
            main(command)
        assert exit_.value.code == 0


def _run(tmp_path, name, *overrides):
    out = tmp_path / name
    with pytest.raises(SystemExit) as exit_:
        main(["run", f"hydra.run.dir={out}", "progress=false", "decode.beam_size=2", "decode.max_length=40",
              *overrides])
    assert exit_.value.code == 0
    return out, json.loads((out / "summary.json").read_text())


def test_a_killed_session_resumes_by_replay_where_the_translator_stopped(tmp_path):
    whole, client = open_session(tmp_path / "whole")
    for _ in range(3):
        validate(client)
    expected = client.get("/api/state").json()
    expected.pop("session")
    whole.close()

    killed, client = open_session(tmp_path / "s")
    validate(client)
    validate(client)  # the end of the first document
    del killed, client  # (no close: as a kill leaves it, summary.json `running`)
    resumed, client = open_session(tmp_path / "s", "resume=true")
    assert client.get("/api/state").json()["position"] == 2
    validate(client)
    state = client.get("/api/state").json()
    assert state.pop("session") and state == expected  # θ as the uninterrupted session's: the same translation
    validate(client)
    resumed.close()
    assert [r["ppl_after"] for r in steps(tmp_path / "s" / "lasso")][:3] == \
        [r["ppl_after"] for r in steps(tmp_path / "whole" / "lasso")]
    summary = json.loads((tmp_path / "s" / "lasso" / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["timing"]["resumed_after_steps"] == 2


def test_resuming_with_other_settings_is_refused_and_changes_nothing(tmp_path):
    session, client = open_session(tmp_path / "s")
    validate(client)
    session.close()
    run = tmp_path / "s" / "lasso"
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    with pytest.raises(UserError, match=r"method.lr: 0.01 → 0.5"):
        open_session(tmp_path / "s", "resume=true", "method.lr=0.5")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    with pytest.raises(UserError, match="holds another session"):
        open_session(tmp_path / "s")


def md5s(directory: Path) -> dict[str, str]:
    """Every file under `directory`, by its md5."""
    return {str(p.relative_to(directory)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_resume_after_a_file_it_read_changed_is_refused_and_changes_nothing(tmp_path):
    """The one resume rule (adaptsim/launch/resume.py), as under `run`: an external TM that lost an entry, a stopword
    list, a truecaser's text, a novel-vocabulary file or fixed's tensor list rewritten under its name is refused in one
    line naming the setting, the session's files byte for byte (once resumed silently, overwriting the recorded
    fingerprints; the list once refused by the replay only, blaming the software)."""
    from adaptsim.fixed_lists import list_path

    tm, stopwords, truecase, novel = (tmp_path / n for n in ("tm.tsv", "stop.txt", "truecase.txt", "novel.txt"))
    tm.write_text("source\treference\nA driver uses four firewalls.\tEin Fahrer benutzt vier Firewalls.\n"
                  "Does a tester open a window?\tÖffnet ein Tester ein Fenster?\n")  # (no reference of the stream)
    stopwords.write_text("der\ndie\n")
    truecase.write_text("Ein Treiber benutzt vier Firewalls.\n")
    novel.write_text("Treiber Zeichen\n")
    fixed = tmp_path / "demo.yaml"
    fixed.write_bytes(list_path("demo").read_bytes())
    metrics = [f"metrics.stopwords={stopwords}", f"metrics.truecase_text={truecase}", f"metrics.novel_vocab={novel}"]
    sessions = {"tm": ["method=tm", "method.external.format=tsv", f"method.external.path={tm}", *metrics],
                "fixed": ["method=fixed", f"method.list={fixed}"]}
    for name, args in sessions.items():
        session, client = open_session(tmp_path / name, *args)
        validate(client)
        session.close()
    changes = [("tm", tm, lambda text: text.rsplit("\n", 2)[0] + "\n", "method.external.path"),  # an entry removed
               ("tm", stopwords, lambda text: text + "das\n", "metrics.stopwords"),
               ("tm", truecase, lambda text: text + "Der Treiber.\n", "metrics.truecase_text"),
               ("tm", novel, lambda text: text + "Firewalls\n", "metrics.novel_vocab"),
               ("fixed", fixed, lambda text: text + "# changed\n", "method.list")]
    for name, path, change, key in changes:
        before, original = md5s(tmp_path / name), path.read_text()
        path.write_text(change(original))
        with pytest.raises(UserError, match=f"cannot resume: a file it read has changed \\({re.escape(key)}: ") \
                as refused:
            open_session(tmp_path / name, *sessions[name], "resume=true")
        assert str(tmp_path / name / name) in str(refused.value) and "\n" not in str(refused.value)
        assert md5s(tmp_path / name) == before, key
        path.write_text(original)
    for name, args in sessions.items():  # the files as they were: resumed
        session, client = open_session(tmp_path / name, *args, "resume=true")
        assert client.get("/api/state").json()["position"] == 1
        session.close()


def test_a_resume_whose_human_records_disagree_with_its_steps_is_refused_and_changes_nothing(tmp_path):
    """human.jsonl holds a line per step, written before the step's: a resume refuses one with fewer lines than
    steps.jsonl has steps, or with a line naming another segment than its step (it once kept whatever whole lines it
    found), the session's files byte for byte; a line more than the steps (a kill between the two) resumes."""
    session, client = open_session(tmp_path / "s")
    validate(client)
    validate(client)
    session.close()
    human = tmp_path / "s" / "lasso" / "human.jsonl"
    original = human.read_text()
    lines = original.splitlines(keepends=True)
    other = json.dumps({**json.loads(lines[1]), "seg_id": "elsewhere"}) + "\n"
    for text, said in ((lines[0], r"human.jsonl: 1 whole lines for the 2 steps of steps.jsonl"),
                       (lines[0] + other, r"human.jsonl:2: names step 1 \(document .*, segment elsewhere\), "
                                          r"steps.jsonl's line 2 step 1"),
                       (original * 2, r"human.jsonl: 4 whole lines for the 2 steps")):
        human.write_text(text)
        before = md5s(tmp_path / "s")
        with pytest.raises(UserError, match=said) as refused:
            open_session(tmp_path / "s", "resume=true")
        assert "\n" not in str(refused.value) and md5s(tmp_path / "s") == before
    human.write_text(original + lines[1])  # one line more: its step was killed before steps.jsonl had it
    session, client = open_session(tmp_path / "s", "resume=true")
    assert client.get("/api/state").json()["position"] == 2 and human.read_text() == original
    session.close()


def test_bad_requests_get_one_line_and_change_nothing(tmp_path, caplog):
    """Every refusal is one JSON object, its technical line and its code (what the page tells the translator), and a
    WARNING line in the server's log that names the method, path, status and code, never the token."""
    caplog.set_level(logging.WARNING, logger="adaptsim")
    session, client = open_session(tmp_path / "s")
    validate(client)
    run = tmp_path / "s" / "lasso"
    before = (run / "steps.jsonl").read_bytes(), client.get("/api/state").json()
    bare = TestClient(client.app)
    assert coded(bare.get("/api/state")) == (403, "token")
    assert coded(bare.get("/api/state", headers={"X-Adaptsim-Token": "guess"})) == (403, "token")
    assert bare.get(f"/?token={TOKEN}").status_code == 200  # the page, with the token in its address
    rebound = client.get("/api/state", headers={"Host": "evil.example"})  # DNS rebinding
    assert coded(rebound) == (400, "host") and "evil.example" in rebound.json()["error"]
    v6 = TestClient(create_app(session, TOKEN, allowed_hosts("::1"), 4096), base_url="http://[::1]:8043",
                    headers={"X-Adaptsim-Token": TOKEN})  # serve.host=::1: the browser sends Host [::1]:8043
    assert v6.get("/api/state").status_code == 200
    for host in ("evil.example:8043", "[::1].evil.example", "[::1]x:8043", "[::1]:8043:1", "localhost.evil.example"):
        assert v6.get("/api/state", headers={"Host": host}).status_code == 400, host
    good = {"position": 1, "text": "Gut.", "effort": EFFORT}
    cases = [({**good, "position": 0}, 409, "stale"), ({**good, "text": "x" * 2001}, 413, "too_large"),
             ({**good, "text": "  "}, 400, "bad_request"),
             ({**good, "effort": {**EFFORT, "keystrokes": -1}}, 400, "bad_request"),
             ({**good, "effort": "many"}, 400, "bad_request"), ({**good, "text": 5}, 400, "bad_request"),
             ({**good, "path": "/etc/passwd", "position": "1"}, 400, "bad_request"),
             ({**good, "text": "Ihr \ud800 Treiber"}, 400, "bad_request"),
             ({**good, "text": "Ihr \x00 Treiber"}, 400, "bad_request")]
    json_body = {"Content-Type": "application/json"}  # (json.dumps escapes a lone surrogate as the page's JSON would)
    for body, status, code in cases:
        response = client.post("/api/validate", content=json.dumps(body), headers=json_body)
        assert coded(response) == (status, code), (body, response.text)
        assert "\n" not in response.json()["error"]
    assert "at position 1 " in client.post("/api/validate", json={**good, "position": 0}).json()["error"]
    for prefix in ("Ihr \udc00", "\x07"):  # a lone surrogate once answered with a traceback and stopped the session
        body = json.dumps({"position": 1, "prefix": prefix})
        response = client.post("/api/complete", content=body, headers=json_body)
        assert coded(response) == (400, "bad_request") and "not text" in response.json()["error"], response.text
    assert coded(client.post("/api/validate", content=b"{not json", headers=json_body)) == (400, "bad_request")
    assert coded(client.post("/api/complete", content=b"x" * 5000, headers=json_body)) == (413, "too_large")
    nested = client.post("/api/complete", content=b"[" * 4000, headers=json_body)  # deeper than the recursion limit
    assert coded(nested) == (400, "bad_request") and nested.json()["error"] == "the request is not JSON"
    assert coded(client.post("/api/complete", json={"position": 1, "prefix": "y" * 2001})) == (413, "too_large")
    # a request that changes something comes from the page: JSON, from this server, the token in its header
    request = {"position": 1, "prefix": "Gu"}
    assert coded(client.post("/api/complete", content=json.dumps(request), headers={"Content-Type": "text/plain"})
                 ) == (415, "origin")  # what a cross-site form could send without asking first
    for header in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"},
                   {"Sec-Fetch-Site": "same-site"}):
        refused = client.post("/api/complete", json=request, headers=header)
        assert coded(refused) == (403, "origin") and "this server's page only" in refused.json()["error"], header
    page_like = {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"}
    assert client.post("/api/complete", json=request, headers=page_like).status_code == 200
    # a link cannot change anything
    assert coded(bare.post(f"/api/complete?token={TOKEN}", json=request)) == (403, "token")
    for path, status in (("/nothing", 404), ("/favicon.ico", 404), ("/api/validate", 405)):
        response = client.get(path)
        assert coded(response) == (status, "not_found") and response.json()["error"].startswith(f"GET {path}: ")
        assert response.headers["X-Frame-Options"] == "DENY" and response.headers["Cache-Control"] == "no-store"
    assert client.get("/api/validate").headers["Allow"] == "POST"
    assert ((run / "steps.jsonl").read_bytes(), client.get("/api/state").json()) == before
    refusals = [r for r in caplog.records if r.getMessage().startswith("serve: refused ")]
    assert len(refusals) == 34 and all(r.levelno == logging.WARNING for r in refusals)
    assert all(TOKEN not in r.getMessage() and "\n" not in r.getMessage()
               for r in caplog.records if r.name == "adaptsim")  # (the server's log: the test client's names it)
    assert any(r.getMessage() == "serve: refused POST /api/complete: 403 token: a valid session token is required in "
               "the x-adaptsim-token header (the address the server printed)" for r in refusals)
    assert any(re.fullmatch(r"serve: refused POST /api/validate: 409 stale: position 0: .*", r.getMessage())
               for r in refusals)
    session.close()


def coded(response) -> tuple[int, str]:
    """A refusal's status and code (its body: exactly the technical line and the code)."""
    body = response.json()
    assert set(body) == {"error", "code"} and isinstance(body["error"], str), body
    return response.status_code, body["code"]


def test_finishing_early_records_what_was_validated_and_ends_the_session(tmp_path):
    """"Finish now" in the middle of a document: the run with validated segments is finished on them (its records as a
    run of that many segments, a dataset of them in references.tsv), the method with none is closed as interrupted,
    nothing more is translated, and the session cannot be resumed."""
    session, client = open_session(tmp_path / "s", "serve.methods=[full,lasso]")
    validate(client)
    assert client.post("/api/finish", json={"position": 0}).status_code == 409  # a stale page finishes nothing
    state = client.post("/api/finish", json={"position": 1}).json()
    assert state["finished"] and state["ended_early"] and state["position"] == 1
    assert coded(client.post("/api/validate", json={"position": 1, "text": "Gut.", "effort": EFFORT})) == \
        (409, "finished")
    session.close()
    assignment = json.loads((tmp_path / "s" / "study.json").read_text())["assignment"]
    first = assignment[next(iter(assignment))]  # the method of the first document, where the segment was validated
    other = ({"full", "lasso"} - {first}).pop()
    summary = json.loads((tmp_path / "s" / first / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["ended_early"] == {"validated": 1, "assigned": 2}
    assert (summary["segments"], summary["documents"], summary["per_document"][0]["segments"]) == (1, 1, 1)
    assert len((tmp_path / "s" / first / "references.tsv").read_text().splitlines()) == 2  # header and one segment
    assert len(steps(tmp_path / "s" / first)) == 1
    assert json.loads((tmp_path / "s" / other / "summary.json").read_text())["status"] == "interrupted"
    before = {p: p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()}
    with pytest.raises(UserError, match="finished this session early"):
        open_session(tmp_path / "s", "serve.methods=[full,lasso]", "resume=true")
    assert {p: p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()} == before

    for validated in (0, 3):  # before anything (every run interrupted); one method done, the other's document begun
        session, client = open_session(tmp_path / f"s{validated}", "serve.methods=[full,lasso]")
        for _ in range(validated):
            validate(client)
        assert client.post("/api/finish", json={"position": validated}).json()["ended_early"]
        session.close()
        summaries = {m: json.loads((tmp_path / f"s{validated}" / m / "summary.json").read_text()) for m in METHODS}
        if validated == 3:
            assert summaries[first]["status"] == "finished" and "ended_early" not in summaries[first]
            assert summaries[other]["ended_early"] == {"validated": 1, "assigned": 2}
        else:
            assert {s["status"] for s in summaries.values()} == {"interrupted"}
        with pytest.raises(UserError, match="finished this session early"):
            open_session(tmp_path / f"s{validated}", "serve.methods=[full,lasso]", "resume=true")


def test_a_study_s_unknown_method_is_one_line(tmp_path):
    with pytest.raises(UserError, match=r"^method=nosuch: no such option; method= is one of bias, fixed, full, "):
        configs([f"serve.dir={tmp_path / 's'}", "serve.methods=[full,nosuch]"])


def test_a_study_assigns_methods_blind_and_balanced(tmp_path):
    assignment = study.assign([f"d{i}" for i in range(7)], ["full", "lasso"], seed=3, translator=0)
    counts = [list(assignment.values())[i:i + 2] for i in range(0, 6, 2)]
    assert all(sorted(block) == ["full", "lasso"] for block in counts)  # every block of two has both
    assert study.assign([f"d{i}" for i in range(7)], ["full", "lasso"], seed=3, translator=0) == assignment

    session, client = open_session(tmp_path / "s", "serve.methods=[full,lasso]", "serve.translator=1")
    answers = [client.get("/api/state").text, json.dumps(validate(client))]
    del session, client  # killed after one segment; both methods' models restored by replay
    session, client = open_session(tmp_path / "s", "serve.methods=[full,lasso]", "serve.translator=1", "resume=true")
    assert client.get("/api/state").json()["position"] == 1
    while not client.get("/api/state").json()["finished"]:
        answers.append(json.dumps(validate(client)))
    session.close()
    assert not any(re.search(r"full|lasso", a) for a in answers)  # the page is never told the method
    recorded = json.loads((tmp_path / "s" / "study.json").read_text())
    assert sorted(recorded["assignment"].values()) == ["full", "lasso"] and recorded["translator"] == 1
    assert recorded["assignment"] == study.assign(list(recorded["assignment"]), ["full", "lasso"], recorded["seed"], 1)
    for method in ("full", "lasso"):
        summary = json.loads((tmp_path / "s" / method / "summary.json").read_text())
        doc = next(d for d, m in recorded["assignment"].items() if m == method)
        assert summary["method"] == method and summary["status"] == "finished"
        assert {r["doc_id"] for r in steps(tmp_path / "s" / method)} == {doc}


def test_accepted_connections_answer_without_waiting_for_the_client_s_ack():
    """Connections accepted on serve's listening socket get TCP_NODELAY from asyncio (as uvicorn accepts them), so an
    answer on a kept-alive connection goes out at once, not after the client's delayed ACK (~40 ms each)."""
    import asyncio
    import socket

    from adaptsim.commands.serve import bind

    async def accepted_nodelay() -> int:
        said = asyncio.get_running_loop().create_future()

        async def on_connect(reader, writer):
            said.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=bind("127.0.0.1", 0))
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        value = await asyncio.wait_for(said, 30)
        writer.close()
        server.close()
        return value

    assert asyncio.run(accepted_nodelay()) != 0


@pytest.mark.parametrize("stop, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_the_command_prints_an_address_whose_token_it_requires(tmp_path, stop, code):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "adaptsim", "serve", f"serve.dir={tmp_path / 's'}", "serve.port=0",
                             *SMALL], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        address = re.search(r"(http://127\.0\.0\.1:\d+/)\?token=(\S+)", line)
        assert address, line + proc.stderr.read()
        base, token = address.groups()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "api/state", timeout=30)
        assert refused.value.code == 403
        state = json.loads(urllib.request.urlopen(f"{base}api/state?token={token}", timeout=30).read())
        assert state["position"] == 0 and state["hypothesis"]
    finally:
        proc.send_signal(stop)  # Ctrl-C, or a service manager's stop
        proc.wait(timeout=60)
    assert proc.returncode == code
    summary = json.loads((tmp_path / "s" / "lasso" / "summary.json").read_text())
    assert summary["status"] == "interrupted" and "resume=true" in summary["error"]


def test_a_failed_write_stops_the_session_once_and_resume_goes_on(tmp_path, monkeypatch):
    session, client = open_session(tmp_path / "s")
    validate(client)
    shown = client.get("/api/state").json()
    run = tmp_path / "s" / "lasso"
    (run / "human.jsonl").rename(run / "human.kept")
    (run / "human.jsonl").mkdir()  # the write fails as on a full disk: an OSError
    adapted = []
    adapt = session.runs["lasso"].learner.adapt
    monkeypatch.setattr(session.runs["lasso"].learner, "adapt", lambda *a: adapted.append(1) or adapt(*a))
    body = {"position": 1, "text": edit(shown["hypothesis"]), "effort": EFFORT}
    failed = client.post("/api/validate", json=body)
    assert coded(failed) == (500, "stopped") and "human.jsonl" in failed.json()["error"]
    assert "\n" not in failed.json()["error"]
    retried = client.post("/api/validate", json=body)  # the page's retry: refused, never a second update
    assert coded(retried) == (409, "stopped") and adapted == [1]
    state = client.get("/api/state").json()
    assert state["failed"] and state["finished"] and "hypothesis" not in state
    assert json.loads((run / "summary.json").read_text())["status"] == "failed"
    assert len(steps(run)) == 1
    session.close()
    (run / "human.jsonl").rmdir()
    (run / "human.kept").rename(run / "human.jsonl")  # the disk has room again
    resumed, client = open_session(tmp_path / "s", "resume=true")
    again = client.get("/api/state").json()
    assert (again["position"], again["hypothesis"]) == (1, shown["hypothesis"])  # θ as before the failed step
    validate(client)
    resumed.close()


def test_a_failure_after_the_step_is_recorded_never_pairs_the_next_source_with_the_old_translation(tmp_path,
                                                                                                    monkeypatch):
    session, client = open_session(tmp_path / "s")
    run = session.runs["lasso"]

    def broken(*a, **k):
        raise RuntimeError("the model cannot translate\nthis")

    monkeypatch.setattr(run.learner.model, "translate", broken)
    failed = client.post("/api/validate", json={"position": 0, "text": "Gut.", "effort": EFFORT})
    assert failed.status_code == 500 and "cannot translate" in failed.json()["error"]
    assert "\n" not in failed.json()["error"]
    state = client.get("/api/state").json()
    assert state["failed"] and "hypothesis" not in state
    assert client.post("/api/validate", json={"position": 1, "text": "Gut.", "effort": EFFORT}).status_code == 409
    assert json.loads((tmp_path / "s" / "lasso" / "summary.json").read_text())["status"] == "failed"
    assert len(steps(tmp_path / "s" / "lasso")) == 1
    session.close()


def test_each_validated_step_is_on_disk_before_the_next_is_shown(tmp_path, monkeypatch):
    session, client = open_session(tmp_path / "s")
    synced = []
    fsync = os.fsync
    monkeypatch.setattr(os, "fsync",
                        lambda fd: synced.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name) or fsync(fd))
    validate(client)
    assert {"steps.jsonl", "hyps.txt", "human.jsonl"} <= set(synced)
    session.close()


def test_close_waits_for_the_work_in_progress(tmp_path):
    session, _ = open_session(tmp_path / "s")
    summary = tmp_path / "s" / "lasso" / "summary.json"
    session.lock.acquire()  # a validation in progress
    session.close(wait=0.1)  # records left as a kill leaves them: resume=true goes on
    assert json.loads(summary.read_text())["status"] == "running"
    session.lock.release()
    session.close()
    assert json.loads(summary.read_text())["status"] == "interrupted"


def test_the_forgetting_probe_is_refused_in_one_line(tmp_path):
    probe = tmp_path / "probe"
    for lang in ("en", "de"):
        Path(f"{probe}.{lang}").write_text("eins\nzwei\n")
    with pytest.raises(UserError, match=r"metrics.probe.path=.*serve") as refused:
        open_session(tmp_path / "s", f"metrics.probe.path={probe}")
    assert "\n" not in str(refused.value) and not (tmp_path / "s").exists()


def test_translators_get_the_methods_in_a_latin_square(tmp_path):
    docs, methods = [f"d{i}" for i in range(7)], ["full", "lasso", "none"]
    square = [study.assign(docs, methods, seed=3, translator=t) for t in range(3)]
    assert all(sorted(a[d] for a in square) == sorted(methods) for d in docs)  # every document gets every method once
    for a in square:  # and each translator's blocks stay balanced
        assert all(sorted(list(a.values())[i:i + 3]) == sorted(methods) for i in range(0, 6, 3))
    assert study.assign(docs, methods, seed=3, translator=4) == square[1]
    from adaptsim.loop.settings import validate

    # serve's settings are checked by the one rules table, with every other setting
    for setting, said in (("serve.translator=-1", "serve.translator=-1: must be an integer ≥ 0"),
                          ("serve.port=70000", "serve.port=70000: must be an integer from 0 to 65535"),
                          ("serve.host=''", "serve.host='': must be a non-empty string"),
                          ("decode.dtype=bfloat16", "decode.dtype=bfloat16: the completions' prefix search runs")):
        with pytest.raises(UserError, match=re.escape(said)):
            validate(next(iter(configs([setting]).values())), "serve")


def test_each_session_keys_the_page_s_drafts_by_its_own_id_across_resumes(tmp_path):
    first, client = open_session(tmp_path / "a")
    other, _ = open_session(tmp_path / "b")
    sid = client.get("/api/state").json()["session"]
    assert sid and sid != _.get("/api/state").json()["session"]  # the page's drafts are the session's
    first.close()
    other.close()
    resumed, client = open_session(tmp_path / "a", "resume=true")
    assert client.get("/api/state").json()["session"] == sid
    page = (Path(__file__).resolve().parents[1] / "adaptsim" / "serve" / "page.html").read_text()
    assert re.search(r"function draftKey\(\) \{[^}]*state\.session", page)
    resumed.close()


def test_the_token_is_kept_with_the_session_and_read_by_its_owner_only(tmp_path):
    """The address stays valid across a resume: the token is created with the session, kept in <serve.dir>/token
    (0600), the same after resume=true; a new session gets a new one."""
    from adaptsim.commands.serve import session_token

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    token = session_token(tmp_path / "a", resume=False)
    path = tmp_path / "a" / "token"
    assert path.read_text() == token and len(token) >= 32 and path.stat().st_mode & 0o777 == 0o600
    assert session_token(tmp_path / "a", resume=True) == token  # a tab open across the restart works again
    assert session_token(tmp_path / "b", resume=False) not in (token, session_token(tmp_path / "b", resume=False))
    path.write_text("")  # a session recorded before its token was kept: a new one
    assert session_token(tmp_path / "a", resume=True) not in ("", token)


def test_a_study_resumes_from_its_directory_alone(tmp_path):
    """`resume=true serve.dir=DIR` alone goes on with a study started with the model, dataset, methods and translator
    on the command line (study.json keeps them; the new command line's go on top); a setting changed is still
    refused, changing nothing."""
    from adaptsim.commands.serve import session_argv

    started = ["model=demo", "dataset=demo", "serve.methods=[full,lasso]", "serve.translator=1"]
    session, client = open_session(tmp_path / "s", *started)
    shown = validate(client)
    session.close()  # (interrupted, as Ctrl-C leaves it)
    assert json.loads((tmp_path / "s" / "study.json").read_text())["overrides"] == \
        [f"serve.dir={tmp_path / 's'}", *SMALL, *started]
    before = md5s(tmp_path / "s")
    for changed, said in (("serve.translator=0", "resume it with the same methods, dataset and translator"),
                          ("method.lr=0.5", r"method.lr: 0.01 → 0.5")):
        argv = session_argv([f"serve.dir={tmp_path / 's'}", "resume=true", changed])
        with pytest.raises(UserError, match=said):
            ServeSession(configs(argv), argv)
        assert md5s(tmp_path / "s") == before
    argv = session_argv([f"serve.dir={tmp_path / 's'}", "resume=true"])
    resumed = ServeSession(configs(argv), argv)
    client = TestClient(create_app(resumed, TOKEN, ["testserver"], 4096), headers={"X-Adaptsim-Token": TOKEN})
    state = client.get("/api/state").json()
    assert (state["position"], state["hypothesis"]) == (1, shown["hypothesis"])  # θ restored by replay
    while not client.get("/api/state").json()["finished"]:
        validate(client)
    resumed.close()
    for method in METHODS:
        summary = json.loads((tmp_path / "s" / method / "summary.json").read_text())
        assert summary["status"] == "finished" and summary["overrides"][-1] == "resume=true"


def test_a_session_s_timing_spans_every_process(tmp_path):
    """summary.json's timing is the session's: a resumed run's total_s adds every process's time (kept in
    summary.json while it runs), segments_per_s is over all of it."""
    import time

    session, client = open_session(tmp_path / "s")
    opened = time.perf_counter()
    validate(client)
    time.sleep(0.5)
    session.close()
    first = time.perf_counter() - opened
    summary = tmp_path / "s" / "lasso" / "summary.json"
    recorded = json.loads(summary.read_text())["timing"]["total_s"]  # the first process's, as it stopped
    assert recorded >= first
    resumed, client = open_session(tmp_path / "s", "resume=true")
    opened = time.perf_counter()
    validate(client)
    validate(client)
    state = client.get("/api/state").json()
    second = time.perf_counter() - opened  # (up to the last validation's request: the run finishes in it)
    client.post("/api/validate", json={"position": state["position"], "text": edit(state["hypothesis"]),
                                       "effort": EFFORT})
    resumed.close()
    timing = json.loads(summary.read_text())["timing"]
    assert timing["earlier_s"] == recorded and timing["total_s"] >= recorded + second
    assert timing["segments_per_s"] == pytest.approx(4 / timing["total_s"])


def reopen(client: TestClient, position: int):
    return client.post("/api/reopen", json={"position": position})


def test_a_position_of_another_type_is_a_malformed_request_not_a_stale_page(tmp_path):
    session, client = open_session(tmp_path / "s")
    validate(client)
    for position in ("1", True, 1.0, None, [1]):
        for path in ("/api/validate", "/api/complete", "/api/reopen", "/api/finish"):
            refused = client.post(path, json={"position": position, "text": "Ja.", "prefix": "", "effort": EFFORT})
            assert coded(refused) == (400, "bad_request"), (path, position)
            assert refused.json()["error"] == f"position {position!r}: an integer (the segments validated so far)"
    assert client.get("/api/state").json()["position"] == 1
    session.close()


def test_the_reopen_count_survives_a_kill_before_the_segment_is_validated_again(tmp_path):
    session, client = open_session(tmp_path / "s")
    validate(client)
    assert reopen(client, 1).status_code == 200
    session.close()  # (a kill: nothing more is written before the resume)
    resumed, client = open_session(tmp_path / "s", "resume=true")
    validate(client)
    resumed.close()
    method = resumed.order[0].method
    assert json.loads((tmp_path / "s" / method / "human.jsonl").read_text().splitlines()[0])["reopened"] == 1


@pytest.mark.parametrize("methods, at", [([], 1), (["serve.methods=[full,lasso]"], 0)], ids=["one method", "a study"])
def test_a_reopened_segment_is_taken_back_as_if_never_validated(tmp_path, methods, at):
    """api/reopen takes the last validation back entirely: the state for that segment again (θ_{i−1}'s translation),
    with the text and effort sent; validated again with another text, the run's records hold only that text and its
    θ is the one of a session that validated that text directly (the same parameters, the same next translation). One
    method: the segment that ended the first document (θ0 restored for the next); a study: the first segment (its
    run's learner cloned again from the base model)."""
    import torch

    corrected = "Bearbeitet ein Entwickler ein Zeichen?"
    sessions, states = {}, {}
    for name in ("reopened", "direct"):
        session, client = open_session(tmp_path / name, *methods)
        refused = reopen(client, 0)
        assert coded(refused) == (409, "not_reopenable") and "no segment is validated yet" in refused.json()["error"]
        for _ in range(at):
            validate(client)
        if name == "reopened":
            shown = client.get("/api/state").json()
            wrong = client.post("/api/validate", json={"position": at, "text": "Falsch.", "effort": EFFORT}).json()
            assert wrong["reopenable"] and coded(reopen(client, at)) == (409, "stale")
            back = reopen(client, at + 1).json()
            assert {k: v for k, v in back.items() if k not in ("reopened", "reopenable")} == \
                {k: v for k, v in shown.items() if k != "reopenable"}  # θ_{i−1}'s translation again
            assert back["reopened"] == {"text": "Falsch.", "effort": EFFORT} and not back["reopenable"]
            done = client.post("/api/complete", json={"position": at, "prefix": "Bearbeitet"}).json()
            assert done["completion"].startswith("Bearbeitet")  # by the restored θ_{i−1}
            if at:
                refused = reopen(client, at)  # one step back only
                assert coded(refused) == (409, "not_reopenable") and "one step back" in refused.json()["error"]
        states[name] = client.post("/api/validate", json={"position": at, "text": corrected, "effort": EFFORT}).json()
        sessions[name] = session
    assert states["reopened"] == {**states["direct"], "session": states["reopened"]["session"]}
    method = sessions["reopened"].order[0].method  # the first document's
    nets = [s.runs[method].learner.model.net.state_dict() for s in sessions.values()]
    assert all(torch.equal(nets[0][k], nets[1][k]) for k in nets[0])
    if methods:  # a study's base model never trains, a reopen included (every run's learner is a clone of it)
        bases = [s.base.net.state_dict() for s in sessions.values()]
        assert all(torch.equal(bases[0][k], bases[1][k]) for k in bases[0])
    if methods:  # the first document's method has one: its last segment's validation completes its run, final
        client = TestClient(create_app(sessions["reopened"], TOKEN, ["testserver"], 4096),
                            headers={"X-Adaptsim-Token": TOKEN})
        assert not validate(client)["reopenable"]
        refused = reopen(client, 2)
        assert coded(refused) == (409, "not_reopenable") and "final" in refused.json()["error"]
    for session in sessions.values():
        session.close()
    run, direct = tmp_path / "reopened" / method, tmp_path / "direct" / method
    assert [r["reference"] for r in steps(run)][at] == corrected
    assert [r["ppl_after"] for r in steps(run)][:at + 1] == [r["ppl_after"] for r in steps(direct)]
    assert [json.loads(line)["reopened"] for line in (run / "human.jsonl").read_text().splitlines()][:at + 1] == \
        [0] * at + [1]
    assert not any("Falsch" in p.read_text() for p in run.iterdir() if p.is_file())
    if methods:
        return
    resumed, client = open_session(tmp_path / "reopened", "resume=true")  # a resume replays the corrected text
    refused = reopen(client, 2)  # not a validation of this server's
    assert coded(refused) == (409, "not_reopenable") and not client.get("/api/state").json()["reopenable"]
    resumed.close()


def test_a_segment_left_on_the_page_leaves_no_moment_in_the_counts(tmp_path):
    """tm's moment before translating is counted (summary.json cost.temporary) only for segments that became steps.
    A study of 4 documents of 2 segments (tm, full, tm, full with seed 2): full's second document's last segment
    reopened leaves tm's next on the page, whose moment had matched; once both are validated again, the session
    finished on tm's last segment leaves its moment too. Each count is the sum of the steps' recorded moments, what
    a resume rebuilds, and full's summary does not call its reopen's replay a resume. (Every document has the same
    two segments; reset=never keeps tm's earlier pairs.)"""
    pairs = [("Does a developer edit a character?", "Bearbeitet ein Entwickler ein Zeichen?"),
             ("My ticket is visible.", "Mein Ticket ist sichtbar.")]
    stream = tsv_of(tmp_path / "stream.tsv", [(f"d{d}", i, *pairs[i]) for d in range(4) for i in range(2)])
    session, client = open_session(tmp_path / "s", "serve.methods=[tm,full]", "dataset=tsv",
                                   f"dataset.path={stream}", "dataset.max_documents=4", "seed=2", "reset=never")
    assert [run.method for run in session.order] == ["tm", "full", "tm", "full"]
    for _ in range(4):
        validate(client)
    assert reopen(client, 4).status_code == 200  # tm's first segment of its second document, left
    validate(client), validate(client)  # full's again, then tm's
    assert client.post("/api/finish", json={"position": 5}).json()["ended_early"]  # tm's last, left
    session.close()
    tm = tmp_path / "s" / "tm"
    recorded = [r["moment"] for r in steps(tm) if "moment" in r]
    assert len(recorded) == 1  # the second document's first segment (the repeat of the first's)
    counted = json.loads((tm / "summary.json").read_text())["cost"]["temporary"]
    assert {k: v for k, v in counted.items() if k != "seconds"} == {
        k: sum(m.get(k, 0) for m in recorded) for k in counted if k != "seconds"}
    # full's reopen replayed its first step, which no earlier process wrote: the run was never resumed
    assert "resumed_after_steps" not in json.loads((tmp_path / "s" / "full" / "summary.json").read_text())["timing"]


def serve(tmp_path: Path, name: str, *overrides: str) -> tuple[subprocess.Popen, str, str]:
    """`adaptsim serve` started as a user starts it: the process, its address's base and its token."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with open(tmp_path / f"{name}.err", "w") as err:  # (a file: a pipe nobody reads could fill and block it)
        proc = subprocess.Popen([sys.executable, "-m", "adaptsim", "serve", *overrides], stdout=subprocess.PIPE,
                                stderr=err, text=True, env=env)
    line = proc.stdout.readline()
    address = re.search(r"(http://127\.0\.0\.1:\d+/)\?token=(\S+)", line)
    if not address:
        proc.kill()
        raise AssertionError(line + (tmp_path / f"{name}.err").read_text())
    return proc, *address.groups()


def call(base: str, token: str, path: str, body: dict | None = None) -> dict:
    """The page's request: GET, or POST of a JSON body, the token in its header."""
    request = urllib.request.Request(base + path, None if body is None else json.dumps(body).encode(),
                                     {"X-Adaptsim-Token": token, "Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(request, timeout=60).read())


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_killed_study_resumes_at_the_same_address_from_its_directory_alone_and_stops_when_complete(tmp_path):
    """A study killed (SIGKILL) after one segment, resumed by `resume=true serve.dir=DIR` alone: the same address
    (host, port and token: a tab open across the kill works again), θ restored, each run's timing over both processes;
    once every segment is validated the server answers a little longer (the page reads the final state), then stops
    by itself and the command says so (exit 0)."""
    import time

    directory, port = tmp_path / "s", free_port()
    started = [f"serve.dir={directory}", f"serve.port={port}", "model=demo", "dataset=demo",
               "serve.methods=[full,lasso]", "serve.translator=1", *SMALL]
    proc, base, token = serve(tmp_path, "first", *started)
    try:
        assert (directory / "token").read_text() == token and (directory / "token").stat().st_mode & 0o777 == 0o600
        state = call(base, token, "api/state")
        time.sleep(0.5)
        shown = call(base, token, "api/validate", {"position": 0, "text": edit(state["hypothesis"]), "effort": EFFORT})
    finally:
        proc.kill()
        proc.wait(timeout=60)
    recorded = {m: json.loads((directory / m / "summary.json").read_text()) for m in METHODS}
    assert all(s["status"] == "running" and s["timing"]["total_s"] > 0.5 for s in recorded.values())
    proc, again, same = serve(tmp_path, "second", f"serve.dir={directory}", "resume=true")
    try:
        opened = time.perf_counter()
        assert (again, same) == (base, token)  # the address printed before the kill
        state = call(base, token, "api/state")
        assert (state["position"], state["hypothesis"]) == (1, shown["hypothesis"])
        sent = {}  # position → when its validation was sent, since the address was printed
        while True:
            body = {"position": state["position"], "text": edit(state["hypothesis"]), "effort": EFFORT}
            sent[state["position"]] = time.perf_counter() - opened
            state = call(base, token, "api/validate", body)
            if state["finished"]:
                break
        assert call(base, token, "api/state")["finished"]  # the final state, still served
        out, _ = proc.communicate(timeout=60)  # stops by itself
    finally:
        proc.kill()
        proc.wait(timeout=60)
    assert proc.returncode == 0 and f"the session is complete (every segment validated); its records are in " \
        f"{directory}" in out
    first = next(iter(json.loads((directory / "study.json").read_text())["assignment"].values()))
    for method, before in recorded.items():  # (the first document's run finishes at position 1, the other's at 3)
        summary = json.loads((directory / method / "summary.json").read_text())
        assert summary["status"] == "finished" and summary["timing"]["earlier_s"] == before["timing"]["total_s"]
        assert summary["timing"]["total_s"] >= before["timing"]["total_s"] + sent[1 if method == first else 3]


@pytest.mark.parametrize("then", [None, signal.SIGINT], ids=["alone", "then Ctrl-C"])
def test_finish_now_stops_the_server_and_nothing_after_it_interrupts_the_session(tmp_path, then):
    directory = tmp_path / "s"
    proc, base, token = serve(tmp_path, "s", f"serve.dir={directory}", "serve.port=0", *SMALL)
    try:
        state = call(base, token, "api/state")
        call(base, token, "api/validate", {"position": 0, "text": edit(state["hypothesis"]), "effort": EFFORT})
        assert call(base, token, "api/finish", {"position": 1})["ended_early"]
        records = md5s(directory)
        if then is not None:
            proc.send_signal(then)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=60)
    err = (tmp_path / "s.err").read_text()
    assert proc.returncode == 0 and "interrupted" not in err, err
    said = f"adaptsim serve: the translator finished the session; its records are in {directory}"
    assert out.splitlines()[-1] == said
    assert md5s(directory) == records
    summary = json.loads((directory / "lasso" / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["ended_early"] == {"validated": 1, "assigned": 4}


def test_serve_without_its_extra_names_the_extra_in_one_line(monkeypatch):
    """Issue #77: without the `serve` extra, `adaptsim serve` died with a raw ModuleNotFoundError for uvicorn."""
    from adaptsim.commands import serve as command

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn raises ModuleNotFoundError
    with pytest.raises(UserError) as e:
        command.main([])
    assert str(e.value) == 'adaptsim serve needs uvicorn, not installed: pip install -e ".[serve]"'
