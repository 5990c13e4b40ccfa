"""moot.ask, moot.bench and moot.Store read and write what the CLI does."""

import json

import moot
import pytest


def test_a_simulated_debate_returns_its_answer_rounds_and_run(store):
    r = moot.ask(
        "What is 17 * 24?",
        protocol="free-mad-n",
        agents=3,
        rounds=2,
        sim=True,
        gold="408",
        store=store,
    )
    assert r.protocol == "free-mad-n"
    assert r.rule == "free-mad"
    assert len(r.rounds) == 3 and all(len(answers) == 3 for answers in r.rounds)
    assert r.calls == 9
    assert r.ncomm > 0
    assert set(r.tokens) >= {"input", "output"}
    stored = store.run(r.run_id)
    assert stored["run"]["question"] == "What is 17 * 24?"
    assert stored["run"]["answer"] == r.answer
    assert stored["run"]["status"] == "done"
    assert len(stored["calls"]) == 9
    assert len(stored["view"]["rounds"]) == 3


def test_runs_calls_and_decide_read_the_store_back(store):
    first = moot.ask("What is 2 + 2?", agents=3, rounds=1, sim=True, gold="4", store=store)
    second = moot.ask(
        "What is 3 + 3?", protocol="cot", sim=True, gold="6", store=store
    )
    runs = store.runs()
    assert [row["id"] for row in runs] == [second.run_id, first.run_id]
    assert [row["id"] for row in store.runs(protocol="cot")] == [second.run_id]
    calls = store.calls(first.run_id)
    assert len(calls) == 6
    assert {c["round"] for c in calls} == {0, 1}
    every = store.decide(first.run_id)
    assert {"majority-last", "free-mad"} <= {d["rule"] for d in every}
    chosen = next(d for d in every if d["rule"] == first.rule)
    assert chosen["answer"] == first.answer
    one = store.decide(first.run_id, rule="majority-last")
    assert one["rule"] == "majority-last"
    assert one == next(d for d in every if d["rule"] == "majority-last")


def test_a_config_dict_is_read_as_a_configuration_file_would_be(store):
    r = moot.ask(
        "What is 5 + 5?",
        config={"debate": {"protocol": "som", "rounds": 1}},
        agents=3,
        sim=True,
        gold="10",
        store=store,
    )
    assert r.protocol == "som"
    assert len(r.rounds) == 2


def test_protocol_options_are_given_as_a_dict(store):
    r = moot.ask(
        "What is 6 * 7?",
        protocol="free-mad-n",
        agents=4,
        rounds=1,
        options={"topology": "ring"},
        sim=True,
        gold="42",
        store=store,
    )
    spec = store.run(r.run_id)["run"]["config"]
    assert "ring" in json.dumps(spec)


def test_a_benchmark_reports_each_protocol_and_each_debate(tmp_path, store):
    data = tmp_path / "items.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"question": f"What is {i} + {i}?", "answer": str(2 * i)})
            for i in range(1, 6)
        )
    )
    report = moot.bench(
        f"jsonl:{data}?kind=numeric",
        ["som", "cot"],
        sim=True,
        agents=3,
        rounds=1,
        name="py-bench",
        store=store,
    )
    assert report.name == "py-bench"
    assert len(report.results) == 10
    assert {row["protocol"] for row in report.results} == {"som", "cot"}
    assert set(report.accuracy()) == {"som", "cot"}
    assert all(0.0 <= a <= 1.0 for a in report.accuracy().values())
    again = moot.bench(
        f"jsonl:{data}?kind=numeric",
        "som,cot",
        sim=True,
        agents=3,
        rounds=1,
        name="py-bench",
        store=store,
    )
    assert all(row["reused"] for row in again.results)


def test_a_benchmark_can_add_its_self_consistency_arm_and_be_planned_for_workers(tmp_path, store):
    # Issue 43: `--sc-at-budget` and `--detach` lived in the CLI; Python reaches them now.
    data = tmp_path / "items.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"question": f"What is {i} + {i}?", "answer": str(2 * i)})
            for i in range(1, 5)
        )
    )
    dataset = f"jsonl:{data}?kind=numeric"
    report = moot.bench(
        dataset,
        ["cot-sc", "som"],
        sim=True,
        agents=3,
        rounds=2,
        name="budget",
        store=store,
        config={"budget": {"max_total_tokens": 1000000}},
        sc_at_budget=True,
    )
    benches = {}
    for row in report.results:
        benches.setdefault(row["bench"], set()).add(row["protocol"])
    assert len(report.results) == 4 * 2 + 4, len(report.results)
    arm = next(name for name in benches if name.startswith("budget-sc"))
    assert benches == {"budget": {"cot-sc", "som"}, arm: {"cot-sc"}}, benches
    assert set(report.accuracy()) == {"cot-sc (budget)", "som", f"cot-sc ({arm})"}
    planned = moot.plan(dataset, "som,cot", "for-workers", sim=True, agents=3, store=store)
    assert planned == {"bench": "for-workers", "planned": 8, "added": 8}
    again = moot.plan(dataset, "som,cot", "for-workers", sim=True, agents=3, store=store)
    assert again["added"] == 0
    with pytest.raises(moot.InputError, match="sc_at_budget=True"):
        moot.bench(dataset, ["cot"], sim=True, store=store, sc_at_budget=True)


def test_a_benchmark_is_forked_as_the_cli_forks_it(tmp_path, store):
    # Issue 43: `moot bench --fork-of` had no Python face.
    data = tmp_path / "items.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"question": f"What is {i} + {i}?", "answer": str(2 * i)})
            for i in range(1, 4)
        )
    )
    moot.bench(f"jsonl:{data}?kind=numeric", ["som"], sim=True, agents=3, rounds=1,
               name="parent", store=store)
    fork = moot.fork_bench("parent", 1, agent=1, say_wrong=True, store=store)
    assert fork.name.startswith("parent-fork-r1"), fork.name
    assert fork.data["fork_run"]["forked"] == 3
    with pytest.raises(moot.InputError, match="say_wrong= needs agent="):
        moot.fork_bench("parent", 1, say_wrong=True, store=store)
    with pytest.raises(moot.InputError, match="give one change"):
        moot.fork_bench("parent", 1, agent=1, say="x", model="m", store=store)


def test_help_reads_well():
    assert "Debates ``question``" in moot.ask.__doc__
    assert moot.Store.__doc__ and moot.Result.__doc__ and moot.BenchReport.__doc__
    assert moot.__version__


def test_a_run_is_forked_at_a_round_as_moot_fork_forks_it(store):
    parent = moot.ask("What is 17 * 24?", sim=True, gold="408", agents=3, rounds=2,
                      protocol="som", store=store)
    null = moot.fork(parent.run_id, 1, store=store)
    assert null.run_id != parent.run_id
    # The rounds before the fork are the parent's, copied.
    assert null.rounds[0] == parent.rounds[0]
    said = moot.fork(parent.run_id, 1, agent=2, say="I now think 7.\nFinal answer: 7", store=store)
    assert said.rounds[1][1] == "7"
    stored = store.run(said.run_id)["run"]
    assert stored["fork"]["parent"] == parent.run_id, stored.get("fork")
    with pytest.raises(moot.InputError, match="say= needs agent="):
        moot.fork(parent.run_id, 1, say="x", store=store)
    with pytest.raises(moot.InputError, match="give one"):
        moot.fork(parent.run_id, 1, agent=1, say="x", model="y", store=store)
    with pytest.raises(moot.InputError, match="agent= names whom"):
        moot.fork(parent.run_id, 1, agent=1, store=store)


def test_bench_forks_a_benchmark_with_fork_of_and_reports_its_controls(tmp_path, store):
    data = tmp_path / "items.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"question": f"What is {i} + {i}?", "answer": str(2 * i)})
            for i in range(1, 4)
        )
    )
    parent = moot.bench(f"jsonl:{data}?kind=numeric", ["som", "free-mad-n"], sim=True,
                        agents=3, rounds=2, name="ctl", store=store)
    vote = parent.controls("vote").to_pandas()
    assert list(vote["protocol"]) == ["som", "free-mad-n"]
    assert set(vote.columns) >= {"vote_accuracy", "decision_accuracy", "only_vote", "p_value"}
    martingale = parent.controls("martingale").to_pandas()
    assert list(martingale["round"]) == [1, 2, 1, 2]
    assert {"mean", "ci95_low", "ci95_high"} <= set(martingale.columns)
    flips = parent.controls("flips").to_pandas()
    assert len(flips) == 2 * 3 and {"agent", "right_to_wrong"} <= set(flips.columns)
    assert len(parent.controls("flips_by_mix")) == 2
    with pytest.raises(ValueError, match="no control 'votes'"):
        parent.controls("votes")
    fork = moot.bench(fork_of="ctl", round=1, agent=1, say_wrong=True, store=store)
    assert fork.name.startswith("ctl-fork-r1"), fork.name
    assert fork.data["fork_run"]["forked"] == 6
    with pytest.raises(moot.InputError, match="limit cannot be set"):
        moot.bench(fork_of="ctl", round=1, limit=2, store=store)
    with pytest.raises(moot.InputError, match="needs round="):
        moot.bench(fork_of="ctl", store=store)
    with pytest.raises(moot.InputError, match="give fork_of="):
        moot.bench(f"jsonl:{data}?kind=numeric", "som", sim=True, round=1, store=store)


def test_a_passage_given_as_context_reaches_the_debaters_and_not_the_judge(store):
    passage = ("The ferry to Kell Island left at seven each morning. On the morning of the "
               "storm the captain held it at the pier until nine, because the flag showed red.")
    result = moot.ask(
        "At what hour did the ferry leave on the morning of the storm?",
        context=passage, protocol="judge", sim=True, gold="9", agents=3, rounds=1,
        answer="numeric", store=store,
    )
    stored = store.run(result.run_id)
    assert stored["run"]["spec"]["passage"] == passage
    for call in store.calls(result.run_id):
        if call.get("skipped"):
            continue
        text = json.dumps(call["messages"])
        if call["template"] == "judge-verdict":
            assert "Kell Island" not in text
        else:
            assert "Kell Island" in text
