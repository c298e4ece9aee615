"""Every command that reads a decoder-only model's runs works on each tokenizer family a real LLM has: byte-level BPE
(GPT-2 with a plain prompt, Qwen2 through a chat template) and sentencepiece (Llama plain, Gemma through a chat
template), on tests/tiny_causal.py's tiny random models: `run` (the baseline, icl and full), `table` with its
significance and cost columns, `findings`, and `cxmi` (the history's CXMI against the baseline and the prompt's
context, words grouped and given roles)."""

from __future__ import annotations

import pytest

from adaptsim.cli import main


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gpt2", "qwen2", "llama", "gemma"])
def test_run_table_findings_and_cxmi_read_every_family_s_runs(run_adaptsim, causal_dirs, tiny_tsv, tmp_path, capsys,
                                                              kind):
    data = (f"model.path={causal_dirs(kind)}", "dataset=tsv", f"dataset.path={tiny_tsv}")
    for method, more in (("none", ()), ("icl", ("method.k=2",)), ("full", ())):
        _, summary = run_adaptsim(f"{kind}/{method}", *data, f"method={method}", *more)
        assert summary["status"] == "finished", (kind, method)
    runs = str(tmp_path / kind)
    for command in (["table", runs, "--significance", "--cost"], ["findings", runs], ["cxmi", runs]):
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_:
            main(command)
        printed = capsys.readouterr()
        assert exit_.value.code == 0, (kind, command[0], printed.err)
        assert "| icl |" in printed.out and "| full |" in printed.out or command[0] == "findings", (kind, command[0])
        if command[0] == "cxmi":
            assert "CXMI of the prompt's context" in printed.out
            assert "| first |" in printed.out  # words found and given roles
        if command[0] == "findings":
            assert "full" in printed.out
