"""Errors are Python exceptions of moot's kinds, with moot's messages."""

import pytest

import moot


def test_an_unknown_protocol_is_an_input_error_naming_it(store):
    with pytest.raises(moot.InputError, match="no-such-protocol"):
        moot.ask("What is 1 + 1?", protocol="no-such-protocol", sim=True, gold="2", store=store)


def test_simulated_agents_without_a_gold_answer_are_refused(store):
    with pytest.raises(moot.InputError, match="gold"):
        moot.ask("What is 1 + 1?", sim=True, store=store)


def test_a_bad_configuration_is_a_config_error_naming_the_key(store):
    with pytest.raises(moot.ConfigError, match="rounds"):
        moot.ask(
            "What is 1 + 1?",
            config={"debate": {"rounds": "many"}},
            sim=True,
            gold="2",
            store=store,
        )


def test_a_configuration_file_that_is_missing_is_a_config_error(tmp_path, store):
    with pytest.raises(moot.ConfigError):
        moot.ask("What is 1 + 1?", config=tmp_path / "nope.toml", store=store)


def test_config_errors_are_input_errors_and_all_are_moot_errors():
    assert issubclass(moot.ConfigError, moot.InputError)
    assert issubclass(moot.InputError, moot.MootError)
    assert issubclass(moot.StoreError, moot.MootError)


def test_zero_agents_and_an_empty_question_are_refused(store):
    with pytest.raises(moot.InputError, match="at least 1"):
        moot.ask("What is 1 + 1?", agents=0, sim=True, gold="2", store=store)
    with pytest.raises(moot.InputError, match="empty"):
        moot.ask("   ", sim=True, gold="2", store=store)


def test_an_unknown_run_is_an_input_error(store):
    with pytest.raises(moot.InputError, match="nope"):
        store.run("nope")


def test_a_store_that_is_not_moots_is_a_store_error(tmp_path):
    path = tmp_path / "not-a-store.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(moot.StoreError):
        moot.Store(path)


def test_a_benchmark_with_no_protocol_or_zero_concurrency_is_refused(store):
    with pytest.raises(moot.InputError, match="protocol"):
        moot.bench("gsm8k", [], store=store)
    with pytest.raises(moot.InputError, match="concurrency"):
        moot.bench("gsm8k", ["cot"], concurrency=0, store=store)


def test_an_argument_over_a_limit_is_named_as_python_names_it(store):
    # Issue 43: this was "--rounds 11 is over the limit …", a flag the caller never typed.
    with pytest.raises(moot.InputError) as refused:
        moot.ask("What is 1 + 1?", rounds=11, sim=True, gold="2", store=store)
    message = str(refused.value)
    assert message.startswith("rounds=11 is over the limit"), message
    assert "--" not in message, message
    with pytest.raises(moot.InputError, match='options= "nonsense": expected KEY=VALUE'):
        moot.ask("What is 1 + 1?", options=["nonsense"], sim=True, gold="2", store=store)
