"""Every configs/dataset/*.yaml composes under Hydra; the real-data configs read ../shared/data (skipped
when absent) and the Autodesk config explains where it looked."""


import pytest

from adaptsim import CONFIG_DIR, PROJECT_ROOT
from adaptsim.data import load_documents
from adaptsim.data.options import common_defaults
from adaptsim.data.readers import FORMATS
from adaptsim.errors import DataError
from adaptsim.launch.hydra_app import compose

SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
MINE = sorted(p.stem for p in (CONFIG_DIR / "dataset").glob("*.yaml") if p.stem not in ("_common", "demo"))


def compose_run(*overrides):
    return compose("run", ["model=opus-mt-en-de", *overrides])


@pytest.fixture(scope="module")
def composed():
    return {name: compose_run(f"dataset={name}") for name in MINE}


def test_every_dataset_config_has_common_keys_and_a_known_format(composed):
    assert {"plain", "tsv", "csv", "jsonl", "tmx", "xml", "sgml", "autodesk", "triplet", "ted", "gnome_help",
            "ape_it"} <= set(MINE)
    for name, cfg in composed.items():
        ds = cfg.dataset
        assert ds.name == name and ds.format in FORMATS
        assert set(common_defaults()) <= set(ds), name
        if "source_lang" in ds:
            assert (ds.source_lang, ds.target_lang) == ("en", "de")  # follows the model


def test_common_options_are_overridable():
    cfg = compose_run("dataset=tsv", "dataset.path=x.tsv", "dataset.max_segments=3", "dataset.on_empty=skip",
                      "dataset.documents=[a,b*]", "dataset.columns.seg_id=null")
    assert (cfg.dataset.max_segments, cfg.dataset.on_empty, list(cfg.dataset.documents)) == (3, "skip", ["a", "b*"])
    assert cfg.dataset.columns.seg_id is None


def test_autodesk_default_path_is_in_the_user_cache(composed, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    ds = compose_run("dataset=autodesk").dataset
    assert ds.path == f"{tmp_path}/adaptsim/autodesk/en-de"
    with pytest.raises(DataError, match=rf"^{tmp_path}/adaptsim/autodesk/en-de: not found; .*download it by hand"
                                        r".*dataset\.path="):
        load_documents(ds)
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert compose_run("dataset=autodesk").dataset.path == f"{tmp_path}/home/.cache/adaptsim/autodesk/en-de"


def test_real_data_configs_point_at_shared_data(composed):
    assert composed["ted"].dataset.path == str(SHARED_DATA / "ted" / "iwslt17.tst2016.en-de.tsv")
    assert composed["ape_it"].dataset.path == str(SHARED_DATA / "ape-it" / "train")


needs_shared = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is absent")


@needs_shared
def test_real_ted(composed):
    docs = load_documents(composed["ted"].dataset)
    assert len(docs) == 13 and sum(map(len, docs)) == 1133
    assert all(28 <= len(d) <= 133 for d in docs)


@needs_shared
def test_real_gnome_help_by_topic_and_by_page():
    docs = load_documents(compose_run("dataset=gnome_help").dataset)
    assert sum(map(len, docs)) == 3525 and len(docs) == 45
    assert {"a11y", "net", "files"} <= {d.doc_id for d in docs}
    pages = load_documents(compose_run("dataset=gnome_help", "dataset.group_by=null").dataset)
    assert len(pages) == 310


@needs_shared
def test_real_ape_it_detokenised():
    docs = load_documents(compose_run("dataset=ape_it", "dataset.split_every=50", "dataset.max_documents=2").dataset)
    assert [d.doc_id for d in docs] == ["train/1", "train/2"] and sum(map(len, docs)) == 100
    first = docs[0].segments[0]
    assert first.source.endswith("key.") and " ," not in first.reference and "mt" in first.attrs
    assert first.doc_id == "train/1" and first.attrs["source_doc"] == "train"
