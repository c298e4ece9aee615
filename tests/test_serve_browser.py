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
from contextlib import contextmanager
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


class Served:
    """`adaptsim serve` at one port, started as a user starts it, and the Chromium that visits it."""

    def __init__(self, port: int):
        self.port, self.server, self.address, self.browser = port, None, None, None

    def start(self, directory: Path, *overrides: str) -> None:
        """A server for the session in `directory` (a new one, or another, or the same resumed) at this port."""
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        self.server = subprocess.Popen([sys.executable, "-m", "adaptsim", "serve", f"serve.dir={directory}",
                                        f"serve.port={self.port}", *SMALL, *overrides], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, env=env)
        line = self.server.stdout.readline()
        found = re.search(r"http://\S+", line)
        if not found:
            self.server.kill()
            raise AssertionError(line + self.server.stderr.read())
        self.address = found.group(0)

    def stop(self, kill: bool = False) -> None:
        """The server stopped as Ctrl-C stops it, or killed (nothing of it runs on); nothing if it has ended."""
        self.server.send_signal(signal.SIGKILL if kill else signal.SIGINT)
        self.server.wait(timeout=30 if kill else 60)


@contextmanager
def served(directory: Path, *overrides: str):
    """A server for `directory` on a free port and a headless Chromium; both stopped on leaving, however."""
    s = Served(free_port())
    s.start(directory, *overrides)
    try:
        with sync_api.sync_playwright() as p:
            s.browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            yield s
    finally:
        s.stop()


def steps(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_translator_post_edits_in_the_page_across_a_reload_and_a_killed_server(tmp_path):
    session = tmp_path / "s"
    with served(session) as s:
        page = s.browser.new_page()
        page.on("dialog", lambda dialog: dialog.accept())  # the warning about typed text, on reload
        page.goto(s.address)
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

        s.stop(kill=True)
        s.start(session, "resume=true")
        page.goto(s.address)  # a new token; the same translation, so the draft comes back
        sync_api.expect(page.locator("#progress")).to_have_text("document 2 of 2 · segment 1 of 2")
        sync_api.expect(page.locator("#target")).to_have_value(typed)
        page.locator("#target").press("Enter")
        sync_api.expect(page.locator("#progress")).to_have_text("document 2 of 2 · segment 2 of 2")
        page.locator("#validate").click()
        sync_api.expect(page.locator("#status")).to_contain_text("finished")
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
    with served(tmp_path / "a") as s:
        page = s.browser.new_page()
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(s.address)
        box = page.locator("#target")
        shown = box.input_value()
        assert shown
        box.press("End")
        box.press_sequentially(" Zwei")
        typed = box.input_value()
        s.stop(kill=True)
        s.start(tmp_path / "b")  # a new session: the same first segment and translation
        page.goto(s.address)
        sync_api.expect(page.locator("#target")).to_have_value(shown)
        sync_api.expect(page.locator("#status")).not_to_contain_text("kept")
        s.stop()
        s.start(tmp_path / "a", "resume=true")  # the first again: its draft comes back
        page.goto(s.address)
        sync_api.expect(page.locator("#target")).to_have_value(typed)


def completion_of(page, prefix: str, position: int = 0) -> str:
    """The server's completion of `prefix` (what the page is offered), asked as the page asks."""
    return page.evaluate("""([prefix, position]) => fetch("api/complete", {method: "POST", headers: {"Content-Type":
        "application/json", "X-Adaptsim-Token": new URLSearchParams(location.search).get("token")},
        body: JSON.stringify({position: position, prefix: prefix})}).then((r) => r.json()).then((d) => d.completion)""",
                         [prefix, position])


def hint_is_for_the_box(page) -> None:
    """The hint is empty or shows the text before the cursor (a collapsed one) followed by what Tab inserts."""
    box_now = page.evaluate("""() => { const b = document.getElementById("target"); return [b.value, b.selectionStart,
        b.selectionEnd, document.getElementById("hint").textContent]; }""")
    value, start_, end, hint = box_now
    assert hint == "" or (start_ == end and hint.startswith("⇥ " + value[:start_])), box_now


@pytest.mark.slow
def test_the_editor_keys_keep_the_translator_s_text(tmp_path):
    """Editing keys do what they do in every editor (Ctrl+→ moves); Tab never writes twice what follows the cursor: a
    suggestion whose ending is the text after the cursor inserts only what is missing, another replaces the rest
    (the hint says so), each undone by one Ctrl+Z, also when Tab came before the suggestion; Ctrl+. takes the next
    word; the hint is only ever for the text in the box; where nothing is offered Tab leaves the box; a composed
    character is typed and counted."""
    with served(tmp_path / "s") as s:
        page = s.browser.new_page()
        page.goto(s.address)
        box = page.locator("#target")
        shown = box.input_value()
        box.press("Home")
        box.press("Control+ArrowRight")  # moves to the end of the first word, inserts nothing
        assert box.input_value() == shown
        first_word_end = page.evaluate("document.getElementById('target').selectionStart")
        assert 0 < first_word_end <= len(shown.split()[0]) + 1

        # merge: a piece of the translation deleted; the suggestion for the text before the gap ends with the text
        # after it, so Tab inserts the missing piece only
        cut = shown.index(" ", first_word_end) + 3 if " " in shown[first_word_end:] else first_word_end
        prefix = shown[:cut]
        completion = completion_of(page, prefix)
        gap = completion[len(prefix):len(completion) - len(shown[cut + 2:])]
        box.evaluate("(b, [v, at]) => { b.value = v; b.setSelectionRange(at, at); "
                     "b.dispatchEvent(new Event('input')); }", [prefix + shown[cut + 2:], cut])
        assert completion.endswith(shown[cut + 2:]) and gap.strip(), (completion, shown)  # (the demo model's)
        sync_api.expect(page.locator("#hint .rest")).to_have_text(gap)
        box.press("Tab")
        assert box.input_value() == prefix + gap + shown[cut + 2:] == completion
        hint_is_for_the_box(page)

        # replace: the reviewer's case (a word selected, a letter typed): the suggestion continues otherwise
        box.evaluate("(b) => { b.value = 'Ein Fahrer benutzt vier Firewalls.'; b.setSelectionRange(4, 10); }")
        box.press("T")
        completion = completion_of(page, "Ein T")
        sync_api.expect(page.locator("#hint span").first).to_have_text("⇥ Ein T")
        assert not completion.endswith(" benutzt vier Firewalls."), completion  # (the demo model's)
        sync_api.expect(page.locator("#hint")).to_contain_text("Tab replaces the rest")
        box.press("Tab")
        assert box.input_value() == completion  # never "Ein T…Firewalls. benutzt vier Firewalls."
        box.press("Control+z")  # one step back: the suggestion, not the letter typed
        assert box.input_value() == "Ein T benutzt vier Firewalls."
        box.press("Shift+ArrowLeft")  # a selection: no hint, and Tab leaves the box
        hint_is_for_the_box(page)
        sync_api.expect(page.locator("#hint")).to_have_text("")

        # Tab before the suggestion came: taken when it comes, and Ctrl+Z takes back that alone
        box.press("Control+a")
        box.press("Backspace")
        box.press_sequentially("Der")
        box.press("Tab")
        sync_api.expect(box).to_have_value(re.compile(r"^Der.+"))
        box.press("Control+z")
        assert box.input_value() == "Der"
        sync_api.expect(page.locator("#hint .rest")).not_to_be_empty()
        rest = page.locator("#hint .rest").inner_text()
        box.press("Control+.")
        word = re.match(r"\s*\S+", rest).group()
        assert box.input_value() == "Der" + word
        hint_is_for_the_box(page)
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
        assert typed == "Der" + word + " ä"
        box.press("Enter")
        sync_api.expect(page.locator("#progress")).to_have_text("document 1 of 2 · segment 2 of 2")
    record = steps(tmp_path / "s" / "lasso")[0]
    assert record["reference"] == typed
    human = [json.loads(line) for line in (tmp_path / "s" / "lasso" / "human.jsonl").read_text().splitlines()]
    assert human[0]["accepted_completions"] >= 3  # (the merge, the replacement, Tab before the suggestion, Ctrl+.)


@pytest.mark.slow
def test_every_key_that_changes_the_text_counts_and_every_way_to_validate(tmp_path):
    """Scripted key sequences and their counts: a key counts as a keystroke exactly when the text changes under it
    (Ctrl+Backspace, Shift+Enter, Ctrl+Z and Ctrl+Shift+Z too; moving and selecting not); validating counts one mouse
    action whether by Enter, Ctrl+Enter, a click or the button by keyboard; the page's labels, languages and live
    hint; Pause leaves the focus where Enter cannot start the clock again; the buttons stay on one line at 1280 px."""
    with served(tmp_path / "s") as s:
        page = s.browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(s.address)
        box = page.locator("#target")
        assert box.get_attribute("lang") == "de" and page.locator("#source").get_attribute("lang") == "en"
        assert box.get_attribute("aria-labelledby") == "label source"
        assert page.locator("#hint").get_attribute("aria-live") == "polite"
        tops = [page.locator(f"#{b}").bounding_box()["y"] for b in ("validate", "revert", "pause")]
        assert len(set(tops)) == 1, tops
        box.press("Control+a")      # 0
        box.press("Backspace")      # 1
        box.press_sequentially("Ab c")  # 4, words begun: A, c
        box.press("Home")           # 0
        box.press("Control+ArrowRight")  # 0
        box.press("Shift+End")      # 0
        box.press("End")            # 0
        box.press("Delete")         # 0: nothing after the cursor
        box.press("Control+Backspace")  # 1
        box.press("Shift+Enter")    # 1: a new line
        box.press("Control+z")      # 1
        box.press("Control+Shift+z")  # 1
        page.locator("#pause").click()
        assert page.evaluate("document.activeElement.id") == "status"
        page.keyboard.press("Enter")  # a reflex: still paused
        sync_api.expect(box).to_be_disabled()
        page.locator("#pause").click()
        sync_api.expect(box).to_be_enabled()
        page.locator("#validate").focus()
        page.keyboard.press("Space")  # the Validate button, by the keyboard
        sync_api.expect(page.locator("#progress")).to_have_text("document 1 of 2 · segment 2 of 2")
        page.locator("#validate").click()  # by the mouse
        sync_api.expect(page.locator("#progress")).to_have_text("document 2 of 2 · segment 1 of 2")
        page.locator("#target").press("Control+Enter")
        sync_api.expect(page.locator("#progress")).to_have_text("document 2 of 2 · segment 2 of 2")
        cdp = page.context.new_cdp_session(page)  # Enter held down: its repeats validate nothing more
        cdp.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", "key": "Enter", "code": "Enter",
                                            "windowsVirtualKeyCode": 13, "autoRepeat": True})
        page.wait_for_timeout(1000)
        sync_api.expect(page.locator("#progress")).to_have_text("document 2 of 2 · segment 2 of 2")
    records = steps(tmp_path / "s" / "lasso")
    effort = [(r["effort"]["KS"], r["effort"]["WS"], r["effort"]["MA"]) for r in records]
    # the pause button's two clicks are mouse actions of the first segment
    assert effort == [(9, 2, 3), (0, 0, 1), (0, 0, 1)], effort


@pytest.mark.slow
def test_the_editor_s_tools_and_finishing_early(tmp_path):
    """Esc dismisses the completion (Tab then leaves the box), and Tab pressed before the completion came takes it
    when it comes; the changes against the machine translation are shown;
    Revert brings the translation back (Ctrl+Z undoes it); Pause stops the segment's clock; a notice says when a
    document ends; "Finish now" ends the session with what was validated, and stops the server."""
    with served(tmp_path / "s") as s:
        page = s.browser.new_page()
        page.on("dialog", lambda dialog: dialog.accept())  # "Finish the session now?"
        page.goto(s.address)
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
        sync_api.expect(page.locator("#progress")).to_have_text("2 of 4 segments validated")
        sync_api.expect(page.locator("#overall")).to_have_text("")
        assert s.server.wait(timeout=60) == 0  # the server stops by itself
        assert "finished the session" in s.server.stdout.read()
    run = tmp_path / "s" / "lasso"
    records = steps(run)
    assert records[0]["reference"] == " ".join((shown + " Bearb").split()) and len(records) == 2
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["ended_early"] == {"validated": 2, "assigned": 4}
    assert records[0]["effort"]["seconds"] < on_page - 3.0 + 0.5, (records[0]["effort"], on_page)  # paused: not counted


@pytest.mark.slow
def test_time_away_a_restart_and_a_second_tab_are_told_to_the_translator(tmp_path):
    """A second tab of the session says so, and validating in it after the first tab did says what to do; while the
    server cannot be reached the page says so and the segment's clock waits; the same address works again after the
    session is resumed, without a reload, and the time away is not counted."""
    session = tmp_path / "s"
    with served(session) as s:
        context = s.browser.new_context()
        first, second = context.new_page(), context.new_page()
        first.goto(s.address)
        sync_api.expect(first.locator("#target")).not_to_have_value("")
        second.goto(s.address)
        sync_api.expect(second.locator("#status")).to_contain_text("open in another tab")
        sync_api.expect(first.locator("#status")).to_contain_text("open in another tab")
        first.locator("#target").press("Enter")
        sync_api.expect(first.locator("#progress")).to_have_text("document 1 of 2 · segment 2 of 2")
        shown_at = time.monotonic()
        second.locator("#target").press("Enter")
        sync_api.expect(second.locator("#status")).to_contain_text("already validated")
        sync_api.expect(second.locator("#status")).to_contain_text("Reload the page")
        second.close()

        first.locator("#target").press("End")
        first.locator("#target").press_sequentially(" Neu")
        s.stop(kill=True)
        killed_at = time.monotonic()
        sync_api.expect(first.locator("#status")).to_contain_text("cannot be reached")
        s.start(session, "resume=true")
        ready_at = time.monotonic()
        sync_api.expect(first.locator("#status")).to_contain_text("The server is back")  # the same address
        first.locator("#target").press("Enter")
        sync_api.expect(first.locator("#progress")).to_have_text("document 2 of 2 · segment 1 of 2")
        on_page = time.monotonic() - shown_at
    record = steps(session / "lasso")[1]
    assert record["reference"].endswith(" Neu")
    assert record["effort"]["seconds"] < on_page - (ready_at - killed_at) + 0.5, (record["effort"], on_page)


@pytest.mark.slow
def test_a_validated_segment_reopened_is_learnt_from_as_corrected_only(tmp_path):
    """Reopen the previous segment: its validated text comes back to be corrected, its effort goes on counting, and
    the records hold the correction alone (the model went back to θ before the first validation)."""
    session = tmp_path / "s"
    with served(session) as s:
        page = s.browser.new_page()
        page.goto(s.address)
        box = page.locator("#target")
        shown = box.input_value()
        sync_api.expect(page.locator("#reopen")).to_be_hidden()  # nothing validated yet
        box.press("End")
        box.press_sequentially(" Falsch")  # 7 keystrokes
        box.press("Enter")
        sync_api.expect(page.locator("#progress")).to_have_text("document 1 of 2 · segment 2 of 2")
        page.locator("#reopen").click()
        sync_api.expect(page.locator("#progress")).to_have_text("document 1 of 2 · segment 1 of 2")
        sync_api.expect(box).to_have_value(shown + " Falsch")
        sync_api.expect(page.locator("#reopen")).to_be_hidden()  # once, not further back
        for _ in "Falsch":
            box.press("Backspace")  # 6 more
        box.press_sequentially("Richtig")  # 7 more
        box.press("Enter")
        sync_api.expect(page.locator("#progress")).to_have_text("document 1 of 2 · segment 2 of 2")
        sync_api.expect(page.locator("li.done .target")).to_have_text(shown + " Richtig")
    records = steps(session / "lasso")
    assert [r["reference"] for r in records] == [shown + " Richtig"]
    assert records[0]["effort"]["KS"] == 20 and records[0]["effort"]["MA"] >= 3, records[0]["effort"]
    human = [json.loads(line) for line in (session / "lasso" / "human.jsonl").read_text().splitlines()]
    assert len(human) == 1 and human[0]["reopened"] == 1
