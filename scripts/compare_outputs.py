"""Outputs unchanged? A fixed set of small adaptsim runs written into a directory (`snapshot`), and two such
directories compared file by file (`compare`), for a refactor that must not change what adaptsim writes.

Usage — run `snapshot` on the code before a refactor and on the code after it, then `compare`:

    # BEFORE: a git worktree of the old commit, with PYTHONPATH pointing at it (and run from inside it)
    git worktree add /tmp/before <old commit>
    cd /tmp/before && PYTHONPATH=/tmp/before python /work/main/scripts/compare_outputs.py snapshot /tmp/outputs-before
    # AFTER: the refactored checkout
    cd /work/main && PYTHONPATH=/work/main python scripts/compare_outputs.py snapshot /tmp/outputs-after
    python scripts/compare_outputs.py compare /tmp/outputs-before /tmp/outputs-after   # exit 1 on any difference

(The script never imports adaptsim, so this one file, wherever it lies, snapshots either tree: the tree is the one
PYTHONPATH names.) Two snapshots of one tree compare equal: that is the check that everything nondeterministic is
in the ignored list below. OUTDIR must not exist or be empty.

The adaptsim under test is the one `import adaptsim` finds with the caller's PYTHONPATH (probed in a subprocess
started in /, so the current directory does not decide); every command then runs as a subprocess
`python -m adaptsim …` with the working directory at that tree's root (the directory holding adaptsim/) and that
root first on PYTHONPATH (so hydra_plugins, a namespace package at the root, resolves there too). One process at a
time, one torch thread each (threads=1, OMP_NUM_THREADS=MKL_NUM_THREADS=1; also PYTHONHASHSEED=0, TZ=UTC). A
snapshot takes about 5 minutes on an idle core (most of it 33 process starts: loading torch and transformers), 8–10
minutes when two cores are shared. The
snapshot stops with an error if the tree under test changes while it runs (a hash of adaptsim/, configs/, data/,
hydra_plugins/ and pyproject.toml, checked after every step), and notes files that differ from the tree's commit.

The snapshot (each under OUTDIR/, on the embedded demo: model=demo, dataset=demo cut to its first 3 documents × 8
segments, default decoding, seed 1):
  a. single/<method>-document, single/<method>-never: each of none full bias fixed top lasso lora l2 memory tm alone,
     reset=document with save_offsets=true (offsets/<doc>.safetensors) and reset=never with compress=true
     (steps.jsonl.xz, curves.csv.xz);
  b. lockstep-document/, lockstep-never/: the same 10 methods in one lockstep sweep
     (-m hydra/launcher=lockstep method=none,…,tm), once with reset=document and once with reset=never;
  c. interactive/lasso-word, interactive/tm-word: metrics.interactive=word;
  d. serve-study/: a two-method `adaptsim serve` study (serve.methods=[full,lasso], 4 documents × 3 segments = 12
     validations), driven through the real command over HTTP as a page would (GET /api/state, POST
     /api/complete, /api/validate with a fixed effort), ended with SIGINT; serve-resumed/: the same study SIGKILLed
     after 5 validations, resumed (resume=true), interrupted with SIGINT after 8, resumed again and finished;
     _serve/*.jsonl: every request and answer of both sessions, the serve page's HTML, exit codes;
  e. reports on them: `table` of both lockstep sweeps (--significance), `compare` of three single runs, `table` of
     the study's full run, `compare` of the study's lasso run with the resumed session's;
  _console/<step>.txt: each command's stdout+stderr; _runs.json: each step's command line and exit code.
  _snapshot.json (not compared): where and when the snapshot was taken (root, commit, versions, seconds per step).

`compare DIR_A DIR_B` walks both trees and compares every file (a file on one side only is a difference):
JSON (.json) and JSON lines (.jsonl, line by line) value for value with key order and types (1 ≠ 1.0); .xz files
decompressed, then compared as what they hold; .safetensors and other binary files byte for byte (a difference
names the tensors whose bytes differ); every other file as text, line by line, byte for byte after the
normalisations below. It prints the number of files compared and each difference (at most --max-per-file per
file, 20 by default, 0 = all) and exits 1 if there is any, else 0.

What is ignored (exactly), and why:
  - _snapshot.json: wall-clock times, dates, host, the tree's root, the commit: a record of the snapshot, not an output.
  - Hydra's timestamped run and sweep directories never occur: every run gets hydra.run.dir / hydra.sweep.dir under
    OUTDIR.
  - Absolute paths: the snapshot's OUTDIR and the tree's root (as recorded in each side's _snapshot.json, and their
    resolved forms) are replaced by <OUT> and <ROOT> in every string and text line (Hydra's run and sweep
    directories, model.path, the cwd in .hydra/hydra.yaml, "outputs in …" lines).
  - JSON keys, at any depth, that hold times, memory or the process:
      * "process" (the running job's pid and host);
      * keys ending in "_s" (translate_s, update_s, moment_s, total_s, translate_median_s, update_total_s,
        segments_per_s, …: seconds), in "_ms" or containing "_ms_" or starting "ms_" (cost.step_ms_median,
        ms_per_decoder_call: milliseconds);
      * keys starting "seconds" (an interactive simulation's measured effort.seconds, cost.interactive
        seconds_total / seconds_per_segment; the serve driver's fixed effort.seconds goes with them);
      * "rss_mb" and "peak_rss_mb" (resident memory);
      * "time" (a job's error line's time.time());
      * "session" when its value is a UUID (a serve session's random id, study.json and every /api/state answer).
    The other keys of a "timing" block (threads, device, allocator, lockstep, resumed_after_steps) ARE compared.
  - Log lines (*.log and _console/*.txt): the prefix "[date time][logger][LEVEL] - " and a bare "[HH:MM:SS] "
    timestamp are dropped (the tests' log comparison does the same; a logger named after its module,
    adaptsim.model, would change its name with the module's path), and durations ("0.6 s", "12 ms",
    "0:00:05", "12.40 segs/s") become "<T>"; the serve command's printed port and token become <PORT> and <TOKEN>.
Nothing else: every score, hypothesis, perplexity, count, setting, fingerprint, file name and tensor byte counts.
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import re
import signal
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

METHODS = ["none", "full", "bias", "fixed", "top", "lasso", "lora", "l2", "memory", "tm"]
DATA = ["dataset.max_documents=3", "dataset.max_segments=8"]  # the demo's first 3 documents × 8 segments
COMMON = ["threads=1", "progress=false", *DATA]
SERVE_DATA = ["dataset.max_documents=4", "dataset.max_segments=3"]  # 12 validations
SERVE_METHODS = "serve.methods=[full,lasso]"
EFFORT = {"keystrokes": 4, "mouse_actions": 2, "word_strokes": 1, "seconds": 2.5, "accepted_completions": 1,
          "completion_requests": 1}
META = "_snapshot.json"
TIMEOUT = 900  # seconds one command may take


# ---------------------------------------------------------------------------------------------------------- snapshot

def probe() -> dict:
    """Where `import adaptsim` leads with the caller's PYTHONPATH (asked in /, so the current directory does not
    count), and the versions around it."""
    code = ("import json, os, sys, adaptsim, hydra_plugins, torch, transformers\n"
            "print(json.dumps({'adaptsim': adaptsim.__file__, 'hydra_plugins': list(hydra_plugins.__path__),"
            " 'torch': torch.__version__, 'transformers': transformers.__version__, 'python': sys.version}))")
    out = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, env=env_for(None))
    if out.returncode:
        sys.exit(f"cannot import adaptsim with PYTHONPATH={os.environ.get('PYTHONPATH')!r}:\n{out.stderr}")
    found = json.loads(out.stdout.strip().splitlines()[-1])
    found["root"] = str(Path(found["adaptsim"]).resolve().parent.parent)
    return found


def tree_hash(root: str) -> str:
    """A hash of the code and data of the tree under test (adaptsim/ with configs/ and data/, hydra_plugins/,
    pyproject.toml; caches left out): the snapshot stops if it changes while the snapshot runs."""
    import hashlib

    h = hashlib.sha256()
    for top in ("adaptsim", "configs", "data", "hydra_plugins", "pyproject.toml"):
        base = Path(root) / top
        paths = [base] if base.is_file() else sorted(base.rglob("*")) if base.is_dir() else []
        for path in paths:
            if "__pycache__" in path.parts or not path.is_file() or path.is_symlink() and path.is_dir():
                continue
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def env_for(root: str | None) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONHASHSEED": "0", "TZ": "UTC"}
    if root:
        env["PYTHONPATH"] = os.pathsep.join([root, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                                     if p and os.path.abspath(p) != root]])
    return env


class Snapshot:
    def __init__(self, out: Path):
        self.out = out
        self.info = probe()
        self.root = self.info["root"]
        plugins = [p for p in self.info["hydra_plugins"] if os.path.isdir(os.path.join(p, "adaptsim_lockstep"))]
        self.env = env_for(self.root)
        self.tree = tree_hash(self.root)
        self.runs: list[dict] = []
        self.seconds: dict[str, float] = {}
        (out / "_console").mkdir(parents=True)
        modified = subprocess.run(["git", "-C", self.root, "status", "--porcelain", "--untracked-files=no"],
                                  capture_output=True, text=True).stdout.splitlines()
        if modified:
            print(f"note: {len(modified)} files of {self.root} differ from its commit (git status)", flush=True)
        print(f"snapshot of {self.info['adaptsim']} into {out}", flush=True)
        if plugins and not plugins[0].startswith(self.root):
            print(f"warning: hydra_plugins/adaptsim_lockstep found first in {plugins[0]}, not under {self.root}",
                  flush=True)

    def adaptsim(self, name: str, *argv: str, expect: int = 0) -> None:
        """`python -m adaptsim ARGV`, its output into _console/NAME.txt; stops the snapshot on another exit code."""
        cmd = [sys.executable, "-m", "adaptsim", *argv]
        t = time.perf_counter()
        with open(self.out / "_console" / f"{name.replace('/', '__')}.txt", "w") as console:
            rc = subprocess.run(cmd, cwd=self.root, env=self.env, stdout=console, stderr=subprocess.STDOUT,
                                timeout=TIMEOUT).returncode
        self.record(name, argv, rc, t, expect)

    def record(self, name: str, argv, rc: int, started: float, expect: int = 0) -> None:
        self.seconds[name] = round(time.perf_counter() - started, 2)
        if tree_hash(self.root) != self.tree:
            self.finish()
            sys.exit(f"{name}: the tree under test ({self.root}) changed while the snapshot ran; this snapshot is "
                     "not one commit's outputs: take it again into an empty directory")
        self.runs.append({"step": name, "argv": list(argv), "exit": rc})
        print(f"  {name}: exit {rc} ({self.seconds[name]:.1f} s)", flush=True)
        if rc != expect:
            console = self.out / "_console" / f"{name.replace('/', '__')}.txt"
            tail = console.read_text()[-3000:] if console.is_file() else ""
            self.finish()
            sys.exit(f"{name}: exit {rc}, expected {expect}\n{tail}")

    def run(self, name: str, *overrides: str) -> None:
        self.adaptsim(name, "run", f"hydra.run.dir={self.out / name}", *COMMON, *overrides)

    def sweep(self, name: str, *overrides: str) -> None:
        self.adaptsim(name, "run", "-m", "hydra/launcher=lockstep", f"hydra.sweep.dir={self.out / name}", *COMMON,
                      *overrides)

    def take(self) -> None:
        started = time.time()
        for method in METHODS:  # a
            self.run(f"single/{method}-document", f"method={method}", "reset=document", "save_offsets=true")
            self.run(f"single/{method}-never", f"method={method}", "reset=never", "compress=true")
        for reset in ("document", "never"):  # b
            self.sweep(f"lockstep-{reset}", f"method={','.join(METHODS)}", f"reset={reset}")
        for method in ("lasso", "tm"):  # c
            self.run(f"interactive/{method}-word", f"method={method}", "metrics.interactive=word")
        self.serve_study()  # d
        self.serve_resumed()
        for reset in ("document", "never"):  # e
            self.adaptsim(f"report/table-lockstep-{reset}", "table", str(self.out / f"lockstep-{reset}"),
                          "--significance")
        self.adaptsim("report/compare-single", "compare", str(self.out / "single/none-document"),
                      str(self.out / "single/lasso-document"), str(self.out / "single/full-document"))
        self.adaptsim("report/table-serve-full", "table", str(self.out / "serve-study/full"))
        self.adaptsim("report/compare-serve-lasso", "compare", str(self.out / "serve-study/lasso"),
                      str(self.out / "serve-resumed/lasso"))  # the resumed session's scores are the uninterrupted's
        self.info["seconds_total"] = round(time.time() - started, 1)
        self.finish()
        files = sum(1 for p in self.out.rglob('*') if p.is_file())
        print(f"snapshot taken in {self.info['seconds_total']:.0f} s: {files} files in {self.out}", flush=True)

    def finish(self) -> None:
        (self.out / "_runs.json").write_text(json.dumps(self.runs, indent=1, ensure_ascii=False) + "\n")
        commit = subprocess.run(["git", "-C", self.root, "rev-parse", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", self.root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True)
        meta = {**self.info, "out": str(self.out), "commit": commit.stdout.strip() or None, "tree_hash": self.tree,
                "modified_files": dirty.stdout.splitlines(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                "host": os.uname().nodename, "seconds": self.seconds}
        (self.out / META).write_text(json.dumps(meta, indent=1) + "\n")

    # -- serve: the real command, driven over HTTP as its page drives it ------------------------------------------

    def serve_study(self) -> None:
        name = "serve-study"
        with Transcript(self.out / "_serve" / f"{name}.jsonl") as log:
            server = Server(self, name, log)
            server.get_page(self.out / "_serve" / "page.html")
            while not server.state()["finished"]:
                server.validate()
            server.stop(signal.SIGINT, expect=130)

    def serve_resumed(self) -> None:
        name = "serve-resumed"
        with Transcript(self.out / "_serve" / f"{name}.jsonl") as log:
            server = Server(self, name, log)
            for _ in range(5):
                server.validate()
            server.stop(signal.SIGKILL, expect=-signal.SIGKILL)  # records as a kill leaves them: `running`
            log.write({"after": "SIGKILL", "statuses": statuses(self.out / name)})
            server = Server(self, name, log, "resume=true", start="kill-resumed")
            for _ in range(3):
                server.validate()
            server.stop(signal.SIGINT, expect=130)  # closed as `interrupted`
            log.write({"after": "SIGINT", "statuses": statuses(self.out / name)})
            server = Server(self, name, log, "resume=true", start="interrupt-resumed")
            while not server.state()["finished"]:
                server.validate()
            server.stop(signal.SIGINT, expect=130)
            log.write({"after": "finished", "statuses": statuses(self.out / name)})


def statuses(session: Path) -> dict:
    return {p.parent.name: json.loads(p.read_text()).get("status") for p in sorted(session.glob("*/summary.json"))}


class Transcript:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "w", encoding="utf-8")

    def write(self, record: dict) -> None:
        self.file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.file.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def edit(hypothesis: str) -> str:
    """The translator's post-edit of a hypothesis (tests/test_serve.py's): the last word replaced."""
    words = hypothesis.split()
    return " ".join(words[:-1] + ["Ticket."])


class Server:
    """`python -m adaptsim serve` on a free port, and the requests of its page."""

    def __init__(self, snap: Snapshot, name: str, log: Transcript, *extra: str, start: str = "start"):
        self.snap, self.log, self.step = snap, log, f"{name}/{start}"
        self.argv = ["serve", f"serve.dir={snap.out / name}", "serve.port=0", SERVE_METHODS, *SERVE_DATA, *extra]
        self.console = snap.out / "_console" / f"{self.step.replace('/', '__')}.txt"
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "adaptsim", *self.argv], cwd=snap.root, env=snap.env,
                                     stdout=subprocess.PIPE, stderr=open(self.console.with_suffix(".stderr"), "w"),
                                     text=True)
        self.lines = []
        while True:  # "adaptsim serve: open http://127.0.0.1:PORT/?token=TOKEN"
            line = self.proc.stdout.readline()
            if not line:
                self.proc.wait()
                self.collect()
                snap.record(self.step, self.argv, self.proc.returncode, self.started, expect=None)
            self.lines.append(line)
            if found := re.search(r"(http://127\.0\.0\.1:\d+/)\?token=(\S+)", line):
                self.base, self.token = found.groups()
                break
        log.write({"start": start, "argv": self.argv})

    def request(self, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, headers={"X-Adaptsim-Token": self.token,
                                                                         "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as response:
                status, answer = response.status, json.loads(response.read())
        except urllib.error.HTTPError as e:
            status, answer = e.code, json.loads(e.read())
        self.log.write({"request": path, "body": body, "status": status, "answer": answer})
        if status != 200:
            self.stop(signal.SIGINT, expect=130)
            raise SystemExit(f"{self.step}: {path} answered {status}: {answer}")
        return answer

    def state(self) -> dict:
        return self.request("api/state")

    def validate(self) -> dict:
        state = self.state()
        text = edit(state["hypothesis"])
        prefix = " ".join(text.split()[:2])  # the translator types two words and asks for the rest
        self.request("api/complete", {"position": state["position"], "prefix": prefix})
        return self.request("api/validate", {"position": state["position"], "text": text, "effort": EFFORT})

    def get_page(self, path: Path) -> None:
        with urllib.request.urlopen(f"{self.base}?token={self.token}", timeout=TIMEOUT) as response:
            path.write_bytes(response.read())

    def stop(self, how: int, expect: int) -> None:
        self.proc.send_signal(how)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.collect()
        self.log.write({"stop": signal.Signals(how).name, "exit": self.proc.returncode})
        self.snap.record(self.step, self.argv, self.proc.returncode, self.started, expect)

    def collect(self) -> None:
        """stdout, then stderr, into the step's console file."""
        rest = self.proc.stdout.read()
        stderr = self.console.with_suffix(".stderr")
        self.console.write_text("".join(self.lines) + rest + stderr.read_text())
        stderr.unlink()


# ----------------------------------------------------------------------------------------------------------- compare

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
LOG_PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\]\[[^\]]*\]\[[A-Z]+\] - ")
CLOCK = re.compile(r"^\[\d\d:\d\d:\d\d\] ")
DURATION = re.compile(r"\b\d+(\.\d+)?(e-?\d+)? ?(s|ms|segs/s|it/s|s/it)\b|\b\d+:\d\d:\d\d\b")


def ignored_key(key: str, value) -> bool:
    return (key in ("process", "rss_mb", "peak_rss_mb", "time") or key.endswith("_s") or key.endswith("_ms")
            or "_ms_" in key or key.startswith("ms_") or key.startswith("seconds")
            or (key == "session" and isinstance(value, str) and UUID.fullmatch(value) is not None))


class Side:
    """One snapshot: its directory and the absolute paths that stand for <OUT> and <ROOT> in it."""

    def __init__(self, directory: str):
        self.dir = Path(directory)
        if not (self.dir / META).is_file():
            sys.exit(f"{directory}: not a snapshot (no {META})")
        self.meta = json.loads((self.dir / META).read_text())
        subs = set()
        for key, token in (("out", "<OUT>"), ("root", "<ROOT>")):
            for form in {self.meta[key], os.path.realpath(self.meta[key]), os.path.abspath(self.meta[key])}:
                subs.add((form.rstrip("/"), token))
        self.subs = sorted(subs, key=lambda s: -len(s[0]))  # the longer first (OUT may lie inside ROOT)

    def text(self, s: str) -> str:
        for path, token in self.subs:
            s = s.replace(path, token)
        return s


def normalise(value, side: Side):
    """The JSON value with paths replaced and ignored keys dropped (key order kept: a list of pairs)."""
    if isinstance(value, Obj):
        return Obj((k, normalise(v, side)) for k, v in value if not ignored_key(k, v))
    if isinstance(value, list):
        return [normalise(v, side) for v in value]
    if isinstance(value, str):
        return side.text(value)
    return value


class Obj(list):
    """A JSON object as its (key, value) pairs in order."""


def load_json(text: str, side: Side):
    return normalise(json.loads(text, object_pairs_hook=Obj), side)


def show(value, limit: int = 160) -> str:
    s = json.dumps(plain(value), ensure_ascii=False)
    return s if len(s) <= limit else s[:limit] + "…"


def plain(value):
    if isinstance(value, Obj):
        return {k: plain(v) for k, v in value}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def same_scalar(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def diff_json(a, b, where: str, out: list) -> None:
    if isinstance(a, Obj) and isinstance(b, Obj):
        ka, kb = [k for k, _ in a], [k for k, _ in b]
        if ka != kb:
            if set(ka) == set(kb):
                out.append(f"{where or '.'}: key order {ka} != {kb}")
            else:
                for k in ka:
                    if k not in kb:
                        out.append(f"{where}.{k}: only in A: {show(dict(a)[k])}")
                for k in kb:
                    if k not in ka:
                        out.append(f"{where}.{k}: only in B: {show(dict(b)[k])}")
        db = dict(b)
        for k, v in a:
            if k in db:
                diff_json(v, db[k], f"{where}.{k}" if where else k, out)
    elif isinstance(a, list) and isinstance(b, list) and not isinstance(a, Obj) and not isinstance(b, Obj):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} items != {len(b)} items: {show(a)} != {show(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            diff_json(x, y, f"{where}[{i}]", out)
    elif isinstance(a, (list, Obj)) or isinstance(b, (list, Obj)) or not same_scalar(a, b):
        out.append(f"{where}: {show(a)} != {show(b)}")


def text_lines(data: bytes, name: str, side: Side) -> list[str]:
    text = side.text(data.decode("utf-8", errors="surrogateescape"))
    lines = text.split("\n")
    if name.endswith(".log") or name.startswith("_console/"):
        out = []
        for line in lines:
            line = CLOCK.sub("", LOG_PREFIX.sub("", line))
            line = re.sub(r"http://127\.0\.0\.1:\d+/\?token=\S+", "http://127.0.0.1:<PORT>/?token=<TOKEN>", line)
            out.append(DURATION.sub("<T>", line))
        return out
    return lines


def safetensors_tensors(data: bytes) -> dict:
    """{name: bytes of the tensor} of a safetensors file, and its header under ""."""
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {"": json.dumps(header, sort_keys=True).encode()}
    for name, spec in header.items():
        if name != "__metadata__":
            start, end = spec["data_offsets"]
            out[name] = body[start:end]
    return out


def compare_file(rel: str, a: bytes, b: bytes, sa: Side, sb: Side) -> list[str]:
    name = rel
    if name.endswith(".xz"):
        a, b, name = lzma.decompress(a), lzma.decompress(b), name[:-3]
    if name.endswith(".json"):
        out = []
        diff_json(load_json(a.decode(), sa), load_json(b.decode(), sb), "", out)
        return out
    if name.endswith(".jsonl"):
        la, lb = a.decode().splitlines(), b.decode().splitlines()
        out = [f"{len(la)} lines != {len(lb)} lines"] if len(la) != len(lb) else []
        for i, (x, y) in enumerate(zip(la, lb), 1):
            diff_json(load_json(x, sa), load_json(y, sb), f"line {i}", out)
        return out
    if name.endswith(".safetensors"):
        if a == b:
            return []
        ta, tb = safetensors_tensors(a), safetensors_tensors(b)
        out = [f"{len(a)} bytes != {len(b)} bytes"] if len(a) != len(b) else []
        if ta[""] != tb[""]:
            out.append("headers differ (names, dtypes, shapes or metadata)")
        out += [f"tensor {k}: bytes differ" for k in ta if k and k in tb and ta[k] != tb[k]]
        out += [f"tensor {k}: only in {'A' if k in ta else 'B'}" for k in set(ta) ^ set(tb)]
        return out or ["bytes differ"]
    try:
        la, lb = text_lines(a, rel, sa), text_lines(b, rel, sb)
        a.decode("utf-8"), b.decode("utf-8")
    except UnicodeDecodeError:  # another binary file
        return [] if a == b else [f"binary files differ ({len(a)} bytes, {len(b)} bytes)"]
    out = [f"{len(la)} lines != {len(lb)} lines"] if len(la) != len(lb) else []
    out += [f"line {i}: {x[:200]!r} != {y[:200]!r}" for i, (x, y) in enumerate(zip(la, lb), 1) if x != y]
    return out


def compare(dir_a: str, dir_b: str, max_per_file: int) -> int:
    sa, sb = Side(dir_a), Side(dir_b)
    for label, side in (("A", sa), ("B", sb)):
        m = side.meta
        print(f"{label}: {side.dir} (adaptsim at {m['root']}, commit {m.get('commit')}, "
              f"{len(m.get('modified_files', []))} modified files; taken {m.get('date')})")
    files = {side: {p.relative_to(side.dir).as_posix() for p in side.dir.rglob("*") if p.is_file()} - {META}
             for side in (sa, sb)}
    differences = 0
    for rel in sorted(files[sa] ^ files[sb]):
        print(f"{rel}: only in {'A' if rel in files[sa] else 'B'}")
        differences += 1
    both = sorted(files[sa] & files[sb])
    for rel in both:
        found = compare_file(rel, (sa.dir / rel).read_bytes(), (sb.dir / rel).read_bytes(), sa, sb)
        differences += len(found)
        shown = found if not max_per_file else found[:max_per_file]
        for line in shown:
            print(f"{rel}: {line}")
        if len(found) > len(shown):
            print(f"{rel}: … {len(found) - len(shown)} more differences")
    print(f"{len(both)} files compared ({len(files[sa] ^ files[sb])} on one side only): "
          f"{differences} difference{'s' if differences != 1 else ''}")
    return 1 if differences else 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("snapshot", help="run the fixed set of runs into OUTDIR (which must not exist)")
    s.add_argument("outdir")
    c = sub.add_parser("compare", help="compare two snapshots; exit 1 on any difference")
    c.add_argument("dir_a")
    c.add_argument("dir_b")
    c.add_argument("--max-per-file", type=int, default=20, help="differences printed per file (0: all)")
    args = p.parse_args(argv)
    if args.mode == "snapshot":
        out = Path(args.outdir).absolute()
        if out.exists() and any(out.iterdir()):
            sys.exit(f"{out}: exists and is not empty")
        Snapshot(out).take()
        return 0
    return compare(args.dir_a, args.dir_b, args.max_per_file)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
