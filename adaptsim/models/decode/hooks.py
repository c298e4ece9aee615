"""The one place adaptsim reads torch's private hook registries (`nn.Module._forward_hooks` and friends).

The lean search calls a model's modules itself (adaptsim/models/decode/marian.py) and must know which hooks they
carry: whether a module's own forward hooks can be applied to its rows after a shared call, or whether it must
be called on its own. torch has no public API for listing hooks; these attributes were checked against the
pinned torch 2.13.0 (pyproject.toml), as the lean search's arithmetic was against transformers 5.23.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn


def has_forward_hooks(module: nn.Module) -> bool:
    """Any forward or forward-pre hook on the module itself."""
    return bool(module._forward_hooks or module._forward_pre_hooks)


def needs_own_call(module: nn.Module) -> bool:
    """Hooks that cannot be applied to a slice of a shared call's output: pre hooks, hooks that take keyword
    arguments, hooks that run even when the forward raises."""
    return bool(module._forward_pre_hooks or module._forward_hooks_with_kwargs
                or module._forward_hooks_always_called)


def forward_hooks(module: nn.Module) -> list[Callable]:
    """The module's plain forward hooks, in registration order (hook(module, inputs, output) → output | None)."""
    return list(module._forward_hooks.values())
