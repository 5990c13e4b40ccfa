"""moot's debate as an inspect_ai solver, on a tiny task with simulated agents."""

import pytest

inspect_ai = pytest.importorskip("inspect_ai")

from inspect_ai import Task, eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.scorer import match  # noqa: E402

import moot  # noqa: E402
from moot.inspect import debate  # noqa: E402


def test_a_debate_answers_each_sample_and_its_turns_are_in_the_transcript(tmp_path):
    task = Task(
        dataset=[
            Sample(input="What is 17 * 24?", target="408"),
            Sample(input="What is 6 * 7?", target="42"),
        ],
        solver=debate(protocol="free-mad-n", agents=3, rounds=1, sim=True, store=tmp_path / "m.db"),
        scorer=match(numeric=True),
    )
    [log] = inspect_eval(task, model="mockllm/model", log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success"
    assert len(log.samples) == 2
    for sample in log.samples:
        assert sample.metadata["moot_run_id"]
        infos = [e for e in sample.events if e.event == "info" and str(e.source).startswith("moot")]
        # One per call (3 agents × 2 rounds) and the decision.
        assert len(infos) == 7
    with moot.Store(tmp_path / "m.db") as store:
        assert len(store.runs()) == 2
        for sample in log.samples:
            stored = store.run(sample.metadata["moot_run_id"])["run"]
            assert stored["question"] == sample.input
            assert sample.output.completion == (stored["answer"] or "")
