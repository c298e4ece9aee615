"""A translator's run (adaptsim/serve/human.py `HumanSimulation`): its work per step does not grow with the session,
and it leaves the configuration it was given as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from adaptsim import DATA_DIR  # noqa: E402
from adaptsim.commands.serve import configs  # noqa: E402
from adaptsim.metrics import Evaluator  # noqa: E402
from adaptsim.serve.app import create_app  # noqa: E402
from adaptsim.serve.human import HUMAN  # noqa: E402
from adaptsim.serve.state import ServeSession  # noqa: E402

STEPS = 300
EFFORT = {"keystrokes": 4, "mouse_actions": 2, "word_strokes": 1, "seconds": 2.5, "accepted_completions": 1,
          "completion_requests": 3}


def long_stream(path: Path) -> Path:
    """The demo's 60 segments five times over, as 3 documents of 100: a session of STEPS steps."""
    rows = (DATA_DIR / "demo" / "docs.tsv").read_text().splitlines()
    header, pairs = rows[0], [row.split("\t")[2:] for row in rows[1:]]
    lines = [header] + [f"d{i // 100}\t{i % 100 + 1}\t" + "\t".join(pairs[i % len(pairs)]) for i in range(STEPS)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_session_s_work_per_step_does_not_grow_with_its_length(tmp_path, monkeypatch):
    """Evaluator builds and segment scorings counted over a few hundred validations: as many at the last step as at
    the first (they were the number of steps so far: every step rebuilt the evaluator and scored every earlier
    hypothesis again), and each step scored once when the run ends."""
    calls = {"built": 0, "scored": 0}
    build, score = Evaluator.__init__, Evaluator.segment

    def counted_build(self, *args, **kwargs):
        calls["built"] += 1
        build(self, *args, **kwargs)

    def counted_score(self, *args, **kwargs):
        calls["scored"] += 1
        return score(self, *args, **kwargs)

    monkeypatch.setattr(Evaluator, "__init__", counted_build)
    monkeypatch.setattr(Evaluator, "segment", counted_score)
    argv = [f"serve.dir={tmp_path / 's'}", "method=none", "dataset=tsv", "decode.beam_size=1", "decode.max_length=24",
            f"dataset.path={long_stream(tmp_path / 'd.tsv')}", "progress=false"]
    session = ServeSession(configs(argv), argv)
    client = TestClient(create_app(session, "t", ["testserver"], 4096), headers={"X-Adaptsim-Token": "t"})
    per_step = []  # what each validation built and scored
    for _ in range(STEPS):
        before = dict(calls)
        state = client.get("/api/state").json()
        response = client.post("/api/validate", json={"position": state["position"], "text": state["hypothesis"],
                                                      "effort": EFFORT})
        assert response.status_code == 200, response.text
        per_step.append({k: calls[k] - before[k] for k in calls})
    assert client.get("/api/state").json()["finished"]
    assert all(step == per_step[0] for step in per_step[:-1]), per_step  # as much at step 299 as at step 1
    assert per_step[-1] == {"built": 1, "scored": STEPS}  # the last one ends the run: each step scored once
    run = session.runs["none"]
    assert run.sim.cfg.metrics.interactive_costs != HUMAN  # the configuration as given
    session.close()
    summary = json.loads((tmp_path / "s" / "none" / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["cost"]["interactive"]["costs"] == HUMAN
    lines = (tmp_path / "s" / "none" / "steps.jsonl").read_text().splitlines()
    assert len(lines) == STEPS and all("R0" in json.loads(line) for line in lines)
