"""A bounded load test of `adaptsim serve` on loopback: N completion requests at once, their latency percentiles.

    python scripts/bench_serve.py                       # the demo model, 50 concurrent requests, 3 rounds
    python scripts/bench_serve.py --concurrent 50 --rounds 3 -- model=… dataset=…

Starts the server as a user does (`python -m adaptsim serve serve.port=0 …` into a temporary session directory),
reads the printed address, then per round (one segment each: it is validated unchanged after its round) sends
`--concurrent` completion requests for the shown segment at once, the k-th with the shown translation's first k
characters as prefix (all distinct where the translation has that many characters, so each runs the
prefix-constrained search), and then the same requests again, answered from the segment's cache of prefixes asked;
then the same requests once more one after another on one kept-alive connection, as a translator's page sends them
(answered from the cache: what the server and the connection add to each answer). The model works on one request at a
time (one model, one lock: adaptsim/serve/state.py), so in a burst a request's latency is mostly its wait in that
queue; the figures say what a burst costs the last one served. Prints p50, p90, p99 and the maximum, in milliseconds,
and the requests per second, for each; any non-200 answer fails it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]


def post(url: str, token: str, body: dict) -> float:
    request = urllib.request.Request(url, json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "X-Adaptsim-Token": token})
    t = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        response.read()
        if response.status != 200:
            raise SystemExit(f"answer {response.status}")
    return time.perf_counter() - t


def one_client(base: str, token: str, bodies: list[dict]) -> list[float]:
    """Each request's latency, sent one after another on one kept-alive connection (as a page sends them)."""
    url = urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
    latencies = []
    try:
        for body in bodies:
            t = time.perf_counter()
            connection.request("POST", "/api/complete", json.dumps(body).encode(),
                               headers={"Content-Type": "application/json", "X-Adaptsim-Token": token})
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise SystemExit(f"answer {response.status}")
            latencies.append(time.perf_counter() - t)
    finally:
        connection.close()
    return latencies


def percentiles(seconds: list[float]) -> str:
    ms = sorted(1000 * s for s in seconds)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return f"p50 {q[49]:.0f} ms · p90 {q[89]:.0f} ms · p99 {q[98]:.0f} ms · max {ms[-1]:.0f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrent", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("overrides", nargs="*", help="serve's settings (key=value) after --")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([sys.executable, "-m", "adaptsim", "serve", f"serve.dir={tmp}/s", "serve.port=0",
                                 *args.overrides], stdout=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            line = proc.stdout.readline()
            found = re.search(r"(http://\S+/)\?token=(\S+)", line)
            if not found:
                raise SystemExit(f"the server did not start: {line}")
            base, token = found.groups()
            request = urllib.request.Request(base + "api/state", headers={"X-Adaptsim-Token": token})
            state = json.loads(urllib.request.urlopen(request, timeout=600).read())
            times = {"searched": ([], [0.0]), "cached": ([], [0.0]), "one client": ([], [0.0])}
            lengths = []
            for _ in range(args.rounds):  # one segment a round; validated unchanged after it
                shown, position = state["hypothesis"], state["position"]
                lengths.append(len(shown))
                prefixes = [shown[:k % (len(shown) + 1)] for k in range(args.concurrent)]
                bodies = [{"position": position, "prefix": p} for p in prefixes]
                for kind in times:
                    latencies, wall = times[kind]
                    t = time.perf_counter()
                    if kind == "one client":  # (cached by now)
                        latencies += one_client(base, token, bodies)
                    else:
                        with ThreadPoolExecutor(args.concurrent) as pool:
                            latencies += pool.map(lambda body: post(base + "api/complete", token, body), bodies)
                    wall[0] += time.perf_counter() - t
                request = urllib.request.Request(base + "api/validate", json.dumps(
                    {"position": position, "text": shown, "effort": {}}).encode(), method="POST",
                    headers={"Content-Type": "application/json", "X-Adaptsim-Token": token})
                state = json.loads(urllib.request.urlopen(request, timeout=600).read())
            distinct = sum(min(args.concurrent, n + 1) for n in lengths)
            print(f"{args.concurrent} concurrent completion requests on each of {args.rounds} segments "
                  f"({', '.join(map(str, lengths))} characters; {distinct} distinct prefixes), loopback")
            for kind, (latencies, wall) in times.items():
                print(f"{kind:>10}: {percentiles(latencies)} · {len(latencies) / wall[0]:.1f} requests/s")
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)


if __name__ == "__main__":
    main()
