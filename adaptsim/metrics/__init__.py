"""Immediate-adaptation metrics (R0, R1, R0+1, Rk), sacrebleu corpus metrics and the others a run or a report
computes (docs/design.md §4), one module a metric: `recall` (occurrence counting), `words` (content words), `sacre`,
`novel`, `effort` (the simulated translator's), `cxmi`, `roles` (a word's role in the stream), `litter`, `terms`,
`forgetting` (a general-domain probe along the stream);
`evaluator` scores a run with them (`Evaluator`) and `curves` writes its learning curves. Reports render what these
compute (adaptsim/report/); nothing here imports a report.

Key names, shared by steps.jsonl, summary.json and curves.csv:

- Recall metrics: "R0", "R1", … "R{k_max}" and the unions "R0+1", "R0+1+2", … up to k_max.
  Variants carry a prefix: "novel.R0" (only words absent from the training vocabulary, paper
  Table 3; needs `novel_vocab`) and "subword.R0" (sentencepiece pieces, all tokens, Table 4:
  "the raw subword output"; needs `subword_tokenize` for the references, and scores the pieces the
  model generated where they are given — `run` gives them — else the hypothesis re-encoded, which can
  differ: 13 of 40 TED hypotheses of small-ende-probe re-encode to other pieces).
- sacrebleu: "BLEU", "SBLEU" (mean sentence BLEU+1), "TER", "chrF" — all by default; the
  `sacrebleu` setting can leave some out (sacrebleu's TER and chrF are slow on big corpora).
- Per segment (steps.jsonl): "M_num", "M_den" and "M" for every recall metric M, "SBLEU", "TER", "stats"
  (sacrebleu's sufficient statistics) and, with a simulated translator, "effort", "KSMR", "KSR", "WSR", "MAR"
  (adaptsim.metrics.evaluator says what each holds).
"""

from adaptsim.metrics.curves import write_curves
from adaptsim.metrics.evaluator import SCOPES, Evaluator, resolve_scope

__all__ = ["Evaluator", "write_curves", "SCOPES", "resolve_scope"]
