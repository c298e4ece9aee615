"""Page faults, kernel time and wall time of an adaptsim command under glibc's allocator and under jemalloc.

    python scripts/bench_allocator.py --repeat 2 -- run method=full model=base-ende \
        dataset=business-central dataset.max_documents=2 threads=1
    python scripts/bench_allocator.py -- train model=paper-transformer train.source=… train.target=… \
        train.max_steps=10 threads=1

Runs `python -m adaptsim COMMAND…` alternately with `allocator=system` (glibc, with run's `malloc_tuning`) and
with the default (jemalloc with its decay off, adaptsim/allocator.py), each in a fresh output directory, and
prints per allocator the median of: wall seconds, user and kernel CPU seconds, minor page faults (what glibc's
returning of freed memory costs: these counts do not depend on what else the machine is doing), peak RSS.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from adaptsim.allocator import jemalloc_library


def measure(args: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "adaptsim", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"failed: adaptsim {' '.join(args)}\n{done.stdout[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall s": wall, "user s": after.ru_utime - before.ru_utime, "kernel s": after.ru_stime - before.ru_stime,
            "minor faults": after.ru_minflt - before.ru_minflt, "peak RSS MB": after.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("command", nargs="+", help="the adaptsim command and its overrides (after --)")
    args = ap.parse_args()
    if not jemalloc_library():
        sys.exit("libjemalloc.so.2 is not installed (Debian: apt install libjemalloc2)")
    out = tempfile.mkdtemp(prefix="bench_allocator_")
    figures: dict[str, list[dict]] = {"glibc": [], "jemalloc": []}
    for i in range(args.repeat):
        for name, extra in (("glibc", ["allocator=system"]), ("jemalloc", [])):
            where = f"{out}/{name}{i}"
            own = [f"hydra.run.dir={where}", "progress=false", *extra]
            if args.command[0] == "train":
                own.append(f"train.out={where}/model")
            figures[name].append(measure([*args.command, *own]))
    print(f"adaptsim {' '.join(args.command)}  (median of {args.repeat})")
    keys = list(figures["glibc"][0])
    print(f"{'':10}" + "".join(f"{k:>14}" for k in keys))
    for name, rows in figures.items():
        print(f"{name:10}" + "".join(f"{statistics.median(r[k] for r in rows):>14,.1f}" for k in keys))


if __name__ == "__main__":
    main()
