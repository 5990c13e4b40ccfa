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


def test_inspect_eval_runs_debates_through_the_moot_model_provider(tmp_path):
    """A real ``inspect eval`` (the CLI, in its own process) with ``--model moot/free-mad-n``:
    the package's entry point registers the provider, each generation is a debate recorded in
    the store named by ``-M store=…``, and the completion is the decided answer."""
    import subprocess
    import sys
    from pathlib import Path

    from inspect_ai.log import list_eval_logs, read_eval_log

    config = tmp_path / "team.toml"
    config.write_text(
        "".join(
            f'[[agents]]\nid = "a{i}"\nbackend = "scripted"\nresponses = ["Final answer: 408"]\n\n'
            for i in range(3)
        )
    )
    task = tmp_path / "task.py"
    task.write_text(
        "from inspect_ai import Task, task\n"
        "from inspect_ai.dataset import Sample\n"
        "from inspect_ai.scorer import match\n"
        "from inspect_ai.solver import generate\n\n"
        "@task\n"
        "def arithmetic():\n"
        "    return Task(\n"
        "        dataset=[Sample(input='What is 17 * 24?', target='408'),\n"
        "                 Sample(input='What is 6 * 7?', target='42')],\n"
        "        solver=generate(),\n"
        "        scorer=match(numeric=True),\n"
        "    )\n"
    )
    store = tmp_path / "debates.db"
    inspect_cli = Path(sys.executable).parent / "inspect"
    done = subprocess.run(
        [
            str(inspect_cli), "eval", task.name,
            "--model", "moot/free-mad-n",
            "-M", f"team={config}", "-M", "rounds=1", "-M", f"store={store}",
            "--log-dir", str(tmp_path / "logs"), "--display", "none",
        ],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [info] = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info)
    assert log.status == "success", log.error
    assert log.eval.model == "moot/free-mad-n"
    outputs = {s.input: s.output for s in log.samples}
    assert {o.completion for o in outputs.values()} == {"408"}
    scores = {s.input: s.scores["match"].value for s in log.samples}
    assert scores == {"What is 17 * 24?": "C", "What is 6 * 7?": "I"}
    with moot.Store(store) as stored:
        runs = stored.runs()
        assert len(runs) == 2
        for sample in log.samples:
            run_id = sample.output.metadata["moot_run_id"]
            run = stored.run(run_id)["run"]
            assert run["question"] == sample.input
            assert run["protocol"] == "free-mad-n"


def test_the_moot_model_provider_refuses_unknown_arguments():
    from inspect_ai.model import get_model

    with pytest.raises(ValueError, match="unknown model argument"):
        get_model("moot/som", colour="red")
