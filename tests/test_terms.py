"""Terminology consistency (adaptsim/metrics/terms.py, adaptsim/report/terms.py): a hand-made dictionary
(file → Datei, Akte), hand-made streams, and a finished run directory written by hand (no model, no ../shared)."""

from __future__ import annotations

import json

import pytest

from adaptsim.errors import UserError
from adaptsim.metrics.litter import Dictionary, Litter
from adaptsim.metrics.terms import CONSISTENT, DIFFERENT, NEITHER, Terms, statistics, stream
from adaptsim.metrics.words import WordPipeline, load_stopwords

DICTIONARY = "file\tDatei\nfile\tAkte\nprinter\tDrucker\nprinter\tPrinter\n"


@pytest.fixture
def dictionary(tmp_path):
    path = tmp_path / "en-de.tsv"
    path.write_text(DICTIONARY, encoding="utf-8")
    return path


@pytest.fixture
def terms(dictionary):
    from adaptsim.report.resources import SWITCHES, presets
    from adaptsim.report.terms import PRESET

    return Terms(Litter(Dictionary.load([{"path": str(dictionary), "format": "tsv", "from": "en", "to": "de"}],
                                        "en", "de"), "en", "de", **{k: presets()[PRESET][k] for k in SWITCHES}))


def measure(terms, sources, references, hypotheses, docs, scope="document"):
    """The stream's occurrences and the totals of each figure, for the hypotheses and for the references, with the
    run's word pipeline (truecaser trained on the references, stopwords-iso German)."""
    words = WordPipeline("de", load_stopwords("de"), "truecase")
    words.fit(references, keep=True)
    refs = [words(r) for r in references]
    occ = stream(terms, sources, refs, docs if scope == "document" else [None] * len(docs))
    hyp = statistics(terms, occ, [words(h) for h in hypotheses], docs)
    ref = statistics(terms, occ, refs, docs)
    verdicts = [[terms.verdict(o, words(h)) for o in seg if o.term == "file"] for seg, h in zip(occ, hypotheses)]
    return (occ, verdicts, {m: list(s.sum(axis=0)) for m, s in hyp.items()},
            {m: list(s.sum(axis=0)) for m, s in ref.items()}, hyp)


def file_of(segment):
    return next(o for o in segment if o.term == "file")


def test_the_previous_post_edits_rendering_is_consistent_and_another_dictionary_word_different(terms):
    sources = ["Open the file.", "Save the file.", "Close the file.", "Print the file."]
    references = ["Öffnen Sie die Datei.", "Speichern Sie die Datei.", "Schließen Sie die Datei.",
                  "Drucken Sie die Datei."]
    hypotheses = ["Öffnen Sie die Akte.", "Speichern Sie die Akte.", "Schließen Sie die Datei.",
                  "Drucken Sie das Dokument."]
    occ, verdicts, hyp, ref, _ = measure(terms, sources, references, hypotheses, ["a"] * 4)
    # the post-edits render "file" as Datei four times; Datei recurs from segment 2 on (R1 tracks it): a term
    assert [file_of(s).previous for s in occ] == [None, {"datei"}, {"datei"}, {"datei"}]
    assert [file_of(s).tracked for s in occ] == [False, True, True, True]
    # segment 1 has no earlier rendering: not judged; Akte after Datei: different; Datei: consistent; Dokument is
    # no dictionary word of "file": neither
    assert verdicts == [[None], [DIFFERENT], [CONSISTENT], [NEITHER]]
    assert hyp["consistency"] == [1, 2] and hyp["consistency.all"] == [1, 3]
    # one (document, term) pair, rendered in three hypotheses as Akte, Akte, Datei: 2 distinct renderings
    assert hyp["renderings"] == [2, 1]
    assert ref["consistency"] == [3, 3] and ref["consistency.all"] == [3, 3] and ref["renderings"] == [1, 1]


def test_the_rendering_to_keep_is_the_latest_post_edits_and_a_reference_without_one_keeps_it(terms):
    sources = ["Open the file.", "Save the file.", "Rename the file.", "Close the file.", "Print the file."]
    references = ["Öffnen Sie die Datei.", "Speichern Sie die Datei.", "Benennen Sie die Akte um.",
                  "Schließen Sie sie.", "Drucken Sie sie."]
    hypotheses = ["Öffnen Sie die Datei.", "Speichern Sie die Datei.", "Benennen Sie die Datei um.",
                  "Schließen Sie die Datei.", "Drucken Sie die Akte."]
    occ, verdicts, hyp, _, _ = measure(terms, sources, references, hypotheses, ["a"] * 5)
    # segment 3's translator switched to Akte; segment 4's reference renders nothing, so Akte stays the rendering
    assert [file_of(s).previous for s in occ] == [None, {"datei"}, {"datei"}, {"akte"}, {"akte"}]
    assert verdicts == [[None], [CONSISTENT], [CONSISTENT], [DIFFERENT], [CONSISTENT]]
    assert hyp["consistency"] == [3, 4] and hyp["consistency.all"] == [3, 4]
    # five hypotheses render "file": Datei four times, Akte once
    assert hyp["renderings"] == [2, 1]


def test_a_source_word_whose_rendering_never_recurs_is_no_term(terms):
    sources = ["Print with the printer.", "The printer is ready."]
    hypotheses = ["Drucken Sie mit dem Drucker.", "Der Printer ist bereit."]
    # Drucker, then Printer: each rendering once, neither a word R1 tracks: not judged, no pair counted
    occ, _, hyp, ref, _ = measure(terms, sources, ["Drucken Sie mit dem Drucker.", "Der Printer ist bereit."],
                                  hypotheses, ["a", "a"])
    assert [[(o.term, o.is_term) for o in s] for s in occ] == [[("printer", False)], [("printer", False)]]
    assert hyp["consistency.all"] == [0, 0] and hyp["renderings"] == [0, 0] and ref["renderings"] == [0, 0]
    # the second post-edit repeats Drucker: a term, judged there (Printer: a different rendering)
    occ, _, hyp, ref, _ = measure(terms, sources, ["Drucken Sie mit dem Drucker.", "Der Drucker ist bereit."],
                                  hypotheses, ["a", "a"])
    assert [o.is_term for s in occ for o in s] == [True, True]
    assert hyp["consistency"] == [0, 1] and hyp["renderings"] == [2, 1] and ref["renderings"] == [1, 1]



def test_a_document_term_rendered_in_one_hypothesis_has_no_distinct_renderings_figure(terms):
    sources = ["Open the file.", "Save the file.", "Close the file."]
    references = ["Öffnen Sie die Datei.", "Speichern Sie die Datei.", "Schließen Sie die Datei."]
    hypotheses = ["Öffnen Sie das Dokument.", "Speichern Sie es.", "Schließen Sie die Akte."]
    _, verdicts, hyp, ref, _ = measure(terms, sources, references, hypotheses, ["a"] * 3)
    assert verdicts == [[None], [NEITHER], [DIFFERENT]]
    assert hyp["consistency"] == [0, 1] and hyp["consistency.all"] == [0, 2]
    assert hyp["renderings"] == [0, 0] and ref["renderings"] == [1, 1]  # one rendering (Akte) is no pair

def test_inflected_forms_are_one_term_and_one_rendering(terms):
    sources = ["Open the files.", "Save the file.", "Close the files."]
    references = ["Öffnen Sie die Dateien.", "Speichern Sie die Datei.", "Schließen Sie die Dateien."]
    hypotheses = ["Öffnen Sie die Dateien.", "Speichern Sie die Dateien.", "Schließen Sie die Datei."]
    occ, verdicts, hyp, _, _ = measure(terms, sources, references, hypotheses, ["a"] * 3)
    assert [file_of(s).rendered for s in occ] == [{"datei"}] * 3  # Dateien's lemma is the dictionary's Datei
    assert verdicts == [[None], [CONSISTENT], [CONSISTENT]] and hyp["renderings"] == [1, 1]


def test_renderings_are_counted_per_document_and_the_scope_decides_what_is_judged(terms):
    sources = ["Open the file.", "Save the file.", "Close the file.", "Print the file."]
    references = ["Öffnen Sie die Datei.", "Speichern Sie die Datei.", "Schließen Sie die Akte.",
                  "Drucken Sie die Akte."]
    hypotheses = ["Öffnen Sie die Akte.", "Speichern Sie die Datei.", "Schließen Sie die Datei.",
                  "Drucken Sie die Datei."]
    docs = ["a", "a", "b", "b"]
    occ, verdicts, hyp, _, per_segment = measure(terms, sources, references, hypotheses, docs)
    # counting restarts in document b: its first occurrence has no earlier rendering; Akte recurs there
    assert verdicts == [[None], [CONSISTENT], [None], [DIFFERENT]]
    assert hyp["consistency"] == [1, 2]
    # document a: Akte, Datei (2 renderings); b: Datei, Datei (1); each pair at the segment of its last rendering
    assert per_segment["renderings"].tolist() == [[0, 0], [2, 1], [0, 0], [1, 1]]
    # one stream: b's first occurrence follows a's Datei
    _, verdicts, hyp, _, per_segment = measure(terms, sources, references, hypotheses, docs, scope="corpus")
    assert verdicts == [[None], [CONSISTENT], [CONSISTENT], [DIFFERENT]]
    assert hyp["consistency"] == [2, 3]
    assert per_segment["renderings"].tolist() == [[0, 0], [2, 1], [0, 0], [1, 1]]  # still per document


# -- the command ------------------------------------------------------------------------------------------------

SOURCES = {"a": ["Open the file.", "Save the file.", "Close the file."],
           "b": ["Print the file.", "Copy the file.", "Delete the file."]}
REFERENCES = {"a": ["Öffnen Sie die Datei.", "Speichern Sie die Datei.", "Schließen Sie die Datei."],
              "b": ["Drucken Sie die Akte.", "Kopieren Sie die Akte.", "Löschen Sie die Akte."]}
HYPOTHESES = {
    "none": {"a": ["Öffnen Sie die Akte.", "Speichern Sie die Akte.", "Schließen Sie die Datei."],
             "b": ["Drucken Sie die Datei.", "Kopieren Sie die Datei.", "Löschen Sie die Akte."]},
    "full": {"a": ["Öffnen Sie die Datei.", "Speichern Sie die Datei.", "Schließen Sie die Datei."],
             "b": ["Drucken Sie die Akte.", "Kopieren Sie die Akte.", "Löschen Sie das Dokument."]},
}


def write_run(root, method: str) -> None:
    d = root / method
    d.mkdir(parents=True)
    rows = [{"doc_id": doc, "seg_id": str(j + 1), "source": SOURCES[doc][j], "reference": REFERENCES[doc][j],
             "hypothesis": HYPOTHESES[method][doc][j]} for doc in "ab" for j in range(3)]
    (d / "steps.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    config = {"metrics": {"lang": "de", "case": "truecase", "truecase_text": None, "stopwords": None},
              "model": {"source_lang": "en", "target_lang": "de"}}
    (d / "summary.json").write_text(json.dumps({
        "command": "run", "status": "finished", "method": method, "model": "m", "model_path": "/models/m",
        "dataset": "files", "data_fingerprint": "fp", "segments": len(rows), "documents": 2,
        "metrics_scope": "document", "scores": {"R0": 0.0}, "signatures": {"R": "r"}, "config": config}))


def test_terms_command_prints_a_row_per_method_and_the_post_edits(tmp_path, dictionary, capsys):
    from adaptsim.cli import main

    for method in ("none", "full"):
        write_run(tmp_path / "runs", method)
    res = tmp_path / "res.yaml"
    res.write_text(f"dictionaries: [{{path: {dictionary}, format: tsv, from: en, to: de}}]\n")
    with pytest.raises(SystemExit) as exit_:
        main(["terms", str(tmp_path / "runs"), "--resources", str(res), "--resamples", "50"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    print(out)
    # "file" is a term of each document (Datei recurs in a, Akte in b); judged: a2, a3 (after Datei), b2, b3
    # (after Akte). none: a2 Akte (different), a3 Datei (consistent), b2 Datei (different), b3 Akte (consistent);
    # renders a: Akte, Akte, Datei and b: Datei, Datei, Akte, 2 renderings each. full: consistent at a2, a3, b2,
    # neither at b3 (Dokument); one rendering per document. Each document gives the same figures under none, so
    # its intervals are points; full's consistency.all is 2/2 in a and 1/2 in b: 75, 50 to 100 over resamples.
    # Two documents have 2 distinct randomisations (the default test): no difference can be
    # marked, and the note says so.
    assert "2 terms" in out and "4 judged occurrences" in out and "en-de.tsv" in out
    assert "| baseline | 50.0 [50.0, 50.0] | 50.0 [50.0, 50.0] | 2.00 [2.00, 2.00] | 2 / 2 / 0 | 2 |" in out
    assert "| full | 100.0 [100.0, 100.0] | 75.0 [50.0, 100.0] | 1.00 [1.00, 1.00] | 3 / 0 / 1 | 2 |" in out
    assert "2 documents: only 2 distinct randomisations, so p ≥ 0.5 and no difference is marked" in out
    assert "| post-edits | 100.0 [100.0, 100.0] | 100.0 [100.0, 100.0] | 1.00 [1.00, 1.00] | 4 / 0 / 0 | 2 |" in out
    assert "terms|lang:en-de|scope:document|tok:moses|dict:en-de.tsv" in out


def test_terms_command_reads_litters_resources_and_refuses_a_misspelt_switch(tmp_path, dictionary):
    from adaptsim.report.resources import load

    res = tmp_path / "res.yaml"
    res.write_text(f"dictionaries: [{{path: {dictionary}, format: tsv, from: en, to: de}}]\nstrip_accent: true\n")
    with pytest.raises(UserError, match="unknown key.*strip_accent"):
        load(res, None, "adaptsim")
    res.write_text(f"idioms: null\ndictionaries: [{{path: {dictionary}, format: tsv, from: en, to: de}}]\n")
    loaded = load(res, None, "adaptsim")
    assert loaded.idioms.idioms == [] and loaded.scorer.candidates("file") == {"datei", "akte"}


def test_terms_command_refuses_runs_without_their_sources_in_one_line(tmp_path, dictionary):
    from adaptsim.report.terms import main

    for method in ("none", "full"):
        write_run(tmp_path / "runs", method)
    steps = tmp_path / "runs" / "full" / "steps.jsonl"
    rows = [json.loads(line) for line in steps.read_text(encoding="utf-8").splitlines()]
    steps.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "source"}) + "\n" for r in rows))
    res = tmp_path / "res.yaml"
    res.write_text(f"dictionaries: [{{path: {dictionary}, format: tsv, from: en, to: de}}]\n")
    with pytest.raises(UserError, match="full/steps.jsonl has no source texts"):
        main([str(tmp_path / "runs"), "--resources", str(res), "--resamples", "10"])


def test_a_text_holding_two_renderings_of_a_term_counts_both(terms):
    """Hypotheses are bags of words: three that each hold Datei and Akte use two renderings of "file" in the
    document (one of them may translate another source word; the figure cannot tell)."""
    sources = ["Open the file.", "Save the file.", "Close the file."]
    references = ["Öffnen Sie die Datei.", "Speichern Sie die Datei.", "Schließen Sie die Datei."]
    hypotheses = ["Öffnen Sie die Datei Akte.", "Speichern Sie die Datei Akte.", "Schließen Sie die Datei Akte."]
    hyp = measure(terms, sources, references, hypotheses, ["a"] * 3)[2]
    assert hyp["renderings"] == [2, 1]
