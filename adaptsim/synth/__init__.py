"""Synthetic controlled English→German parallel text (general and software domains).

The project may not ship text copied from elsewhere, so the demo's training data and documents are
generated here: a template grammar in code over a lexicon in data/lexicon/. See Generator.
"""

from .generator import Generator, SynthDocument
from .lexicon import Lexicon

__all__ = ["Generator", "Lexicon", "SynthDocument"]
