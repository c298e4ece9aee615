"""Forgetting (`metrics.probe`): what adapting on the stream does to the model's translations of a general-domain
probe set, scored with θ_i along the stream.

The paper measures only the stream itself. Continual-learning MT work reports the other side of the trade-off as a
matter of course: how much of the base model's general competence an adapted model keeps. A run with a probe
translates the probe set with θ0 (before segment 1), with θ_i before every `every`-th segment i, and with the
final θ (after the last segment), and records corpus BLEU and chrF of those translations (sacrebleu's defaults, as
the run's own scores; into zh, ja or ko, BLEU tokenised as the stream's, by `metrics.tokenize` and the target
language, adaptsim/metrics/sacre.py, and named in summary.json's `probe`) and the token-weighted mean
cross-entropy of the probe's references (nats/token, teacher forced, no update): BLEU is what readers compare, the
cross-entropy is smooth where BLEU on a few hundred segments moves by chance. The probe uses the run's `decode`
settings. Choices the literature leaves open:
- the probe is read before a method's moment of adaptation (tm's): θ_i is the model the stream has left, not one
  fine-tuned for a segment;
- under reset=document θ_i is the current document's (a probe at a document's first segment sees θ0 again);
- a probe's record goes into the step line of the segment it precedes (`probe`), so a resumed run keeps the
  interrupted run's probes and computes only the later ones; the final one is taken when the run finishes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from adaptsim.data.lengths import check_lengths
from adaptsim.data.textio import read_lines
from adaptsim.data.types import Document, Segment
from adaptsim.errors import UserError
from adaptsim.metrics.sacre import AUTO, DEFAULT_TOKENIZE, SacreMetrics, choose_tokenize


@dataclass
class Probe:
    name: str
    sources: list[str]
    references: list[str]
    every: int
    skipped: int = 0  # lines longer than the model accepts, left out under dataset.on_too_long=skip (`fit`)
    lang: str | None = None  # the target language and `metrics.tokenize`: BLEU's tokeniser (sacre.choose_tokenize)
    tokenize: str | None = AUTO

    @classmethod
    def from_config(cls, probe_cfg, source_lang: str, target_lang: str, tokenize: str | None = AUTO) -> Probe | None:
        """The probe `metrics.probe` asks for, or None when its path is null."""
        if not probe_cfg or not probe_cfg.get("path"):
            return None
        files = [f"{probe_cfg.path}.{lang}" for lang in (source_lang, target_lang)]
        try:
            sources, references = (read_lines(f)[:int(probe_cfg.segments)] for f in files)
        except UserError as e:  # the reader's one line (file not found, not UTF-8, …), with the setting that named it
            raise UserError(f"metrics.probe.path={probe_cfg.path}: {e} (the path is a prefix: PATH.{source_lang} and "
                            f"PATH.{target_lang})") from None
        if len(sources) != len(references) or not sources:
            raise UserError(f"metrics.probe.path={probe_cfg.path}: {files[0]} has {len(sources)} lines and "
                            f"{files[1]} {len(references)} (of the first {probe_cfg.segments}); they must pair up")
        return cls(str(probe_cfg.path), sources, references, int(probe_cfg.every), lang=target_lang,
                   tokenize=tokenize)

    def fit(self, over_length, dataset_cfg, source_lang: str, target_lang: str) -> None:
        """Keep the probe's pairs the model accepts by the stream's own rule (adaptsim/data/lengths.py, under
        `dataset.on_too_long`): a longer line is a one-line error naming it, or skipped and counted (`skipped` in the
        summary's probe)."""
        segments = [Segment("probe", str(i), src, ref, origin=f"{self.name}.{source_lang}:{i}",
                            ref_origin=f"{self.name}.{target_lang}:{i}")
                    for i, (src, ref) in enumerate(zip(self.sources, self.references), 1)]
        kept, skipped = check_lengths([Document("probe", segments)], dataset_cfg, over_length)
        if not kept:
            raise UserError(f"metrics.probe.path={self.name}: every line is longer than the model accepts")
        self.skipped = skipped["too_long"]
        self.sources = [seg.source for seg in kept[0].segments]
        self.references = [seg.reference for seg in kept[0].segments]

    def due(self, index: int) -> bool:
        """Whether θ is probed before the segment at `index` (0-based) of the stream."""
        return index % self.every == 0

    def score(self, model, decode) -> dict:
        """BLEU, chrF and the references' cross-entropy of the probe set under `model` as it is now."""
        hyps = [model.translate(src, **decode).text for src in self.sources]
        sacre = SacreMetrics(["BLEU", "chrF"], lang=self.lang, tokenize=self.tokenize)
        scores = sacre.corpus(sacre.stats(hyps, self.references))
        nll = tokens = 0.0
        with torch.no_grad():
            for src, ref in zip(self.sources, self.references):
                batch = model.pair(src, ref)
                values = model.token_nll(batch)
                nll += float(values.sum())
                tokens += values.numel()
        return {"BLEU": scores["BLEU"], "chrF": scores["chrF"], "nll": nll / tokens}

    def info(self) -> dict:
        """What summary.json says about the probe beside its points."""
        tokenize = choose_tokenize(self.lang, self.tokenize)  # named where not 13a (a German run's summary as before)
        return {"path": self.name, "segments": len(self.sources), "every": self.every,
                **({"skipped": self.skipped} if self.skipped else {}),
                **({"tokenize": tokenize} if tokenize != DEFAULT_TOKENIZE else {})}
