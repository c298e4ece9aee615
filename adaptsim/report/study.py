"""`adaptsim study SESSION…`: the methods of a translator study compared on the same documents across translators.

A study is several sessions of `adaptsim serve serve.methods=[…]` at one seed, one per translator
(`serve.translator` 0, 1, …; docs/serve.md, "Study design"): each session's study.json says which method adapted on
which document. A translator's document under a method is a *cell*. A method's score pools its cells the way a run's
corpus score pools segments (the per-segment statistics of steps.jsonl summed; adaptsim.report.significance), so every
metric has its one definition: the translator's measured effort — seconds per word of the validated text (paused time
left out), KSMR, KSR, WSR, MAR — and the adaptation metrics.

The test is the randomisation the design performed (Fisher's randomisation test): the documents are cut into blocks of
as many documents as methods, each block's order of methods was drawn at random and rotated by each translator's
number (adaptsim.serve.study.assign). Under the sharp null hypothesis that the method changes no cell's outcome, every
other draw of the block orders was as likely and would have given the same cells other labels; p is the share of draws
whose difference between the two methods is at least as large (in absolute value) as the observed one. Translators
and documents are thereby the units: a slow translator or a hard document weighs on every method alike across the
square, and cannot make one look better. The draws are enumerated where there are at most `EXACT_DRAWS` of them
(p then exact), else `--draws` random ones (p = (1 + #)/(draws + 1)). The observed p is always printed, and beside it
the smallest p the draws could give with these cells (a draw and its mirror give the same |difference|: at best
2/draws with two methods), since a small study's p cannot be small whatever the data: where that smallest p is not
below 0.05 the comparison also says "cannot tell" (two translators on four documents: four draws, smallest p 0.5).

What the p rests on is printed before it: for each method and translator the documents, segments and cells with data
(validated segments in a finished run), the sessions and runs the translator finished early (study.json's and the
run summaries' `ended_early`), and each translator's documents with no data (never reached, or their run not
finished) or partial (fewer segments validated than the document has). A document's length is recorded nowhere
as such (a run's references.tsv and steps hold what was validated; the dataset is not in the session): it is taken
from a run that went through the document whole (a finished run's documents; where the translator finished early,
all but the last one reached), else from the totals the records give (a run's assigned segments, study.json's
segments) when one document alone is missing from them; where neither tells, the report says so. After the results,
one line per measure says what it is and which way is better (the definitions of adaptsim.metrics).

`--plan` sizes a study before it is run, by a t test's power (`power.t_power`; `findings --power` refines it): for
each number of translators and documents, the smallest true difference between two methods that the study finds with
80% power at α = 0.05, in standard deviations σ of one cell's score (what varies from cell to cell once the design has
removed each translator's and each document's level; a pilot's cells estimate it). A block of k documents gives each
translator one cell under each method, so each block yields a difference averaged over T translators, with standard
deviation σ·√(2/T); the power is that of a t test over the B = documents/k blocks (B − 1 degrees of freedom), the
units the design randomises, at the largest level below 0.05 that the design's p can take (a multiple of
2/(k(k−1))^B: at 12 documents and two methods, 2/64). Where it can take none, no effect can be shown: "cannot tell".

With `--simulated RUN…`, runs of `adaptsim run` with a simulated translator (`metrics.interactive`) on the sessions'
references.tsv: each is matched to its session's run by data fingerprint, and its effort is shown beside the measured
effort of the same cells.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from adaptsim.errors import UserError
from adaptsim.metrics.effort import RATES, SECONDS_PER_WORD
from adaptsim.report import significance as sig
from adaptsim.report.power import POWER, t_power
from adaptsim.report.runs import Run, discover
from adaptsim.report.stats import ALPHA
from adaptsim.serve import study as design

EFFORT = [SECONDS_PER_WORD, *RATES]
DEFAULT_METRICS = ",".join([*EFFORT, "R0", "R1", "R0+1", "BLEU"])
EXACT_DRAWS = 100_000  # enumerate every draw of the block orders up to this many
CHUNK = 2_000  # draws scored at once
PLAN_TRANSLATORS = (2, 4, 6, 8, 12, 16)  # `--plan`'s rows
PLAN_BLOCKS = (4, 6, 8, 12, 16, 24)  # `--plan`'s columns: blocks of as many documents as methods


@dataclass
class SessionRecord:
    dir: Path
    translator: int
    assignment: dict[str, str]   # doc_id -> method
    runs: dict[str, Run]         # method -> its finished run
    summaries: dict[str, dict] = field(default_factory=dict)  # method -> its summary.json, finished or not
    ended_early: dict | None = None  # study.json's: {validated, segments} where the translator finished early


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptsim study", description=__doc__.split("\n\n")[0])
    p.add_argument("sessions", nargs="*", metavar="SESSION", help="session directories (serve.dir), one per translator")
    p.add_argument("--plan", type=int, metavar="METHODS",
                   help="no sessions: the smallest difference a study of METHODS methods finds (80%% power, α 0.05), "
                        "by translators and documents")
    p.add_argument("--metrics", default=DEFAULT_METRICS, help=f"comma-separated (default: {DEFAULT_METRICS})")
    p.add_argument("--simulated", nargs="*", default=[], metavar="RUN",
                   help="runs with a simulated translator on the sessions' references.tsv: their effort beside")
    p.add_argument("--draws", type=int, default=10_000,
                   help=f"random draws of the block orders where there are more than {EXACT_DRAWS:,} (default: 10000)")
    p.add_argument("--seed", type=int, default=12345, help="seed of the random draws (default: 12345)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.plan is not None:
        if args.sessions or args.plan < 2:
            raise UserError("--plan METHODS (2 or more) takes no sessions")
        print(plan(args.plan))
        return 0
    if not args.sessions:
        raise UserError("the session directories of a study (serve.dir, one per translator), or --plan METHODS")
    sessions, methods, seed = load(args.sessions)
    wanted = [m.strip() for m in args.metrics.split(",") if m.strip()]
    cells = {m: cell_statistics(sessions, m) for m in wanted}
    result = test(sessions, methods, seed, cells, args.draws, args.seed)
    print(text(sessions, methods, wanted, result, simulated(sessions, methods, args.simulated)))
    return 0


def load(paths: list[str]) -> tuple[list[SessionRecord], list[str], int]:
    """The sessions of one study (the same methods, documents and seed; each translator once), with their finished
    runs; one line naming the first session that does not belong."""
    sessions, first = [], None
    for path in map(Path, paths):
        try:
            recorded = json.loads((path / design.FILE).read_text(encoding="utf-8"))
            methods, seed, translator = list(recorded["methods"]), int(recorded["seed"]), int(recorded["translator"])
            assignment = dict(recorded["assignment"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise UserError(f"{path}: not a serve session ({design.FILE}: {e})") from None
        if assignment != design.assign(list(assignment), methods, seed, translator):
            raise UserError(f"{path}/{design.FILE}: its assignment is not the design's for seed {seed} and translator "
                            f"{translator}; the test re-draws the design, so it needs the design's own")
        if first is None:
            first = (methods, seed, list(assignment), path)
        elif (methods, seed, list(assignment)) != first[:3]:
            raise UserError(f"{path}: another study than {first[3]} (methods {methods} vs {first[0]}, seed {seed} vs "
                            f"{first[1]}, or other documents)")
        if any(s.translator == translator for s in sessions):
            raise UserError(f"{path}: serve.translator={translator} again (each translator's session once)")
        runs, summaries = {}, {}
        for method in methods:
            found = discover([path / method]) if (path / method).is_dir() else None
            if found and found.runs:
                runs[method] = found.runs[0]
            try:  # (a run not finished too: its planned segments say how long its documents are)
                summaries[method] = json.loads((path / method / "summary.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                pass
        if not runs:
            raise UserError(f"{path}: no method's run is finished (a session's run is finished when its last "
                            "document is validated, or at Finish now)")
        ended = recorded.get("ended_early")
        sessions.append(SessionRecord(path, translator, assignment, runs, summaries,
                                      ended if isinstance(ended, dict) else None))
    if len(sessions) < 2:
        raise UserError("study needs the sessions of at least two translators")
    return sessions, first[0], first[1]


def cell_statistics(sessions: list[SessionRecord], metric: str) -> dict[tuple[int, str], np.ndarray]:
    """{(translator, doc_id): the metric's statistics summed over the cell's segments} for every cell with a run."""
    out = {}
    for s in sessions:
        for run in s.runs.values():
            steps = sig.Steps.of(run)
            rows = steps.statistics(metric)
            for doc_id, row in zip(steps.doc_ids, rows):
                key = (s.translator, doc_id)
                out[key] = out.get(key, 0) + row
    return out


@dataclass
class Cell:
    """A translator's document under a method: what was validated of it, and how long it is."""
    method: str
    validated: int        # its segments in a finished run (0: no data)
    length: int | None    # its segments, where the records tell (None: recorded nowhere readable)
    last: bool            # the last document its run reached before the translator finished early

    partial = property(lambda self: 0 < self.validated and self.length is not None and self.validated < self.length)


def coverage(sessions: list[SessionRecord]) -> dict[tuple[int, str], Cell]:
    """{(translator, doc_id): its Cell} for every cell of the design, with data or not: what the p rests on."""
    validated: dict[tuple[int, str], int] = {}
    for s in sessions:
        for run in s.runs.values():
            for doc in sig.Steps.of(run).doc_ids:
                validated[(s.translator, doc)] = validated.get((s.translator, doc), 0) + 1
    last = set()
    for s in sessions:
        for method, run in s.runs.items():
            reached = [d for d, m in s.assignment.items() if m == method and validated.get((s.translator, d))]
            if run.summary.get("ended_early") and reached:
                last.add((s.translator, reached[-1]))
    lengths = document_lengths(sessions, validated, last)
    return {(s.translator, d): Cell(m, validated.get((s.translator, d), 0), lengths.get(d), (s.translator, d) in last)
            for s in sessions for d, m in s.assignment.items()}


def document_lengths(sessions: list[SessionRecord], validated: dict, last: set) -> dict[str, int]:
    """{doc_id: its segments} as far as the records tell (no record holds a document's length as such): the
    documents a finished run went through whole (all it reached but the `last`, where its translator stopped), then,
    over and over, the one document missing from a total a record gives (a run's assigned segments: `ended_early`'s,
    else its summary's planned `segments`; study.json's `ended_early` segments, all the session's documents)."""
    known, totals = {}, []
    for s in sessions:
        for method, summary in s.summaries.items():
            docs = [d for d, m in s.assignment.items() if m == method]
            if method in s.runs:
                known.update({d: validated[(s.translator, d)] for d in docs
                              if validated.get((s.translator, d)) and (s.translator, d) not in last})
            early = summary.get("ended_early")
            total = early.get("assigned") if isinstance(early, dict) else summary.get("segments")
            if isinstance(total, int):
                totals.append((docs, total))
        if s.ended_early and isinstance(s.ended_early.get("segments"), int):
            totals.append((list(s.assignment), s.ended_early["segments"]))
    found = True
    while found:
        found = False
        for docs, total in totals:
            unknown = [d for d in docs if d not in known]
            rest = total - sum(known[d] for d in docs if d in known)
            if len(unknown) == 1 and rest > 0:
                known[unknown[0]], found = rest, True
    return known


@dataclass
class Outcome:
    scores: dict[str, dict[str, float]]       # metric -> method -> pooled score
    differences: dict[str, dict[str, tuple]]  # metric -> method -> (Δ to the first method, p, the smallest p possible)
    draws: int
    exact: bool


def test(sessions: list[SessionRecord], methods: list[str], seed: int, cells: dict, draws: int,
         rng_seed: int) -> Outcome:
    """Each method's pooled score, and its difference to the first method's with the design's randomisation p."""
    docs = list(sessions[0].assignment)
    k = len(methods)
    blocks = -(-len(docs) // k)
    orders = list(itertools.permutations(range(k)))
    exact = len(orders) ** blocks <= EXACT_DRAWS
    if exact:
        chosen = list(itertools.product(range(len(orders)), repeat=blocks))
    else:
        rng = np.random.default_rng(rng_seed)
        chosen = [tuple(rng.integers(len(orders), size=blocks)) for _ in range(draws)]
    keys = sorted({key for by_cell in cells.values() for key in by_cell})
    where = {key: i for i, key in enumerate(keys)}
    translators = sorted({s.translator for s in sessions})
    # labels[d, c]: the method (index) of cell c under draw d; the observed draw is each session's assignment
    observed = np.array([methods.index(next(s for s in sessions if s.translator == t).assignment[doc])
                         for t, doc in keys])
    labels = np.empty((len(chosen), len(keys)), dtype=np.int64)
    for d, draw in enumerate(chosen):
        by_translator = {t: design.label(docs, [orders[o] for o in draw], t) for t in translators}
        for (t, doc), c in where.items():
            labels[d, c] = by_translator[t][doc]
    scores, differences = {}, {}
    for metric, by_cell in cells.items():
        stats = np.stack([np.asarray(by_cell.get(key, np.zeros_like(next(iter(by_cell.values())))), dtype=float)
                          for key in keys])
        score = sig.scorer(metric)

        def pooled(label_rows: np.ndarray) -> np.ndarray:  # (draws, methods) scores, a chunk of draws at a time
            out = []
            for start in range(0, len(label_rows), CHUNK):
                onehot = (label_rows[start:start + CHUNK, :, None] == np.arange(k)).astype(float)  # draws×cells×methods
                summed = np.einsum("dcm,cs->dms", onehot, stats)
                out.append(score(summed.reshape(-1, stats.shape[1])).reshape(summed.shape[:2]))
            return np.concatenate(out)

        seen = pooled(observed[None])[0]
        scores[metric] = {m: float(seen[i]) for i, m in enumerate(methods)}
        drawn = pooled(labels)
        differences[metric] = {m: _p(seen[i] - seen[0], drawn[:, i] - drawn[:, 0], exact)
                               for i, m in enumerate(methods[1:], 1)}
    return Outcome(scores, differences, len(chosen), exact)


def _p(delta: float, null: np.ndarray, exact: bool) -> tuple[float, float | None, float | None]:
    """(the observed difference, its p, the smallest p these draws can give at all — 0 where every draw ties) from the
    differences under the draws. A draw that leaves a method without a cell (cells missing) has no difference: counted
    as extreme."""
    if math.isnan(delta):
        return math.nan, None, None
    gaps = np.where(np.isnan(null), np.inf, np.abs(null))
    tie = 1e-9 * max(1.0, abs(delta))  # (the same difference summed in another order)
    extreme = int(np.sum(gaps >= abs(delta) - tie))
    if not exact:
        return float(delta), (1 + extreme) / (len(gaps) + 1), (1 + int(np.sum(np.isinf(gaps)))) / (len(gaps) + 1)
    largest = gaps[np.isfinite(gaps)].max()  # (the observed draw is one of them: finite)
    if largest <= tie:  # every draw ties (the cells' values do not differ between the labels): p 1, nothing to resolve
        return float(delta), extreme / len(gaps), 0.0
    return float(delta), extreme / len(gaps), int(np.sum(gaps >= largest - tie)) / len(gaps)


def simulated(sessions: list[SessionRecord], methods: list[str], paths: list[str]) -> dict[str, dict[str, float]]:
    """{method: {effort metric: the simulated translator's pooled score}} over the simulated runs matched to the
    sessions' runs by data fingerprint."""
    if not paths:
        return {}
    owner = {run.fingerprint: method for s in sessions for method, run in s.runs.items()}
    pooled: dict[str, dict[str, np.ndarray]] = {}
    for path in paths:
        found = discover([path])
        for run in found.runs:
            method = owner.get(run.fingerprint)
            if method is None:
                raise UserError(f"{run.dir}: on none of the sessions' validated documents (its data fingerprint "
                                f"{run.fingerprint}); simulate on a session's <method>/references.tsv")
            for metric in RATES:  # (a simulation's seconds are its searches', not a translator's)
                total = sig.Steps.of(run).statistics(metric).sum(axis=0)
                pooled.setdefault(method, {})[metric] = pooled.get(method, {}).get(metric, 0) + total
    return {m: {metric: float(sig.scorer(metric)(t)) for metric, t in by.items()} for m, by in pooled.items()}


def text(sessions: list[SessionRecord], methods: list[str], metrics: list[str], result: Outcome,
         simulated_effort: dict) -> str:
    docs = len(sessions[0].assignment)
    test_said = (f"exact over all {result.draws:,} draws of the block orders" if result.exact else
                 f"{result.draws:,} random draws of the block orders")
    lines = [f"**study · {len(sessions)} translators ({', '.join(str(s.translator) for s in sessions)}) · {docs} "
             f"documents · methods {', '.join(methods)}**", "", *data(sessions, methods), "",
             "| method | " + " | ".join(metrics) + " |", "|:--|" + "--:|" * len(metrics)]
    for m in methods:
        scores = [result.scores[metric][m] for metric in metrics]
        lines.append(f"| {m} | " + " | ".join("–" if math.isnan(v) else f"{v:.2f}" for v in scores) + " |")
    for m in methods[1:]:
        lines.append(f"| {m} − {methods[0]} | "
                     + " | ".join(verdict(*result.differences[metric][m]) for metric in metrics) + " |")
    lines += ["", "_Pooled over the cells of each method; a difference: the later method's score minus "
                  f"{methods[0]}'s, with the p of the design's randomisation test, {test_said}, and the smallest "
                  "possible p: p had the observed difference been the largest of the draws' (with two methods at best "
                  f"2/draws, as a draw and its mirror tie); † p < {ALPHA}; cannot tell: that smallest p is not below "
                  f"{ALPHA} (too few documents, or cells missing), so this study cannot show a difference in this "
                  "measure whatever the translators did._"]
    if any(run.summary.get("metrics_scope") == "corpus" for s in sessions for run in s.runs.values()) and \
            any(m.split(".")[-1] in ("R0", "R1", "R0+1") for m in metrics):
        lines.append("_R0, R1 and R0+1 are counted across each run's documents (metrics scope corpus, reset=never): "
                     "a cell's counts depend on the run's other documents, so their p values are approximate._")
    scopes = {run.summary.get("metrics_scope") for s in sessions for run in s.runs.values()}
    lines += ["", "What each measure is:", *(f"- {metric}: {meaning(metric, scopes)}" for metric in metrics)]
    if simulated_effort:
        lines += ["", "| method | " + " | ".join(f"{e} measured | {e} simulated" for e in RATES) + " |",
                  "|:--|" + "--:|" * (2 * len(RATES))]
        for m in methods:
            cells = []
            for e in RATES:
                measured = result.scores.get(e, {}).get(m, math.nan)
                sim = simulated_effort.get(m, {}).get(e, math.nan)
                cells += ["–" if math.isnan(v) else f"{v:.2f}" for v in (measured, sim)]
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        lines += ["", "_Simulated: the runs given with --simulated, on the same documents and validated texts._"]
    return "\n".join(lines)


def verdict(delta: float, p: float | None, floor: float | None) -> str:
    """A difference as the table says it: the observed p always, the smallest p possible beside it (module
    docstring)."""
    if p is None:
        return "–"
    said = f"{delta:+.2f}, p {p:.3f}"
    if not floor:  # every draw gives the same difference: nothing for any p to resolve
        return said + " (every draw gives this difference)"
    said += f" (smallest possible {floor:.3f})"
    return said + (": cannot tell" if floor >= ALPHA else " †" if p < ALPHA else "")


def data(sessions: list[SessionRecord], methods: list[str]) -> list[str]:
    """What the test rests on: a table of each method's cells, documents and segments with data, by translator, and
    lines naming the sessions finished early and each translator's documents without data or partial."""
    cells = coverage(sessions)
    translators = [s.translator for s in sessions]
    lines = ["| method | cells | documents | segments | " + " | ".join(f"translator {t}" for t in translators) + " |",
             "|:--|" + "--:|" * (3 + len(translators))]
    for m in methods:
        mine = {key: c for key, c in cells.items() if c.method == m}
        full = {key: c for key, c in mine.items() if c.validated}
        row = [f"{len(full)} of {len(mine)}", f"{len({d for _, d in full})} of {len({d for _, d in mine})}",
               str(sum(c.validated for c in full.values()))]
        for t in translators:
            have = [c for (u, _), c in full.items() if u == t]
            partial = sum(c.partial for c in have)
            row.append(f"{len(have)} of {_n(sum(u == t for u, _ in mine), 'document')}"
                       + (f" ({partial} partial)" if partial else "")
                       + f", {_n(sum(c.validated for c in have), 'segment')}")
        lines.append(f"| {m} | " + " | ".join(row) + " |")
    lines += ["", "_A cell: a translator's document under a method; with data: a segment of it validated in a finished "
                  "run (a partial cell counts, with what was validated); partial: fewer segments validated than the "
                  "document has._", ""]
    for s in sessions:
        said = []
        if s.ended_early:
            said.append(f"{s.ended_early.get('validated')} of {_n(s.ended_early.get('segments'), 'segment')} "
                        "validated")
        for m in methods:
            summary = s.summaries.get(m)
            if summary is None:
                said.append(f"{m}: no run (no {m}/summary.json), left out")
            elif m not in s.runs:
                said.append(f"{m}: no finished run (status {summary.get('status')}), left out")
            elif isinstance(early := summary.get("ended_early"), dict):
                said.append(f"{m}: {early.get('validated')} of its {_n(early.get('assigned'), 'segment')}")
        if said:
            lines.append(f"- Translator {s.translator} ({s.dir})" + (" finished early: " if s.ended_early else ": ")
                         + "; ".join(said) + ".")
    missing = False
    for t in translators:
        none = [f"{d} ({c.method})" for (u, d), c in cells.items() if u == t and not c.validated]
        partial = [f"{d} ({c.method}, {c.validated} of {_n(c.length, 'segment')})" for (u, d), c in cells.items()
                   if u == t and c.partial]
        unknown = [f"{d} ({c.method}, {_n(c.validated, 'segment')})" for (u, d), c in cells.items()
                   if u == t and c.validated and c.length is None and c.last]
        said = ([f"no data for {', '.join(none)}"] if none else []) + \
               ([f"partial: {', '.join(partial)}"] if partial else []) + \
               ([f"perhaps partial (its length recorded nowhere readable): {', '.join(unknown)}"] if unknown else [])
        if said:
            lines.append(f"- Translator {t}: " + "; ".join(said) + ".")
            missing = True
    if missing:
        lines += ["", "_Which cells are missing or partial may depend on the method (a session finished early): the "
                     "p values take the cells with data as given, and are approximate._"]
    return lines if lines[-1] else lines[:-1]


def _n(count, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


MEANINGS = {
    SECONDS_PER_WORD: "seconds per word: the translator's time on each segment (paused time left out) over the words "
                      "of the validated text, Σ seconds / Σ words; lower is better",
    "KSMR": "keystroke and mouse-action ratio: (keystrokes + mouse actions) / characters of the validated text, in "
            "percent; lower is better",
    "KSR": "keystroke ratio: keystrokes / characters of the validated text, in percent; lower is better",
    "WSR": "word-stroke ratio: words begun by typing / words of the validated text, in percent; lower is better",
    "MAR": "mouse-action ratio: mouse actions (clicks in the text and on the page's buttons) / words of the validated "
           "text, in percent; lower is better",
    "BLEU": "sacrebleu's corpus BLEU of the system's translations against the validated texts; higher is better",
    "SBLEU": "the mean sentence BLEU+1 of the system's translations against the validated texts; higher is better",
    "TER": "sacrebleu's translation edit rate of the system's translations against the validated texts; lower is "
           "better",
    "chrF": "sacrebleu's character n-gram F-score of the system's translations against the validated texts; higher "
            "is better",
}
VARIANTS = {"novel": "on words absent from the training vocabulary", "subword": "on sentencepiece pieces, all of them"}


def meaning(metric: str, scopes: set) -> str:
    """What `metric` measures and which way is better, in one line (adaptsim.metrics' definitions); `scopes`: the
    runs' metrics_scope, where R0, R1, … count a word's occurrences."""
    prefix, _, base = metric.rpartition(".")
    if prefix in VARIANTS:
        return f"{meaning(base, scopes).removesuffix('; higher is better')}, {VARIANTS[prefix]}; higher is better"
    if metric in MEANINGS:
        return MEANINGS[metric]
    where = {frozenset({"document"}): "the document", frozenset({"corpus"}): "the run's stream of documents"}.get(
        frozenset(scopes), "its counting scope (metrics_scope)")
    if re.fullmatch(r"R\d+", metric):
        k = int(metric[1:])
        nth = {0: "zero-shot recall: of", 1: "one-shot recall: of"}.get(k, "of")
        time = {0: "first", 1: "second"}.get(k, f"{k + 1}th")
        what = f"{nth} the content words a validated text holds for the {time} time in {where}" + (
            " (the method has adapted on the first)" if k == 1 else "")
        return f"{what}, the share the system's translation already held, in percent; higher is better"
    if re.fullmatch(r"R0(\+\d+)+", metric):
        return f"{' and '.join('R' + k for k in metric[1:].split('+'))} together (their counts summed), in percent; " \
               "higher is better"
    return "as steps.jsonl records it (docs/design.md §4)"


def attainable_alpha(methods: int, blocks: int) -> float:
    """The largest p below ALPHA that the design's test can give for two of `methods` methods over `blocks` blocks (0:
    none): each block places the two in one of k(k−1) ways, all equally likely, and the observed placement and its
    mirror give the same |difference|, so p is a multiple of 2/(k(k−1))^blocks (computed exactly; as a float it
    rounds to ALPHA itself once the multiples are finer than a float can tell)."""
    step = Fraction(2, (methods * (methods - 1)) ** blocks)
    return float(step * (math.ceil(Fraction(str(ALPHA)) / step) - 1))  # exact: "below" holds at any size


def detectable(methods: int, translators: int, blocks: int) -> float | None:
    """The smallest true difference between two methods, in σ of one cell's score, found with POWER (module
    docstring); None where the design cannot give p < ALPHA at all."""
    alpha = attainable_alpha(methods, blocks)
    if alpha <= 0:
        return None
    sigma = math.sqrt(2 / translators)
    low, high = 0.0, 100.0
    while high - low > 1e-4:
        mid = (low + high) / 2
        low, high = (low, mid) if t_power(mid, sigma, blocks, alpha) >= POWER else (mid, high)
    return high


def plan(methods: int) -> str:
    lines = [f"**a study of {methods} methods: the smallest difference found with {POWER:.0%} power at α = {ALPHA}, "
             "in σ of one cell**", "",
             "| translators | " + " | ".join(f"{b * methods} documents" for b in PLAN_BLOCKS) + " |",
             "|--:|" + "--:|" * len(PLAN_BLOCKS)]
    for t in PLAN_TRANSLATORS:
        cells = [detectable(methods, t, b) for b in PLAN_BLOCKS]
        lines.append(f"| {t} | " + " | ".join("cannot tell" if c is None else f"{c:.2f} σ" for c in cells) + " |")
    lines += ["", f"_σ: the standard deviation of one cell's score (a translator's document under a method) once the "
                  "design has removed each translator's and each document's level; a pilot's cells estimate it. A t "
                  f"test over the blocks of {methods} documents, each block's difference averaged over the "
                  f"translators (σ·√(2/T)), at the largest level below {ALPHA} the design's p can take (a multiple of "
                  f"2/(k(k−1))^blocks); cannot tell: it can take none. Translators: a multiple of {methods} balances "
                  "the Latin square._"]
    return "\n".join(lines)
