"""Seconds for the two reports whose speed the sequential randomisation test must keep (docs/reports.md, "Few
documents"): `adaptsim findings` on Business Central (100 articles, six methods, the committed text-free records) at
its defaults, and `adaptsim table --significance` on the demo's six-method sweep (4 documents, the exact test).
Each report runs in this process, imports done beforehand, `--repeats` times; the minimum and median are printed.

    python scripts/bench_verdicts.py [--demo-sweep DIR] [--repeats 3]

Without --demo-sweep the demo sweep is run first (`+experiment=paper_methods`, lockstep, about 20 s), untimed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from adaptsim import PROJECT_ROOT
from adaptsim.cli import main as adaptsim

BUSINESS_CENTRAL = PROJECT_ROOT / "docs" / "results" / "base-ende" / "runs" / "business_central"


def timed(argv: list[str], repeats: int) -> list[float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                contextlib.suppress(SystemExit):
            adaptsim(argv)
        seconds.append(time.perf_counter() - start)
    return seconds


def demo_sweep(into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "adaptsim", "run", "-m", "+experiment=paper_methods",
                    "hydra/launcher=lockstep", "threads=1", f"hydra.sweep.dir={into}"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return into


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--demo-sweep", type=Path)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sweep = args.demo_sweep or demo_sweep(Path(tmp) / "demo")
        timed(["table", str(sweep), "--significance"], 1)  # imports
        reports = (("findings, Business Central (100 documents, 6 methods)", ["findings", str(BUSINESS_CENTRAL)]),
                   ("table --significance, demo (4 documents, 6 methods)", ["table", str(sweep), "--significance"]))
        for name, argv in reports:
            s = timed(argv, args.repeats)
            print(f"{name}: min {min(s):.2f} s, median {statistics.median(s):.2f} s ({args.repeats} runs)")


if __name__ == "__main__":
    main()
