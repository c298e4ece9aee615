"""`tm`'s external translation memory (`method.external`, adaptsim/methods/tm.py): a file in any dataset format, read
as a dataset is, always in the memory and ranked with the stream's pairs."""

import csv
import json
import logging
from xml.sax.saxutils import escape

import pytest
from omegaconf import OmegaConf
from rapidfuzz import fuzz

from adaptsim import CONFIG_DIR, PROJECT_ROOT
from adaptsim.cli import main
from adaptsim.data.types import Segment
from adaptsim.errors import UserError
from adaptsim.methods import check_method
from adaptsim.methods.tm import Tm, read_external


def demo_rows(name):
    return list(csv.DictReader((PROJECT_ROOT / "data" / "demo" / name).open(encoding="utf-8"), delimiter="\t"))


DEMO = demo_rows("docs.tsv")
A, B = DEMO[0], DEMO[1]  # A: the demo model does not translate it as its post-edit (test_tm.py's exact repeat)
OTHERS = [(r["source"], r["reference"]) for r in demo_rows("general-test.tsv")[:3]]
TM_PAIRS = [*OTHERS, (A["source"], A["reference"])]  # A's exact match last: found by score, not by position
# the stream's A with another post-edit than the TM's: the TM's entry is an exact match of its source, not its pair
# (a pair of the stream in the TM is refused: no look-ahead)
A_OTHER = {**A, "reference": "Ändert " + A["reference"].split(" ", 1)[1]}


def write_tsv(path, pairs, header=("source", "reference")):
    path.write_text("\t".join(header) + "\n" + "".join(f"{s}\t{r}\n" for s, r in pairs), encoding="utf-8")
    return path


def write_tmx(path, pairs):
    """The target <tuv> first and regional codes: the reader picks the sides by the model's languages (en → de)."""
    tus = "".join(f'<tu tuid="{i}"><tuv xml:lang="de-DE"><seg>{escape(r)}</seg></tuv>'
                  f'<tuv xml:lang="EN-US"><seg>{escape(s)}</seg></tuv></tu>\n' for i, (s, r) in enumerate(pairs, 1))
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="en-US"/>\n'
                    f"<body>\n{tus}</body></tmx>\n", encoding="utf-8")
    return path


def write_stream(path, docs):
    rows = [f"{d}\t{i}\t{r['source']}\t{r['reference']}\n" for d, segs in docs for i, r in enumerate(segs, 1)]
    path.write_text("doc_id\tseg_id\tsource\treference\n" + "".join(rows), encoding="utf-8")
    return path


def run(out, stream, *overrides, code=0):
    with pytest.raises(SystemExit) as exit_:
        main(["run", f"hydra.run.dir={out}", "dataset=tsv", f"dataset.path={stream}", "progress=false", "threads=1",
              *overrides])
    assert exit_.value.code == code
    return out


def hyps(out):
    return (out / "hyps.txt").read_text(encoding="utf-8").splitlines()


def summary(out):
    return json.loads((out / "summary.json").read_text())


def test_the_fillers_do_not_match_the_stream():
    assert all(fuzz.ratio(s, r["source"]) < 75 for s, _ in OTHERS for r in (A, B))


def test_an_external_exact_match_is_used_for_the_first_segment_in_tsv_and_tmx(tmp_path):
    """Before any stream pair exists, the TM's 100 % match is trained on for a moment and A is translated as the
    TM's target (θ0 does not: the `none` run)."""
    stream = write_stream(tmp_path / "stream.tsv", [("d", [A_OTHER, B])])
    none = hyps(run(tmp_path / "none", stream, "method=none"))
    assert none[0] != A["reference"]
    fingerprints = []
    for fmt, tm in (("tsv", write_tsv(tmp_path / "tm.tsv", TM_PAIRS)),
                    ("tmx", write_tmx(tmp_path / "tm.tmx", TM_PAIRS))):
        out = run(tmp_path / fmt, stream, "method=tm", "method.online=false", f"method.external.format={fmt}",
                  f"method.external.path={tm}")
        assert hyps(out)[0] == A["reference"], fmt
        s = summary(out)
        assert s["cost"]["temporary"]["retrievals"] == 1  # A, from the TM; B matches nothing
        external = s["method_info"]["external"]
        assert external["format"] == fmt and external["path"] == str(tm) and external["entries"] == len(TM_PAIRS)
        fingerprints.append(external["fingerprint"])
    assert fingerprints[0] == fingerprints[1]  # the same pairs, whatever the format


def test_the_external_entries_survive_a_document_restart(tmp_path):
    """reset=document empties the stream's pairs at each document, never the TM's."""
    stream = write_stream(tmp_path / "stream.tsv", [("d1", [A_OTHER]), ("d2", [B, A_OTHER])])
    tm = write_tsv(tmp_path / "tm.tsv", TM_PAIRS)
    alone = run(tmp_path / "alone", stream, "method=tm", "method.online=false", "reset=document")
    with_tm = run(tmp_path / "tm", stream, "method=tm", "method.online=false", "reset=document",
                  "method.external.format=tsv", f"method.external.path={tm}")
    # without the TM, d1's A is forgotten at d2: no match, A translated by θ0
    assert summary(alone)["cost"]["temporary"]["retrievals"] == 0 and hyps(alone)[2] != A["reference"]
    assert summary(with_tm)["cost"]["temporary"]["retrievals"] == 2
    assert hyps(with_tm)[0] == hyps(with_tm)[2] == A["reference"]


class Tokens:
    """What read_external needs of a model: its verdict on a side's length (here words + </s>, 8 positions)."""

    @staticmethod
    def over_length(side, text):
        from adaptsim.data.lengths import Over

        n = len(text.split()) + 1
        return Over(n, 8, "the model's positions") if n > 8 else None


def external(**settings):
    """tm.yaml's `external` block with the demo model's languages and `settings`."""
    block = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "method" / "tm.yaml").external, resolve=False)
    return {**block, "source_lang": "en", "target_lang": "de", **settings}


def tm(k, spec):
    return Tm(Tokens(), name="tm", lr=0.01, k=k, threshold=75.0, online=False, moment_lr=0.1,
              moment_ppl_threshold=1.05, moment_max_updates=30, external=spec)


PAIRS = [("Open the file.", "Öffnen Sie die Datei."), ("Close the window now.", "Schließen Sie jetzt das Fenster."),
         ("Open the files.", "Öffnen Sie die Dateien.")]


def test_stream_and_external_pairs_are_ranked_together_stream_first_on_ties(tmp_path):
    spec = external(format="tsv", path=str(write_tsv(tmp_path / "tm.tsv", PAIRS)))
    method = tm(2, spec)
    assert method.matches("Open the file.")[0] == ("Open the file.", "Öffnen Sie die Datei.", 100.0)
    assert [m[0] for m in method.matches("Open the file.")] == ["Open the file.", "Open the files."]
    method.revealed("Open the file.", "Öffne die Datei.")  # the translator's own post-edit of the same source
    assert [m[1] for m in method.matches("Open the file.")] == ["Öffne die Datei.", "Öffnen Sie die Datei."]
    method.revealed("Open the files!", "Öffne die Dateien!")  # scores below the TM's exact match
    assert [m[1] for m in method.matches("Open the file.")] == ["Öffne die Datei.", "Öffnen Sie die Datei."]
    method.start_document({})
    assert method.sources == [] and [m[1] for m in method.matches("Open the file.")] == [
        "Öffnen Sie die Datei.", "Öffnen Sie die Dateien."]
    assert method.matches("Something else entirely.") == []
    one = tm(1, spec)
    one.revealed("Open the file.", "Öffne die Datei.")
    assert one.matches("Open the file.") == [("Open the file.", "Öffne die Datei.", 100.0)]


@pytest.mark.parametrize("fmt", ["tsv", "csv", "jsonl", "plain", "tmx", "xml"])
def test_any_dataset_format_is_a_tm(tmp_path, fmt):
    if fmt == "tsv":
        spec = external(format=fmt, path=str(write_tsv(tmp_path / "tm.tsv", PAIRS)))
    elif fmt == "csv":
        with (tmp_path / "tm.csv").open("w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([("reference", "source"), *[(r, s) for s, r in PAIRS]])
        spec = external(format=fmt, path=str(tmp_path / "tm.csv"))
    elif fmt == "jsonl":
        (tmp_path / "tm.jsonl").write_text("".join(json.dumps({"en": s, "de": r}) + "\n" for s, r in PAIRS))
        spec = external(format=fmt, path=str(tmp_path / "tm.jsonl"),
                        columns={"doc_id": None, "seg_id": None, "source": "en", "reference": "de"})
    elif fmt == "plain":
        for lang, side in (("en", 0), ("de", 1)):
            (tmp_path / f"tm.{lang}").write_text("".join(p[side] + "\n" for p in PAIRS), encoding="utf-8")
        spec = external(format=fmt, path=str(tmp_path / "tm"))
    elif fmt == "tmx":
        spec = external(format=fmt, path=str(write_tmx(tmp_path / "tm.tmx", PAIRS)))
    else:
        for lang, side in (("en", 0), ("de", 1)):
            segs = "".join(f'<seg id="{i}">{escape(p[side])}</seg>' for i, p in enumerate(PAIRS, 1))
            (tmp_path / f"tm.{lang}.xml").write_text(f'<mteval><doc docid="a">{segs}</doc></mteval>', encoding="utf-8")
        spec = external(format=fmt, path=str(tmp_path / "tm"))
    sources, targets, info, _ = read_external(spec, Tokens())
    assert list(zip(sources, targets)) == PAIRS
    assert info["entries"] == 3 and info["fingerprint"] == read_external(
        external(format="tsv", path=str(write_tsv(tmp_path / "same.tsv", PAIRS))), Tokens())[2]["fingerprint"]


def test_no_external_tm_reads_nothing():
    assert read_external(None, Tokens()) == read_external(external(), Tokens()) == ([], [], None, [])
    assert tm(3, external()).info()["external"] is None


def bad(spec, *expected):
    with pytest.raises(UserError) as e:
        read_external(spec, Tokens())
    message = str(e.value)
    assert message.startswith("method.external") and "\n" not in message
    for part in expected:
        assert part in message, message
    return message


def test_bad_external_tms_are_one_line_naming_the_setting_and_the_file(tmp_path):
    bad(external(format="tsv", path=str(tmp_path / "missing.tsv")), "missing.tsv", "file not found")
    bad(external(format="tsv", path=str(write_tsv(tmp_path / "empty.tsv", []))), "empty.tsv", "no (source, target)")
    bad(external(format="tmx", path=str(write_tmx(tmp_path / "empty.tmx", []))), "empty.tmx", "no (source, target)")
    bad(external(format="tsv", path=str(write_tsv(tmp_path / "cols.tsv", PAIRS, header=("en", "de")))),
        "cols.tsv", "no 'reference', 'source' in the header", "set +method.external.columns.<role>=NAME")
    bad(external(format="tmx", path=str(write_tsv(tmp_path / "tm.tsv", PAIRS))), "tm.tsv", "invalid XML")
    bad(external(format="tmx", path=str(write_tmx(tmp_path / "fr.tmx", PAIRS)), target_lang="fr"), "fr.tmx",
        "no <tuv> for language 'fr'", "set method.external.target_lang")
    bad(external(format="tsv", path=str(write_tsv(tmp_path / "e.tsv", [("Open it.", " ")]))), "e.tsv:2",
        "empty reference", "set +method.external.on_empty=skip")
    bad(external(format="tsv", path=str(tmp_path / "cols.tsv"), on_empty="maybe"), "method.external.on_empty='maybe'",
        "cols.tsv")
    bad(external(format="weird", path=str(tmp_path / "tm.tsv")), "method.external.format='weird'", "tm.tsv")
    with pytest.raises(UserError, match=r"^method.external.format='weird': choose null \| plain .*\(the TM x.tsv\)$"):
        check_method(OmegaConf.merge(OmegaConf.load(CONFIG_DIR / "method" / "tm.yaml"),
                                     {"external": {"format": "weird", "path": "x.tsv"}}))


def test_too_long_entries_are_refused_or_skipped_as_the_streams_are(tmp_path, caplog):
    long = ("Open " + "the very long file " * 3 + ".", "Öffnen Sie die Datei.")
    path = str(write_tsv(tmp_path / "long.tsv", [*PAIRS, long]))
    bad(external(format="tsv", path=path), "long.tsv:5", "more than the model's positions (8)",
        "set +method.external.on_too_long=skip to skip")  # the + Hydra needs: tm.yaml's external has no such key
    bad(external(format="tsv", path=path, on_too_long="error"), "set method.external.on_too_long=skip to skip")
    with caplog.at_level(logging.INFO, logger="adaptsim.data"):
        sources, _, info, _ = read_external(external(format="tsv", path=path, on_too_long="skip"), Tokens())
    assert sources == [s for s, _ in PAIRS] and info["entries"] == 3 and info["skipped"] == {"too_long": 1}
    said = [r.getMessage() for r in caplog.records]  # the TM's own setting, not the dataset's
    assert said and all(m.startswith("method.external: ") and "dataset." not in m for m in said), said
    assert "(method.external.on_too_long=skip)" in said[-1]


def test_a_bad_external_tm_stops_the_run_with_one_line(tmp_path, capsys):
    stream = write_stream(tmp_path / "stream.tsv", [("d", [A])])
    out = run(tmp_path / "missing", stream, "method=tm", "method.external.format=tsv",
              f"method.external.path={tmp_path / 'missing.tsv'}", code=1)
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.endswith(f"error: method.external: {tmp_path / 'missing.tsv'}: file not found")
    assert not out.exists()  # refused before the first segment: nothing left in the way of running it again
    run(tmp_path / "unknown", stream, "method=tm", "method.external.format=xlsx", "method.external.path=tm.xlsx",
        code=1)
    assert "method.external.format='xlsx': choose null | plain" in capsys.readouterr().err


def test_a_tm_gets_its_formats_own_defaults_and_ids_do_not_matter(tmp_path):
    """triplet.yaml's `detokenize: true` applies to a triplet TM as to a triplet dataset (WMT APE files are
    Moses-tokenised); a TMX with a repeated tuid is read (a TM's ids do not matter)."""
    for ext, side in (("src", 0), ("mt", 1), ("pe", 1)):
        (tmp_path / f"tm.{ext}").write_text("Open the file .\n" if side == 0 else "Öffnen Sie die Datei .\n",
                                            encoding="utf-8")
    sources, targets, *_ = read_external(external(format="triplet", path=str(tmp_path / "tm")), Tokens())
    assert (sources, targets) == (["Open the file."], ["Öffnen Sie die Datei."])
    twice = write_tmx(tmp_path / "twice.tmx", PAIRS[:2]).read_text(encoding="utf-8").replace('tuid="2"', 'tuid="1"')
    (tmp_path / "twice.tmx").write_text(twice, encoding="utf-8")
    assert read_external(external(format="tmx", path=str(tmp_path / "twice.tmx")), Tokens())[2]["entries"] == 2


def test_settings_a_tm_cannot_mean_are_refused(tmp_path):
    block = OmegaConf.load(CONFIG_DIR / "method" / "tm.yaml")
    for wrong, expected in (({"path": "x.tsv"}, "method.external.format is null but the TM x.tsv is named"),
                            ({"format": "tsv", "path": "x.tsv", "on_emtpy": "skip"}, "method.external.on_emtpy"),
                            ({"format": "tsv", "path": "x.tsv", "columns": "oops"}, "method.external.columns='oops'")):
        with pytest.raises(UserError, match="^" + expected.replace(".", r"\.")):
            check_method(OmegaConf.merge(block, {"external": wrong}))


def test_a_resume_with_another_tm_is_refused(tmp_path, capsys):
    stream = write_stream(tmp_path / "stream.tsv", [("d", [A_OTHER, B])])
    one, other = write_tsv(tmp_path / "one.tsv", TM_PAIRS), write_tsv(tmp_path / "other.tsv", OTHERS)
    out = run(tmp_path / "run", stream, "method=tm", "method.external.format=tsv", f"method.external.path={one}")
    (out / "summary.json").write_text(json.dumps({**summary(out), "status": "interrupted"}))
    run(out, stream, "method=tm", "method.external.format=tsv", f"method.external.path={other}", "resume=true", code=1)
    assert "cannot resume with other settings than its own (method.external.path: " in capsys.readouterr().err


def test_a_fractional_threshold_is_refused_with_the_percentage_it_means():
    block = OmegaConf.load(CONFIG_DIR / "method" / "tm.yaml")
    for fraction, meant in ((0.75, "75"), (1, "100"), (0.955, "95.5")):
        with pytest.raises(UserError, match=rf"^method.threshold={fraction}: the scale is 0–100 .*did you mean "
                                            rf"{meant}\?$"):
            check_method(OmegaConf.merge(block, {"threshold": fraction}))
    for allowed in (0, 1.5, 75, 100):
        check_method(OmegaConf.merge(block, {"threshold": allowed}))


def stream_of(pairs):
    return [Segment("d", str(i), s, r) for i, (s, r) in enumerate(pairs, 1)]


STREAM = stream_of(PAIRS[:2])
FILLERS = [("Print the page.", "Drucken Sie die Seite."), ("Save it.", "Speichern Sie es.")]


def checked(tmp_path, tm_pairs, on_overlap="error", fmt="tsv"):
    write = write_tsv if fmt == "tsv" else write_tmx
    method = tm(3, external(format=fmt, path=str(write(tmp_path / f"tm.{fmt}", tm_pairs)), on_overlap=on_overlap))
    method.check_stream(STREAM)
    return method


def test_a_tm_holding_pairs_of_the_stream_is_refused_naming_how_many_and_where(tmp_path):
    """No look-ahead: a TM entry that is a (source, reference) pair of the stream would reveal that reference
    before its segment is translated."""
    with pytest.raises(UserError) as e:  # the TM is the stream
        checked(tmp_path, PAIRS[:2])
    assert str(e.value) == (f"method.external: the TM {tmp_path / 'tm.tsv'} holds 2 targets of the test stream's "
                            "references (case, punctuation and spacing aside, fuzz.ratio ≥ 95; lines 2, 3): each would "
                            "reveal its reference before the segment is translated; take them out of the TM or set "
                            "method.external.on_overlap=drop (or warn)")
    with pytest.raises(UserError, match=r"holds 1 target of the test stream's .* \(.*; line 3\)"):  # one pair of it
        checked(tmp_path, [*FILLERS, PAIRS[1]][1:])
    with pytest.raises(UserError, match=r"holds 1 target .* \(.*; tu 2 \(tuid='2'\)\)"):  # TMX: the <tu>
        checked(tmp_path, [FILLERS[0], PAIRS[0]], fmt="tmx")
    many = [(f"Sentence {i}.", f"Satz {i}.") for i in range(7)]
    with pytest.raises(UserError, match=r"holds 7 targets .* \(.*; lines 2, 3, 4, 5, 6, …\)"):
        tm(3, external(format="tsv", path=str(write_tsv(tmp_path / "many.tsv", many)))).check_stream(stream_of(many))


def test_another_translation_of_a_streams_source_is_no_leak_and_is_counted(tmp_path):
    method = checked(tmp_path, [*FILLERS, (PAIRS[0][0], "Mach die Datei auf.")])
    assert method.info()["external"]["overlap"] == {"on_overlap": "error", "leak_threshold": 95.0, "leaks": 0,
                                                    "pairs": 0, "same_source_other_target": 1}
    assert method.matches(PAIRS[0][0])[0] == (PAIRS[0][0], "Mach die Datei auf.", 100.0)


def test_overlapping_entries_are_dropped_or_kept_with_a_warning_as_asked(tmp_path, caplog):
    tm_pairs = [PAIRS[0], FILLERS[0], PAIRS[1]]
    dropped = checked(tmp_path, tm_pairs, "drop")
    assert list(zip(dropped.external_sources, dropped.external_references)) == [FILLERS[0]]
    assert dropped.matches(PAIRS[0][0]) == []  # the stream's own pair is not retrieved before it is revealed
    info = dropped.info()["external"]
    assert info["entries"] == 3 and info["overlap"] == {"on_overlap": "drop", "leak_threshold": 95.0, "leaks": 2,
                                                        "pairs": 2, "same_source_other_target": 0}
    with caplog.at_level(logging.WARNING, logger="adaptsim"):
        kept = checked(tmp_path, tm_pairs, "warn")
    assert kept.external_sources == [s for s, _ in tm_pairs] and kept.info()["external"]["overlap"]["leaks"] == 2
    assert any("2 TM entries have a reference of the test stream as their target" in r.getMessage()
               for r in caplog.records)


def test_near_duplicate_targets_are_leaks_whatever_their_source(tmp_path):
    """The issue's three TMs: the stream's pairs with each source's final "." removed, with a space added to each
    target, and another source with the identical target — each passed the exact check, each is a leak."""
    no_stop = [(s.rstrip("."), r) for s, r in PAIRS[:2]]
    spaced = [(s, r + " ") for s, r in PAIRS[:2]]
    other_source = [("Something else entirely.", PAIRS[0][1]), FILLERS[0]]
    for tm_pairs, leaks, pairs in ((no_stop, 2, 2), (spaced, 2, 2), (other_source, 1, 0)):
        with pytest.raises(UserError, match=rf"holds {leaks} targets? of the test stream's references"):
            checked(tmp_path, tm_pairs)
        dropped = checked(tmp_path, tm_pairs, "drop")
        assert dropped.info()["external"]["overlap"]["leaks"] == leaks
        assert dropped.info()["external"]["overlap"]["pairs"] == pairs
        assert not set(dropped.external_references) & {r.strip() for _, r in PAIRS[:2]}
    near = [(PAIRS[0][0], PAIRS[0][1].replace("Datei", "Dateien")), FILLERS[0]]  # one word's ending: fuzz.ratio ≥ 95
    assert checked(tmp_path, near, "drop").info()["external"]["overlap"]["leaks"] == 1
    exact = tm(3, external(format="tsv", path=str(write_tsv(tmp_path / "near.tsv", near)), leak_threshold=100))
    exact.check_stream(STREAM)  # 100: the normalised texts must be equal
    assert exact.info()["external"]["overlap"]["leaks"] == 0
    with pytest.raises(UserError, match=r"^method.external.on_overlap='maybe': choose 'error' \| 'drop' \| 'warn'$"):
        checked(tmp_path, tm_pairs, "maybe")


def test_the_stream_as_its_own_tm_is_refused_and_dropped_scores_as_without_a_tm(tmp_path, capsys):
    """What a user runs: the stream file named as the TM is refused before the first segment; with on_overlap=drop
    the run is the run without a TM; with warn it is marked in summary.json and in the table's note."""
    stream = write_stream(tmp_path / "stream.tsv", [("d", [A, B])])
    tm_stream = ["method=tm", "method.external.format=tsv", f"method.external.path={stream}"]
    refused = run(tmp_path / "refused", stream, *tm_stream, code=1)
    assert "holds 2 targets of the test stream's references (case, punctuation and spacing aside, fuzz.ratio ≥ 95; " \
           "lines 2, 3)" in capsys.readouterr().err
    assert not refused.exists()  # refused before the first segment
    alone = run(tmp_path / "alone", stream, "method=tm")
    dropped = run(tmp_path / "drop", stream, *tm_stream, "method.external.on_overlap=drop")
    assert hyps(dropped) == hyps(alone) and summary(dropped)["scores"] == summary(alone)["scores"]
    warned = run(tmp_path / "warn", stream, *tm_stream, "method.external.on_overlap=warn")
    assert summary(warned)["method_info"]["external"]["overlap"]["leaks"] == 2
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["table", str(alone), str(warned)])
    assert exit_.value.code == 0
    assert "held 2 of the test stream's references as targets, kept (method.external.on_overlap=warn)" in \
        capsys.readouterr().out


def test_the_overrides_the_tm_hints_give_are_the_ones_hydra_takes(tmp_path):
    """A hint names `+method.external.KEY=…` where tm.yaml's `external` has no KEY (Hydra refuses a new key without
    the +) and no + where it has one; a <tu> in another language pair is named by its line and can be skipped."""
    from hydra.errors import ConfigCompositionException

    from adaptsim.launch.hydra_app import compose

    write_tmx(tmp_path / "mixed.tmx", PAIRS)
    text = (tmp_path / "mixed.tmx").read_text(encoding="utf-8").replace('<tuv xml:lang="de-DE"><seg>Schließen',
                                                                        '<tuv xml:lang="fr"><seg>Schließen')
    (tmp_path / "mixed.tmx").write_text(text, encoding="utf-8")
    message = bad(external(format="tmx", path=str(tmp_path / "mixed.tmx")), "mixed.tmx:5: tu 2 (tuid='2')",
                  "no <tuv> for language 'de'", "or +method.external.on_missing_language=skip to skip such <tu>s")
    hinted = message.split("or ")[-1].split(" ")[0]
    assert compose("run", ["method=tm", hinted]).method.external.on_missing_language == "skip"
    with pytest.raises(ConfigCompositionException):  # what the hint said before: refused by Hydra
        compose("run", ["method=tm", hinted.lstrip("+")])
    sources, _, info, _ = read_external(external(format="tmx", path=str(tmp_path / "mixed.tmx"),
                                                 on_missing_language="skip"), Tokens())
    assert sources == [PAIRS[0][0], PAIRS[2][0]] and info["skipped"] == {"missing_language": 1}
