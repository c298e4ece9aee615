"""`adaptsim <command> [args…]`: dispatch to one module per command.

Commands are imported lazily so `adaptsim score` does not pay for importing torch.
"""

from __future__ import annotations

import atexit
import importlib
import os
import difflib
import sys
import threading

from adaptsim import allocator
from adaptsim.errors import UserError

# name -> ("module:function", one-line help). Each function takes argv (list[str]) and returns an exit code.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("adaptsim.commands.run:main", "simulate post-editing with online adaptation (Hydra overrides)"),
    "bench": ("adaptsim.commands.bench:main", "time translate/update per segment for a model config (Hydra overrides)"),
    "score": ("adaptsim.commands.score:main", "score hypothesis files: R0, R1, R0+1, BLEU, SBLEU, TER, chrF"),
    "select-fixed": ("adaptsim.commands.select_fixed:main",
                     "choose the tensor list of method=fixed by running lasso on held-out data"),
    "table": ("adaptsim.report.table:main", "the paper's tables (absolute or --relative) from finished runs or sweeps"),
    "plot": ("adaptsim.report.plot:main", "learning curves (paper Figure 2): cumulative score minus the baseline's"),
    "findings": ("adaptsim.report.findings:main", "the paper's eight findings checked, with p-values and verdicts"),
    "cxmi": ("adaptsim.report.cxmi:main",
             "CXMI: what adapted models gained from the post-edited history, by word role"),
    "litter": ("adaptsim.report.litter:main",
               "LitTER: literal translation errors of idioms over the stream (LitTER0, LitTER1, repeats)"),
    "terms": ("adaptsim.report.terms:main",
              "terminology consistency: later hypotheses reusing the previous post-edit's rendering of a term"),
    "forgetting": ("adaptsim.report.forgetting:main",
                   "forgetting: a general-domain probe's scores along the stream (metrics.probe) beside the stream's"),
    "compare": ("adaptsim.report.compare:main", "scores with 95% intervals, differences to the first run and p-values"),
    "study": ("adaptsim.report.study:main",
              "a translator study (serve sessions): the methods compared across translators by the design's test"),
    "data-stats": ("adaptsim.commands.data_stats:main",
                   "documents, segments, tokens and content-word repetition of a dataset"),
    "convert": ("adaptsim.commands.convert:main",
                "convert a fairseq transformer checkpoint into a model directory run loads"),
    "train": ("adaptsim.commands.train:main",
              "train a Marian-architecture base model from parallel text (Hydra overrides)"),
    "serve": ("adaptsim.commands.serve:main",
              "a web page where a translator post-edits while the method adapts (Hydra overrides)"),
}

USAGE = "usage: adaptsim <command> [args…]   (also: python -m adaptsim …)"


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [USAGE, "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "`adaptsim <command> --help` shows a command's own options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from_command_line = argv is None  # not a call from Python (the tests)
    if from_command_line:  # the allocator is chosen before any work
        allocator.reexec(sys.argv[1:])
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        sys.exit(0 if argv else 2)
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(usage(), file=sys.stderr)
        near = difflib.get_close_matches(name, list(COMMANDS), n=1)
        print(f"adaptsim: error: unknown command {name!r}" + (f" (did you mean {near[0]}?)" if near else ""),
              file=sys.stderr)
        sys.exit(2)
    module, func = COMMANDS[name][0].split(":")
    try:
        code = getattr(importlib.import_module(module), func)(rest)
    except UserError as e:
        print(f"adaptsim {name}: error: {e}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt as e:  # SIGINT, or SIGTERM as errors.Terminated
        print(f"adaptsim {name}: interrupted", file=sys.stderr)
        code = getattr(e, "exit_code", 130)
    if from_command_line:
        leave(code or 0)
    sys.exit(code or 0)


def leave(code: int) -> None:
    """End the process without the interpreter's teardown, which frees torch's and transformers' thousands of
    modules and objects one by one: most of a second of CPU per command (docs/performance.md, "As a whole
    process"). Nothing is lost: the exit functions run (logging's flushes its handlers), the standard
    streams are flushed, and adaptsim's own outputs are written through file descriptors that are closed or
    unbuffered. Where another thread still runs (none of adaptsim's does at this point), Python exits as usual, so
    that it is waited for."""
    if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`adaptsim table … | head`) or a closed stream
            pass
    os._exit(code)
