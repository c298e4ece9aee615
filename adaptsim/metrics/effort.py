"""The translator's effort in interactive-predictive translation (`metrics.interactive`, adaptsim/loop/interactive.py):
per segment the counts the simulated user spends, over a corpus the rates of the IMT literature (Barrachina et
al. 2009; Knowles & Koehn 2016; Peris & Casacuberta 2019, NMT-Keras' simulation scripts), in percent, lower is
better:

- KSMR = (keystrokes + mouse actions) / reference characters;
- KSR = keystrokes / reference characters;
- WSR = word strokes / reference words;
- MAR = mouse actions / reference words.

Corpus rates are ratios of sums (as NMT-Keras accumulates them), so a long segment weighs by its length; the
reports resample the per-segment counts (adaptsim/report/significance.py). Reference characters are those of the
reference with its whitespace collapsed, spaces included (NMT-Keras' `len(u' '.join(hypothesis))`); words are its
whitespace words, or in a language written without spaces its segmenter's words with a letter or digit
(adaptsim/metrics/segmenters.py; only the character level is simulated there). Which counting filled the counts
(`metrics.interactive_costs`) is recorded with each segment's counts and in summary.json cost.interactive: resumes
and reports refuse to mix countings, and tables name theirs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

RATES = {"KSMR": (("KS", "MA"), "chars"), "KSR": (("KS",), "chars"), "WSR": (("WS",), "words"),
         "MAR": (("MA",), "words")}  # rate: (the counts it sums, what it divides by)
SECONDS_PER_WORD = "s/word"  # Σ seconds / Σ words: a translator's time per word of the validated text (adaptsim study)


@dataclass
class Effort:
    """What the simulated user spent on one segment, and what it cost the system."""
    KS: int = 0               # keystrokes
    WS: int = 0               # word strokes (word level: words typed and the cut; character level: the keystrokes
                              # (nmt-keras) or the words typed into (adaptsim))
    MA: int = 0               # mouse actions (pointer moves as the counting charges them, and the final validation)
    chars: int = 0            # reference characters
    words: int = 0            # reference words
    decoder_calls: int = 0    # prefix-constrained searches after corrections (the first translation not counted)
    capped: bool = False      # the correction cap was reached: the user typed the rest
    level: str = ""           # word | char (metrics.interactive)
    costs: str = ""           # how the counts were counted: nmt-keras | adaptsim (metrics.interactive_costs)
    seconds: float = 0.0      # the simulation's time (its searches included)

    def record(self) -> dict:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 6)
        return out

    @classmethod
    def of_record(cls, record: dict) -> Effort:
        return cls(**{"costs": LEGACY_COSTS, **record})


LEGACY_COSTS = "adaptsim"  # the counting of records that do not name theirs (metrics.interactive_costs)


def counting(summary: dict) -> dict | None:
    """How a run's simulated translator was counted (summary.json cost.interactive; None without one): what makes
    two runs' effort comparable, and what a table says it shows."""
    cost = (summary.get("cost") or {}).get("interactive")
    if not cost:
        return None
    return {"level": cost["mode"], "costs": cost.get("costs", LEGACY_COSTS), "max_corrections": cost["max_corrections"]}


def note(summary: dict, metrics: list[str]) -> str | None:
    """What a report shows of the effort (`metrics`) of runs counted as the run of `summary` was: its counting in
    words, None if it shows none."""
    return describe(counting(summary)) if any(m.split(".")[-1] in RATES for m in metrics) else None


def describe(how: dict | None) -> str:
    """A counting as a report's note says it."""
    if how is None:
        return "no simulated translator"
    # adaptsim serve: what a translator spent, measured in the page (adaptsim/serve/human.py)
    if how["costs"] == "human":
        return "effort of a translator, measured in the page (adaptsim serve): keystrokes, mouse actions, words begun"
    counted = "as NMT-Keras counts" if how["costs"] == "nmt-keras" else "with adaptsim's cursor-based mouse actions"
    level = {"word": "word", "char": "character"}[how["level"]]
    return (f"effort at the {level} level, {counted} (metrics.interactive_costs={how['costs']}), at most "
            f"{how['max_corrections']} corrections per segment")


def numerators(effort: Effort) -> dict[str, tuple[int, int]]:
    """Each rate's (numerator, denominator) for one segment."""
    return {rate: (sum(getattr(effort, c) for c in counts), getattr(effort, den))
            for rate, (counts, den) in RATES.items()}


def seconds_per_word(effort: Effort) -> tuple[float, int]:
    """`SECONDS_PER_WORD`'s (numerator, denominator) for one segment."""
    return effort.seconds, effort.words

