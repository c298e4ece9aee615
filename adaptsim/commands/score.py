"""`adaptsim score`: score existing system outputs without running a simulation.

Plain text, one segment per line: hypotheses, references and optionally doc ids, all parallel.
Prints corpus R0, R1, R0+1 (with counts), BLEU, SBLEU, TER and chrF, or one JSON object.

The defaults are those of `run` (configs/metrics/default.yaml), except two that `run` takes from elsewhere:
the language (from the model there; `de` here) and the counting scope (from `reset` there; one stream per
`--docs` document here).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from omegaconf import OmegaConf

from adaptsim import config_defaults
from adaptsim.data.textio import read_lines
from adaptsim.errors import DataError
from adaptsim.metrics import SCOPES, Evaluator, write_curves
from adaptsim.metrics.sacre import METRICS, TOKENIZERS, check_tokenize
from adaptsim.metrics.words import CASES


def parser() -> argparse.ArgumentParser:
    run = OmegaConf.create(config_defaults("metrics/default.yaml"))  # the one home of the metric defaults
    p = argparse.ArgumentParser(prog="adaptsim score", description=__doc__.split("\n\n")[0])
    p.add_argument("--hyp", required=True, help="hypotheses, one detokenised segment per line")
    p.add_argument("--ref", required=True, help="references (post-edits), parallel to --hyp")
    p.add_argument("--docs", help="doc ids, one per line, parallel to --hyp (default: one document)")
    p.add_argument("--lang", default="de", help="target language (default: de)")
    p.add_argument("--stopwords", help="stopword file, one word per line (default: stopwords-iso list of --lang)")
    p.add_argument("--case", choices=CASES, default=run.case, help=f"casing before comparison (default: {run.case})")
    p.add_argument("--truecase-text", help="text to train the truecaser on (default: the references)")
    p.add_argument("--k", type=int, default=run.k_max, dest="k_max",
                   help=f"report R0…Rk and unions up to k (default: {run.k_max})")
    p.add_argument("--scope", choices=SCOPES, default="document",
                   help="where occurrence counting restarts (default: document; one document without --docs)")
    p.add_argument("--novel-vocab", help="training vocabulary or text: also score novel words only")
    p.add_argument("--spm", help="sentencepiece model: also score on subword pieces")
    p.add_argument("--sacrebleu", type=_names, default=list(run.sacrebleu), metavar="NAMES",
                   help=f"comma-separated sacrebleu metrics to compute (default: {','.join(run.sacrebleu)}; "
                        "TER is slow)")
    p.add_argument("--tokenize", default=run.tokenize, metavar="NAME",
                   help=f"BLEU/SBLEU tokeniser (default: {run.tokenize}: sacrebleu's for --lang, zh → zh, ja → "
                        f"ja-mecab, ko → ko-mecab, else 13a; TER's Asian options for zh/ja/ko); or "
                        f"{' | '.join(TOKENIZERS)}")
    p.add_argument("--curves", help="also write learning curves (cumulative scores per segment) to this CSV")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = set(names) - set(METRICS)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown metric(s) {', '.join(sorted(unknown))}; "
                                         f"choose from {', '.join(METRICS)}")
    return names


def _parallel(path: str, n: int, what: str) -> list[str]:
    lines = read_lines(path)
    if len(lines) != n:
        raise DataError(path, f"{len(lines)} lines, but {what} has {n}")
    return lines


def _spm_pieces(path: str):
    if not Path(path).is_file():
        raise DataError(path, "no such sentencepiece model")
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
    return lambda text: sp.encode(text, out_type=str)


def format_text(result: dict) -> str:
    scores, counts = result["scores"], result["counts"]
    width = max(map(len, scores))
    lines = [f"{'segments':<{width}}  {result['segments']}"]
    for key, value in scores.items():
        shown = "   n/a" if value is None else f"{value:6.2f}"
        if key in counts:
            shown += f"  ({counts[key]['num']}/{counts[key]['den']})"
        lines.append(f"{key:<{width}}  {shown}")
    lines += ["signatures:"] + [f"  {name}: {sig}" for name, sig in result["signatures"].items()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_tokenize(args.lang, args.tokenize, key="--tokenize", metrics=args.sacrebleu)  # before reading: one line
    refs = read_lines(args.ref)
    hyps = _parallel(args.hyp, len(refs), f"--ref {args.ref}")
    docs = _parallel(args.docs, len(refs), f"--ref {args.ref}") if args.docs else None
    evaluator = Evaluator(
        refs, docs, lang=args.lang, case=args.case, stopwords=args.stopwords, k_max=args.k_max, scope=args.scope,
        truecase_text=read_lines(args.truecase_text) if args.truecase_text else None,
        novel_vocab=args.novel_vocab, subword_tokenize=_spm_pieces(args.spm) if args.spm else None,
        sacrebleu=args.sacrebleu, tokenize=args.tokenize)
    result = evaluator.corpus(hyps)
    if args.curves:
        write_curves(evaluator.curves(hyps), args.curves)
    print(json.dumps(result, ensure_ascii=False) if args.json else format_text(result))
    return 0
