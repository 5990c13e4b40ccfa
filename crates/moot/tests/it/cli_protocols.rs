//! `moot ask --protocol P` for every protocol on simulated agents, driven through the binary,
//! and `moot show` making masks, orderings, challenges, skips and faults visible.

use moot_core::protocol::PROTOCOLS;
use serde_json::Value;

use crate::common;

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

/// Three simulated debaters and a stronger simulated judge, as a configuration names them.
const JUDGED_TEAM: &str = r#"
[[agents]]
id = "weak-1"
backend = "sim"
sim = { accuracy = 0.3 }

[[agents]]
id = "weak-2"
backend = "sim"
sim = { accuracy = 0.3 }

[[agents]]
id = "weak-3"
backend = "sim"
sim = { accuracy = 0.3 }

[[agents]]
id = "strong-judge"
backend = "sim"
role = "judge"
sim = { accuracy = 0.95 }
"#;

/// The stored spec's agents as (id, role), debaters with role `None`.
fn stored_team(env: &Env, run: &Value) -> Vec<(String, Option<String>)> {
    let shown = env.json(&["show", run["run_id"].as_str().unwrap(), "--format", "json"]);
    shown["run"]["spec"]["agents"]
        .as_array()
        .unwrap_or_else(|| panic!("spec agents in {shown}"))
        .iter()
        .map(|a| {
            (
                a["id"].as_str().unwrap().to_string(),
                a["role"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// `moot ask` on the configured (simulated) team, gold 408, two rounds, JSON out.
fn ask_team(env: &Env, protocol: &str, config: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "ask",
        "What is 17 * 24?",
        "--protocol",
        protocol,
        "--config",
        config,
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

#[test]
fn a_configured_judge_decides_on_its_own_model_and_sits_out_protocols_without_one() {
    let env = Env::new();
    let config = env.write("judged.toml", JUDGED_TEAM);
    let config = config.to_str().unwrap();
    let checked = env
        .moot()
        .args(["config", "check", config])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let checked = String::from_utf8_lossy(&checked);
    assert!(
        checked.contains("ok (3 agents + judge, protocol"),
        "{checked}"
    );
    let run = ask_team(&env, "judge", config, &[]);
    assert_eq!(run["rule"], "verdict", "{run}");
    let team = stored_team(&env, &run);
    assert_eq!(team.len(), 4);
    assert_eq!(team[3], ("strong-judge".into(), Some("judge".into())));
    assert!(team[..3].iter().all(|(_, role)| role.is_none()));
    let text = show(&env, &run);
    assert!(
        text.contains("### Agent 4 (`strong-judge`, judge, sim:p=0.95"),
        "{text}"
    );
    assert!(text.contains("_Not asked: the judge speaks once the debate is over_"));
    // `--agents` sizes the debaters; the judge comes on top and is never cut.
    let five = ask_team(&env, "judge", config, &["--agents", "5"]);
    let team = stored_team(&env, &five);
    assert_eq!(team.len(), 6);
    assert_eq!(team[5].0, "strong-judge");
    let one = ask_team(&env, "consultancy", config, &[]);
    let team = stored_team(&env, &one);
    assert_eq!(
        team,
        [
            ("weak-1".into(), None),
            ("strong-judge".into(), Some("judge".into()))
        ]
    );
    // som gives a judge no part: it sits out.
    let som = ask_team(&env, "som", config, &[]);
    let team = stored_team(&env, &som);
    assert_eq!(
        team.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        ["weak-1", "weak-2", "weak-3"]
    );
    // moa needs an aggregator: nobody is named, so the last debater is cast (the judge sits
    // out).
    let moa = ask_team(&env, "moa", config, &[]);
    let team = stored_team(&env, &moa);
    assert_eq!(team.len(), 3);
    assert_eq!(team[2], ("weak-3".into(), Some("aggregator".into())));
}

#[test]
fn sim_keeps_the_configured_roles() {
    let env = Env::new();
    let config = env.write("judged.toml", JUDGED_TEAM);
    let run = ask(
        &env,
        "assigned",
        &["--config", config.to_str().unwrap(), "--agents", "2"],
    );
    let team = stored_team(&env, &run);
    assert_eq!(
        team,
        [
            ("sim-1".into(), None),
            ("sim-2".into(), None),
            ("sim-judge".into(), Some("judge".into()))
        ]
    );
}

#[test]
fn a_judge_listed_first_still_speaks_last_and_an_unknown_role_is_refused_by_name() {
    let env = Env::new();
    let first = env.write(
        "first.toml",
        "[[agents]]\nid = \"j\"\nbackend = \"sim\"\nrole = \"judge\"\n\n[[agents]]\nid = \"d\"\nbackend = \"sim\"\n",
    );
    let run = ask_team(&env, "judge", first.to_str().unwrap(), &[]);
    assert_eq!(
        stored_team(&env, &run),
        [("d".into(), None), ("j".into(), Some("judge".into()))]
    );
    let unknown = env.write(
        "unknown.toml",
        "[[agents]]\nid = \"j\"\nbackend = \"sim\"\nrole = \"referee\"\n",
    );
    let err = env.refused(&[
        "ask",
        "q?",
        "--protocol",
        "judge",
        "--gold",
        "4",
        "--config",
        unknown.to_str().unwrap(),
    ]);
    assert!(err.contains("role") && err.contains("referee"), "{err}");
}

/// Forks of a judge debate: a debater's argument replaced at round 1 reaches the judge, who is
/// asked again; the judge's skipped turn before the last round has nothing to replace; a null
/// fork at the last round reuses round 0 and asks the rest afresh.
#[test]
fn a_judge_debate_forks_at_a_debaters_argument_and_the_judge_is_asked_again() {
    let env = Env::new();
    let parent = ask(&env, "judge", &[]);
    let id = parent["run_id"].as_str().unwrap();
    let said = env.json(&[
        "fork",
        id,
        "--round",
        "1",
        "--agent",
        "1",
        "--say",
        "I checked it twice: 17 * 24 = 418.\nFinal answer: 418",
        "--json",
    ]);
    let fork_id = said["run_id"].as_str().unwrap();
    let shown = env.json(&["show", fork_id, "--format", "json"]);
    let calls = shown["calls"].as_array().unwrap();
    let judge_call = calls
        .iter()
        .find(|c| c["agent"] == 2 && c["round"] == 2 && !c["skipped"].as_bool().unwrap_or(false))
        .expect("the judge's call");
    assert!(
        judge_call["reused_from"].is_null(),
        "the judge read a changed debate: {judge_call}"
    );
    let round0: Vec<&Value> = calls
        .iter()
        .filter(|c| c["round"] == 0 && c["agent"] != 2)
        .collect();
    assert_eq!(round0.len(), 2);
    assert!(round0.iter().all(|c| c["reused_from"] == id), "{round0:?}");
    let err = env.refused(&[
        "fork",
        id,
        "--round",
        "0",
        "--agent",
        "3",
        "--say",
        "Final answer: 1",
    ]);
    assert!(err.contains("there is nothing to replace"), "{err}");
    let null = env.json(&["fork", id, "--round", "2", "--json"]);
    let shown = env.json(&["show", null["run_id"].as_str().unwrap(), "--format", "json"]);
    let fresh: Vec<&Value> = shown["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["reused_from"].is_null() && !c["skipped"].as_bool().unwrap_or(false))
        .collect();
    // Round 2's two debaters and the judge are asked again; rounds 0 and 1 are the parent's.
    assert_eq!(fresh.len(), 3, "{fresh:?}");
    assert!(fresh.iter().all(|c| c["round"] == 2));
}

/// A stored call's prompt as one text (each message its role, then its content).
fn prompt_text(call: &Value) -> String {
    call["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "<|{}|>\n{}\n",
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap()
            )
        })
        .collect()
}

/// `debate.layout = "shared-first"` in a configuration file reaches the debate: the stored
/// prompts of every debate round start, for every agent alike, with the question and every
/// agent's solutions of the rounds before, and the run's spec records the layout.
#[test]
fn a_shared_first_debate_stores_prompts_that_share_the_question_and_the_solutions_first() {
    let env = Env::new();
    let config = env.write("layout.toml", "[debate]\nlayout = \"shared-first\"\n");
    let v = ask(&env, "free-mad-n", &["--config", config.to_str().unwrap()]);
    let run = v["run_id"].as_str().unwrap();
    let shown = env.json(&["show", run, "--format", "json"]);
    assert_eq!(
        shown["run"]["spec"]["layout"], "shared-first",
        "{}",
        shown["run"]["spec"]
    );
    let calls = shown["calls"].as_array().unwrap();
    let in_round = |r: u64| -> Vec<&Value> {
        calls
            .iter()
            .filter(|c| c["round"] == r && c["slot"] == "answer" && c["skipped"] == false)
            .collect()
    };
    for round in [1, 2] {
        let prompts: Vec<String> = in_round(round).iter().map(|c| prompt_text(c)).collect();
        assert_eq!(prompts.len(), 3, "round {round}");
        let common = prompts
            .iter()
            .map(|p| {
                p.chars()
                    .zip(prompts[0].chars())
                    .take_while(|(a, b)| a == b)
                    .count()
            })
            .min()
            .unwrap();
        let shared: String = prompts[0].chars().take(common).collect();
        assert!(shared.contains("What is 17 * 24?"), "{shared}");
        for earlier in 0..round {
            for call in in_round(earlier) {
                let agent = call["agent"].as_u64().unwrap() + 1;
                let text = call["response_text"].as_str().unwrap().trim();
                let block = format!(
                    "[Agent {agent}'s solution]\n{text}\n[End of Agent {agent}'s solution]"
                );
                assert!(
                    shared.contains(&block),
                    "round {round} shares {block:?}:\n{shared}"
                );
            }
        }
        // Only the agent's own part differs, from its number on.
        for (i, p) in prompts.iter().enumerate() {
            let own = p.find(&format!("\n\nYou are Agent {}; ", i + 1)).unwrap();
            assert!(own + "\n\nYou are Agent ".len() >= shared.len(), "{p}");
        }
    }
}

/// `judge` with `adaptive_break`: a judge sure after round 0 ends the debate there; the later
/// rounds are stored as skipped with the round it ended after, its answer is the verdict, and
/// a benchmark's report counts the rounds and calls saved.
#[test]
fn an_adaptive_judge_ends_the_debate_and_the_report_counts_what_it_saved() {
    let env = Env::new();
    let config = env.write(
        "adaptive.toml",
        "[debate]\nprotocol = \"judge\"\nrounds = 3\n\n[protocol]\nadaptive_break = true\n\n\
         [[agents]]\nid = \"d1\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 7\"]\n\n\
         [[agents]]\nid = \"d2\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 8\"]\n\n\
         [[agents]]\nid = \"j\"\nbackend = \"scripted\"\nrole = \"judge\"\n\
         responses = [\"Agent 1 is right.\\nVerdict: end\\nFinal answer: 7\"]\n",
    );
    let config = config.to_str().unwrap();
    let run = env.json(&[
        "ask",
        "What is 1 * 7?",
        "--config",
        config,
        "--answer",
        "numeric",
        "--json",
    ]);
    assert_eq!(run["answer"], "7", "{run}");
    let shown = env.json(&["show", run["run_id"].as_str().unwrap(), "--format", "json"]);
    let calls = shown["calls"].as_array().unwrap();
    let look = calls
        .iter()
        .find(|c| c["round"] == 0 && c["agent"] == 2)
        .expect("the judge's look after round 0");
    assert_eq!(look["template"], "judge-break", "{look}");
    for c in calls.iter().filter(|c| c["round"].as_u64() > Some(0)) {
        assert_eq!(c["skipped"], true, "{c}");
        assert_eq!(c["notes"]["ended_after"], 0, "{c}");
    }
    let dataset = common::arith_dataset(&env, 3);
    let report = env.stdout(&[
        "bench",
        "--dataset",
        &dataset,
        "--protocol",
        "judge",
        "--config",
        config,
        "--name",
        "early",
    ]);
    assert!(
        report.contains(
            "judge: the judge ended 3 debates of 3 early; 9 rounds and 18 debater calls not made"
        ),
        "{report}"
    );
}
