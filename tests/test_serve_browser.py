"""`adaptsim serve` as a translator uses it, in headless Chromium (the system's: /usr/bin/chromium, or
$ADAPTSIM_CHROMIUM; never downloaded), driven by playwright: type, accept a completion with Tab, validate with Enter,
go on to the next segment, reload the page with text typed, kill the server and resume it, and check the records; and
a draft is its session's alone (another session at the same address starts clean).
Skips where playwright or the browser is missing."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
sync_api = pytest.importorskip("playwright.sync_api")
sync_api.expect.set_options(timeout=30_000)  # a loaded machine (the suite beside other work) may answer slowly
CHROMIUM = os.environ.get("ADAPTSIM_CHROMIUM", "/usr/bin/chromium")
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set ADAPTSIM_CHROMIUM)",
                allow_module_level=True)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--no-first-run", "--disable-sync"]
SMALL = ["dataset.max_documents=2", "dataset.max_segments=2", "decode.beam_size=2", "decode.max_length=40"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(directory: Path, port: int, *overrides: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "adaptsim", "serve", f"serve.dir={directory}", f"serve.port={port}",
                             *SMALL, *overrides], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    found = re.search(r"http://\S+", line)
    if not found:
        proc.kill()
        raise AssertionError(line + proc.stderr.read())
    return proc, found.group(0)


def steps(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_translator_post_edits_in_the_page_across_a_reload_and_a_killed_server(tmp_path):
    port, session = free_port(), tmp_path / "s"
    server, address = start(session, port)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page()
            page.on("dialog", lambda dialog: dialog.accept())  # the warning about typed text, on reload
            page.goto(address)
            box = page.locator("#target")
            sync_api.expect(page.locator("#progress")).to_have_text("document 1 of 2 · segment 1 of 2")
            shown = box.input_value()
            assert shown
            box.press("Control+a")
            box.press("Backspace")
            box.press_sequentially("Bearb")
            sync_api.expect(page.locator("#hint .rest")).not_to_be_empty()  # the system's completion of "Bearb"
            box.press("Tab")
            accepted = box.input_value()
            assert accepted.startswith("Bearb") and len(accepted) > len("Bearb")
            box.press("Enter")
            sync_api.expect(page.locator("#progress")).to_have_text("document 1 of 2 · segment 2 of 2")
            assert page.locator("li.done .target").inner_text() == accepted
            page.wait_for_timeout(500)  # a completion asked for the validated segment answers stale: never said
            sync_api.expect(page.locator("#status.error")).to_have_count(0)

            box.press("End")
            box.press_sequentially(" Neu")
            typed = box.input_value()
            page.reload()  # typed, not validated: kept
            sync_api.expect(page.locator("#target")).to_have_value(typed)
            sync_api.expect(page.locator("#status")).to_contain_text("kept")
            page.locator("#target").press("Enter")
            sync_api.expect(page.locator("#progress")).to_have_text("document 2 of 2 · segment 1 of 2")
            page.locator("#target").press_sequentially(" Eins")
            typed = page.locator("#target").input_value()
            assert len(steps(session / "lasso")) == 2  # on disk before the next segment was shown

            server.send_signal(signal.SIGKILL)
            server.wait(timeout=30)
            server, address = start(session, port, "resume=true")
            page.goto(address)  # a new token; the same translation, so the draft comes back
            sync_api.expect(page.locator("#progress")).to_have_text("document 2 of 2 · segment 1 of 2")
            sync_api.expect(page.locator("#target")).to_have_value(typed)
            page.locator("#target").press("Enter")
            sync_api.expect(page.locator("#progress")).to_have_text("document 2 of 2 · segment 2 of 2")
            page.locator("#validate").click()
            sync_api.expect(page.locator("#status")).to_contain_text("finished")
            browser.close()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    run = session / "lasso"
    records = steps(run)
    assert records[0]["hypothesis"] == shown and records[0]["reference"] == accepted
    assert records[1]["reference"].endswith(" Neu") and records[2]["reference"] == " ".join(typed.split())
    assert records[0]["effort"]["KS"] == 6 and records[0]["effort"]["WS"] == 1  # Backspace, B-a-r-b (Ctrl+A is none)
    human = [json.loads(line) for line in (run / "human.jsonl").read_text().splitlines()]
    assert [h["accepted_completions"] for h in human] == [1, 0, 0, 0]
    assert all(r["effort"]["MA"] >= 1 and r["effort"]["seconds"] > 0 for r in records)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["timing"]["resumed_after_steps"] == 2


@pytest.mark.slow
def test_another_session_at_the_same_address_never_gets_this_one_s_draft(tmp_path):
    port = free_port()
    server, address = start(tmp_path / "a", port)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page()
            page.on("dialog", lambda dialog: dialog.accept())
            page.goto(address)
            box = page.locator("#target")
            shown = box.input_value()
            assert shown
            box.press("End")
            box.press_sequentially(" Zwei")
            typed = box.input_value()
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=30)
            server, address = start(tmp_path / "b", port)  # a new session: the same first segment and translation
            page.goto(address)
            sync_api.expect(page.locator("#target")).to_have_value(shown)
            sync_api.expect(page.locator("#status")).not_to_contain_text("kept")
            server.send_signal(signal.SIGINT)
            server.wait(timeout=60)
            server, address = start(tmp_path / "a", port, "resume=true")  # the first again: its draft comes back
            page.goto(address)
            sync_api.expect(page.locator("#target")).to_have_value(typed)
            browser.close()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)


@pytest.mark.slow
def test_the_editor_keys_keep_the_translator_s_text(tmp_path):
    """Tab inserts the completion at the cursor and keeps the text after it, and Ctrl+Z takes it back; Ctrl+→ takes
    the completion's next word; where nothing is offered Tab leaves the box; a character composed (an input method,
    a dead key) is typed, and counted so."""
    server, address = start(tmp_path / "s", free_port())
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page()
            page.goto(address)
            box = page.locator("#target")
            box.press("Control+a")
            box.press("Backspace")
            box.press_sequentially("Bearb ENDE")
            for _ in " ENDE":
                box.press("ArrowLeft")
            sync_api.expect(page.locator("#hint span").first).to_have_text("⇥ Bearb")  # the completion of "Bearb"
            rest = page.locator("#hint .rest").inner_text()
            box.press("Tab")
            assert box.input_value() == "Bearb" + rest + " ENDE"  # inserted at the cursor, the text after it kept
            box.press("Control+z")
            assert box.input_value() == "Bearb ENDE"
            sync_api.expect(page.locator("#hint span").first).to_have_text("⇥ Bearb")
            box.press("Control+ArrowRight")
            word = re.match(r"\s*\S+", rest).group()
            assert box.input_value() == "Bearb" + word + " ENDE"
            box.press("Control+a")
            box.press("Tab")  # a selection: nothing offered, so Tab goes on to the button
            assert page.evaluate("document.activeElement.id") == "validate"
            box.click()
            box.press("End")
            box.press("Space")
            cdp = page.context.new_cdp_session(page)
            cdp.send("Input.imeSetComposition", {"text": "ä", "selectionStart": 1, "selectionEnd": 1})
            cdp.send("Input.insertText", {"text": "ä"})
            typed = box.input_value()
            assert typed == "Bearb" + word + " ENDE ä"
            box.press("Enter")
            sync_api.expect(page.locator("#progress")).to_have_text("document 1 of 2 · segment 2 of 2")
            browser.close()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    record = steps(tmp_path / "s" / "lasso")[0]
    assert record["reference"] == typed
    # Backspace, B-a-r-b, space, E-N-D-E, space, ä; words begun: B, E, ä
    assert (record["effort"]["KS"], record["effort"]["WS"]) == (13, 3), record["effort"]
    human = [json.loads(line) for line in (tmp_path / "s" / "lasso" / "human.jsonl").read_text().splitlines()]
    assert human[0]["accepted_completions"] == 2


@pytest.mark.slow
def test_the_editor_s_tools_and_finishing_early(tmp_path):
    """Esc dismisses the completion (Tab then leaves the box), and Tab pressed before the completion came takes it
    when it comes; the changes against the machine translation are shown;
    Revert brings the translation back (Ctrl+Z undoes it); Pause stops the segment's clock; a notice says when a
    document ends; "Finish now" ends the session with what was validated."""
    server, address = start(tmp_path / "s", free_port())
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page()
            page.on("dialog", lambda dialog: dialog.accept())  # "Finish the session now?"
            page.goto(address)
            shown_at = time.monotonic()  # (the page shows the segment a little later: its clock starts then)
            box = page.locator("#target")
            shown = box.input_value()
            sync_api.expect(page.locator("#overall")).to_have_text("· 0 of 4 validated")
            box.press("End")
            box.press_sequentially(" Bearb")
            sync_api.expect(page.locator("#hint .rest")).not_to_be_empty()
            box.press("Escape")
            sync_api.expect(page.locator("#hint")).to_have_text("")
            box.press("Tab")  # dismissed: nothing offered, so Tab goes on to the buttons
            assert page.evaluate("document.activeElement.tagName") == "BUTTON"
            sync_api.expect(page.locator("#changes ins")).to_have_text("Bearb")
            page.locator("#revert").click()
            sync_api.expect(box).to_have_value(shown)
            sync_api.expect(page.locator("#changes")).to_have_text("")
            box.press("Control+z")
            sync_api.expect(box).to_have_value(shown + " Bearb")

            page.locator("#pause").click()
            sync_api.expect(box).to_be_disabled()
            sync_api.expect(page.locator("#status")).to_contain_text("Paused")
            page.wait_for_timeout(3000)
            page.locator("#pause").click()  # Resume
            sync_api.expect(box).to_be_enabled()
            box.press("Enter")
            sync_api.expect(page.locator("#progress")).to_have_text("document 1 of 2 · segment 2 of 2")
            on_page = time.monotonic() - shown_at  # the first segment's time on the page, the pause included
            box.press("Control+a")
            box.press("Backspace")
            box.press_sequentially("Der")
            box.press("Tab")  # at once, before the completion of "Der" came: taken when it comes
            sync_api.expect(box).to_have_value(re.compile(r"^Der.+"))
            assert page.evaluate("document.activeElement.id") == "target"
            box.press("Enter")
            sync_api.expect(page.locator("#status")).to_have_text("Document 1 is done; document 2 begins.")
            sync_api.expect(page.locator("#overall")).to_have_text("· 2 of 4 validated")
            page.locator("#finish").click()
            sync_api.expect(page.locator("#status")).to_have_text(
                "You finished the session: 2 of 4 segments validated. Thank you.")
            browser.close()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    run = tmp_path / "s" / "lasso"
    records = steps(run)
    assert records[0]["reference"] == " ".join((shown + " Bearb").split()) and len(records) == 2
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["ended_early"] == {"validated": 2, "assigned": 4}
    assert records[0]["effort"]["seconds"] < on_page - 3.0 + 0.5, (records[0]["effort"], on_page)  # paused: not counted
