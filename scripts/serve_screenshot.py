"""docs/serve.png: the page of `adaptsim serve` mid-document, in the system's headless Chromium (never downloaded).

    python scripts/serve_screenshot.py [--out docs/serve.png] [--chromium /usr/bin/chromium]

Starts the server on the demo (its first document's first 6 segments), validates two segments as the translator
would (the second corrected), begins typing the third and waits for the completion, then photographs the page.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--no-first-run", "--disable-sync"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "serve.png"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([sys.executable, "-m", "adaptsim", "serve", f"serve.dir={tmp}/s", "serve.port=0",
                                 "dataset.max_documents=1", "dataset.max_segments=6"], stdout=subprocess.PIPE,
                                text=True, cwd=ROOT)
        try:
            address = re.search(r"http://\S+", proc.stdout.readline()).group(0)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, args=FLAGS)
                page = browser.new_page(viewport={"width": 900, "height": 560})
                page.goto(address)
                box = page.locator("#target")
                expect(page.locator("#progress")).to_contain_text("segment 1 of 6")
                box.press("Enter")
                expect(page.locator("#progress")).to_contain_text("segment 2 of 6")
                box.press("Control+a")
                box.press("Backspace")
                box.press_sequentially("Ihr Treiber")
                expect(page.locator("#hint .rest")).not_to_be_empty()
                box.press("Tab")
                box.press("Enter")
                expect(page.locator("#progress")).to_contain_text("segment 3 of 6")
                box.press("Control+a")
                box.press("Backspace")
                box.press_sequentially("Ein Treiber ben")
                expect(page.locator("#hint .rest")).not_to_be_empty()
                page.screenshot(path=args.out)
                browser.close()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
    print(args.out)


if __name__ == "__main__":
    main()
