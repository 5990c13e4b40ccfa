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

/// Every protocol runs on the embedded backend (SmolLM2, small answers to stay quick): real
/// logprobs feed MAD-M² objective masking, SVR-MAD priors and SID-ET; real judgements and
/// challenges are recorded.
#[test]
#[ignore = "downloads SmolLM2-135M; run with --include-ignored"]
fn every_protocol_runs_on_the_embedded_model() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("moot.db");
    let cfg = dir.path().join("small.toml");
    let mut text = String::from(
        "[debate]\nrounds = 1\nanswer = \"numeric\"\nsoft_timeout_ms = 600000\nhard_timeout_ms = 900000\n",
    );
    for i in 1..=3 {
        text.push_str(&format!(
            "\n[[agents]]\nid = \"s{i}\"\nbackend = \"local\"\nmodel = \"smollm2-135m\"\nmax_tokens = 48\ntemperature = 0.9\n"
        ));
    }
    std::fs::write(&cfg, text).unwrap();
    let runs: Vec<(&str, Vec<&str>)> = moot_core::protocol::PROTOCOLS
        .iter()
        .map(|p| (p.name, vec![]))
        .chain([("mad-m2", vec!["-o", "masking=objective"])])
        .collect();
    for (protocol, extra) in runs {
        let mut args = vec![
            "ask",
            "What is 3 + 4? Answer with a number.",
            "--config",
            cfg.to_str().unwrap(),
            "--protocol",
            protocol,
            "--json",
        ];
        args.extend(extra.iter().copied());
        let out = moot(&store)
            .args(&args)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let v = json(&out);
        assert_eq!(v["protocol"], protocol);
        assert!(v["calls"].as_u64().unwrap() >= 1, "{protocol}: {v}");
        assert!(
            v["tokens"]["output"].as_u64().unwrap() > 0,
            "{protocol}: {v}"
        );
        let shown = json(
            &moot(&store)
                .args(["show", v["run_id"].as_str().unwrap(), "--format", "json"])
                .assert()
                .success()
                .get_output()
                .stdout,
        );
        let calls = shown["calls"].as_array().unwrap();
        if protocol == "mad-m2" && extra.is_empty() {
            assert!(
                calls
                    .iter()
                    .any(|c| c["slot"].as_str().unwrap().starts_with("judge:")),
                "mad-m2 records its judgements"
            );
        }
        if protocol == "mad-m2" && !extra.is_empty() {
            assert!(calls
                .iter()
                .any(|c| c["notes"]["masks"]
                    .as_array()
                    .is_some_and(|m| m
                        .iter()
                        .any(|m| m["why"].as_str().unwrap().contains("perplexity")))));
        }
    }
}
