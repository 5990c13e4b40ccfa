//! `moot ask` on the embedded backend with real models. These download models (via pip) and take
//! a while on two cores, so they are ignored in the quick loop; `scripts/test` (CI) runs them.

use assert_cmd::Command;
use serde_json::Value;

fn moot(store: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("moot").unwrap();
    c.env("MOOT_STORE", store);
    c
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(out)))
}

#[test]
#[ignore = "downloads SmolLM2-135M; run with --include-ignored"]
fn a_debate_on_the_small_local_model_is_stored_and_reused_from_cache() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("moot.db");
    let cfg = dir.path().join("small.yaml");
    std::fs::write(
        &cfg,
        "debate:\n  protocol: free-mad-n\n  rounds: 1\n  answer: numeric\n  soft_timeout_ms: 600000\n  hard_timeout_ms: 900000\nagents:\n  - {id: s1, backend: local, model: smollm2-135m, max_tokens: 64, temperature: 0.0}\n  - {id: s2, backend: local, model: smollm2-135m, max_tokens: 64}\n  - {id: s3, backend: local, model: smollm2-135m, max_tokens: 64}\n",
    )
    .unwrap();
    let out = moot(&store)
        .args([
            "ask",
            "What is 2 + 2? Answer with a number.",
            "--config",
            cfg.to_str().unwrap(),
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    assert_eq!(v["calls"], 6);
    assert!(v["tokens"]["output"].as_u64().unwrap() > 0);
    let input = v["tokens"]["input"].as_u64().unwrap();
    let processed = v["tokens"]["input_processed"].as_u64().unwrap();
    assert!(
        processed < input,
        "round 1 reuses each agent's cached prefix: {processed} of {input}"
    );
    let run = v["run_id"].as_str().unwrap();
    let shown = json(
        &moot(&store)
            .args(["show", run, "--format", "json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    let calls = shown["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 6);
    assert!(calls
        .iter()
        .all(|c| c["logprob_mean"].as_f64().is_some_and(|m| m <= 0.0)));
    moot(&store)
        .args(["decide", "--run", run, "--rule", "all"])
        .assert()
        .success();
}

#[test]
#[ignore = "downloads the 491 MB default model; run with --include-ignored"]
fn the_quick_start_question_gets_408_from_three_local_agents() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("moot.db");
    let out = moot(&store)
        .args(["ask", "What is 17 * 24? Answer with a number.", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    assert_eq!(v["answer"], "408", "{v}");
    assert_eq!(v["rule"], "free-mad");
    assert_eq!(v["calls"], 6);
}
