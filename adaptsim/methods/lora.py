"""`lora`: low-rank adapters on chosen linear maps (not in the paper; Hu et al. 2022, "LoRA: Low-rank
adaptation of large language models").

Each chosen linear map y = Wx (+ b) of the network becomes y = Wx (+ b) + (α/r)·B·A·x with A ∈ R^{r×in},
B ∈ R^{out×r}; W stays frozen and only the adapters are trained, with the paper's update rule (SGD on the
pair, each tensor — every A and every B — clipped to norm 1.0 on its own, ≤ 3 steps until perplexity ≤ 2).
B starts at zero, so B·A·x is exactly 0 and the adapted model starts as θ0 (bit for bit: the hook adds
zeros); A starts as Hu et al. and peft initialise it (Kaiming-uniform, a = √5, the default of nn.Linear),
from the run's seed. The loop's θ0 snapshot holds A's initial values and B = 0, so every document starts again
from them (`reset`), like the other methods. The stored state of a document is its adapters' offsets (B, and A
from the second step on; at the first step A gets no gradient because B = 0).

Own code, not peft. peft (0.21) would inject the same computation but (a) it replaces the chosen nn.Linear
modules with its own wrapper classes and wraps the model in a PeftModel, which renames every parameter
(`base_model.model.…`) and moves the modules adaptsim's architecture descriptions point at (adaptsim/models/arch.py:
layers, the output layer where `bias`/`lasso`/`memory` hook in, the tensor names `fixed` lists and θ0
snapshots use); (b) it is not installed and would add a dependency, tied to transformers versions, for about
twenty lines of arithmetic. Here the adapters are forward hooks on the unchanged modules: names, modules and
every other method stay as they are, and the hooks are the whole implementation. What peft adds beyond this
(merging adapters into W, adapter dropout, many adapter types) the loop does not use: the model is in eval()
mode (no dropout, as the paper adapts), and merging would change θ0.

Choices the sources leave open for this setting (all settings, configs/method/lora.yaml):

- `modules`: shell patterns over the names of the network's linear maps (nn.Linear, and transformers' Conv1D, GPT-2's
  linear map with its weight stored in × out); each must match at least one. Default `auto`: the architecture's
  attention and feed-forward maps (adaptsim/models/arch.py `Architecture.adapted_maps`: q, k, v, output of self- and
  cross-attention and the feed-forward maps of every layer, by each architecture's names: Marian's q_proj … fc2,
  T5's q … wo, GPT-2's c_attn … c_proj, Llama's q_proj … down_proj). Hu et al. adapt only W_q and W_v of a large
  language model; immediate adaptation asks for new target words, so the decoder's feed-forward and
  cross-attention maps are included too (Dettmers et al. 2023, QLoRA, report that adapting all linear layers
  matters more than the rank). The output projection (tied to the embeddings in OPUS-MT) is not adapted by
  default: `bias` covers it.
- `rank` r = 8 and `alpha` α = 16 (scale α/r = 2): common defaults of LoRA implementations; not tuned.
- the learning rate γ: see configs/method/lora.yaml for the value and how it was chosen.
"""

from __future__ import annotations

import math
from fnmatch import fnmatchcase

import torch
from torch import nn

from adaptsim.errors import UserError
from adaptsim.methods.base import Method
from adaptsim.rules import Integer, Number, Rule, Strings

PREFIX = "lora."  # adapter names: lora.<module>.A / .B (not parameters of the network)
AUTO = "auto"  # `modules`: the architecture's attention and feed-forward maps


class Modules(Rule):
    """`auto`, or a non-empty list of shell patterns."""

    def ok(self, value) -> bool:
        return value == AUTO or Strings().ok(value)

    def allowed(self) -> str:
        return f"must be {AUTO} or a non-empty list of module name patterns, e.g. ['*.q_proj', '*.v_proj']"


def linear_maps(net) -> dict[str, tuple[nn.Module, int, int]]:
    """The network's linear maps by name: (module, in features, out features). GPT-2's Conv1D computes x·W + b with W
    stored in × out, nn.Linear x·Wᵀ + b; an adapter only needs the two sizes."""
    from transformers.pytorch_utils import Conv1D

    maps = {}
    for name, module in net.named_modules():
        if isinstance(module, nn.Linear):
            maps[name] = (module, module.in_features, module.out_features)
        elif isinstance(module, Conv1D):
            maps[name] = (module, module.weight.shape[0], module.weight.shape[1])
    return maps


class LoRA(Method):
    settings = {**Method.settings, "modules": Modules(), "rank": Integer(1),
                "alpha": Number(above=0, why="the adapters' scale is alpha / rank")}

    def __init__(self, model, *, modules: list[str] | str, rank: int, alpha: float, **common):
        super().__init__(model, **common)
        auto = modules == AUTO
        patterns = list(model.arch.adapted_maps) if auto else [str(p) for p in modules]
        linear = linear_maps(model.net)
        unmatched = [p for p in patterns if not any(fnmatchcase(n, p) for n in linear)]
        if unmatched and not auto:
            raise UserError(f"method.modules={modules}: {unmatched} match(es) no linear module of the model "
                            f"(names look like {next(iter(linear), '?')!r})")
        self.rank, self.alpha, self.scale = rank, float(alpha), float(alpha) / rank
        self.modules = [n for n in linear if any(fnmatchcase(n, p) for p in patterns)]
        if not self.modules:
            raise UserError(f"method.modules={modules}: the {model.net.config.model_type} model has none of the "
                            f"maps {patterns}; name its linear modules (names look like {next(iter(linear), '?')!r})")
        self._params: dict[str, nn.Parameter] = {}
        for name in self.modules:
            layer, in_features, out_features = linear[name]
            # float32 whatever the weights' dtype: on bf16 weights (an LLM on a GPU) bf16 adapters round most of
            # an SGD step away (on the demo LM 45 % of the adapters' entries never changed); the hook casts around them
            a = torch.empty(rank, in_features, device=model.device, dtype=torch.float32)
            nn.init.kaiming_uniform_(a, a=math.sqrt(5))
            a = nn.Parameter(a)
            b = nn.Parameter(torch.zeros(out_features, rank, device=model.device, dtype=torch.float32))
            self._params[f"{PREFIX}{name}.A"], self._params[f"{PREFIX}{name}.B"] = a, b
            layer.register_forward_hook(self._hook(a, b))

    def _hook(self, a: nn.Parameter, b: nn.Parameter):
        scale = self.scale

        def add_adapter(_module, inputs, out):
            low_rank = nn.functional.linear(nn.functional.linear(inputs[0].to(a.dtype), a), b) * scale
            return out + low_rank.to(out.dtype)
        return add_adapter

    def parameters(self):
        return dict(self._params)

    def info(self):
        return {"modules": len(self.modules), "rank": self.rank, "alpha": self.alpha,
                "adapter_parameters": sum(p.numel() for p in self._params.values())}
