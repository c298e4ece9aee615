"""The data builders against their real upstreams: each rebuilds its shipped files to the md5 docs/data.md gives.

The upstream clones (bare or not) are found in the folder ADAPTSIM_UPSTREAM names, one per repository, each named
`<owner>+<name>` (a clone there, or its git directory in `<owner>+<name>/repo`); a builder whose clone is not there
is skipped, saying which. Nothing is downloaded: `git clone --bare https://github.com/<owner>/<name>
$ADAPTSIM_UPSTREAM/<owner>+<name>` for each, once."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from conftest import script_module

DOCS = (Path(__file__).resolve().parents[1] / "docs" / "data.md").read_text(encoding="utf-8")
# the shipped files' md5s, as docs/data.md's "Rebuilding" gives them
SHIPPED = {
    "gnome_help": {"gnome-help.en-de.tsv": "7474cd0f958b89a68751f5d855a6cfe3"},
    "ted": {"iwslt17.tst2016.en-de.tsv": "8fc3fd1655dca239f51d6bd345eacad4"},
    "business_central": {"test.tsv": "b04eeab889e9194f79bc9adb612e966a",
                         "heldout.tsv": "6d3e236761eba714842156c42f6d846f"},
    "general": {"train.en": "f80db380ed98cd8f475cee0a395591dd", "train.de": "d79e57ea989fd1b80a9cb63eb1f3707b",
                "dev.en": "b6ecc78830c88c2d63221c12b6ea34a6", "dev.de": "518e28f504d6b30d5b18d8ec97e2315b"},
}
UPSTREAMS = {"gnome_help": ["GNOME+gnome-user-docs"], "ted": ["hlt-mt+WIT3"],
             "business_central": ["MicrosoftDocs+dynamics365smb-docs-pr.de-de", "MicrosoftDocs+dynamics365smb-docs"],
             "general": ["Helsinki-NLP+OPUS-MT-testsets"]}


def clone(name: str) -> Path:
    root = os.environ.get("ADAPTSIM_UPSTREAM")
    if not root:
        pytest.skip("ADAPTSIM_UPSTREAM is not set (the folder of upstream clones)")
    for path in (Path(root) / name / "repo", Path(root) / name):
        if path.is_dir():
            return path
    pytest.skip(f"no clone of {name} in {root}")


def show(git_dir: Path, spec: str, out: Path) -> Path:
    out.write_bytes(subprocess.run(["git", "-C", str(git_dir), "show", spec], capture_output=True, check=True).stdout)
    return out


def build(builder: str, clones: list[Path], out: Path) -> None:
    main = script_module(f"scripts/data/{builder}.py").main
    if builder == "gnome_help":
        po = show(clones[0], "2fccd36c:gnome-help/de/de.po", out / "de.po")
        code = main([str(po), str(out / "gnome-help.en-de.tsv")])
    elif builder == "ted":
        archive = "2017-01-ted-test/texts"
        en_de = show(clones[0], f"e43615b:archive/{archive}/en/de/en-de.tgz", out / "en-de.tgz")
        de_en = show(clones[0], f"e43615b:archive/{archive}/de/en/de-en.tgz", out / "de-en.tgz")
        code = main([str(en_de), str(de_en), str(out / "iwslt17.tst2016.en-de.tsv")])
    elif builder == "business_central":
        code = main([*map(str, clones), str(out / "test.tsv"), str(out / "heldout.tsv")])
    else:
        code = main([str(clones[0]), str(out)])
    assert code == 0


@pytest.mark.parametrize("builder", SHIPPED)
def test_the_builder_rebuilds_the_shipped_files_from_the_real_upstream(tmp_path, builder):
    clones = [clone(name) for name in UPSTREAMS[builder]]
    build(builder, clones, tmp_path)
    assert {name: hashlib.md5((tmp_path / name).read_bytes()).hexdigest() for name in SHIPPED[builder]} \
        == SHIPPED[builder]


def test_the_md5s_are_the_ones_docs_data_md_gives():
    assert all(md5 in DOCS for files in SHIPPED.values() for md5 in files.values())
