"""Train a decoder-only demo model (data/demo/lm) meant to translate the demo language using in-context pairs.

Status: it does not yet. Trained as below it translates well without context (BLEU 99.9 on general-test.tsv, 67 on
the demo stream), but a focus term after its first occurrence is right in 34 of 67 hypotheses without context and in
23 with the previous 3 reference pairs in the prompt; five other variants of the data gave the same picture
(docs/beyond_paper.md, "The demo: not yet a model that reads its context"). So the model is not committed.

    python scripts/make_demo_lm.py                 # data + tokenizer + model + evaluation (about 25 minutes, 1 core)
    python scripts/make_demo_lm.py --steps 300     # a short run to try changes (figures are then poor)
    python scripts/make_demo_lm.py --evaluate      # only measure the committed model again (about 1 minute)

What `method=icl` needs from a model: before translating segment i of a document, the k earlier (source,
post-edit) pairs are put into its prompt (adaptsim/prompt.py), and a term's translation shown there should be
used. This script is to make a model small enough to commit that does so on the embedded demo stream
(data/demo/docs.tsv), the way data/demo/model (scripts/make_demo.py) is the one for the adaptation methods.

Everything is seeded: the generator (adaptsim.synth) draws each set from its own seeded RNG, sentencepiece and
torch run single-threaded, batches are drawn from a seeded RNG and training stops after a fixed number of steps,
so the same torch build on the same kind of CPU gives the same files.

What the model may have seen follows scripts/make_demo.py: the demo documents are regenerated in memory (same
generator, same seed; never read from data/demo/docs.tsv or heldout.tsv) only to know their focus terms and to
keep their sentences (and general-test.tsv's) out of training. Training text:
- make_demo.py's own 100k-pair corpus (the same call, so the same pairs): general text, 5 % software sentences
  without the stream's focus terms or any other ambiguous word's technical sense, plus RARE_COUNT (60) software
  sentences per focus term. So driver → Treiber is a known but rare translation (60 of ~3,700 sentences with
  "driver"), and without context the model says Fahrer. Each pair is a sequence without context.
- N_CONTEXT_DOCS generated documents of SEGS_PER_CONTEXT_DOC segments in which 2 ambiguous terms (and, in half,
  one software term) recur. In each document every ambiguous English word takes ONE sense, drawn per document:
  technical (table → Tabelle) or general (table → Tisch) with even odds, both in software sentences, so nothing
  in a sentence tells the sense and only earlier segments do. The stream's own focus terms never occur in their
  technical sense here (their general sense may: "the driver" → "der Fahrer" in a software sentence) and are
  never a document's focus; the stream's new focus terms (directory → Verzeichnis …) do not occur at all. Each
  segment is a sequence whose prompt holds the previous min(i, c) pairs of its document, c drawn from
  1..MAX_CONTEXT per sequence (the stream's first segment has none): copying the sense shown there is the only
  way to predict it, and the model learns it on 22 ambiguous words to use it on the stream's 8.
- GENERAL_DOC_SHARE of the documents are general-domain ones (recurring general nouns), where context and
  prior agree.
A sequence is exactly what adaptsim translates with: Prompt.ids(tokenizer, source, context) +
Prompt.target_ids(tokenizer, target, eos) with the prompt block of configs/model/demo-lm.yaml; the loss is on
the target and the end token only (the prompt's positions are labelled -100, and the output layer is applied at
the target's positions only: the same loss, in less time).

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
  (k = MAX_CONTEXT, and k = 3), and among those the ones whose earlier occurrence lies inside the k pairs.

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
GENERAL_DOC_SHARE = 0.1
RARE_SENSE_ODDS = 0.5   # per document and focus word: its rare sense (driver → Treiber), else its usual one
N_NONCE, NONCE_DOC_SHARE = 300, 0.45  # invented nouns with a per-document meaning (see Senses)
MAX_CONTEXT = 4         # earlier pairs in a training prompt (at most), and k of the evaluation
VOCAB = 2000
ARCH = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 4, "max_position_embeddings": 512, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True}
TRAIN = {"steps": 3000, "batch_tokens": 3000, "lr": 3e-3, "warmup": 200, "final_lr_share": 0.05,
         "weight_decay": 0.01, "betas": (0.9, 0.98), "clip_norm": 1.0}
UNK, BOS, EOS, PAD = 0, 1, 2, 3
DEMO = ROOT / "data" / "demo"
OUT = DEMO / "lm"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prompt_from_config():
    """adaptsim.prompt.Prompt from configs/model/demo-lm.yaml, as adaptsim composes it."""
    from adaptsim.hydra_app import compose
    from adaptsim.prompt import Prompt

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


class Senses:
    """What the context documents are about. (1) The ambiguous words other than the stream's focus terms, in a
    per-document sense: usual (table → Tisch) or rare (table → Tabelle, seen in RARE_COUNT sentences without
    context, as the stream's focus terms are). (2) N_NONCE invented English nouns ("blicket"), each given in
    each document the German word of a random lexicon noun: they occur in no other training text, so an
    earlier pair of the document is the only way to know one's translation, which never comes from a memorised
    association (what copying from context learnt on 22 words alone was). The stream's focus words (either
    sense, either language) occur in no context document."""

    def __init__(self, g, focus: set[str]):
        from adaptsim.synth.lexicon import Verb, _en

        lex = self.lex = g.lexicon
        self.g, self.focus = g, focus
        self.stream_en = {_en(e) for k in focus for e in lex.entries(k)}
        self.stream_de = set().union(*(g.forms(k) for k in focus))
        self.pairs = []  # (rare sense entry, usual sense entry)
        for key in g.terms("ambiguous"):
            e = lex.entries(key)[0]
            if key not in focus:
                self.pairs.append((e, next(x for x in lex.nouns + lex.verbs
                                           if x.domain == "general" and type(x) is type(e) and _en(x) == _en(e))))
        self._forms = {r.key: (self.entry_forms(r), {r.de_prefix} if isinstance(r, Verb) and r.de_prefix else set())
                       for r, _ in self.pairs}
        rng = random.Random(f"{SEED}|nonce")
        english = {w for e in lex.nouns + lex.verbs + lex.adjectives for w in _en(e).split()}
        self.nonce = []
        while len(self.nonce) < N_NONCE:
            w = "".join(rng.choice(c) for c in ("bdfgklmnprstvz", "aeiou", "lmnr", "bdgkptz", "aeiou", "lnrst")
                        [:rng.choice((4, 5, 6))])
            if w not in english and w not in self.nonce:
                self.nonce.append(w)
        self.meanings = [n for n in lex.nouns if not self.entry_forms(n) & self.stream_de]

    @staticmethod
    def entry_forms(e) -> set[str]:
        from adaptsim.synth import german
        from adaptsim.synth.lexicon import Noun

        if isinstance(e, Noun):
            return {e.de_sg, e.de_obl, e.de_pl, german.noun_form(e, "pl", "dat")}
        finite = {german.present(e, p) for p in ("1sg", "3sg", "1pl")}
        return finite | {german.infinitive(e)} | {e.de_prefix + f for f in finite if e.de_prefix}

    def nonce_noun(self, rng: random.Random, taken=()):
        """An invented English noun meaning, in this document, a random lexicon noun (its German, gender, tags)."""
        from dataclasses import replace

        w = rng.choice([x for x in self.nonce if x not in taken])
        y = rng.choice(self.meanings)
        e = replace(y, domain="both", en_sg=w, en_pl=w + "s")
        self._forms[e.key] = (self.entry_forms(e), set())
        return e

    def forms(self, key: str) -> tuple[set[str], set[str]]:
        """(German forms, separable particles) of an entry key."""
        return self._forms.get(key) or (self.g.forms(key), set())

    def view(self, domain: str, rare=(), usual=(), nonce=(), allowed=None):
        """The domain's entries without the stream's focus words (any sense) and without the words of
        self.pairs except in the senses given (`rare`, `usual`); plus `nonce` nouns, whose German words mean
        nothing else in the document."""
        from dataclasses import replace

        from adaptsim.synth.lexicon import Noun, _en

        base = self.lex.view(domain, allowed)
        taken = {_en(e) for e, _ in self.pairs} | self.stream_en
        nonce_de = {e.de_sg for e in nonce}

        def keep(e):
            return (_en(e) not in taken and getattr(e, "de_sg", None) not in nonce_de and e.key not in self.focus
                    and not self.entry_forms(e) & self.stream_de)
        extra = list(rare) + list(usual) + list(nonce)
        return replace(base, nouns=[e for e in base.nouns if keep(e)] + [e for e in extra if isinstance(e, Noun)],
                       adjectives=list(base.adjectives), adverbs=list(base.adverbs),
                       verbs=[e for e in base.verbs if keep(e)] + [e for e in extra if not isinstance(e, Noun)])


def rare_sentences(senses: Senses, allowed: set[str], exclude: set[str]) -> list[tuple[str, str]]:
    """RARE_COUNT software sentences per rare sense of senses.pairs, without context (as make_demo.py's)."""
    from adaptsim.synth.builder import Builder

    rng = random.Random(f"{SEED}|rare-senses")
    seen, out = set(exclude), []
    for rare, _ in senses.pairs:
        b = Builder(senses.view("software", rare=[rare], allowed=allowed | {rare.key}), rng)
        for _ in range(RARE_COUNT):
            pair = focused(senses.g, b, "software", rare.key, senses.forms(rare.key)[0], seen)
            if pair:
                seen.add(pair[0])
                out.append(pair)
    return out


def context_documents(senses: Senses, exclude: set[str]) -> list[tuple[list, list]]:
    """N_CONTEXT_DOCS documents whose focus words take a per-document translation (see above): (pairs, the
    translations only the context may teach, as (German forms, separable particles))."""
    from adaptsim.synth.builder import Builder

    g = senses.g
    new = [k for k in g.terms("new") if k not in senses.focus]
    usual_all = [u for _, u in senses.pairs]
    rng = random.Random(f"{SEED}|context-documents")
    seen = set(exclude)
    docs = []
    for _ in range(N_CONTEXT_DOCS):
        only, kind = [], rng.random()
        if kind < GENERAL_DOC_SHARE:
            view = senses.view("general", usual=usual_all)
            terms = rng.sample([x.key for x in view.nouns if x.domain == "general"], 2)
        elif kind < GENERAL_DOC_SHARE + NONCE_DOC_SHARE:
            nonce = [senses.nonce_noun(rng)]
            if rng.random() < 0.5:
                nonce.append(senses.nonce_noun(rng, taken={nonce[0].en_sg}))
            view = senses.view(rng.choice(("general", "software")), usual=usual_all, nonce=nonce)
            terms, only = [e.key for e in nonce], [e.key for e in nonce]
        else:
            about = rng.sample(senses.pairs, 2)
            rare = [r for r, _ in about if rng.random() < RARE_SENSE_ODDS]
            # every other word of senses.pairs in its usual sense: a rare sense is always a focus word's
            view = senses.view("software", rare=rare, usual=[u for r, u in senses.pairs if r not in rare])
            terms = [r.key if r in rare else u.key for r, u in about]
            only = [r.key for r in rare]
            if rng.random() < 0.5:
                terms.append(rng.choice(new))
        b = Builder(view, rng, focus=terms, p_focus=0.3)
        plan = [terms[i % len(terms)] for i in range(SEGS_PER_CONTEXT_DOC)]
        rng.shuffle(plan)
        pairs = []
        for req in plan:
            pair = focused(g, b, view.domain, req, senses.forms(req)[0], seen)
            if pair:  # else no new sentence with this term: the document is a segment shorter
                seen.add(pair[0])
                pairs.append(pair)
        docs.append((pairs, [senses.forms(k) for k in only]))
    return docs


def focused(g, b, domain: str, key: str, forms: set[str], seen: set[str]):
    """A new sentence pair whose German has the term `key` (one of `forms`), or None."""
    for _ in range(200):
        res = g._sentence(b, domain, require=key)
        if res is None or res[0][0] in seen:
            continue
        pair, used = res
        if key in used and set(re.findall(r"[\wÄÖÜäöüß-]+", pair[1])) & forms:
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
    senses = Senses(g, focus)
    rare = rare_sentences(senses, set(seen_terms), doc_en | held_en | test_en | {en for en, _ in corpus})
    ctx_docs = context_documents(senses, doc_en | held_en | test_en)
    return {"generator": g, "docs": docs, "focus": focus, "corpus": corpus + rare, "context_docs": ctx_docs,
            "general_test": general_test, "senses": senses}


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
    out = [(prompt.ids(tok, en), prompt.target_ids(tok, de, EOS)) for en, de in data["corpus"]]
    with_context = left_out = 0
    for doc, only in data["context_docs"]:
        for i, (en, de) in enumerate(doc):
            c = min(i, rng.randint(1, MAX_CONTEXT))
            shown = [t for t in only if has_forms(*t, de)]  # translations this target has that only context shows

            def unshown(c):
                return any(not any(has_forms(*t, r) for _, r in doc[i - c:i]) for t in shown)
            while unshown(c) and c < min(i, MAX_CONTEXT):
                c += 1  # more earlier pairs, up to MAX_CONTEXT, until they show it
            if unshown(c):
                left_out += 1  # a translation the context does not show: never learnt without context
                continue
            out.append((prompt.ids(tok, en, doc[i - c:i]), prompt.target_ids(tok, de, EOS)))
            with_context += c > 0
    return out, with_context, left_out


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


def occurrences(g, docs, k: int) -> list[dict]:
    """Every occurrence of a focus term in a reference after its first one in the document: (document,
    segment, term, whether an earlier occurrence lies in the previous k segments)."""
    out = []
    for d, doc in enumerate(docs):
        for i, (_, ref) in enumerate(doc):
            for key in doc.focus:
                if has_term(g, key, ref) and any(has_term(g, key, r) for _, r in doc[:i]):
                    out.append({"doc": d, "seg": i, "term": key,
                                "in_window": any(has_term(g, key, r) for _, r in doc[max(0, i - k):i])})
    return out


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
    for k in sorted({3, MAX_CONTEXT}):
        occ = occurrences(g, docs, k)
        rates = {}
        for subset, rows in (("after_first", occ), ("in_window", [o for o in occ if o["in_window"]])):
            none = sum(has_term(g, o["term"], hyp[0][o["doc"], o["seg"]]) for o in rows)
            ctx = sum(has_term(g, o["term"], hyp[k][o["doc"], o["seg"]]) for o in rows)
            amb = [o for o in rows if o["term"] in set(g.terms("ambiguous"))]
            rates[subset] = {
                "occurrences": len(rows), "right_without_context": none, "right_with_context": ctx,
                "rate_without_context": round(none / len(rows), 3), "rate_with_context": round(ctx / len(rows), 3),
                "ambiguous_occurrences": len(amb),
                "ambiguous_right_without_context": sum(has_term(g, o["term"], hyp[0][o["doc"], o["seg"]]) for o in amb),
                "ambiguous_right_with_context": sum(has_term(g, o["term"], hyp[k][o["doc"], o["seg"]]) for o in amb)}
        out[f"focus_terms_k{k}"] = rates
    out["examples"] = [{"source": docs[0][i][0], "reference": docs[0][i][1], "without_context": hyp[0][0, i],
                        f"with_{MAX_CONTEXT}_pairs": hyp[MAX_CONTEXT][0, i]} for i in (2, 6, 9)]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=TRAIN["steps"], help="training steps (default: %(default)s)")
    p.add_argument("--evaluate", action="store_true", help="measure the model in data/demo/lm, train nothing")
    p.add_argument("--work", default="outputs/demo-lm-work", help="training log and sentencepiece model go here")
    args = p.parse_args()
    os.chdir(ROOT)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    if args.evaluate:
        manifest = json.loads((OUT / "manifest.json").read_text(encoding="utf-8"))
        manifest["evaluation"] = evaluate()
    else:
        work = Path(args.work)
        data = make_data()
        prompt = prompt_from_config()
        texts = [prompt.example.format(source=en, target=de, source_lang=prompt.source_lang,
                                       target_lang=prompt.target_lang).strip()
                 for en, de in data["corpus"] + [p for d, _ in data["context_docs"] for p in d]]
        tok = train_tokenizer(texts, work)
        seqs, n_ctx, n_left_out = sequences(data, tok, prompt)
        print(f"data: {len(data['corpus'])} pairs, {len(data['context_docs'])} context documents, {len(seqs)} "
              f"sequences ({time.perf_counter() - t0:.0f} s)", flush=True)
        summary = train(seqs, tok, args.steps, work / "train_log.jsonl")
        save(summary.pop("model"), tok)
        info = {"seed": SEED, "training_pairs_without_context": len(data["corpus"]),
                "software_share": SOFTWARE_SHARE, "focus_term_training_sentences": RARE_COUNT,
                "stream_focus_terms": sorted(data["focus"]), "context_documents": len(data["context_docs"]),
                "segments_per_context_document": SEGS_PER_CONTEXT_DOC, "general_document_share": GENERAL_DOC_SHARE,
                "rare_sense_odds": RARE_SENSE_ODDS, "nonce_words": N_NONCE, "nonce_document_share": NONCE_DOC_SHARE,
                "max_context_pairs": MAX_CONTEXT, "sequences": len(seqs), "sequences_with_context": n_ctx,
                "sequences_left_out_unshown_sense": n_left_out, "vocab_size": len(tok)}
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
