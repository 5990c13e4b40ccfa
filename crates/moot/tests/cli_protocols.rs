//! `moot ask --protocol P` for every protocol on simulated agents, driven through the binary,
//! and `moot show` making masks, orderings, challenges, skips and faults visible.

use moot_core::protocol::PROTOCOLS;
use serde_json::Value;

mod common;

use common::Env;

/// `moot ask` on default simulated agents (gold 408), two rounds, JSON out.
fn ask(env: &Env, protocol: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "ask",
        "What is 17 * 24?",
        "--protocol",
        protocol,
        "--sim",
        "--gold",
        "408",
        "--answer",
        "numeric",
        "--rounds",
        "2",
        "--json",
    ];
    args.extend_from_slice(extra);
    env.json(&args)
}

/// `moot show RUN` as Markdown.
fn show(env: &Env, run: &Value) -> String {
    let out = env
        .moot()
        .args(["show", run["run_id"].as_str().unwrap()])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn every_protocol_runs_on_simulated_agents() {
    let env = Env::new();
    for p in PROTOCOLS {
        let v = ask(&env, p.name, &["--agents", "4"]);
        assert_eq!(v["protocol"], p.name);
        assert!(v["calls"].as_u64().unwrap() >= 1, "{}: {v}", p.name);
        assert!(v["answer"].is_string(), "{}: no answer: {v}", p.name);
        let decided = env
            .moot()
            .args([
                "decide",
                "--run",
                v["run_id"].as_str().unwrap(),
                "--rule",
                "all",
            ])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let all: Value = serde_json::from_slice(&decided).unwrap();
        assert_eq!(
            all.as_array().unwrap().len(),
            moot_core::RULES.len(),
            "{}",
            p.name
        );
    }
}

#[test]
fn show_makes_each_mechanism_visible() {
    let env = Env::new();
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "mad-m2",
            &[],
            &["judgements of round 0", "memories: agent", "judged"],
        ),
        (
            "mad-m2",
            &["-o", "masking=objective"],
            &["memories: agent", "perplexity"],
        ),
        (
            "madc",
            &[],
            &["ordering consistency-last: speaking order", "consistency"],
        ),
        (
            "group-debate",
            &["--agents", "4"],
            &["other groups (final answers only)"],
        ),
        ("sparse", &["--agents", "4"], &["NComm 2"]),
        (
            "som",
            &["-o", "faults.cut_off=0.34", "-o", "faults.drop=0.3"],
            &["fault: cut off", "fault: agent"],
        ),
        (
            "free-mad-n",
            &[
                "-o",
                "faults.malicious=0.34",
                "-o",
                "faults.malicious_answer=999",
            ],
            &["malicious: instructed to argue for 999"],
        ),
    ];
    for (protocol, extra, needles) in cases {
        let v = ask(&env, protocol, extra);
        let md = show(&env, &v);
        for needle in *needles {
            assert!(
                md.contains(needle),
                "{protocol} {extra:?}: no {needle:?} in\n{md}"
            );
        }
    }
}

#[test]
fn svr_mad_challenges_are_shown() {
    let env = Env::new();
    // Two experts who never change their answer, three followers who start wrong (a mixed
    // team from the sim's presets, the followers' accuracy and distractor overridden).
    let mut cfg = String::from("[debate]\nanswer = \"numeric\"\ngold = \"408\"\n");
    let follower = "{ preset = \"follower\", accuracy = 0.0, distractors = [\"418\"] }";
    for (i, sim) in [
        "{ preset = \"expert\" }",
        "{ preset = \"expert\" }",
        follower,
        follower,
        follower,
    ]
    .iter()
    .enumerate()
    {
        cfg.push_str(&format!(
            "\n[[agents]]\nid = \"s{i}\"\nbackend = \"sim\"\nsim = {sim}\n"
        ));
    }
    let path = env.dir.path().join("svr.toml");
    std::fs::write(&path, cfg).unwrap();
    let out = env
        .moot()
        .args([
            "ask",
            "What is 17 * 24?",
            "--config",
            path.to_str().unwrap(),
            "--protocol",
            "svr-mad",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v["answer"], "408",
        "the surviving minority is accepted: {v}"
    );
    assert_eq!(v["ncomm"], 2, "one iteration of S = 2 challenges");
    let md = show(&env, &v);
    for needle in [
        "SVR-MAD iteration 1",
        "challenged by agent",
        "receiver score",
        "budget left 10",
    ] {
        assert!(md.contains(needle), "no {needle:?} in\n{md}");
    }
}

#[test]
fn s2_mad_and_sid_et_skips_are_shown() {
    let env = Env::new();
    // Agents that are always right agree at once: every debate call is skipped.
    let cfg = env.dir.path().join("agree.toml");
    std::fs::write(
        &cfg,
        "[debate]\nanswer = \"numeric\"\ngold = \"408\"\n\n[[agents]]\nid = \"s1\"\nbackend = \"sim\"\nsim = { accuracy = 1.0 }\n\n[[agents]]\nid = \"s2\"\nbackend = \"sim\"\nsim = { accuracy = 1.0 }\n",
    )
    .unwrap();
    for (protocol, reason) in [
        ("s2-mad", "s2-mad: every peer"),
        ("sid-et", "sid-et: agent"),
    ] {
        let out = env
            .moot()
            .args([
                "ask",
                "What is 17 * 24?",
                "--config",
                cfg.to_str().unwrap(),
                "--protocol",
                protocol,
                "--json",
            ])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["answer"], "408");
        assert_eq!(v["calls"], 2, "{protocol}: only round 0 asked");
        assert_eq!(v["calls_skipped"], 2);
        let md = show(&env, &v);
        assert!(md.contains("_Not asked: ") && md.contains(reason), "{md}");
    }
}

#[test]
fn refusals_name_the_problem() {
    let env = Env::new();
    let fail = |args: &[&str], needle: &str| {
        let out = env
            .moot()
            .args(args)
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8_lossy(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
    };
    fail(
        &["ask", "q", "--protocol", "som", "-o", "masking=objective"],
        "masking",
    );
    fail(
        &[
            "ask",
            "q",
            "--protocol",
            "madc",
            "-o",
            "ordering=truth-last",
        ],
        "gold",
    );
    fail(&["ask", "q", "--sim"], "gold");
    fail(&["ask", "q", "-o", "nonsense"], "KEY=VALUE");
    fail(&["ask", "q", "-o", "faults.drop=2"], "faults.drop");
    // A protocol that needs logprobs, on agents that have none.
    let cfg = env.dir.path().join("scripted.toml");
    std::fs::write(
        &cfg,
        "[debate]\nprotocol = \"sid-et\"\n\n[[agents]]\nid = \"a\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 1\"]\n\n[[agents]]\nid = \"b\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 2\"]\n",
    )
    .unwrap();
    fail(&["ask", "q", "--config", cfg.to_str().unwrap()], "logprobs");
}
