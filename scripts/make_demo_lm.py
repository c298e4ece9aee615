"""Train the decoder-only demo model (data/demo/lm): it translates the demo language and reads a document's
earlier pairs in its prompt, a little.

Trained as below (the defaults reproduce the committed files) it translates general text at BLEU 99.9 and the demo
stream at 67.9 without context; a focus term whose translation one of the previous 3 post-edits corrected is right
in 4 of 34 cases without those pairs and in 12 with them (sign test p = 0.011; tests/test_demo_lm.py). It reads the
sense from the document's domain rather than copying the term, and the effect is fragile: other step counts
and data sizes of the same design weaken or lose it (docs/beyond_paper.md, "The demo: a small model that reads
its context, a little").

    python scripts/make_demo_lm.py                 # data + tokenizer + model + evaluation (about 22 minutes, 1 core)
    python scripts/make_demo_lm.py --steps 300     # a short run to try changes (figures are then poor)
    python scripts/make_demo_lm.py --evaluate      # measure the committed model again against its manifest (1 min)

What `method=icl` needs from a model: before translating segment i of a document, the k earlier (source,
post-edit) pairs are put into its prompt (adaptsim/models/prompt.py), and a term's translation shown there should be
used. This script is to make a model small enough to commit that does so on the embedded demo stream
(data/demo/docs.tsv), the way data/demo/model (scripts/make_demo.py) is the one for the adaptation methods.

Everything is seeded: the generator (adaptsim.synth) draws each set from its own seeded RNG, sentencepiece and
torch run single-threaded, batches are drawn from a seeded RNG and training stops after a fixed number of steps,
so the same torch build on the same kind of CPU gives the same files.

What the model may have seen follows scripts/make_demo.py: the demo documents are regenerated in memory (same
generator, same seed; never read from data/demo/docs.tsv or heldout.tsv) only to know their focus terms and to
keep their sentences (and general-test.tsv's) out of training. The stream's focus terms are seen exactly as the
demo model saw them: in make_demo.py's corpus, never in a context document. Training text:
- make_demo.py's own 100k-pair corpus (the same call, so the same pairs): general text, 5 % software sentences
  without the stream's focus terms or any other ambiguous word's technical sense, plus RARE_COUNT (60) software
  sentences per focus term. So driver → Treiber is a known but rare translation (60 of ~3,700 sentences with
  "driver"), and without context the model says Fahrer.
- Software sentences without context, for the ambiguous words (sense_sentences): RARE_COUNT per technical sense
  of the 22 ambiguous words that are not the stream's (table → Tabelle: as rare as driver → Treiber), and
  USUAL_COUNT per general sense of all 30 ("the driver" → "der Fahrer" in a software sentence): without context
  a software sentence does not decide the sense, and the stream's words stay Fahrer, Figur, Flicken ….
- N_CONTEXT_DOCS documents of SEGS_PER_CONTEXT_DOC pairs: TECHNICAL_DOC_SHARE of them software text in which
  every ambiguous word takes its technical sense (two of the 22 recur, and in half one software term), the rest
  general text in which they take their general sense (two recur, or general nouns). No context document has a
  stream focus word in either sense or language. Each segment after the first is a sequence whose prompt holds
  the previous min(i, c) pairs of its document, c drawn from 1..MAX_CONTEXT: what the earlier pairs show (a
  term's own technical translation, other technical senses, software text) tells the sense, and the model
  learns to take a term's rarer, technical translation from a software context, which it does, a little, for the
  stream's words it never saw in one (driver → Treiber).
A sequence is exactly what adaptsim translates with: Prompt.ids(tokenizer, source, context) +
Prompt.target_ids(tokenizer, target, eos) with the prompt block of configs/model/demo-lm.yaml; the loss is on
the target and the end token only (the prompt's positions are labelled -100, and the output layer is applied at
the target's positions only: the same loss, in less time).

Designs that did not carry over to the stream's terms (each a full training; ambiguous focus terms after their
first occurrence, right with the previous 4 pairs vs without): documents in which an ambiguous word takes either
sense at even odds, with its technical sense never shown without context (the model copied the 22 training words'
senses from context almost always and never the stream's: 1 vs 4 of 40); the same with the 22 technical senses
also seen as rarely as the stream's, or 100 general nouns given an artificial rare second sense (the same, and it
broke words the context had not shown); invented words with a per-document meaning, which force copying by
position (learnt for them in half the cases, not carried over to real words). Inferring the sense from the
document's domain, which the context shows, is what carried over, and only just: with the test's measure (cases
corrected in the previous 3 post-edits), the committed settings give 4 → 12 of 34; 9,000 steps 7 → 13 of 26;
twice the context documents at 8,000 steps 4 → 4 of 31; random unrelated pairs before 30 % of the corpus pairs
(so that examples in a prompt would be no sign of which words follow) 9 → 9 of 31.

Choices:
- Prompt: no newlines and no instruction: "en: {source} de: {target} " per example, then "en: {source} de:";
  target_prefix "" (sentencepiece marks a word start itself). chat: false (the tokenizer has no chat template).
- Tokenizer: a sentencepiece BPE model (VOCAB pieces, no byte fallback: every character of the language is a
  piece, <unk>=0 <s>=1 </s>=2 <pad>=3) trained on the formatted training pairs, written as a transformers
  LlamaTokenizer (tokenizer.json), which AutoTokenizer loads and which segments exactly as sentencepiece does
  (checked on the training text). Prompts start with <s>; a translation ends with </s>.
- Model: LlamaForCausalLM (rotary positions, RMSNorm, SwiGLU; tied input/output embeddings), ARCH below,
  trained in float32 with AdamW, linear warm-up and cosine decay; saved in float16 (half the bytes: the tree has
  a size budget, tests/test_compressed_records.py) with config dtype float32 (adaptsim loads models as float32).
  The figures in the manifest are measured on the saved file, loaded as float32.
- Evaluation (greedy, batched with left padding): BLEU on data/demo/general-test.tsv without context; on the
  demo stream, for every occurrence of a focus term in a reference after the term's first occurrence in the
  document, whether the hypothesis has the term's German word (a form of it; a separable verb's bare form
  counts with its particle at the clause end), without context and with the previous k reference pairs
  (k = MAX_CONTEXT, and k = 3); among those, the ones with an earlier occurrence inside the k pairs (in_window)
  and the ones one of those k post-edits corrected (corrected: the term missing from the translation of that
  segment without context), each with the cases gained and lost and a one-sided exact sign test.

What it writes: data/demo/lm/ (config.json, generation_config.json, model.safetensors, tokenizer.json,
tokenizer_config.json, manifest.json: settings, data figures, training time, evaluation, sha256 of the other
files). The training log goes to the work directory (outputs/demo-lm-work, not committed).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEED = 1
N_DOCS, SEGS_PER_DOC = 4, 15                    # the demo stream (scripts/make_demo.py)
N_TRAIN, SOFTWARE_SHARE, RARE_COUNT = 100_000, 0.05, 60  # make_demo.py's corpus: the same call, the same pairs
N_CONTEXT_DOCS, SEGS_PER_CONTEXT_DOC = 9_000, 8
TECHNICAL_DOC_SHARE = 0.6   # context documents in software text with technical senses; the rest general text
USUAL_COUNT = 120           # software sentences per ambiguous word in its general sense (see sense_sentences)
MAX_CONTEXT = 4         # earlier pairs in a training prompt (at most), and k of the evaluation
VOCAB = 2000
ARCH = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 4, "max_position_embeddings": 512, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True}
TRAIN = {"steps": 6000, "batch_tokens": 3000, "lr": 3e-3, "warmup": 200, "final_lr_share": 0.05,
         "weight_decay": 0.01, "betas": (0.9, 0.98), "clip_norm": 1.0}
UNK, BOS, EOS, PAD = 0, 1, 2, 3
DEMO = ROOT / "data" / "demo"
OUT = DEMO / "lm"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prompt_from_config():
    """adaptsim.models.prompt.Prompt from configs/model/demo-lm.yaml, as adaptsim composes it."""
    from adaptsim.launch.hydra_app import compose
    from adaptsim.models.prompt import Prompt

    return Prompt.from_config(compose("run", ["model=demo-lm"]).model.prompt)


def read_tsv(path: Path) -> list[tuple[str, str, str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [tuple(line.split("\t")) for line in lines]


# ---------------------------------------------------------------- data
def stream_documents(g):
    """The demo stream and the held-out documents, regenerated as scripts/make_demo.py makes them."""
    docs = g.documents("software", n_docs=N_DOCS, segs_per_doc=SEGS_PER_DOC)
    doc_en = {en for d in docs for en, _ in d}
    heldout = g.documents("software", n_docs=N_DOCS, segs_per_doc=SEGS_PER_DOC, seed=SEED + 3000, exclude=doc_en)
    return docs, heldout


class Lexicon:
    """The lexicon as the LM's training text uses it: the ambiguous words (a technical and a general sense each),
    and views without the stream's focus words (either sense) for the context documents."""

    def __init__(self, g, focus: set[str]):
        from adaptsim.synth.lexicon import _en

        lex = self.lex = g.lexicon
        self.g, self.focus = g, focus
        self.stream_en = {_en(e) for k in focus for e in lex.entries(k)}
        self.senses = {}  # technical key -> (technical entry, general entry)
        for key in g.terms("ambiguous"):
            e = lex.entries(key)[0]
            self.senses[key] = (e, next(x for x in lex.nouns + lex.verbs
                                        if x.domain == "general" and type(x) is type(e) and _en(x) == _en(e)))
        self.free = [k for k in self.senses if k not in focus]  # the ambiguous words context documents may use

    def view(self, domain: str, allowed=None, add=()):
        """The domain's entries (software-only ones limited to `allowed`), plus `add`, without the stream's focus
        words in context documents (`allowed` None)."""
        from dataclasses import replace

        from adaptsim.synth.lexicon import Noun, _en

        base = self.lex.view(domain, allowed)
        drop = self.stream_en if allowed is None else set()

        def keep(e):
            return _en(e) not in drop and e.key not in self.focus
        return replace(base, nouns=[e for e in base.nouns if keep(e)] + [e for e in add if isinstance(e, Noun)],
                       adjectives=list(base.adjectives), adverbs=list(base.adverbs),
                       verbs=[e for e in base.verbs if keep(e)] + [e for e in add if not isinstance(e, Noun)])


def sense_sentences(lx: Lexicon, allowed: set[str], exclude: set[str]) -> list[tuple[str, str]]:
    """Software sentences without context: RARE_COUNT per technical sense of the ambiguous words the context
    documents use (the stream's focus terms have theirs in make_demo.py's corpus), and USUAL_COUNT per general
    sense of every ambiguous word, the stream's included (a driver in a software sentence is still a Fahrer)."""
    from adaptsim.synth.builder import Builder

    rng = random.Random(f"{SEED}|sense-sentences")
    seen, out = set(exclude), []
    for key, (tech, general) in lx.senses.items():
        jobs = [(general, lx.view("software", allowed, add=[general]), USUAL_COUNT)]
        if key in lx.free:
            jobs.insert(0, (tech, lx.view("software", allowed | {key}), RARE_COUNT))
        for entry, view, count in jobs:
            b = Builder(view, rng)
            for _ in range(count):
                pair = focused(lx.g, b, "software", entry.key, seen)
                if pair:
                    seen.add(pair[0])
                    out.append(pair)
    return out


def context_documents(lx: Lexicon, exclude: set[str]) -> list[list]:
    """N_CONTEXT_DOCS documents of SEGS_PER_CONTEXT_DOC pairs, technical or general (see above)."""
    from adaptsim.synth.builder import Builder

    g = lx.g
    new = [k for k in g.terms("new") if k not in lx.focus]
    software, general = lx.view("software"), lx.view("general")
    general_nouns = [x.key for x in general.nouns if x.domain == "general"]
    rng = random.Random(f"{SEED}|context-documents")
    seen = set(exclude)
    docs = []
    for _ in range(N_CONTEXT_DOCS):
        if rng.random() < TECHNICAL_DOC_SHARE:
            view, domain = software, "software"
            terms = rng.sample(lx.free, 2) + ([rng.choice(new)] if rng.random() < 0.5 else [])
        else:
            view, domain = general, "general"
            terms = [lx.senses[k][1].key if rng.random() < 0.5 else rng.choice(general_nouns)
                     for k in rng.sample(lx.free, 2)]
        b = Builder(view, rng, focus=terms, p_focus=0.3)
        plan = [terms[i % len(terms)] for i in range(SEGS_PER_CONTEXT_DOC)]
        rng.shuffle(plan)
        pairs = []
        for req in plan:
            pair = focused(g, b, domain, req, seen)
            if pair:  # else no new sentence with this term: the document is a segment shorter
                seen.add(pair[0])
                pairs.append(pair)
        docs.append(pairs)
    return docs


def focused(g, b, domain: str, key: str, seen: set[str]):
    """A new sentence pair whose German has the term `key` (one of its forms), or None: Generator._focused without
    its fallback to another focus term."""
    for _ in range(200):
        res = g._sentence(b, domain, require=key)
        if res is None or res[0][0] in seen:
            continue
        pair, used = res
        if key in used and set(re.findall(r"[\wÄÖÜäöüß-]+", pair[1])) & g.forms(key):
            return pair
    return None


def make_data() -> dict:
    from adaptsim.synth import Generator

    g = Generator(seed=SEED)
    docs, heldout = stream_documents(g)
    doc_en = {en for d in docs for en, _ in d}
    focus = {k for d in docs for k in d.focus}
    seen_terms = [t for t in g.terms("new") if t not in focus]
    corpus = g.corpus(N_TRAIN, software_share=SOFTWARE_SHARE, software_terms=seen_terms, exclude=doc_en,
                      rare_terms=sorted(focus), rare_count=RARE_COUNT)
    general_test = [(s, r) for _, _, s, r in read_tsv(DEMO / "general-test.tsv")]
    held_en = {en for d in heldout for en, _ in d}
    test_en = {s for s, _ in general_test}
    corpus = [p for p in corpus if p[0] not in test_en]  # none at N_TRAIN=100k (the test set was drawn without them)
    lx = Lexicon(g, focus)
    senses = sense_sentences(lx, set(seen_terms), doc_en | held_en | test_en | {en for en, _ in corpus})
    ctx_docs = context_documents(lx, doc_en | held_en | test_en)
    return {"generator": g, "docs": docs, "focus": focus, "corpus": corpus + senses, "context_docs": ctx_docs,
            "general_test": general_test}


def train_tokenizer(texts: list[str], work: Path):
    """A sentencepiece BPE model trained on `texts`, as a transformers LlamaTokenizer."""
    import sentencepiece as spm
    from transformers import LlamaTokenizer
    from transformers.tokenization_utils_sentencepiece import SentencePieceExtractor

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=model, vocab_size=VOCAB, model_type="bpe",
        character_coverage=1.0, unk_id=UNK, bos_id=BOS, eos_id=EOS, pad_id=PAD, byte_fallback=False,
        normalization_rule_name="identity", add_dummy_prefix=True, remove_extra_whitespaces=False,
        split_digits=True, input_sentence_size=len(texts), shuffle_input_sentence=False, num_threads=1,
        minloglevel=2)
    work.mkdir(parents=True, exist_ok=True)
    spm_file = work / "tokenizer.model"
    spm_file.write_bytes(model.getvalue())
    vocab, _, merges = SentencePieceExtractor(str(spm_file)).extract()
    tok = LlamaTokenizer(vocab=vocab, merges=merges, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                         pad_token="<pad>", add_prefix_space=True, legacy=False)
    tok.padding_side = "left"
    assert (tok.unk_token_id, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (UNK, BOS, EOS, PAD)
    sp = spm.SentencePieceProcessor(model_file=str(spm_file))
    check = texts[::50]
    differ = sum(sp.encode(t) != tok(t, add_special_tokens=False).input_ids for t in check)
    assert differ == 0, f"the tokenizer segments {differ} of {len(check)} texts unlike sentencepiece"
    return tok


def sequences(data: dict, tok, prompt) -> tuple[list[tuple[list[int], list[int]]], int]:
    """(prompt ids, target ids + </s>) for every training sequence; how many have context pairs."""
    rng = random.Random(f"{SEED}|context-sizes")
    out, with_context = [(prompt.ids(tok, en), prompt.target_ids(tok, de, EOS)) for en, de in data["corpus"]], 0
    for doc in data["context_docs"]:
        for i, (en, de) in enumerate(doc[1:], 1):  # the first segment has no context: the corpus teaches that
            c = min(i, rng.randint(1, MAX_CONTEXT))
            out.append((prompt.ids(tok, en, doc[i - c:i]), prompt.target_ids(tok, de, EOS)))
            with_context += 1
    return out, with_context


# ---------------------------------------------------------------- training
def batches(seqs, rng: random.Random, batch_tokens: int):
    """Batches of sequence indices of similar length, at most batch_tokens (padded) each, in random order."""
    order = sorted(range(len(seqs)), key=lambda i: (len(seqs[i][0]) + len(seqs[i][1]), rng.random()))
    out, cur, longest = [], [], 0
    for i in order:
        n = len(seqs[i][0]) + len(seqs[i][1])
        if cur and max(longest, n) * (len(cur) + 1) > batch_tokens:
            out.append(cur)
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, n)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def collate(seqs, idx):
    """Right-padded inputs (no attention mask needed: causal attention never looks right) and, per position,
    the next token where it is a target token, else -100."""
    import torch

    rows = [seqs[i][0] + seqs[i][1] for i in idx]
    n = max(map(len, rows))
    ids = torch.full((len(rows), n), PAD, dtype=torch.long)
    labels = torch.full((len(rows), n), -100, dtype=torch.long)
    for r, i in enumerate(idx):
        p, t = seqs[i]
        ids[r, :len(p) + len(t)] = torch.tensor(p + t)
        labels[r, len(p) - 1:len(p) + len(t) - 1] = torch.tensor(t)
    return ids, labels


def loss_on_targets(model, ids, labels):
    import torch.nn.functional as F

    hidden = model.model(input_ids=ids).last_hidden_state
    keep = labels != -100
    logits = model.lm_head(hidden[keep])
    return F.cross_entropy(logits.float(), labels[keep]), int(keep.sum())


def train(seqs, tok, steps: int, log_path: Path) -> dict:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(vocab_size=len(tok), bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, **ARCH)
    model = LlamaForCausalLM(config)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    other = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": TRAIN["weight_decay"]},
                             {"params": other, "weight_decay": 0.0}], lr=TRAIN["lr"], betas=TRAIN["betas"])

    def lr_at(step):  # linear warm-up, cosine decay to final_lr_share
        if step < TRAIN["warmup"]:
            return TRAIN["lr"] * (step + 1) / TRAIN["warmup"]
        x = (step - TRAIN["warmup"]) / max(1, steps - TRAIN["warmup"])
        floor = TRAIN["final_lr_share"]
        return TRAIN["lr"] * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * x)))

    rng = random.Random(f"{SEED}|batches")
    queue, epoch, seen_tokens, seen_targets = [], 0, 0, 0
    t0 = time.perf_counter()
    window = []
    with open(log_path, "w", encoding="utf-8") as log:
        for step in range(steps):
            if not queue:
                queue, epoch = batches(seqs, rng, TRAIN["batch_tokens"]), epoch + 1
            ids, labels = collate(seqs, queue.pop())
            for group in opt.param_groups:
                group["lr"] = lr_at(step)
            loss, n = loss_on_targets(model, ids, labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), TRAIN["clip_norm"])
            opt.step()
            seen_tokens += ids.numel()
            seen_targets += n
            window.append(loss.item())
            if (step + 1) % 100 == 0 or step + 1 == steps:
                rec = {"step": step + 1, "epoch": epoch, "loss": round(sum(window) / len(window), 4),
                       "lr": round(lr_at(step), 6), "tokens": seen_tokens, "target_tokens": seen_targets,
                       "seconds": round(time.perf_counter() - t0, 1)}
                window = []
                log.write(json.dumps(rec) + "\n")
                log.flush()
                print(json.dumps(rec), flush=True)
    return {"model": model, "steps": steps, "epochs_started": epoch, "parameters": params,
            "tokens": seen_tokens, "target_tokens": seen_targets,
            "train_seconds": round(time.perf_counter() - t0, 1), "sequences": len(seqs)}


def save(model, tok) -> None:
    import torch
    from transformers import GenerationConfig

    OUT.mkdir(parents=True, exist_ok=True)
    for f in OUT.iterdir():
        if f.is_file():
            f.unlink()
    model = model.eval().to(torch.float16)
    model.generation_config = GenerationConfig(bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD,
                                               do_sample=False, num_beams=1, max_new_tokens=64)
    model.save_pretrained(OUT)
    config = json.loads((OUT / "config.json").read_text(encoding="utf-8"))
    config["dtype"] = "float32"  # the weights are stored in float16; adaptsim runs every model in float32
    (OUT / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tok.save_pretrained(OUT)
    # tokenizer.json without indentation: a third of the bytes, the same tokenizer
    tj = OUT / "tokenizer.json"
    tj.write_text(json.dumps(json.loads(tj.read_text(encoding="utf-8")), ensure_ascii=False,
                             separators=(",", ":")) + "\n", encoding="utf-8")
    for extra in ("chat_template.jinja", "special_tokens_map.json"):
        if (OUT / extra).exists():
            (OUT / extra).unlink()


# ---------------------------------------------------------------- evaluation
def load(path: Path | None = None):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = path or OUT
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    return tok, model


def greedy(model, tok, prompts: list[list[int]], max_new_tokens: int = 64, batch_size: int = 32) -> list[str]:
    """Greedy translations of prompts (lists of ids), batched with left padding."""
    import torch

    out = [None] * len(prompts)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    for s in range(0, len(order), batch_size):
        idx = order[s:s + batch_size]
        n = max(len(prompts[i]) for i in idx)
        ids = torch.tensor([[PAD] * (n - len(prompts[i])) + prompts[i] for i in idx])
        mask = torch.tensor([[0] * (n - len(prompts[i])) + [1] * len(prompts[i]) for i in idx])
        with torch.inference_mode():
            gen = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, num_beams=1,
                                 max_new_tokens=max_new_tokens, eos_token_id=EOS, pad_token_id=PAD)
        for r, i in enumerate(idx):
            out[i] = tok.decode(gen[r, n:], skip_special_tokens=True).strip()
    return out


def has_term(g, key: str, text: str) -> bool:
    """Whether `text` has a German form of the term `key`; a separable verb's bare form (gibt) counts only with
    its particle ending a clause (gibt … ein.)."""
    from adaptsim.synth.lexicon import Verb

    return has_forms(g.forms(key), {e.de_prefix for e in g.lexicon.entries(key) if isinstance(e, Verb)
                                    and e.de_prefix}, text)


def has_forms(forms: set[str], particles: set[str], text: str) -> bool:
    words = set(re.findall(r"[\wÄÖÜäöüß-]+", text))
    for form in forms & words:
        if not particles or any(form.startswith(p) for p in particles):
            return True
        if any(re.search(rf"\b{re.escape(form)}\b[^.,?!]*\b{p}(?=[.,?!]| und\b| aber\b| oder\b)", text)
               for p in particles):
            return True
    return False


def occurrences(g, docs, k: int, plain: dict) -> list[dict]:
    """Every occurrence of a focus term in a reference after its first one in the document: document, segment,
    term, whether an earlier occurrence lies in the previous k segments (`in_window`), and whether one of those
    k post-edits corrected it (`corrected`: the term is in that reference and not in `plain`, the translations
    without context by (document, segment))."""
    out = []
    for d, doc in enumerate(docs):
        for i, (_, ref) in enumerate(doc):
            for key in doc.focus:
                if has_term(g, key, ref) and any(has_term(g, key, r) for _, r in doc[:i]):
                    window = range(max(0, i - k), i)
                    out.append({"doc": d, "seg": i, "term": key,
                                "in_window": any(has_term(g, key, doc[j][1]) for j in window),
                                "corrected": any(has_term(g, key, doc[j][1]) and not has_term(g, key, plain[d, j])
                                                 for j in window)})
    return out


def sign_test(gained: int, lost: int) -> float:
    """One-sided exact sign test (McNemar's, exact): the chance of at least `gained` of the cases that changed
    going one way if either way were equally likely."""
    n = gained + lost
    return sum(math.comb(n, j) for j in range(gained, n + 1)) / 2 ** n


def evaluate(data: dict | None = None) -> dict:
    import sacrebleu

    from adaptsim.synth import Generator

    g = data["generator"] if data else Generator(seed=SEED)
    docs = data["docs"] if data else stream_documents(g)[0]
    general_test = [(s, r) for _, _, s, r in read_tsv(DEMO / "general-test.tsv")]
    prompt = prompt_from_config()
    tok, model = load()
    out = {}
    t = time.perf_counter()
    hyps = greedy(model, tok, [prompt.ids(tok, s) for s, _ in general_test])
    out["general_test"] = {"bleu_greedy": round(sacrebleu.corpus_bleu(hyps, [[r for _, r in general_test]]).score, 2),
                           "segments": len(general_test), "seconds": round(time.perf_counter() - t, 1)}
    segs = [(d, i) for d in range(len(docs)) for i in range(len(docs[d]))]
    refs = [docs[d][i][1] for d, i in segs]
    hyp = {}
    for k in (0, 3, MAX_CONTEXT):
        t = time.perf_counter()
        prompts = [prompt.ids(tok, docs[d][i][0], docs[d][max(0, i - k):i]) for d, i in segs]
        hyp[k] = dict(zip(segs, greedy(model, tok, prompts)))
        out[f"docs_context_{k}"] = {"bleu_greedy": round(sacrebleu.corpus_bleu([hyp[k][s] for s in segs],
                                                                                [refs]).score, 2),
                                    "seconds": round(time.perf_counter() - t, 1)}
    ambiguous = set(g.terms("ambiguous"))
    for k in sorted({3, MAX_CONTEXT}):
        occ = occurrences(g, docs, k, hyp[0])
        rates = {}
        for subset, rows in (("after_first", occ), ("in_window", [o for o in occ if o["in_window"]]),
                             ("corrected", [o for o in occ if o["corrected"]])):
            none = [has_term(g, o["term"], hyp[0][o["doc"], o["seg"]]) for o in rows]
            ctx = [has_term(g, o["term"], hyp[k][o["doc"], o["seg"]]) for o in rows]
            amb = [o["term"] in ambiguous for o in rows]
            gained, lost = sum(c and not n for n, c in zip(none, ctx)), sum(n and not c for n, c in zip(none, ctx))
            rates[subset] = {
                "occurrences": len(rows), "right_without_context": sum(none), "right_with_context": sum(ctx),
                "gained": gained, "lost": lost, "sign_test_p": round(sign_test(gained, lost), 4),
                "ambiguous_occurrences": sum(amb),
                "ambiguous_right_without_context": sum(n for n, a in zip(none, amb) if a),
                "ambiguous_right_with_context": sum(c for c, a in zip(ctx, amb) if a)}
        out[f"focus_terms_k{k}"] = rates
    out["examples"] = [{"source": docs[0][i][0], "reference": docs[0][i][1], "without_context": hyp[0][0, i],
                        f"with_{MAX_CONTEXT}_pairs": hyp[MAX_CONTEXT][0, i]} for i in (2, 6, 9)]
    return out


def _without_seconds(value):
    """An evaluation without its timings (what must reproduce)."""
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if k != "seconds"}
    return [_without_seconds(v) for v in value] if isinstance(value, list) else value


def reevaluate() -> int:
    """The committed model measured again and held against its manifest's evaluation, timings aside; the manifest is
    left as it is (a check must not dirty the tree). 0 where every figure reproduces, 1 (naming the first that does
    not) otherwise."""
    recorded = json.loads((OUT / "manifest.json").read_text(encoding="utf-8"))["evaluation"]
    measured = evaluate()
    print(json.dumps(measured, indent=1, ensure_ascii=False))
    differ = [k for k in sorted({*recorded, *measured})
              if _without_seconds(recorded.get(k)) != _without_seconds(measured.get(k))]
    if differ:
        print(f"make_demo_lm.py: the manifest's evaluation does not reproduce: {', '.join(differ)}", file=sys.stderr)
        return 1
    print("make_demo_lm.py: the manifest's evaluation reproduces (timings aside)", file=sys.stderr)
    return 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=TRAIN["steps"], help="training steps (default: %(default)s)")
    p.add_argument("--evaluate", action="store_true", help="measure the model in data/demo/lm again and say whether "
                   "its manifest's evaluation reproduces; train and write nothing")
    p.add_argument("--work", default="outputs/demo-lm-work", help="training log and sentencepiece model go here")
    args = p.parse_args()
    os.chdir(ROOT)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    if args.evaluate:
        sys.exit(reevaluate())
    else:
        work = Path(args.work)
        data = make_data()
        prompt = prompt_from_config()
        texts = [prompt.example.format(source=en, target=de, source_lang=prompt.source_lang,
                                       target_lang=prompt.target_lang).strip()
                 for en, de in data["corpus"] + [p for d in data["context_docs"] for p in d]]
        tok = train_tokenizer(texts, work)
        seqs, n_ctx = sequences(data, tok, prompt)
        print(f"data: {len(data['corpus'])} pairs, {len(data['context_docs'])} context documents, {len(seqs)} "
              f"sequences ({time.perf_counter() - t0:.0f} s)", flush=True)
        summary = train(seqs, tok, args.steps, work / "train_log.jsonl")
        save(summary.pop("model"), tok)
        info = {"seed": SEED, "training_pairs_without_context": len(data["corpus"]),
                "software_share": SOFTWARE_SHARE, "focus_term_training_sentences": RARE_COUNT,
                "stream_focus_terms": sorted(data["focus"]), "context_documents": len(data["context_docs"]),
                "segments_per_context_document": SEGS_PER_CONTEXT_DOC,
                "technical_document_share": TECHNICAL_DOC_SHARE, "usual_sense_software_sentences": USUAL_COUNT,
                "max_context_pairs": MAX_CONTEXT, "sequences": len(seqs), "sequences_with_context": n_ctx,
                "vocab_size": len(tok)}
        manifest = {"data": info, "prompt": {k: getattr(prompt, k) for k in ("instruction", "example", "query",
                                                                             "target_prefix", "chat")},
                    "arch": {"model_type": "llama", **ARCH}, "training": {**TRAIN, **summary,
                                                                          "wall_seconds": round(time.perf_counter()
                                                                                                - t0, 1)},
                    "torch": torch.__version__}
        manifest["evaluation"] = evaluate(data)
    files = sorted(f for f in OUT.iterdir() if f.is_file() and f.name != "manifest.json")
    manifest["model_bytes"] = sum(f.stat().st_size for f in files)
    manifest["sha256"] = {f.name: sha256(f) for f in files}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    ev = manifest["evaluation"]
    print(json.dumps({"training": {k: manifest["training"].get(k) for k in ("steps", "parameters", "train_seconds",
                                                                           "wall_seconds")},
                      "model_bytes": manifest["model_bytes"],
                      "general_test_bleu": ev["general_test"]["bleu_greedy"],
                      **{k: v["bleu_greedy"] for k, v in ev.items() if k.startswith("docs_context")},
                      **{k: v for k, v in ev.items() if k.startswith("focus_terms")},
                      "examples": ev["examples"], "total_seconds": round(time.perf_counter() - t0)},
                     indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
