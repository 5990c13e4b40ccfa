"""Results, runs, calls and benchmark rows become pandas DataFrames and Arrow tables."""

import pytest

import moot

pandas = pytest.importorskip("pandas")
pyarrow = pytest.importorskip("pyarrow")


def test_a_result_is_one_row_per_agent_and_round(store):
    r = moot.ask("What is 2 * 21?", agents=3, rounds=2, sim=True, gold="42", store=store)
    frame = r.to_pandas()
    assert list(frame.columns) == ["run_id", "protocol", "round", "agent", "answer"]
    assert len(frame) == 9
    assert sorted(frame["round"].unique()) == [0, 1, 2]
    table = r.to_arrow()
    assert table.num_rows == 9
    assert table.column_names == ["run_id", "protocol", "round", "agent", "answer"]


def test_runs_and_calls_become_frames(store):
    for i in range(3):
        moot.ask(f"What is {i} + 1?", agents=3, rounds=1, sim=True, gold=str(i + 1), store=store)
    runs = store.runs().to_pandas()
    assert len(runs) == 3
    assert {"id", "question", "protocol", "answer", "status"} <= set(runs.columns)
    calls = store.calls(runs["id"][0]).to_arrow()
    assert calls.num_rows == 6
    assert {"round", "agent", "answer", "output_tokens"} <= set(calls.column_names)


def test_accuracy_by_protocol_from_a_benchmark_frame(tmp_path, store):
    data = tmp_path / "items.jsonl"
    data.write_text("\n".join(f'{{"question": "{i}+{i}?", "answer": "{2 * i}"}}' for i in range(4)))
    report = moot.bench(
        f"jsonl:{data}?kind=numeric", ["som", "cot"], sim=True, agents=3, rounds=1, store=store
    )
    frame = report.to_pandas()
    by_protocol = frame.groupby("protocol")["correct"].mean().to_dict()
    assert by_protocol == pytest.approx(report.accuracy())
