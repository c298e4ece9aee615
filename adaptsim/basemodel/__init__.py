"""Base-model tooling, apart from the simulator: what makes the model a run adapts, not what adapts it.

- `scratch_model`: a sentencepiece vocabulary written as Marian tokenizer files, and a randomly initialised
  Marian model from an architecture dict (configs/model/*.yaml `arch:`/`vocab:`).
- `trainer`: the trainer (`adaptsim train`): batching, the loop, validation, checkpoints, exact resume.
- `convert`: a fairseq `transformer` checkpoint as a model directory (`adaptsim convert fairseq`).

The commands (adaptsim/commands/train.py, convert.py) only read their arguments and call these.
"""
