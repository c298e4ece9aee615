"""The translator's effort in interactive-predictive translation (`metrics.interactive`, adaptsim/interactive.py):
per segment the counts the simulated user spends, over a corpus the rates of the IMT literature (Barrachina et
al. 2009; Knowles & Koehn 2016; Peris & Casacuberta 2019, NMT-Keras' simulation scripts), in percent, lower is
better:

- KSMR = (keystrokes + mouse actions) / reference characters;
- KSR = keystrokes / reference characters;
- WSR = word strokes / reference words;
- MAR = mouse actions / reference words.

Corpus rates are ratios of sums (as NMT-Keras accumulates them), so a long segment weighs by its length; the
reports resample the per-segment counts (adaptsim/report/significance.py). Reference characters are those of the
reference with its whitespace collapsed, spaces included (a space is typed too); words are its whitespace words.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

RATES = {"KSMR": (("KS", "MA"), "chars"), "KSR": (("KS",), "chars"), "WSR": (("WS",), "words"),
         "MAR": (("MA",), "words")}  # rate: (the counts it sums, what it divides by)


@dataclass
class Effort:
    """What the simulated user spent on one segment, and what it cost the system."""
    KS: int = 0               # keystrokes
    WS: int = 0               # word strokes (word level: words typed; character level: words typed into)
    MA: int = 0               # mouse actions (cursor moves, and the final validation)
    chars: int = 0            # reference characters
    words: int = 0            # reference words
    decoder_calls: int = 0    # prefix-constrained searches after corrections (the first translation not counted)
    capped: bool = False      # the correction cap was reached: the user typed the rest
    level: str = ""           # word | char (metrics.interactive)
    seconds: float = 0.0      # the simulation's time (its searches included)

    def record(self) -> dict:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 6)
        return out

    @classmethod
    def of_record(cls, record: dict) -> Effort:
        return cls(**record)


def numerators(effort: Effort) -> dict[str, tuple[int, int]]:
    """Each rate's (numerator, denominator) for one segment."""
    return {rate: (sum(getattr(effort, c) for c in counts), getattr(effort, den))
            for rate, (counts, den) in RATES.items()}

