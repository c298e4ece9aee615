"""`adaptsim train`: train a Marian-architecture base model from scratch on parallel text.

A compact trainer in the spirit of JoeyNMT/nanoGPT: sentencepiece vocabulary, token-count batches of
length-sorted buckets, Adam with linear warm-up and inverse-square-root decay, label smoothing, dropout,
periodic validation (loss, and BLEU of greedy/beam output on the first valid sentences), best and last
checkpoints, exact resume.

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
import shutil
import sys
import time
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from adaptsim.errors import DataError, UserError

log = logging.getLogger("adaptsim.train")

STATE = "trainer_state.pt"


def main(argv: list[str]) -> int:
    from adaptsim.hydra_app import launch

    return launch(task, "train", argv, "train")


def task(cfg: DictConfig, job) -> None:
    """The job: train, and record in its summary.json what was trained where (training.json beside the
    model keeps the same figures with the model)."""
    summary = train(cfg)
    job.update(output=str(Path(str(cfg.train.out)).expanduser()), **{k: v for k, v in summary.items() if k != "config"})


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


def inverse_sqrt(warmup: int):
    """LR factor: linear warm-up to 1 at step `warmup`, then sqrt(warmup / step)."""
    w = max(1, int(warmup))
    return lambda step: min((step + 1) / w, math.sqrt(w / (step + 1)))


# -- validation -------------------------------------------------------------------------------------
@torch.no_grad()
def validate(model, tokenizer, pairs, src_ids, tgt_ids, tc: DictConfig, device) -> dict:
    model.eval()
    pad = tokenizer.pad_token_id
    nll, ntok = 0.0, 0
    for batch in make_batches(list(map(len, src_ids)), list(map(len, tgt_ids)), int(tc.batch_tokens), 0,
                              random.Random(0)):
        b = collate([src_ids[i] for i in batch], [tgt_ids[i] for i in batch], pad, device)
        _, n, k = batch_loss(model, b, 0.0)
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
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    if state is not None:
        torch.save(state, tmp / STATE)
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


# Everything `train` writes into its output directory (what train.overwrite=true removes).
OWN_FILES = ("config.json", "generation_config.json", "model.safetensors", "source.spm", "target.spm", "vocab.json",
             "target_vocab.json", "tokenizer_config.json", "special_tokens_map.json", "train_log.jsonl",
             "training.json", "last", "last.tmp", ".best.tmp")


# -- the loop ---------------------------------------------------------------------------------------
def train(cfg: DictConfig) -> dict:
    from transformers import MarianMTModel, MarianTokenizer
    from transformers.utils import logging as hf_logging

    from adaptsim.validate import check_device, check_threads
    from adaptsim.vocab import build_model, count_parameters, train_tokenizer

    hf_logging.disable_progress_bar()  # no "Writing model shards" bars at every checkpoint

    tc, mc = cfg.train, cfg.model
    if "arch" not in mc or mc.arch is None:
        raise UserError(f"model={mc.get('name')}: no `arch` block, so there is nothing to train "
                        "(use model=paper-transformer or model=demo, or add an arch: block)")
    for key in ("source", "target"):
        if OmegaConf.is_missing(tc, key):
            raise UserError(f"train.{key} is not set: give the training text files, one sentence per line "
                            "(train.source=FILE train.target=FILE)")
    check_device(cfg.device)
    check_threads(cfg.threads)
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    device = torch.device(cfg.device)
    out = Path(str(tc.out)).expanduser()
    last = out / "last"
    resume = bool(tc.resume) and (last / STATE).exists()
    if tc.resume and not resume:
        log.info("train.resume=true but %s has no checkpoint: starting fresh", last)
    if not resume and (out / "config.json").exists() or not resume and last.exists():
        if not tc.overwrite:
            raise UserError(f"{out} already holds a trained model: train.resume=true continues it, "
                            "train.overwrite=true starts again (and replaces it)")
        for name in OWN_FILES:
            f = out / name
            shutil.rmtree(f) if f.is_dir() else f.unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)

    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    pairs = read_parallel(tc.source, tc.target)
    valid = read_parallel(tc.valid_source, tc.valid_target) if tc.get("valid_source") else []
    if tc.get("valid_max_sentences"):
        valid = valid[:int(tc.valid_max_sentences)]
    if not pairs:
        raise UserError(f"{tc.source}: no training pairs")

    if resume:
        tokenizer = MarianTokenizer.from_pretrained(str(last))
        model = MarianMTModel.from_pretrained(str(last))
    else:
        vc = mc.get("vocab") or {}
        t0 = time.perf_counter()
        tokenizer = train_tokenizer([s for s, _ in pairs], [t for _, t in pairs], out,
                                    int(vc.get("size", 8000)), shared=bool(vc.get("shared", True)),
                                    source_lang=mc.source_lang, target_lang=mc.target_lang,
                                    model_type=vc.get("model_type", "unigram"),
                                    max_sentences=int(vc.get("max_sentences", 2_000_000)),
                                    model_max_length=int(mc.arch.get("max_position_embeddings", 512)))
        log.info("sentencepiece: %d pieces (%s) in %.1f s", len(tokenizer.encoder),
                 "shared" if not tokenizer.separate_vocabs else "per side", time.perf_counter() - t0)
        model = build_model(OmegaConf.to_container(mc.arch, resolve=True), tokenizer, seed=cfg.seed)
    model.to(device).train()
    n_params = count_parameters(model)

    max_len = min(int(tc.max_length), int(model.config.max_position_embeddings))
    src_ids, tgt_ids = encode(tokenizer, [s for s, _ in pairs]), encode(tokenizer, [t for _, t in pairs], True)
    keep = [i for i in range(len(pairs)) if len(src_ids[i]) <= max_len and len(tgt_ids[i]) <= max_len]
    if len(keep) < len(pairs):
        log.info("dropped %d training pairs longer than %d tokens", len(pairs) - len(keep), max_len)
    src_ids, tgt_ids = [src_ids[i] for i in keep], [tgt_ids[i] for i in keep]
    v_src, v_tgt = encode(tokenizer, [s for s, _ in valid]), encode(tokenizer, [t for _, t in valid], True)
    vkeep = [i for i in range(len(valid)) if len(v_src[i]) <= max_len and len(v_tgt[i]) <= max_len]
    valid, v_src, v_tgt = [valid[i] for i in vkeep], [v_src[i] for i in vkeep], [v_tgt[i] for i in vkeep]
    src_lens, tgt_lens = [len(s) for s in src_ids], [len(t) for t in tgt_ids]
    log.info("data: %d training pairs (%d target tokens), %d validation pairs; model: %d parameters",
             len(src_ids), sum(tgt_lens), len(valid), n_params)

    optimizer = torch.optim.Adam(model.parameters(), lr=float(tc.lr), betas=tuple(tc.betas), eps=float(tc.eps),
                                 weight_decay=float(tc.weight_decay))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, inverse_sqrt(int(tc.warmup)))
    state = {"step": 0, "epoch": 0, "batch": 0, "best": None, "best_step": None, "bad_validations": 0,
             "elapsed": 0.0}
    if resume:
        saved = load_state(last / STATE)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        state.update(saved["trainer"])
        random.setstate(saved["python_rng"])
        torch.set_rng_state(saved["torch_rng"])
        log.info("resumed from %s at step %d (epoch %d)", last, state["step"], state["epoch"] + 1)

    max_steps = int(tc.max_steps or 0) or None
    max_epochs = int(tc.max_epochs or 0) or None
    if not max_steps and not max_epochs:
        raise UserError("set train.max_steps or train.max_epochs")
    log_path = out / "train_log.jsonl"
    pad, ls = tokenizer.pad_token_id, float(tc.label_smoothing)
    started = time.perf_counter() - state["elapsed"]
    window = {"nll": 0.0, "tokens": 0}  # since the last validation

    def checkpoint() -> dict:
        """Validate, write last/ (and OUT/ when best), log one line; return the record."""
        record = {"step": state["step"], "epoch": state["epoch"] + 1, "lr": scheduler.get_last_lr()[0],
                  "train_nll": window["nll"] / max(window["tokens"], 1), "elapsed_s": 0.0}
        window.update(nll=0.0, tokens=0)
        if valid:
            record.update(validate(model, tokenizer, valid, v_src, v_tgt, tc, device))
        score = record.get("valid_bleu", -record.get("valid_loss", -record["train_nll"]))
        improved = state["best"] is None or score > state["best"]
        if improved:
            state.update(best=score, best_step=state["step"], bad_validations=0)
        else:
            state["bad_validations"] += 1
        state["elapsed"] = time.perf_counter() - started
        record["elapsed_s"] = round(state["elapsed"], 1)
        save_checkpoint(model, tokenizer, last, {
            "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "trainer": dict(state),
            "python_rng": random.getstate(), "torch_rng": torch.get_rng_state()})
        if improved:
            save_checkpoint(model, tokenizer, out)
        record["best"] = improved
        with open(log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
        example = record.pop("example", None)
        log.info("step %d epoch %d | train nll %.3f | %s | %.0f s%s", record["step"], record["epoch"],
                 record["train_nll"], " ".join(f"{k} {v:.3f}" if k != "valid_bleu" else f"BLEU {v:.2f}"
                                               for k, v in record.items() if k.startswith("valid_")),
                 record["elapsed_s"], " (best)" if improved else "")
        if example:
            log.info("  src: %s\n  ref: %s\n  hyp: %s", example["source"], example["reference"], example["hypothesis"])
        return record

    done = lambda: (max_steps and state["step"] >= max_steps) or (max_epochs and state["epoch"] >= max_epochs)
    patience = int(tc.patience or 0)
    last_record = None
    if resume and done() and log_path.exists():  # already trained this far: report, don't validate again
        last_record = json.loads(log_path.read_text(encoding="utf-8").splitlines()[-1])
        last_record.pop("example", None)
    model.train()
    with logging_redirect_tqdm(), tqdm(total=max_steps, initial=state["step"], disable=not cfg.progress,
                                       unit="step", dynamic_ncols=True, file=sys.stderr, desc="train") as bar:
        while not done():
            batches = make_batches(src_lens, tgt_lens, int(tc.batch_tokens), int(tc.bucket_size),
                                   random.Random(f"{cfg.seed}/{state['epoch']}"))
            for b in batches[state["batch"]:]:
                batch = collate([src_ids[i] for i in b], [tgt_ids[i] for i in b], pad, device)
                loss, nll, ntok = batch_loss(model, batch, ls)
                optimizer.zero_grad(set_to_none=True)
                (loss / ntok).backward()
                if tc.clip_norm:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), float(tc.clip_norm))
                optimizer.step()
                scheduler.step()
                state["step"] += 1
                state["batch"] += 1
                window["nll"] += nll
                window["tokens"] += ntok
                bar.update(1)
                if state["step"] % max(1, int(tc.log_every)) == 0:
                    bar.set_postfix(nll=f"{nll / ntok:.3f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
                if state["step"] % int(tc.valid_every) == 0 or done():
                    last_record = checkpoint()
                    if patience and state["bad_validations"] >= patience:
                        log.info("no improvement in %d validations: stopping", patience)
                        max_steps = state["step"]
                if done():
                    break
            else:
                state["epoch"] += 1
                state["batch"] = 0
        if last_record is None or last_record["step"] != state["step"]:
            last_record = checkpoint()

    summary = {"steps": state["step"], "epochs": state["epoch"] + (state["batch"] > 0),
               "best_step": state["best_step"], "best_score": state["best"],
               "best_metric": "valid_bleu" if valid and tc.valid_bleu_sentences else
                              "-valid_loss" if valid else "-train_nll",
               "last": {k: v for k, v in last_record.items() if k != "best"},
               "train_seconds": round(state["elapsed"], 1), "parameters": n_params,
               "training_pairs": len(src_ids), "validation_pairs": len(valid),
               "vocab_size": len(tokenizer.encoder), "config": OmegaConf.to_container(cfg, resolve=True)}
    (out / "training.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
    log.info("done: %d steps in %.0f s; best %s %.3f at step %s; model in %s", state["step"], state["elapsed"],
             summary["best_metric"], state["best"], state["best_step"], out)
    return summary
