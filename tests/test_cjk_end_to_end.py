"""A demo-sized end-to-end run into Chinese (issue #66): `run`, `table`, `findings`, `compare` and `serve` on a tiny
Marian model trained here on a generated en→zh language, so every path a run into a language written without spaces
takes is exercised, not only the scorers.

- The language: English template sentences over a small bilingual lexicon (subjects, verbs, objects, adverbs of time),
  their Chinese written without spaces (`用户今天安装驱动程序。`). The model learns general text (`the driver` only as
  a person, 司机); the stream is 6 software documents × 6 segments, each document about two domain terms that recur
  in it and in its neighbour (驱动程序 and 防火墙 the model never saw as objects), so R1 can move.
- `run -m method=none,full,lasso` (γ = 0.1: at the paper's 1e-2 three SGD steps teach this 54k-parameter model no
  word, and every R1 stays 0) into `model.target_lang=zh`: BLEU/SBLEU tokenised `zh`, TER with sacrebleu's Asian
  options, R0/R1 on jieba's words (signatures say so); the scores equal sacrebleu's and an independent count of
  jieba's content words; a run scored with 13a is refused beside them in one line by table, findings and compare.
- `serve` through its web API (as tests/test_serve.py): completions spell a Chinese prefix, the validated references
  are scored on jieba's words, and `run` over the session's references.tsv translates what the page showed.

Skipped without the `cjk` extra (jieba); the serve part without starlette/httpx.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

jieba = pytest.importorskip("jieba")

import torch  # noqa: E402
from sacrebleu.metrics import BLEU, TER  # noqa: E402

from adaptsim.cli import main  # noqa: E402

# -- the generated language -----------------------------------------------------------------------------------

SUBJECTS = [("The user", "用户"), ("The engineer", "工程师"), ("The teacher", "老师"), ("My colleague", "我的同事"),
            ("The student", "学生"), ("The administrator", "管理员")]
VERBS = [("opens", "打开"), ("checks", "检查"), ("updates", "更新"), ("deletes", "删除"), ("installs", "安装"),
         ("closes", "关闭"), ("tests", "测试"), ("repairs", "修理")]
TIMES = [("today", "今天"), ("tomorrow", "明天"), ("again", "再次")]
GENERAL = [("the window", "窗户"), ("the door", "门"), ("the file", "文件"), ("the computer", "电脑"),
           ("the book", "书"), ("the car", "汽车"), ("the program", "程序")]
TERMS = [("the driver", "驱动程序"), ("the firewall", "防火墙"), ("the server", "服务器"), ("the database", "数据库"),
         ("the printer", "打印机"), ("the router", "路由器")]
DOCUMENTS, SEGMENTS = 6, 6
METHODS = ("none", "full", "lasso")
LR = "method.lr=0.1"


def sentence(subject, verb, obj, time=None) -> tuple[str, str]:
    """`The user installs the driver today.` → `用户今天安装驱动程序。`"""
    (s_en, s_zh), (v_en, v_zh), (o_en, o_zh) = subject, verb, obj
    if time is None:
        return f"{s_en} {v_en} {o_en}.", f"{s_zh}{v_zh}{o_zh}。"
    return f"{s_en} {v_en} {o_en} {time[0]}.", f"{s_zh}{time[1]}{v_zh}{o_zh}。"


def general_text() -> list[tuple[str, str]]:
    """The model's training text (156 pairs): general objects and four of the terms; `The driver` is a person."""
    subjects = SUBJECTS + [("The driver", "司机")]
    return [sentence(s, v, o, TIMES[(i + j) % 3] if (i + k) % 3 == 0 else None)
            for i, s in enumerate(subjects) for j, v in enumerate(VERBS) for k, o in enumerate(GENERAL + TERMS[2:])
            if (i + 2 * j + k) % 4 == 0]


def software_stream() -> list[tuple[str, int, str, str]]:
    """(doc_id, seg_id, source, reference): document d about TERMS[d] and TERMS[d + 1], by turns."""
    rows = []
    for d in range(DOCUMENTS):
        terms = TERMS[d], TERMS[(d + 1) % len(TERMS)]
        for i in range(SEGMENTS):
            source, reference = sentence(SUBJECTS[(d + i) % len(SUBJECTS)], VERBS[(3 * d + i) % len(VERBS)],
                                         terms[i % 2], TIMES[(d + i) % 3] if i % 2 else None)
            rows.append((f"doc{d + 1}", i + 1, source, reference))
    return rows


def content_words_by_jieba(reference: str) -> set[str]:
    """Apart from adaptsim's pipeline: jieba's precise mode, stopwords-iso zh out, words with a letter or digit."""
    import stopwordsiso

    stop = stopwordsiso.stopwords("zh")
    return {w for w in jieba.lcut(reference) if w not in stop and any(c.isalnum() for c in w)}


def first_and_second(references: list[str], doc_ids: list[str]) -> list[tuple[int, int]]:
    """Per segment: its reference's content words at their first and second occurrence in the document (R0's and R1's
    denominators under reset=document)."""
    seen, previous, out = {}, None, []
    for reference, doc in zip(references, doc_ids):
        if doc != previous:
            seen, previous = {}, doc
        words = content_words_by_jieba(reference)
        out.append((sum(seen.get(w, 0) == 0 for w in words), sum(seen.get(w, 0) == 1 for w in words)))
        for w in words:
            seen[w] = seen.get(w, 0) + 1
    return out


HAN = re.compile(r"[\u4e00-\u9fff]")

# -- the model, the stream and the runs (built once) --------------------------------------------------------------


@pytest.fixture(scope="module")
def zh_model(tmp_path_factory) -> Path:
    """A tiny Marian model of the generated language, as conftest builds the tests' (TINY_ARCH, one shared sentencepiece
    vocabulary; 60 full-batch Adam steps, which the Chinese side needs: 40 leave it without its end of sentence)."""
    from conftest import TINY_ARCH, _train_briefly
    from transformers import MarianTokenizer

    from adaptsim.basemodel.scratch_model import build_model, train_tokenizer

    out = tmp_path_factory.mktemp("zh") / "model"
    pairs, stream = general_text(), software_stream()
    # the vocabulary sees the stream's text too (the model does not): every Han character has a piece, none is <unk>
    train_tokenizer([s for s, _ in pairs] + [r[2] for r in stream], [t for _, t in pairs] + [r[3] for r in stream],
                    out, vocab_size=300, target_lang="zh")
    tokenizer = MarianTokenizer.from_pretrained(str(out))
    torch.manual_seed(1)
    model = build_model(dict(TINY_ARCH, share_encoder_decoder_embeddings=True, tie_word_embeddings=True), tokenizer,
                        seed=1)
    _train_briefly(model, tokenizer, pairs, steps=60)
    model.generation_config.max_length = 32
    model.save_pretrained(str(out))
    return out


@pytest.fixture(scope="module")
def zh_stream(tmp_path_factory) -> Path:
    from conftest import tsv_of

    return tsv_of(tmp_path_factory.mktemp("zh_data") / "software.zh.tsv", software_stream())


@pytest.fixture(scope="module")
def common(zh_model, zh_stream, device) -> list[str]:
    return [f"model.path={zh_model}", "model.name=tiny-en-zh", "model.target_lang=zh", "dataset=tsv",
            f"dataset.path={zh_stream}", "decode.beam_size=2", "decode.max_length=32", "progress=false", "threads=1",
            f"device={device}"]


def cli(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    return exit_.value.code


@pytest.fixture(scope="module")
def runs(tmp_path_factory, common) -> dict[str, Path]:
    """`run -m method=none,full,lasso` into zh (one directory per method under the sweep), and `none` scored with 13a
    beside it."""
    root = tmp_path_factory.mktemp("zh_runs")
    sweep = root / "sweep"
    assert cli(["run", "-m", f"hydra.sweep.dir={sweep}", "hydra.sweep.subdir=${method.name}", *common, LR,
                f"method={','.join(METHODS)}"]) == 0
    assert cli(["run", f"hydra.run.dir={root / 'none_13a'}", *common, "method=none", "metrics.tokenize=13a"]) == 0
    return {"sweep": sweep, **{m: sweep / m for m in METHODS}, "13a": root / "none_13a"}


def summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text(encoding="utf-8"))


def steps(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "steps.jsonl").read_text(encoding="utf-8").splitlines()]


# -- run ---------------------------------------------------------------------------------------------------------


def test_a_run_into_chinese_is_scored_on_jiebas_words_and_sacrebleus_zh_tokens(runs):
    stream = software_stream()
    references, doc_ids = [r[3] for r in stream], [r[0] for r in stream]
    expected_levels = first_and_second(references, doc_ids)
    segments = len(stream)
    for method in METHODS:
        done, rows = summary(runs[method]), steps(runs[method])
        assert done["status"] == "finished" and done["segments"] == segments, method
        sig = done["signatures"]
        print(f"{method}: R0 {done['scores']['R0']:.1f} ({done['counts']['R0']['num']}/{done['counts']['R0']['den']}) "
              f"R1 {done['scores']['R1']:.1f} ({done['counts']['R1']['num']}/{done['counts']['R1']['den']}) "
              f"BLEU {done['scores']['BLEU']:.2f} TER {done['scores']['TER']:.2f} chrF {done['scores']['chrF']:.2f}")
        # the signatures name the segmenter and the tokenisers
        assert sig["R"].startswith(f"R|lang:zh|tok:jieba-{jieba.__version__}|case:none|stop:iso-zh|scope:document|")
        assert "|tok:zh|" in sig["BLEU"] and "|tok:zh|" in sig["SBLEU"]
        assert "|norm:yes|punct:yes|asian:yes|" in sig["TER"]
        # words, not sentences: R0's and R1's denominators are jieba's content words, by document
        assert [(r["R0_den"], r["R1_den"]) for r in rows] == expected_levels
        assert done["counts"]["R0"]["den"] == sum(a for a, _ in expected_levels) >= 2 * segments
        assert done["counts"]["R1"]["den"] == sum(b for _, b in expected_levels) >= DOCUMENTS
        # the model writes Chinese, without spaces, and it is scored as sacrebleu scores Chinese
        hyps = [r["hypothesis"] for r in rows]
        assert sum(bool(HAN.search(h)) and " " not in h for h in hyps) >= 0.9 * segments
        assert (runs[method] / "hyps.txt").read_text(encoding="utf-8").splitlines() == hyps
        assert done["scores"]["BLEU"] == pytest.approx(BLEU(tokenize="zh").corpus_score(hyps, [references]).score,
                                                       abs=1e-9)
        assert done["scores"]["TER"] == pytest.approx(
            TER(normalized=True, asian_support=True).corpus_score(hyps, [references]).score, abs=1e-9)
    print(f"signatures: R {sig['R']} · BLEU {sig['BLEU']} · TER {sig['TER']}")
    assert steps(runs["none"])[0]["updates"] == 0 and sum(r["updates"] for r in steps(runs["lasso"])) >= segments


def test_the_same_hypotheses_scored_with_13a_differ_in_bleu_alone(runs):
    """metrics.tokenize=13a: the same translations (scoring changes nothing upstream), BLEU counted on 13a's "words"
    (whole sentences here); TER's Asian options follow the language, not the setting; R0/R1 unchanged."""
    zh, old = summary(runs["none"]), summary(runs["13a"])
    hyps = [r["hypothesis"] for r in steps(runs["13a"])]
    assert hyps == [r["hypothesis"] for r in steps(runs["none"])]
    assert "|tok:13a|" in old["signatures"]["BLEU"] and old["signatures"]["TER"] == zh["signatures"]["TER"]
    references = [r[3] for r in software_stream()]
    assert old["scores"]["BLEU"] == pytest.approx(BLEU(tokenize="13a").corpus_score(hyps, [references]).score,
                                                  abs=1e-9)
    print(f"none: BLEU {zh['scores']['BLEU']:.2f} (zh) vs {old['scores']['BLEU']:.2f} (13a)")
    assert old["scores"]["BLEU"] < zh["scores"]["BLEU"]
    for key in ("R0", "R1", "TER", "chrF"):
        assert old["scores"][key] == zh["scores"][key], key


# -- table, findings, compare ---------------------------------------------------------------------------------------


def test_table_and_findings_over_the_chinese_sweep(runs, capsys):
    assert cli(["table", str(runs["sweep"]), "--significance"]) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0].strip("| *"): line for line in out.splitlines() if line.startswith("| ")
            and " | " in line and not line.startswith("| method")}
    assert {"baseline", "full", "lasso"} <= set(rows), out
    lasso = summary(runs["lasso"])["scores"]
    assert f"{lasso['R0']:.1f}" in rows["lasso"] and f"{lasso['BLEU']:.1f}" in rows["lasso"]
    assert "BLEU and SBLEU tokenised with zh; TER with sacrebleu's Asian options (norm:yes|asian:yes)" in out
    assert f"{len(software_stream())} segments" in out and "model tiny-en-zh" in out

    assert cli(["findings", str(runs["sweep"])]) == 0
    out = capsys.readouterr().out
    numbered = [line for line in out.splitlines() if re.match(r"^\| [1-8] \| ", line)]
    assert len(numbered) == 8 and "| 1 | full raises R1 | full R1 " in numbered[0], out

    assert cli(["compare", str(runs["none"]), str(runs["lasso"]), "--metrics", "BLEU,TER,R0,R1"]) == 0
    assert "BLEU tokenised with zh; TER with sacrebleu's Asian options" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["table", "findings", "compare"])
def test_a_run_scored_with_13a_is_refused_beside_them_in_one_line(runs, capsys, command):
    argv = [command, str(runs["sweep"] if command != "compare" else runs["none"]), str(runs["13a"])]
    assert cli(argv) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    assert re.fullmatch(rf"adaptsim {command}: error: runs scored with different tokenisations \(BLEU\.tok: zh in "
                        rf"{re.escape(str(runs['sweep']))}/\w+, 13a in {re.escape(str(runs['13a']))}\); compare runs "
                        r"scored with one metrics\.tokenize", err), err


# -- serve -------------------------------------------------------------------------------------------------------

EFFORT = {"keystrokes": 3, "mouse_actions": 1, "word_strokes": 1, "seconds": 2.0, "accepted_completions": 0,
          "completion_requests": 1}


@pytest.fixture(scope="module")
def served(tmp_path_factory, common):
    """A serve session (method lasso, 2 documents × 3 segments) whose translator validates the stream's references;
    (its lasso run directory, the hypotheses the page showed, the completions it was offered)."""
    pytest.importorskip("starlette")
    pytest.importorskip("httpx")
    from starlette.testclient import TestClient

    from adaptsim.commands.serve import configs
    from adaptsim.serve.app import create_app
    from adaptsim.serve.state import ServeSession

    root = tmp_path_factory.mktemp("zh_serve")
    argv = [f"serve.dir={root / 's'}", *common, "method=lasso", LR,
            "dataset.max_documents=2", "dataset.max_segments=3"]
    session = ServeSession(configs(argv), argv)
    client = TestClient(create_app(session, "token", ["testserver"], 4096), headers={"X-Adaptsim-Token": "token"})
    reference = {source: ref for _, _, source, ref in software_stream()}
    shown, completions = [], []
    try:
        while not (state := client.get("/api/state").json())["finished"]:
            assert HAN.search(state["hypothesis"]), state
            shown.append(state["hypothesis"])
            target = reference[state["sources"][state["segment"]]]
            prefix = target[:3]  # the reference's first three characters typed: 用户打, 工程师, …
            done = client.post("/api/complete", json={"position": state["position"], "prefix": prefix})
            assert done.status_code == 200, done.text
            completions.append((prefix, done.json()["completion"]))
            answer = client.post("/api/validate", json={"position": state["position"], "text": target,
                                                        "effort": EFFORT})
            assert answer.status_code == 200, answer.text
    finally:
        session.close()
    return root / "s" / "lasso", shown, completions


def test_serve_adapts_on_chinese_post_edits_and_scores_them_on_jiebas_words(served, common, tmp_path):
    run, shown, completions = served
    assert all(done.startswith(prefix) for prefix, done in completions)  # the page's text kept, Chinese continued
    assert sum(len(done) > len(prefix) for prefix, done in completions) >= len(completions) // 2
    done, rows = summary(run), steps(run)
    assert done["status"] == "finished" and done["command"] == "serve" and done["segments"] == len(shown) == 6
    assert done["signatures"]["R"].startswith(f"R|lang:zh|tok:jieba-{jieba.__version__}|case:none|")
    assert "|tok:zh|" in done["signatures"]["BLEU"] and "|asian:yes|" in done["signatures"]["TER"]
    assert [r["hypothesis"] for r in rows] == shown
    references = [r["reference"] for r in rows]
    assert [(r["R0_den"], r["R1_den"]) for r in rows] == first_and_second(references, [r["doc_id"] for r in rows])
    print(f"serve lasso: R0 {done['scores']['R0']:.1f} R1 {done['scores']['R1']:.1f} BLEU {done['scores']['BLEU']:.2f} "
          f"KSMR {done['scores']['KSMR']:.2f}; completions {completions}")
    # `run` over the session's references translates what the page showed, with the same updates and scores
    out = tmp_path / "sim"
    argv = [f"hydra.run.dir={out}", *[o for o in common if not o.startswith("dataset.path=")],
            f"dataset.path={run / 'references.tsv'}", "method=lasso", LR, "metrics.interactive=char"]
    assert cli(["run", *argv]) == 0
    simulated = summary(out)
    assert [r["hypothesis"] for r in steps(out)] == shown
    assert [r["ppl_after"] for r in steps(out)] == [r["ppl_after"] for r in rows]
    for key in ("R0", "R1", "BLEU", "TER"):
        assert simulated["scores"][key] == pytest.approx(done["scores"][key]), key


def test_table_over_the_serve_session(served, capsys):
    run, _, _ = served
    assert cli(["table", str(run.parent)]) == 0
    out = capsys.readouterr().out
    assert "| lasso |" in out and "tokenised with zh" in out, out


def test_serve_counts_a_chinese_translators_words_by_the_segmenter_as_the_simulated_translator_does(served):
    """A validated segment's words are the segmenter's (adaptsim/serve/human.py `effort_of`), so WSR, MAR and
    `study`'s seconds per word are per word in Chinese, not per sentence."""
    from adaptsim.metrics.segmenters import segmenter_for
    from adaptsim.metrics.words import is_word

    run, _, _ = served
    segmenter = segmenter_for("zh")
    rows = steps(run)
    assert [r["effort"]["words"] for r in rows] == [sum(map(is_word, segmenter.words(r["reference"]))) for r in rows]
