"""The simulated translator of `metrics.interactive` (adaptsim/loop/interactive.py) and the prefix-constrained search it
drives (adaptsim/models/decode/prefix.py): hand-computed counts of both modes, the search against the lean search and
against `generate` with the same prefix forced, and the simulation inside the loop (every method's record, lockstep,
resume, reports)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from conftest import curves_from_steps_are_the_stored_ones
from test_decode import PROBE, TED, random_model
from test_tm import run, summary
from transformers import LogitsProcessorList

from adaptsim.cli import main
from adaptsim.loop import interactive
from adaptsim.metrics.effort import Effort
from adaptsim.models import Seq2SeqModel, decode
from adaptsim.models.decode.prefix import WORD_START, PieceIndex, PrefixSearch, Spelling


def scripted(answers: dict[str, str]):
    """A system that proposes what the test says it does once the user has validated a given text."""
    return lambda validated: answers[validated]


def counts(effort: Effort) -> tuple:
    return effort.KS, effort.WS, effort.MA, effort.chars, effort.words, effort.capped


# NMT-Keras' counting, transcribed step by step from its own simulation (lvapeab/nmt-keras, branch interactive_NMT,
# commit 56c18d5; word.py = interactive_nmt_simulation.py with --prefix, char.py = interactive_char_nmt_simulation.py;
# line numbers are theirs). `count` takes the hypotheses the user is shown: the first, then one after each correction.

def test_nmt_keras_word_level_substitutions_after_validated_words():
    """"a b x y e" → "a b c d e". word.py: "a", "b" match (534–537: h = 2, last_checked_index = 2); "x" ≠ "c": a
    substitution (500): errors 1, a mouse action (502), 503's jump test 2 − 2 > 1 fails, keystrokes += len("c") = 1
    (505); the system shows "a b c z e": "c" matches (h = 3, last = 3), "z" ≠ "d": errors 2, mouse action 2, no jump,
    keystrokes 2; "a b c d e" is the reference (597). Validation (614): 3 mouse actions. Characters len("a b c d e")
    = 9 (615), words 5 (617). adaptsim's cursor charges the first (away from the start) but not the second (right
    after the typed "c")."""
    shown = ["a b x y e", "a b c z e", "a b c d e"]
    assert counts(interactive.count("word", "nmt-keras", "a b c d e", shown)) == (2, 2, 3, 9, 5, False)
    assert counts(interactive.count("word", "adaptsim", "a b c d e", shown)) == (2, 2, 2, 9, 5, False)


def test_nmt_keras_word_level_insertion_at_the_end():
    """"we go" → "we go home". word.py: "we", "go" match (h = 2, last = 2); h ≥ len(hypothesis) (481): an insertion,
    errors 1, 485's jump test 2 − 2 > 1 fails (no mouse action), keystrokes += len("home") = 4 (487); the system
    shows the reference. Validation: 1 mouse action; characters 10, words 3. adaptsim: the insertion is away from
    the cursor (at the start): one more."""
    shown = ["we go", "we go home"]
    assert counts(interactive.count("word", "nmt-keras", "we go home", shown)) == (4, 1, 1, 10, 3, False)
    assert counts(interactive.count("word", "adaptsim", "we go home", shown)) == (4, 1, 2, 10, 3, False)


def test_nmt_keras_cut_at_both_levels():
    """Word level, "we go home now" → "we go": both words match, the loop ends (420, 471) with no correction; the
    reference is shorter: cut (600–603), errors 1 and keystrokes 1, no mouse action; validation 1. Character level,
    "we gone" → "we go": the common prefix is the reference (422–425); cut (474–476): errors 1, which is both
    NMT-Keras' keystrokes (KSMR, 513) and what its WSR divides by the words (514); validation 1. adaptsim: the cut is
    away from the cursor (one more), and at the character level no word was typed into."""
    assert counts(interactive.count("word", "nmt-keras", "we go", ["we go home now"])) == (1, 1, 1, 5, 2, False)
    assert counts(interactive.count("char", "nmt-keras", "we go", ["we gone"])) == (1, 1, 1, 5, 2, False)
    assert counts(interactive.count("word", "adaptsim", "we go", ["we go home now"])) == (1, 1, 2, 5, 2, False)
    assert counts(interactive.count("char", "adaptsim", "we go", ["we gone"])) == (1, 0, 2, 5, 2, False)


def test_nmt_keras_character_level_corrections():
    """"ax cd" → "ab cd". char.py: the common prefix "a" (422): "b" at character 1; a keystroke (467); 469:
    1 − 0 > 1 fails, no mouse action; last_correct_pos = 1 (471). The system shows "ab ce": "d" at 4, a keystroke,
    4 − 1 > 1: a mouse action; it shows "ab cdz": cut (474–476), a keystroke. Validation (488): 2 mouse actions;
    characters 5 (489), words 2 (491); word strokes = keystrokes (its WSR, 514). adaptsim: the correction at 1 is
    away from the cursor at 0 (a mouse action), the one at 4 too, the cut at 5 is where the cursor is; 2 words typed
    into. Then "axyz" → "abcd": corrections at 1 (1 − 0) and 2 (2 − 1) are free, one at 2 first (2 − 0) is not."""
    shown = ["ax cd", "ab ce", "ab cdz"]
    assert counts(interactive.count("char", "nmt-keras", "ab cd", shown)) == (3, 3, 2, 5, 2, False)
    assert counts(interactive.count("char", "adaptsim", "ab cd", shown)) == (3, 2, 3, 5, 2, False)
    assert counts(interactive.count("char", "nmt-keras", "abcd", ["axyz", "abyz", "abcd"])) == (2, 2, 1, 4, 1, False)
    assert counts(interactive.count("char", "nmt-keras", "abcd", ["abyz", "abcd"])) == (1, 1, 2, 4, 1, False)


def test_the_simulation_shows_the_system_what_the_user_validated():
    """The search's side: each correction hands the system the reference up to and including the correction (a
    word level's whole word and its space; a character), and the hypotheses it returns are what is counted."""
    asked = []

    def system(validated):
        asked.append(validated)
        return {"the big ": "the big dog runs", "the big red ": "the big red dog runs", "ab": "ab ce",
                "ab cd": "ab cdz"}[validated]
    assert interactive.shown("word", "the big red dog", "the  small dog", system, 100) == [
        "the small dog", "the big dog runs", "the big red dog runs"]
    assert interactive.shown("char", "ab cd", "ax cd", system, 100) == ["ax cd", "ab ce", "ab cdz"]
    assert asked == ["the big ", "the big red ", "ab", "ab cd"]
    assert interactive.shown("char", "ab cd", "ax cd", system, 1) == ["ax cd", "ab ce"]  # the cap


# adaptsim's counting: mouse actions by where the cursor is.

def test_adaptsim_word_level_counts_by_hand():
    """"the small dog": "big" typed (3 keys, a mouse action: the cursor is at the start); the system then offers
    "the big dog runs": "red" typed right at the cursor (3 keys, no mouse action); "the big red dog runs" is cut
    after "dog", past the cursor (1 key, a word stroke, a mouse action); the validation is a mouse action."""
    system = scripted({"the big ": "the big dog runs", "the big red ": "the big red dog runs"})
    effort = interactive.simulate("word", "adaptsim", "the big red dog", "the small dog", system, 100)
    assert counts(effort) == (7, 3, 3, 15, 4, False)


def test_adaptsim_character_level_counts_by_hand():
    """"ax cd" against "ab cd": "b" typed at 1 (a mouse action), the system offers "ab ce"; "d" typed at 4 (the
    cursor is at 2: a mouse action); "ab cdz" is cut where the cursor is (1 key); the validation: a mouse action.
    Both words were typed into."""
    system = scripted({"ab": "ab ce", "ab cd": "ab cdz"})
    effort = interactive.simulate("char", "adaptsim", "ab cd", "ax cd", system, 100)
    assert counts(effort) == (3, 2, 3, 5, 2, False)


def test_a_correct_hypothesis_costs_only_its_validation():
    for mode in ("word", "char"):
        for costs in interactive.COSTS:
            effort = interactive.simulate(mode, costs, "Das ist  gut.", "Das ist gut.", scripted({}), 100)
            assert counts(effort) == (0, 0, 1, 12, 3, False)


def test_the_cap_makes_the_user_type_the_rest():
    """One correction allowed: "b" typed, then the words "c" and "d" typed after deleting the system's "x y" (1 key);
    the mouse goes there as the counting charges a correction there: none for adaptsim (the cursor is after "b"),
    one for NMT-Keras (a substitution); the insertion of "b" at the end is one for adaptsim (away from the start)
    and none for NMT-Keras."""
    system = scripted({"a b ": "a b x y"})
    assert counts(interactive.simulate("word", "adaptsim", "a b c d", "a", system, 1)) == (4, 3, 2, 7, 4, True)
    assert counts(interactive.simulate("word", "nmt-keras", "a b c d", "a", system, 1)) == (4, 3, 2, 7, 4, True)
    system = scripted({"a b": "a bx"})
    effort = interactive.simulate("char", "adaptsim", "a b c", "a x", system, 1)
    assert counts(effort) == (1 + 1 + 2, 2, 2, 5, 3, True)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return Seq2SeqModel.load(str(tiny_model_dir))


LONGEST = 21  # decoder sequences of at most 21 tokens, the start token included (translate's max_length=20)


def searches(model: Seq2SeqModel, source: str, beam_size: int, length_penalty: float = 1.0):
    inputs, _ = model._encoder_inputs(source)
    return inputs, PrefixSearch(model.net, inputs["input_ids"], inputs["attention_mask"], beam_size=beam_size,
                                max_length=LONGEST, length_penalty=length_penalty)


def generated(model, inputs, forced, beam_size, length_penalty=1.0, processor=None):
    """generate with `forced` as the decoder's prompt, up to the same whole length as the prefix search."""
    return model.net.generate(**inputs, decoder_input_ids=torch.tensor([forced]), num_beams=beam_size,
                              max_new_tokens=LONGEST - len(forced), length_penalty=length_penalty, do_sample=False,
                              early_stopping=True,
                              logits_processor=LogitsProcessorList([processor] if processor else []))[0].tolist()


@pytest.mark.parametrize("beam_size,length_penalty", [(1, 1.0), (4, 1.0), (5, 0.6)])
def test_an_empty_prefix_gives_the_lean_search_and_a_prefix_what_generate_gives(tiny, tiny_model_dir, tiny_corpus,
                                                                              beam_size, length_penalty):
    """On a trained and an untrained model: the forced prefixes of the reference, longer and longer (the kept
    cache extended), then a shorter one again (the cache started over)."""
    for model in (tiny, random_model(tiny_model_dir, True, 3, 3.0)):
        for source, reference in tiny_corpus[:5]:
            inputs, search = searches(model, source, beam_size, length_penalty)
            start = decode.start_token(model.net)
            plain = decode.best_ids([model.net], inputs["input_ids"], inputs["attention_mask"], beam_size=beam_size,
                                    max_new_tokens=LONGEST - 1, length_penalty=length_penalty)[0]
            assert search([start]) == plain[:len(search([start]))] and set(plain[len(search([start])):]) <= {
                model.net.generation_config.eos_token_id}  # the same, less the padding after </s>
            body = model._target_body(reference)
            for n in (1, 2, len(body), 1):
                forced = [start] + body[:n]
                assert search(forced) == generated(model, inputs, forced, beam_size, length_penalty), (source, n)


def test_the_spelling_constraint_acts_as_in_generate(tiny, tiny_corpus):
    """The next piece must start a word ("▁"), or spell a word begun: the hypothesis continues as required, and
    the lean search with the constraint gives what generate gives with it."""
    index = PieceIndex.of(tiny.tokenizer, tiny.net.config.vocab_size, tiny.tokenizer.eos_token_id)
    for source, reference in tiny_corpus[:6]:
        inputs, search = searches(tiny, source, 3)
        first, second = reference.split()[:2]
        forced = [decode.start_token(tiny.net)] + tiny._target_body(first)
        for begun in ("", second[:1], second[:3]):
            spell = Spelling(index, len(forced), WORD_START + begun)
            ids = search(forced, spell)
            assert ids == generated(tiny, inputs, forced, 3, processor=Spelling(index, len(forced), WORD_START + begun))
            pieces = tiny.tokenizer.convert_ids_to_tokens(ids[len(forced):])
            assert "".join(pieces).startswith(WORD_START + begun) or pieces[0] == "</s>" and not begun


def test_proposals_go_on_from_what_the_user_validated(tiny, tiny_corpus):
    """The user's text stays as typed and the system continues it: after a whole word with more words, after a
    word begun with the rest of that word."""
    for source, reference in tiny_corpus[:6]:
        system = tiny.completions(source, beam_size=3, max_length=20)
        first, second = reference.split()[:2]
        after_word, in_word = system.propose(first + " "), system.propose(f"{first} {second[:2]}")
        assert after_word.startswith(first + " ") and len(after_word.split()) > 1
        assert in_word.startswith(f"{first} {second[:2]}") and len(in_word.split()[1]) > 2
        assert system.calls == 2


def test_what_cannot_be_spelt_or_has_no_room_is_not_searched(tiny, tiny_corpus):
    """A word begun with a character no piece holds: the system offers nothing after it and runs no search; a prefix
    as long as a hypothesis may be is the hypothesis."""
    source, reference = tiny_corpus[0]
    system = tiny.completions(source, beam_size=2, max_length=20)
    assert system.propose(reference.split()[0] + " \u2603") == reference.split()[0] + " \u2603"
    assert system.calls == 0
    inputs, search = searches(tiny, source, 2)
    full = [decode.start_token(tiny.net)] + [tiny._target_body(reference)[0]] * LONGEST
    assert search(full) == full and search.calls == 0


def steps_of(out):
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    return [{k: ({**v, "seconds": None} if k == "effort" else v) for k, v in r.items() if not k.endswith("_s")}
            for r in rows]


@pytest.mark.parametrize("mode", ["word", "char"])
def test_in_the_loop_for_every_method_in_lockstep_and_resumed(tmp_path, tiny_model_dir, tiny_tsv, tiny_sweep, mode):
    """Each run records its translator's effort per step and KSMR/KSR/WSR/MAR in its summary; lockstep runs
    record what they record alone; an interrupted run resumes to the uninterrupted one."""
    common = [f"metrics.interactive={mode}", "metrics.max_corrections=30"]
    alone = run(tmp_path / "alone", tiny_model_dir, tiny_tsv, "method=lasso", *common)
    with pytest.raises(SystemExit) as exit_:
        main(["run", "-m", f"hydra.sweep.dir={tmp_path / 'sweep'}", "hydra.sweep.subdir=${method.name}",
              "hydra/launcher=lockstep", *tiny_sweep, "decode.beam_size=2", "decode.max_length=20", "progress=false",
              "threads=1", *common, "method=none,full,bias,fixed,top,lasso,memory"])
    assert exit_.value.code == 0
    assert steps_of(tmp_path / "sweep" / "lasso") == steps_of(alone)
    for method in ("none", "full", "bias", "fixed", "top", "lasso", "memory"):
        done = summary(tmp_path / "sweep" / method)
        rows = steps_of(tmp_path / "sweep" / method)
        ks = sum(r["effort"]["KS"] for r in rows) + sum(r["effort"]["MA"] for r in rows)
        chars = sum(r["effort"]["chars"] for r in rows)
        assert done["scores"]["KSMR"] == pytest.approx(100 * ks / chars), method
        assert done["cost"]["interactive"]["decoder_calls_total"] == sum(r["effort"]["decoder_calls"] for r in rows)
        assert done["cost"]["interactive"]["costs"] == "nmt-keras" and {r["effort"]["costs"] for r in rows} == {
            "nmt-keras"}  # the default counting, recorded per run and per step
        # a hypothesis equal to its reference cost no keystroke; every other one at least one
        assert all((r["effort"]["KS"] == 0) == (" ".join(r["hypothesis"].split()) == " ".join(r["reference"].split()))
                   for r in rows), method
    cut = tmp_path / "cut"
    shutil.copytree(alone, cut)
    for name in ("steps.jsonl", "hyps.txt"):
        (cut / name).write_text("".join((cut / name).read_text().splitlines(keepends=True)[:4]))
    (cut / "summary.json").write_text(json.dumps({**summary(alone), "status": "interrupted"}))
    run(cut, tiny_model_dir, tiny_tsv, "method=lasso", "resume=true", *common)
    assert steps_of(cut) == steps_of(alone)
    assert summary(cut)["scores"] == summary(alone)["scores"]


def test_reports_show_the_effort_with_significance(tmp_path, tiny_model_dir, tiny_tsv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "-m", f"hydra.sweep.dir={tmp_path / 'sweep'}", "hydra.sweep.subdir=${method.name}",
              "hydra/launcher=lockstep", f"model.path={tiny_model_dir}", "dataset=tsv", f"dataset.path={tiny_tsv}",
              "decode.beam_size=2", "decode.max_length=20", "progress=false", "threads=1",
              "metrics.interactive=word", "method=none,full"])
    assert exit_.value.code == 0
    capsys.readouterr()
    cli("table", str(tmp_path / "sweep"), "--significance", "--ci")
    table = capsys.readouterr().out
    header = next(line for line in table.splitlines() if line.startswith("| method"))
    assert header.endswith("| KSMR | WSR | MAR |")
    assert "_effort at the word level, as NMT-Keras counts (metrics.interactive_costs=nmt-keras), at most 100 " \
           "corrections per segment._" in table
    full = summary(tmp_path / "sweep" / "full")["scores"]
    assert f"| {full['KSMR']:.1f}" in next(line for line in table.splitlines() if line.startswith("| full"))
    cli("plot", str(tmp_path / "sweep"), "--metrics", "KSMR", "--out", str(tmp_path / "ksmr.png"))
    assert (tmp_path / "ksmr.png").stat().st_size > 0
    curves_from_steps_are_the_stored_ones(tmp_path / "sweep" / "full")  # the effort rates' curves too
    capsys.readouterr()
    cli("compare", str(tmp_path / "sweep" / "none"), str(tmp_path / "sweep" / "full"), "--json")
    compared = json.loads(capsys.readouterr().out)
    assert compared["effort"] == {"level": "word", "costs": "nmt-keras", "max_corrections": 100}
    compared = compared["metrics"]
    assert compared["KSMR"][1]["score"] == pytest.approx(full["KSMR"]) and {"WSR", "MAR"} <= set(compared)
    cli("compare", str(tmp_path / "sweep" / "none"), str(tmp_path / "sweep" / "full"))
    assert "\neffort at the word level, as NMT-Keras counts" in capsys.readouterr().out


def cli(*args):
    with pytest.raises(SystemExit) as exit_:
        main(list(args))
    assert exit_.value.code == 0


def test_bad_settings_are_refused_in_one_line(tmp_path, tiny_model_dir, tiny_tsv, capsys):
    for value in ("keys", "0", "sentence"):  # 0 is not false (YAML's off)
        run(tmp_path / f"a{value}", tiny_model_dir, tiny_tsv, f"metrics.interactive={value}", code=1)
        err = capsys.readouterr().err  # the choices once: false is how YAML reads a bare off, not a fourth choice
        assert err.strip().endswith(": choose 'off' | 'word' | 'char'") and "metrics.interactive=" in err, err
    run(tmp_path / "c", tiny_model_dir, tiny_tsv, "metrics.interactive=word", "metrics.interactive_costs=keras",
        code=1)
    assert "metrics.interactive_costs='keras': choose 'nmt-keras' | 'adaptsim'" in capsys.readouterr().err
    run(tmp_path / "off", tiny_model_dir, tiny_tsv, "metrics.interactive=false")  # what YAML makes of a bare off
    assert "KSMR" not in summary(tmp_path / "off")["scores"]
    run(tmp_path / "b", tiny_model_dir, tiny_tsv, "metrics.interactive=word", "metrics.max_corrections=0", code=1)
    assert "metrics.max_corrections" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["m2m100", "t5"])
def test_other_architectures_decode_the_prefix_with_generate(tmp_path, tiny_corpus, kind):
    """M2M100 (a forced target-language token before the prefix) and T5 (a task prefix on the source): the
    corrections go through `generate` with the prefix forced, keep what the user validated, and end at the
    reference."""
    from tiny_multilingual import KINDS, build

    model = Seq2SeqModel.load(str(build(kind, tiny_corpus, tmp_path / "model")), languages=KINDS[kind][0])
    source, reference = tiny_corpus[0]
    system = model.completions(source, beam_size=2, max_length=20)
    for validated in (reference[:2], reference.split()[0] + " "):
        assert system.propose(validated).startswith(validated)
    assert not system.prefixes.lean
    hypothesis = model.translate(source, beam_size=2, max_length=20).text
    other = tiny_corpus[3][1]  # a post-edit far from the hypothesis: every word needs work
    for mode in ("word", "char"):
        system = model.completions(source, beam_size=2, max_length=20)
        effort = interactive.simulate(mode, "nmt-keras", other, hypothesis, system.propose, 100, lambda: system.calls)
        assert effort.decoder_calls == system.calls > 0 and not effort.capped


@pytest.mark.skipif(not (PROBE.is_dir() and TED.is_file()), reason="../shared is absent")
def test_real_model_the_kept_search_corrects_as_generate_does():
    """small-ende-probe on the first TED segments: every correction's hypothesis, hence every count, is the same
    with the kept prefix search as with `generate` and the prefix forced."""
    import csv

    model = Seq2SeqModel.load(str(PROBE))
    with open(TED, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[:2]
    for row in rows:
        hypothesis = model.translate(row["source"]).text
        for mode in ("word", "char"):
            efforts = []
            for search in ("lean", "generate"):
                system = model.completions(row["source"], search=search)
                effort = interactive.simulate(mode, "nmt-keras", row["reference"], hypothesis, system.propose, 100,
                                              lambda: system.calls)
                efforts.append(counts(effort) + (effort.decoder_calls,))
            assert efforts[0] == efforts[1], (row["source"], mode)


def test_efforts_of_unlike_translators_are_not_compared_and_unlike_resumes_are_refused(tmp_path, tiny_model_dir,
                                                                                       tiny_tsv, capsys):
    word = run(tmp_path / "word", tiny_model_dir, tiny_tsv, "method=none", "metrics.interactive=word")
    char = run(tmp_path / "char", tiny_model_dir, tiny_tsv, "method=full", "metrics.interactive=char")
    counted = run(tmp_path / "counted", tiny_model_dir, tiny_tsv, "method=full", "metrics.interactive=word",
                  "metrics.interactive_costs=adaptsim")
    for other in (char, counted):
        for command in ("table", "compare"):
            with pytest.raises(SystemExit) as exit_:
                main([command, str(word), str(other)])
            assert exit_.value.code == 1 and "simulated translators differ" in capsys.readouterr().err
    plain = run(tmp_path / "plain", tiny_model_dir, tiny_tsv, "method=full")  # no effort: no effort columns
    cli("table", str(word), str(plain))
    assert "KSMR" not in capsys.readouterr().out
    (word / "summary.json").write_text(json.dumps({**summary(word), "status": "interrupted"}))
    run(word, tiny_model_dir, tiny_tsv, "method=none", "metrics.interactive=char", "resume=true", code=1)
    assert "metrics.interactive: word → char" in capsys.readouterr().err
    run(word, tiny_model_dir, tiny_tsv, "method=none", "metrics.interactive=word", "metrics.interactive_costs=adaptsim",
        "resume=true", code=1)
    assert "metrics.interactive_costs: nmt-keras → adaptsim" in capsys.readouterr().err
