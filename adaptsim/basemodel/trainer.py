"""The base-model trainer (`adaptsim train`, adaptsim/commands/train.py): a Marian-architecture model trained from
scratch on parallel text.

A compact trainer in the spirit of JoeyNMT/nanoGPT: sentencepiece vocabulary, token-count batches of
length-sorted buckets, Adam with linear warm-up and inverse-square-root decay, label smoothing, dropout,
periodic validation (loss, and BLEU of greedy/beam output on the first valid sentences), best and last
checkpoints, exact resume (CPU and CUDA random states). Training stops at `max_steps`, `max_epochs`, `patience` or
`max_minutes` of wall clock (a time-boxed run on a lent machine), whichever comes first; `checkpoint_minutes` also
checkpoints on a timer, so a run killed from outside leaves a recent model. `train.tokenizer` reuses an existing
Marian tokenizer instead of training sentencepiece (to keep another model's exact vocabulary).

Output directory (`train.out`, by default the model config's `path`, which is where `run` loads from):

    OUT/                 the best checkpoint: config.json, model.safetensors, tokenizer files,
                         train_log.jsonl (one line per validation), training.json (summary)
    OUT/last/            the last checkpoint + trainer_state.pt (optimizer, scheduler, step, RNG states);
                         `train.resume=true` continues from it

Both load with `MarianMTModel.from_pretrained` / `MarianTokenizer.from_pretrained`.
"""

from __future__ import annotations

import json
import logging
import math
import random
import resource
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf
from tqdm.contrib.logging import logging_redirect_tqdm

from adaptsim import allocator
from adaptsim.basemodel.scratch_model import build_model, count_parameters, train_tokenizer, vocab_sizes
from adaptsim.errors import DataError, UserError
from adaptsim.launch import resume
from adaptsim.loop.settings import DTYPES, check_device
from adaptsim.loop.settings import SETTINGS as RUN_SETTINGS
from adaptsim.progress import progress
from adaptsim.records import follow_umask, job_fields
from adaptsim.rules import Choice, Integer, Number, Rule

log = logging.getLogger("adaptsim.train")

STATE = "trainer_state.pt"


# -- data -------------------------------------------------------------------------------------------
def read_parallel(source, target) -> list[tuple[str, str]]:
    """Pairs of non-empty lines from two parallel text files (empty pairs are dropped and counted)."""
    from adaptsim.data.textio import read_lines

    src, tgt = read_lines(source), read_lines(target)
    if len(src) != len(tgt):
        raise DataError(target, f"{len(tgt)} lines, but {source} has {len(src)}; parallel files must match")
    pairs = [(s.strip(), t.strip()) for s, t in zip(src, tgt)]
    kept = [p for p in pairs if p[0] and p[1]]
    if len(kept) < len(pairs):
        log.info("%s: dropped %d pairs with an empty side", source, len(pairs) - len(kept))
    return kept


def encode(tokenizer, texts: list[str], target: bool = False) -> list[list[int]]:
    """Token ids + </s>, exactly as `tokenizer(texts)` / `tokenizer(text_target=texts)` but fast (batched spm)."""
    sp = tokenizer.spm_target if target else tokenizer.spm_source
    vocab = tokenizer.target_encoder if target and tokenizer.separate_vocabs else tokenizer.encoder
    unk, eos = vocab[tokenizer.unk_token], tokenizer.eos_token_id
    return [[vocab.get(p, unk) for p in pieces] + [eos] for pieces in sp.encode(texts, out_type=str)]


def make_batches(src_lens: list[int], tgt_lens: list[int], batch_tokens: int, bucket_size: int,
                 rng: random.Random) -> list[list[int]]:
    """Shuffle, sort buckets of `bucket_size` examples by length, cut batches of ≤ batch_tokens (padded) tokens
    on either side, shuffle the batches."""
    order = list(range(len(src_lens)))
    rng.shuffle(order)
    bucket_size = bucket_size or len(order) or 1
    batches = []
    for start in range(0, len(order), bucket_size):
        bucket = sorted(order[start:start + bucket_size], key=lambda i: (tgt_lens[i], src_lens[i]))
        batch, longest = [], 0
        for i in bucket:
            n = max(src_lens[i], tgt_lens[i])
            if batch and max(longest, n) * (len(batch) + 1) > batch_tokens:
                batches.append(batch)
                batch, longest = [], 0
            batch.append(i)
            longest = max(longest, n)
        if batch:
            batches.append(batch)
    rng.shuffle(batches)
    return batches


def collate(src: list[list[int]], tgt: list[list[int]], pad: int, device) -> dict[str, torch.Tensor]:
    """Padded encoder input, decoder input (start token = pad, as in Marian) and labels (-100 = ignore)."""
    def pad_to(seqs, value, first=None):
        width = max(map(len, seqs)) + (first is not None)
        rows = [([first] if first is not None else []) + s for s in seqs]
        return torch.tensor([r + [value] * (width - len(r)) for r in rows], device=device)

    input_ids = pad_to(src, pad)
    labels = pad_to(tgt, -100)
    decoder_input_ids = pad_to([t[:-1] for t in tgt], pad, first=pad)
    return {"input_ids": input_ids, "attention_mask": input_ids.ne(pad).long(),
            "decoder_input_ids": decoder_input_ids, "labels": labels}


def batch_loss(model, batch: dict, label_smoothing: float) -> tuple[torch.Tensor, float, int]:
    """(label-smoothed loss summed over target tokens, summed NLL, number of target tokens)."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                   decoder_input_ids=batch["decoder_input_ids"]).logits
    labels = batch["labels"]
    mask = labels.ne(-100)
    lprobs = logits[mask].float().log_softmax(-1)
    nll = -lprobs.gather(1, labels[mask].unsqueeze(1)).squeeze(1)
    loss = (1 - label_smoothing) * nll - label_smoothing * lprobs.mean(-1)
    return loss.sum(), nll.sum().item(), int(mask.sum())


def inverse_sqrt(warmup: int, start: int = 0, rewarmup: int = 0):
    """LR factor: linear warm-up to 1 at step `warmup`, then sqrt(warmup / step). A training that goes on from another
    one's weights (`train.init_from`) counts the schedule from that training's `start` steps, reached after a linear
    re-warm-up of `rewarmup` steps (a fresh Adam's first steps are large)."""
    w, r = max(1, int(warmup)), max(1, int(rewarmup))
    return lambda step: min((start + step + 1) / w, math.sqrt(w / (start + step + 1))) * min(1.0, (step + 1) / r)


# -- validation -------------------------------------------------------------------------------------
@torch.no_grad()
def valid_scores(model, tokenizer, held: Encoded, tc: DictConfig, device) -> dict:
    """Loss on the held-out pairs, and BLEU of the first `valid_bleu_sentences` of them."""
    model.eval()
    pad, pairs, src_ids = tokenizer.pad_token_id, held.pairs, held.src_ids
    nll, ntok = 0.0, 0
    for batch in make_batches(held.src_lens, held.tgt_lens, int(tc.batch_tokens), 0, random.Random(0)):
        _, n, k = batch_loss(model, held.batch(batch, pad, device), 0.0)
        nll, ntok = nll + n, ntok + k
    out = {"valid_loss": nll / max(ntok, 1), "valid_ppl": math.exp(min(nll / max(ntok, 1), 50))}
    n = min(len(pairs), int(tc.valid_bleu_sentences or 0))
    if n:
        import sacrebleu

        hyps = translate(model, tokenizer, [src_ids[i] for i in range(n)], int(tc.valid_beam), device)
        out["valid_bleu"] = sacrebleu.corpus_bleu(hyps, [[t for _, t in pairs[:n]]]).score
        out["example"] = {"source": pairs[0][0], "reference": pairs[0][1], "hypothesis": hyps[0]}
    model.train()
    return out


@torch.no_grad()
def translate(model, tokenizer, src_ids: list[list[int]], beam: int, device, batch_size: int = 64) -> list[str]:
    """Greedy (beam=1) or beam-search translations of already-encoded sentences, in input order."""
    pad, limit = tokenizer.pad_token_id, int(model.config.max_position_embeddings)
    order = sorted(range(len(src_ids)), key=lambda i: len(src_ids[i]))
    hyps: list[str] = [""] * len(src_ids)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        b = collate([src_ids[i] for i in idx], [[0]] * len(idx), pad, device)
        max_new = min(limit - 1, int(1.5 * b["input_ids"].shape[1]) + 10)
        out = model.generate(input_ids=b["input_ids"], attention_mask=b["attention_mask"], num_beams=beam,
                             max_new_tokens=max_new, do_sample=False)
        for i, text in zip(idx, tokenizer.batch_decode(out, skip_special_tokens=True)):
            hyps[i] = text
    return hyps


# -- checkpoints ------------------------------------------------------------------------------------
def save_checkpoint(model, tokenizer, path: Path, state: dict | None = None) -> None:
    """Write a loadable model directory. With `state` (last/): build it beside and swap it in whole; without
    (the output directory, which also holds last/ and the logs): replace the model and tokenizer files."""
    tmp = path.with_name(path.name + ".tmp") if state is not None else path / ".best.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        follow_umask(*tmp.glob("*.safetensors"))
        if state is not None:
            torch.save(state, tmp / STATE)
    except (OSError, RuntimeError) as e:  # a full disk (torch's writer says so as a RuntimeError): no half a tmp left
        shutil.rmtree(tmp, ignore_errors=True)
        reason = e.strerror if isinstance(e, OSError) and e.strerror else " ".join(str(e).split())[:200]
        raise UserError(f"{path}: cannot write the checkpoint ({reason})") from None
    if state is not None:
        shutil.rmtree(path, ignore_errors=True)
        tmp.rename(path)
    else:
        for f in tmp.iterdir():
            f.replace(path / f.name)
        tmp.rmdir()


def load_state(path: Path) -> dict:
    """The trainer state of last/, unpickled with torch's weights-only loader: tensors, numbers, strings and
    containers only (all the state holds), so a crafted checkpoint cannot run code when resuming."""
    import pickle

    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as e:
        reason = " ".join(str(e).split())[:200]
        raise UserError(f"{path}: not a trainer state adaptsim can load safely ({reason}); "
                        "train.overwrite=true starts again") from None


def rng_states(device: torch.device) -> dict:
    """The random states a resumed run needs to continue exactly (dropout draws from the device's generator)."""
    states = {"python_rng": random.getstate(), "torch_rng": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda_rng"] = torch.cuda.get_rng_state_all()  # a list of CPU byte tensors: load_state accepts it
    return states


def set_rng_states(saved: dict, device: torch.device) -> None:
    """Restore what `rng_states` saved; a state without CUDA's (saved on CPU, or by an older adaptsim) leaves the
    CUDA generators as seeded, and one saved on more GPUs than this machine has restores those it has."""
    random.setstate(saved["python_rng"])
    torch.set_rng_state(saved["torch_rng"])
    if device.type == "cuda" and saved.get("cuda_rng") is not None:
        for i, state in enumerate(saved["cuda_rng"][:torch.cuda.device_count()]):
            torch.cuda.set_rng_state(state, i)


# Everything `train` writes into its output directory (what train.overwrite=true removes).
OWN_FILES = ("config.json", "generation_config.json", "model.safetensors", "source.spm", "target.spm", "vocab.json",
             "target_vocab.json", "tokenizer_config.json", "special_tokens_map.json", "train_log.jsonl",
             "training.json", "last", "last.tmp", ".best.tmp")


# -- the steps --------------------------------------------------------------------------------------
def train(cfg: DictConfig, began: Callable[[], None] = lambda: None) -> dict:
    """Train as the config says and return the summary (also written to OUT/training.json); `began` is called as the
    training itself begins, after every check."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Writing model shards" bars at every checkpoint
    check_settings(cfg)
    reused = load_tokenizer(cfg.train.tokenizer) if cfg.train.tokenizer else None  # before anything is removed
    pairs = read_parallel(cfg.train.source, cfg.train.target)  # the data refused before the output is prepared
    if not pairs:
        raise UserError(f"{cfg.train.source}: no training pairs")
    valid = read_parallel(cfg.train.valid_source, cfg.train.valid_target) if cfg.train.valid_source else []
    valid = valid[:int(cfg.train.valid_max_sentences or len(valid))]
    fresh_dir = not Path(str(cfg.train.out)).expanduser().exists()
    out, resume = prepare_output(cfg.train)
    if resume:
        check_resume(cfg, load_state(out / "last" / STATE), out)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    try:
        tokenizer, model = (resume_model(out) if resume else
                            initial_model(cfg.train.init_from) if cfg.train.init_from else
                            new_model(cfg, pairs, out, reused))
    except UserError:
        if fresh_dir and not any(out.iterdir()):  # a refused vocabulary leaves no empty model directory behind
            out.rmdir()
        raise
    model.to(torch.device(cfg.device)).train()
    max_len = min(int(cfg.train.max_length), int(model.config.max_position_embeddings))
    data, held = Encoded.of(tokenizer, pairs, max_len, "training"), Encoded.of(tokenizer, valid, max_len, "validation")
    log.info("data: %d training pairs (%d target tokens), %d validation pairs; model: %d parameters",
             len(data), sum(data.tgt_lens), len(held), count_parameters(model))
    trainer = Trainer(cfg, model, tokenizer, data, held, out)
    if resume:
        trainer.restore(out / "last" / STATE)
    began()
    trainer.fit()
    return trainer.summary()


# The type and allowed values of train's settings checked by rule (adaptsim/rules.py), as run's are (SETTINGS in
# adaptsim/loop/settings.py); a step or epoch bound of -1 would train nothing and write the untrained model.
SETTINGS: dict[str, Rule] = {
    "train.max_steps": Integer(0, null="no limit; 0 too"), "train.max_epochs": Integer(0, null="no limit; 0 too"),
    "train.max_minutes": Number(above=0, null="no time limit"),
    "train.checkpoint_minutes": Number(above=0, null="no timed checkpoints"),
    "train.dtype": Choice(DTYPES),
    "train.start_step": Integer(0), "train.rewarmup": Integer(0),
    **{key: RUN_SETTINGS[key] for key in ("allocator", "threads")},  # run's rules, one copy
}


def check_settings(cfg: DictConfig) -> None:
    """What can be checked before anything is read or written: the model's `arch`, the training files, and the
    settings' rules (`SETTINGS`, as `run`'s are checked: adaptsim/loop/settings.py)."""

    if "arch" not in cfg.model or cfg.model.arch is None:
        raise UserError(f"model={cfg.model.get('name')}: no `arch` block, so there is nothing to train "
                        "(use model=paper-transformer or model=demo, or add an arch: block)")
    for key in ("source", "target"):
        if OmegaConf.is_missing(cfg.train, key):
            raise UserError(f"train.{key} is not set: give the training text files, one sentence per line "
                            "(train.source=FILE train.target=FILE)")
    for key, rule in SETTINGS.items():
        rule.check(key, OmegaConf.select(cfg, key))
    if cfg.train.init_from and cfg.train.tokenizer:
        raise UserError(f"train.tokenizer={cfg.train.tokenizer}: not with train.init_from (its model's tokenizer "
                        "comes with its weights)")
    if not cfg.train.max_steps and not cfg.train.max_epochs and not cfg.train.max_minutes:
        raise UserError("set train.max_steps, train.max_epochs or train.max_minutes")
    log.info("%s", allocator.describe(cfg.allocator))
    check_device(cfg.device)
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))


def prepare_output(train_cfg: DictConfig) -> tuple[Path, bool]:
    """The output directory, emptied of an earlier model if train.overwrite says so; and whether training
    resumes from its last/ checkpoint."""
    out = Path(str(train_cfg.out)).expanduser()
    last = out / "last"
    resume = bool(train_cfg.resume) and (last / STATE).exists()
    if train_cfg.resume and not resume:
        log.info("train.resume=true but %s has no checkpoint: starting fresh", last)
    if not resume and ((out / "config.json").exists() or last.exists()):
        if not train_cfg.overwrite:
            raise UserError(f"{out} already holds a trained model: train.resume=true continues it, "
                            "train.overwrite=true starts again (and replaces it)")
        for name in OWN_FILES:
            f = out / name
            shutil.rmtree(f) if f.is_dir() else f.unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    return out, resume


def identity(cfg: DictConfig) -> str:
    """What the training is (every setting resolved, and the fingerprints of the files they name: `job_fields`), as
    JSON: kept in each checkpoint's trainer state, so that a resume checks it (`check_resume`)."""
    fields = job_fields("train", cfg, [])
    return json.dumps({"config": fields["config"], "inputs": fields["input_fingerprints"]}, sort_keys=True)


def check_resume(cfg: DictConfig, saved: dict, out: Path) -> None:
    """Refuse (one line, before anything is written) to resume a training with other settings or other files than
    its own, by the one resume rule (adaptsim/launch/resume.py `check`: what train may change is its
    `COMMAND_FREE`): a training recorded under one learning rate and continued under another is neither."""
    recorded = json.loads(saved.get("identity") or "{}")
    previous = {"status": "interrupted", **({"config": recorded["config"], "input_fingerprints": recorded["inputs"]}
                                            if recorded else {})}
    resume.check(out / "last", previous, cfg, "train")


def load_tokenizer(path):
    """The Marian tokenizer of `train.tokenizer` (a directory as MarianTokenizer.save_pretrained writes it), so that
    the new model has exactly that vocabulary (comparable to the model it came from; its fixed-tensor lists apply)."""
    from transformers import MarianTokenizer

    where = Path(str(path)).expanduser()
    missing = [f for f in ("source.spm", "target.spm", "vocab.json") if not (where / f).is_file()]
    if not where.is_dir() or missing:
        what = "no such directory" if not where.is_dir() else "no " + ", ".join(missing)
        raise UserError(f"train.tokenizer={where}: {what}; give a directory with a Marian tokenizer "
                        "(source.spm, target.spm, vocab.json), e.g. a model's")
    try:
        return MarianTokenizer.from_pretrained(str(where))
    except Exception as e:  # sentencepiece/json/transformers errors alike: the files are not a usable tokenizer
        reason = " ".join(str(e).split())[:200]
        raise UserError(f"train.tokenizer={where}: not a Marian tokenizer adaptsim can load ({reason})") from None


def new_model(cfg: DictConfig, pairs: list[tuple[str, str]], out: Path, tokenizer=None):
    """A sentencepiece vocabulary trained on the training text (or `tokenizer`, reused as it is), and a randomly
    initialised model for it."""
    vocab, arch = cfg.model.vocab, cfg.model.arch
    if tokenizer is not None:
        log.info("tokenizer: %s, %d pieces (%s), reused as it is (model.vocab does not apply)", cfg.train.tokenizer,
                 len(tokenizer.encoder), "shared" if not tokenizer.separate_vocabs else "per side")
        return tokenizer, build_model(OmegaConf.to_container(arch, resolve=True), tokenizer, seed=cfg.seed)
    t0 = time.perf_counter()
    tokenizer = train_tokenizer([s for s, _ in pairs], [t for _, t in pairs], out, int(vocab.size),
                                shared=bool(vocab.shared), source_lang=cfg.model.source_lang,
                                target_lang=cfg.model.target_lang, model_type=vocab.model_type,
                                max_sentences=int(vocab.max_sentences),
                                model_max_length=int(arch.max_position_embeddings))
    sizes = vocab_sizes(tokenizer)
    log.info("sentencepiece: %s pieces (%s) in %.1f s", " / ".join(map(str, sorted(set(sizes)))),
             "shared" if not tokenizer.separate_vocabs else "source / target", time.perf_counter() - t0)
    if min(sizes) < int(vocab.size):  # hard_vocab_limit=false: a small text gives what it holds
        log.warning("model.vocab.size=%d: the training text gives only %s pieces (source %d, target %d)",
                    int(vocab.size), min(sizes), *sizes)
    return tokenizer, build_model(OmegaConf.to_container(arch, resolve=True), tokenizer, seed=cfg.seed)


def initial_model(path: str):
    """The tokenizer and weights a training goes on from (`train.init_from`: a model directory, e.g. a shipped base
    model), with a fresh optimiser and its own data order: what base-ende-e1.4 was trained from base-ende with."""
    from transformers import MarianMTModel, MarianTokenizer

    where = Path(str(path)).expanduser()
    try:
        return MarianTokenizer.from_pretrained(str(where)), MarianMTModel.from_pretrained(str(where))
    except Exception as e:  # (a missing directory, a file cut short: the libraries' own kinds)
        reason = " ".join(str(e).split())[:200]
        raise UserError(f"train.init_from={path}: cannot load a Marian model there ({type(e).__name__}: {reason})") \
            from None


def resume_model(out: Path):
    """The tokenizer and model of the last checkpoint; one that cannot be read (a file cut short): one line."""
    from transformers import MarianMTModel, MarianTokenizer

    try:
        return MarianTokenizer.from_pretrained(str(out / "last")), MarianMTModel.from_pretrained(str(out / "last"))
    except Exception as e:  # (safetensors' SafetensorError, OSError, ValueError: the libraries' own kinds)
        reason = " ".join(str(e).split())[:200]
        raise UserError(f"{out / 'last'}: cannot load the checkpoint ({type(e).__name__}: {reason}); "
                        "train.overwrite=true starts again") from None


class Encoded:
    """Pairs encoded once, those longer than `max_len` tokens on either side left out (and counted)."""

    def __init__(self, pairs, src_ids, tgt_ids):
        self.pairs, self.src_ids, self.tgt_ids = pairs, src_ids, tgt_ids
        self.src_lens, self.tgt_lens = [len(s) for s in src_ids], [len(t) for t in tgt_ids]

    @classmethod
    def of(cls, tokenizer, pairs: list[tuple[str, str]], max_len: int, what: str) -> Encoded:
        src, tgt = encode(tokenizer, [s for s, _ in pairs]), encode(tokenizer, [t for _, t in pairs], True)
        keep = [i for i in range(len(pairs)) if len(src[i]) <= max_len and len(tgt[i]) <= max_len]
        if len(keep) < len(pairs):
            log.info("dropped %d %s pairs longer than %d tokens", len(pairs) - len(keep), what, max_len)
        return cls([pairs[i] for i in keep], [src[i] for i in keep], [tgt[i] for i in keep])

    def __len__(self) -> int:
        return len(self.pairs)

    def batch(self, indices: list[int], pad: int, device) -> dict[str, torch.Tensor]:
        return collate([self.src_ids[i] for i in indices], [self.tgt_ids[i] for i in indices], pad, device)


# -- the trainer ------------------------------------------------------------------------------------
class Trainer:
    """Adam with warm-up and inverse-square-root decay over token-count batches: `step` one batch, `checkpoint`
    (validation scores, last/ and best), `should_stop` (steps, epochs, time, patience), `fit` the loop over them,
    `restore` the exact state of a last/ checkpoint, `summary` at the end."""

    def __init__(self, cfg: DictConfig, model, tokenizer, data: Encoded, held: Encoded, out: Path):
        tc = cfg.train
        self.cfg, self.tc, self.model, self.tokenizer = cfg, tc, model, tokenizer
        self.data, self.held, self.out = data, held, out
        self.identity = identity(cfg)  # kept in each checkpoint: what a resume must match (check_resume)
        self.device = torch.device(cfg.device)
        # no weight cache: autocast clears it only on leaving the outermost region, so inside any other (a caller's,
        # or one an interrupted job left open in this process) every step would reuse step 1's bf16 weights
        self.autocast = dict(device_type=self.device.type, dtype=torch.bfloat16, enabled=tc.dtype == "bfloat16",
                             cache_enabled=False)
        self.optimizer = torch.optim.Adam(model.parameters(), lr=float(tc.lr), betas=tuple(tc.betas),
                                          eps=float(tc.eps), weight_decay=float(tc.weight_decay))
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, inverse_sqrt(int(tc.warmup), int(tc.start_step), int(tc.rewarmup)))
        self.state = {"step": 0, "epoch": 0, "batch": 0, "best": None, "best_step": None, "bad_validations": 0,
                      "elapsed": 0.0, "tokens": 0}
        self.max_steps, self.max_epochs = int(tc.max_steps or 0) or None, int(tc.max_epochs or 0) or None
        self.patience = int(tc.patience or 0)
        self.max_seconds = 60 * float(tc.max_minutes) if tc.max_minutes else None
        self.checkpoint_seconds = 60 * float(tc.checkpoint_minutes) if tc.checkpoint_minutes else None
        self.log_path = out / "train_log.jsonl"
        self.window = {"nll": 0.0, "tokens": 0}  # training loss since the last validation
        self.window_started = time.perf_counter()
        self.last_record: dict | None = None
        self.started = time.perf_counter()  # reset in fit (minus the elapsed time of a resumed run)
        self.saved_at = self.started  # when the last checkpoint was written (checkpoint_minutes)

    def restore(self, path: Path) -> None:
        saved = load_state(path)
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        self.state.update(saved["trainer"])
        set_rng_states(saved, self.device)
        self.started = time.perf_counter() - self.state["elapsed"]
        log.info("resumed from %s at step %d (epoch %d)", path.parent, self.state["step"], self.state["epoch"] + 1)
        if self.finished() and self.log_path.exists():  # already trained this far: report, don't validate again
            self.last_record = json.loads(self.log_path.read_text(encoding="utf-8").splitlines()[-1])
            self.last_record.pop("example", None)

    def stop_reason(self) -> str | None:
        """Why training stops now: "steps", "epochs", "time" (`max_minutes` of wall clock since training started; in
        a resumed run, since the first run started, not counting the time between the runs) or "patience" (that
        many validations in a row without improvement); None: it goes on."""
        s = self.state
        if self.max_steps and s["step"] >= self.max_steps:
            return "steps"
        if self.max_epochs and s["epoch"] >= self.max_epochs:
            return "epochs"
        if self.max_seconds and time.perf_counter() - self.started >= self.max_seconds:
            return "time"
        if self.patience and s["bad_validations"] >= self.patience:
            return "patience"
        return None

    def finished(self) -> bool:
        """The step, epoch or time limit is reached."""
        return self.stop_reason() in ("steps", "epochs", "time")

    def should_stop(self) -> bool:
        """The limits, or `patience` validations in a row without improvement."""
        return self.stop_reason() is not None

    def checkpoint_due(self) -> bool:
        """`checkpoint_minutes` have passed since the last checkpoint (a run killed from outside keeps a recent one)."""
        return bool(self.checkpoint_seconds and time.perf_counter() - self.saved_at >= self.checkpoint_seconds)

    def fit(self) -> None:
        self.model.train()
        self.started = self.saved_at = time.perf_counter()
        self.started -= self.state["elapsed"]  # max_minutes counts from here, plus a resumed run's earlier time
        reason = None
        with logging_redirect_tqdm(), progress(self.max_steps, "train", "step", self.cfg.progress,
                                               self.cfg.progress_every, initial=self.state["step"]) as bar:
            while not self.should_stop():
                batches = make_batches(self.data.src_lens, self.data.tgt_lens, int(self.tc.batch_tokens),
                                       int(self.tc.bucket_size),
                                       random.Random(f"{self.cfg.seed}/{self.state['epoch']}"))
                for b in batches[self.state["batch"]:]:
                    nll, ntok = self.step(b)
                    bar.update(1)
                    if self.state["step"] % max(1, int(self.tc.log_every)) == 0:
                        bar.set_postfix(nll=f"{nll / ntok:.3f}", lr=f"{self.scheduler.get_last_lr()[0]:.2e}",
                                        **{"tok/s": f"{self.window['tokens'] / self.window_seconds():.0f}"})
                    reason = self.stop_reason()
                    if self.state["step"] % int(self.tc.valid_every) == 0 or reason or self.checkpoint_due():
                        self.last_record = self.checkpoint()
                        reason = reason or self.stop_reason()  # patience, or time spent validating
                        if reason == "patience":
                            log.info("no improvement in %d validations: stopping", self.patience)
                    if reason:
                        break
                else:
                    self.state["epoch"] += 1
                    self.state["batch"] = 0
            reason = reason or self.stop_reason()  # at the end of an epoch, or a resumed run already stopped
            if self.last_record is None or self.last_record["step"] != self.state["step"]:
                self.last_record = self.checkpoint()
        if reason == "time":
            log.info("time limit train.max_minutes=%g reached: stopped at step %d after %.0f s", self.max_seconds / 60,
                     self.state["step"], self.state["elapsed"])

    def step(self, indices: list[int]) -> tuple[float, int]:
        """One optimizer step on one batch; returns its summed NLL and target tokens."""
        batch = self.data.batch(indices, self.tokenizer.pad_token_id, self.device)
        with torch.autocast(**self.autocast):  # batch_loss takes the log-softmax and the loss in float32
            loss, nll, ntok = batch_loss(self.model, batch, float(self.tc.label_smoothing))
        self.optimizer.zero_grad(set_to_none=True)
        (loss / ntok).backward()
        if self.tc.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), float(self.tc.clip_norm))
        self.optimizer.step()
        self.scheduler.step()
        self.state["step"] += 1
        self.state["batch"] += 1
        self.state["tokens"] += ntok
        self.window["nll"] += nll
        self.window["tokens"] += ntok
        return nll, ntok

    def checkpoint(self) -> dict:
        """Validate, write last/ (and OUT/ when best), log one line; return the record."""
        state, window = self.state, self.window
        record = {"step": state["step"], "epoch": state["epoch"] + 1, "lr": self.scheduler.get_last_lr()[0],
                  "train_nll": window["nll"] / max(window["tokens"], 1),
                  "train_tokens_per_s": round(window["tokens"] / self.window_seconds(), 1), "elapsed_s": 0.0}
        window.update(nll=0.0, tokens=0)
        if len(self.held):
            record.update(valid_scores(self.model, self.tokenizer, self.held, self.tc, self.device))
        # higher is better in every case: BLEU, else the negated validation loss, else the negated training loss
        score = record["valid_bleu"] if "valid_bleu" in record else -record.get("valid_loss", record["train_nll"])
        improved = state["best"] is None or score > state["best"]
        if improved:
            state.update(best=score, best_step=state["step"], bad_validations=0)
        else:
            state["bad_validations"] += 1
        state["elapsed"] = time.perf_counter() - self.started
        record["elapsed_s"] = round(state["elapsed"], 1)
        save_checkpoint(self.model, self.tokenizer, self.out / "last", {
            "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(), "trainer": dict(state),
            "identity": self.identity, **rng_states(self.device)})
        if improved:
            save_checkpoint(self.model, self.tokenizer, self.out)
        record["best"] = improved
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
        example = record.pop("example", None)
        log.info("step %d epoch %d | train nll %.3f | %s | %.0f s%s", record["step"], record["epoch"],
                 record["train_nll"], " ".join(f"{k} {v:.3f}" if k != "valid_bleu" else f"BLEU {v:.2f}"
                                               for k, v in record.items() if k.startswith("valid_")),
                 record["elapsed_s"], " (best)" if improved else "")
        if example:
            log.info("  src: %s\n  ref: %s\n  hyp: %s", example["source"], example["reference"], example["hypothesis"])
        self.window_started = self.saved_at = time.perf_counter()
        return record

    def window_seconds(self) -> float:
        """Seconds of training since the last validation (the rate excludes validating and saving)."""
        return max(time.perf_counter() - self.window_started, 1e-9)

    def summary(self) -> dict:
        """The figures of the training, written to OUT/training.json and returned."""
        state, held = self.state, len(self.held)
        summary = {"steps": state["step"], "epochs": state["epoch"] + (state["batch"] > 0),
                   "best_step": state["best_step"], "best_score": state["best"],
                   "best_metric": "valid_bleu" if held and self.tc.valid_bleu_sentences else
                                  "-valid_loss" if held else "-train_nll",
                   "last": {k: v for k, v in self.last_record.items() if k != "best"},
                   "train_seconds": round(state["elapsed"], 1), "target_tokens": state["tokens"],
                   "tokens_per_s": round(state["tokens"] / max(state["elapsed"], 1e-9), 1),
                   "parameters": count_parameters(self.model),
                   "training_pairs": len(self.data), "validation_pairs": held,
                   "vocab_size": dict(zip(("source", "target"), vocab_sizes(self.tokenizer))),
                   # what ran (not what `allocator` asked for), and the most memory the process held (Linux: KiB)
                   "allocator": allocator.active(),
                   "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                   "config": OmegaConf.to_container(self.cfg, resolve=True)}
        (self.out / "training.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
        log.info("done: %d steps in %.0f s; best %s %.3f at step %s; model in %s", state["step"], state["elapsed"],
                 summary["best_metric"], state["best"], state["best_step"], self.out)
        return summary
