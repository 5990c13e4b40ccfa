//! `moot bench` driven through the binary: a dataset of our own (generic JSONL), simulated and
//! CLI agents, a real SQLite store, and a benchmark killed mid-run and resumed under its name.

use std::path::PathBuf;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common;

use common::fake_openai::FakeOpenAi;
use common::{arith_dataset, json_on, script, wait_for, Env};

#[test]
fn a_simulated_benchmark_reports_every_protocol_and_reruns_identically() {
    let env = Env::new();
    let data = arith_dataset(&env, 12);
    let args = [
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "cot-sc,som,mad-m2,svr-mad",
        "--sim",
        "--agents",
        "4",
        "--limit",
        "10",
        "--run",
        "arith",
        "--json",
    ];
    let mut first = env.raw_json(&args);
    // The run's throughput counts every call its 40 debates recorded; it is not part of the
    // report (a rerun reads the debates back and runs none).
    let throughput = first
        .as_object_mut()
        .and_then(|o| o.remove("throughput"))
        .expect("throughput");
    assert_eq!(throughput["debates"], 40);
    assert_eq!(throughput["reused_debates"], 0);
    assert_eq!(first["items"], 10);
    let protocols = first["protocols"].as_array().unwrap();
    assert_eq!(protocols.len(), 4);
    let calls: u64 = protocols.iter().map(|p| p["calls"].as_u64().unwrap()).sum();
    assert_eq!(throughput["calls"], calls);
    assert!(throughput["us_per_call"].as_f64().unwrap() > 0.0);
    let rerun = env.raw_json(&args)["throughput"].clone();
    assert_eq!(
        (&rerun["debates"], &rerun["reused_debates"]),
        (&0.into(), &40.into())
    );
    for p in protocols {
        assert_eq!(p["items"], 10, "{p}");
        let (lo, hi) = (
            p["ci95"][0].as_f64().unwrap(),
            p["ci95"][1].as_f64().unwrap(),
        );
        let acc = p["accuracy"].as_f64().unwrap();
        assert!(lo <= acc && acc <= hi, "{p}");
        assert!(p["output_tokens"].as_u64().unwrap() > 0);
        // Sim agents always write a final answer.
        assert!(p["responses"].as_u64().unwrap() >= 40, "{p}");
        assert_eq!(p["parse_failures"], 0, "{p}");
    }
    assert_eq!(protocols[0]["ncomm"], 0, "cot-sc exchanges nothing");
    assert_eq!(
        protocols[1]["round_accuracy"].as_array().unwrap().len(),
        2,
        "som: rounds 0 and 1"
    );
    assert_eq!(
        protocols[1]["rules"].as_array().unwrap().len(),
        moot_core::RULES.len()
    );
    // MADC's gold log-likelihood and the tokens spent through each round.
    let som = &protocols[1];
    assert_eq!(
        som["round_gold_log_likelihood"].as_array().unwrap().len(),
        2
    );
    let tokens: Vec<f64> = som["round_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect();
    assert!(0.0 < tokens[0] && tokens[0] < tokens[1], "{tokens:?}");
    let total = som["input_tokens"].as_f64().unwrap() + som["output_tokens"].as_f64().unwrap();
    assert!(
        (tokens[1] - total / 10.0).abs() < 1e-9,
        "{tokens:?} {total}"
    );
    let pairs = first["paired"].as_array().unwrap();
    assert_eq!(pairs.len(), 6, "every pair of the four protocols");
    for p in pairs {
        let n: u64 = ["both_correct", "only_a", "only_b", "both_wrong"]
            .iter()
            .map(|k| p[*k].as_u64().unwrap())
            .sum();
        assert_eq!(n, 10, "{p}");
    }
    // At equal budgets: each protocol's full cost is a budget, and a protocol fits its own.
    let budgets = first["budget"]["budgets"].as_array().unwrap();
    assert_eq!(budgets.len(), 4, "{}", first["budget"]);
    for row in first["budget"]["rows"].as_array().unwrap() {
        assert!(
            row["cells"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["decided"] == true),
            "{row}"
        );
    }
    // Run again under the same name: everything is read back, the report is the same.
    assert_eq!(env.json(&args), first);
    // `moot report` reads the same report from the store without running anything.
    assert_eq!(env.json(&["report", "arith", "--format", "json"]), first);
    // Under another name, the request cache answers every call: same results, nothing spent.
    let mut again = args.to_vec();
    let at = again.iter().position(|a| *a == "arith").unwrap();
    again[at] = "arith-again";
    let cached = env.json(&again);
    for (p, q) in cached["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .zip(protocols)
    {
        assert_eq!(p["accuracy"], q["accuracy"]);
        assert_eq!(p["output_tokens"], q["output_tokens"]);
        assert_eq!(p["cache_hits"], p["calls"], "{p}");
        assert_eq!(p["spent_output_tokens"], 0);
    }
    // The same name for a different benchmark is refused.
    let err = env.refused(&[
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "som",
        "--sim",
        "--run",
        "arith",
    ]);
    assert!(err.contains("already exists"), "{err}");
    // The analysis-only orderings read each item's gold answer.
    let truth = env.json(&[
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "madc",
        "--sim",
        "--limit",
        "3",
        "-o",
        "ordering=truth-last",
        "--run",
        "truth",
        "--json",
    ]);
    assert_eq!(truth["protocols"][0]["items"], 3);
    let err = env.refused(&["bench", "--dataset", "nope", "--protocol", "som", "--sim"]);
    assert!(err.contains("--dataset"), "{err}");
    let err = env.refused(&[
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "som,cot",
        "--sim",
        "-o",
        "masking=objective",
    ]);
    assert!(err.contains("masking"), "{err}");
}

/// A CLI agent answering 7 to everything. Every call is logged; the 9th call of a run with
/// `slow` present leaves a marker and hangs, so the benchmark can be killed mid-debate.
fn agent(env: &Env) -> PathBuf {
    let dir = env.dir.path().display().to_string();
    script(
        env,
        "agent.sh",
        &format!(
            "#!/bin/sh\ncat > /dev/null\necho \"$1\" >> {dir}/calls.log\nn=$(wc -l < {dir}/calls.log)\nif [ -e {dir}/slow ] && [ \"$n\" -ge 9 ]; then touch {dir}/hung; sleep 60; fi\necho 'SOLUTION:'; echo 'Final answer: 7'\n"
        ),
    )
}

fn logged_calls(env: &Env) -> usize {
    std::fs::read_to_string(env.dir.path().join("calls.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_killed_benchmark_resumes_to_the_uninterrupted_report() {
    let env = Env::new();
    let data = arith_dataset(&env, 12);
    let script = agent(&env);
    let s = script.display();
    let cfg = env.write(
        "cli.toml",
        &format!(
            "[debate]\nrounds = 1\nsoft_timeout_ms = 60000\nhard_timeout_ms = 90000\n\n[security]\ncli_allowed_commands = [\"{s}\"]\n\n[[agents]]\nid = \"x\"\nbackend = \"cli\"\ncommand = \"{s}\"\n\n[[agents]]\nid = \"y\"\nbackend = \"cli\"\ncommand = \"{s}\"\n"
        ),
    );
    let cfg = cfg.to_str().unwrap();
    let bench = |name: &str| -> Vec<String> {
        [
            "bench",
            "--dataset",
            &data,
            "--protocol",
            "som,cot-sc",
            "--config",
            cfg,
            "--limit",
            "4",
            "--concurrency",
            "1",
            // Calls are counted below: every one must reach the agent.
            "--no-cache",
            "--run",
            name,
            "--json",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect()
    };
    // The reference: the same benchmark, uninterrupted.
    let reference = env.json(
        &bench("whole")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let whole_calls = logged_calls(&env);
    assert_eq!(
        whole_calls,
        4 * 4 + 4 * 2,
        "som: 2 agents × 2 rounds; cot-sc: 2 agents"
    );
    std::fs::remove_file(env.dir.path().join("calls.log")).unwrap();

    env.write("slow", "");
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("moot"))
        .args(bench("parts"))
        .env("MOOT_STORE", env.store())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&env.dir.path().join("hung"), Duration::from_secs(60));
    child.kill().unwrap(); // SIGKILL: nothing gets to clean up.
    child.wait().unwrap();
    let before = logged_calls(&env);
    std::fs::remove_file(env.dir.path().join("slow")).unwrap();
    // A report of the killed benchmark leaves the interrupted debate out and says so.
    let partial = env.json(&["report", "parts", "--format", "json"]);
    assert_eq!(partial["benches"][0]["unfinished"], 1, "{partial}");
    let done: u64 = partial["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["items"].as_u64().unwrap())
        .sum();
    assert!(done >= 1, "{partial}");

    let resumed = env.json(
        &bench("parts")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    // Equal but for the name and the model time (a resumed run's calls took other times).
    let comparable = |report: &Value| {
        let mut r = report.clone();
        r["benches"][0]["name"] = Value::Null;
        r["timing"] = Value::Null;
        if let Some(o) = r.as_object_mut() {
            o.remove("throughput");
        }
        r
    };
    assert_eq!(comparable(&resumed), comparable(&reference));
    assert_eq!(reference["benches"][0]["name"], "whole");
    assert_eq!(resumed["benches"][0]["name"], "parts");
    // Only the calls in flight when the process died were made twice.
    let total = logged_calls(&env);
    let repeated = total - whole_calls;
    assert!(
        before >= 9 && repeated <= 2,
        "{before} before the kill, {total} in all"
    );
}

#[test]
fn a_report_combines_benchmarks_and_writes_markdown_and_plots() {
    let env = Env::new();
    let data = arith_dataset(&env, 12);
    let bench = |name: &str, protocols: &str, rounds: &str| {
        env.json(&[
            "bench",
            "--dataset",
            &data,
            "--protocol",
            protocols,
            "--sim",
            "--limit",
            "6",
            "--rounds",
            rounds,
            "--run",
            name,
            "--json",
        ])
    };
    bench("one", "cot,som", "1");
    bench("two", "som", "2");
    let out = env.dir.path().join("report");
    let status = env
        .moot()
        .args(["report", "one", "two", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for needle in [
        "Benchmark one: 6 items",
        "Benchmark two: 6 items",
        "| som R=1 |",
        "| som R=2 |",
        "| cot |",
        "At equal token budgets",
        "| som R=1 | som R=2 |",
        "![accuracy against tokens per item](accuracy-vs-tokens.svg)",
        "![plurality accuracy by round](accuracy-vs-rounds.svg)",
    ] {
        assert!(md.contains(needle), "{needle:?} missing from\n{md}");
    }
    let svg = std::fs::read_to_string(out.join("accuracy-vs-tokens.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    for label in ["cot", "som R=1", "som R=2"] {
        assert!(svg.contains(label), "{label} not in the plot");
    }
    // cot: one point; som R=1: rounds 0 and the decision; som R=2: three.
    assert_eq!(svg.matches("<circle").count(), 1 + 2 + 3, "{svg}");
    let rounds = std::fs::read_to_string(out.join("accuracy-vs-rounds.svg")).unwrap();
    assert!(rounds.contains("som R=2"), "{rounds}");
    // cot ran one round and has no line there.
    assert_eq!(rounds.matches("<circle").count(), 2 + 3, "{rounds}");
    // JSON of both: cot, som R=1 and som R=2 side by side, every pair compared.
    let json = env.json(&["report", "one", "two", "--format", "json"]);
    let labels: Vec<&str> = json["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["protocol"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["cot", "som R=1", "som R=2"]);
    assert_eq!(json["paired"].as_array().unwrap().len(), 3);
    assert_eq!(json["items"], 6);
    // A smaller benchmark of the same draw: by default only the items every protocol finished.
    bench("three", "cot-sc", "1");
    let json = env.json(&["report", "one", "three", "--format", "json"]);
    assert_eq!(
        (json["items"].clone(), json["left_out"].clone()),
        (6.into(), 0.into())
    );
    env.json(&[
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "cot-sc",
        "--sim",
        "--limit",
        "3",
        "--run",
        "small",
        "--json",
    ]);
    let json = env.json(&["report", "one", "small", "--format", "json"]);
    assert_eq!(
        (json["items"].clone(), json["left_out"].clone()),
        (3.into(), 3.into())
    );
    assert!(json["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["items"] == 3));
    let all = env.json(&["report", "one", "small", "--all-items", "--format", "json"]);
    assert_eq!(
        (all["items"].clone(), all["left_out"].clone()),
        (6.into(), 0.into())
    );
    let err = env.refused(&["report", "nope"]);
    assert!(err.contains("no benchmark named \"nope\""), "{err}");
}

/// Issue 32 item 3: debate ids are BENCH/PROTOCOL/ITEM and item ids hold '/', so a benchmark
/// name holding '/' could give two benchmarks' debates one id (`x` on item `y/som/z` and
/// `x/som/y` on item `z`), and the second read back and scored the first's debate. Such a
/// name is refused; the first benchmark's report is untouched.
#[test]
fn benchmark_names_cannot_make_two_benchmarks_share_a_debate() {
    let env = Env::new();
    let data = |name: &str, id: &str, q: &str, a: u32| {
        let path = env.write(
            name,
            &format!("{{\"id\": \"{id}\", \"q\": \"{q}\", \"a\": {a}}}\n"),
        );
        format!(
            "jsonl:{}?kind=numeric&question=q&answer=a&id=id",
            path.display()
        )
    };
    let first = data("first.jsonl", "y/som/z", "What is 2 * 7?", 14);
    let second = data("second.jsonl", "z", "What is 3 * 7?", 21);
    let bench = |dataset: &str, name: &str| {
        env.moot()
            .args([
                "bench",
                "--sim",
                "--dataset",
                dataset,
                "--protocol",
                "som",
                "--run",
                name,
            ])
            .output()
            .unwrap()
    };
    assert!(bench(&first, "x").status.success());
    let before = env.stdout(&["report", "x", "--format", "json"]);
    let out = bench(&second, "x/som/y");
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("must not be empty nor contain '/'"), "{e}");
    assert_eq!(env.stdout(&["report", "x", "--format", "json"]), before);
    let shown = env.json(&["show", "x/som/y/som/z", "--format", "json"]);
    assert_eq!(shown["run"]["question"], "What is 2 * 7?");
}

/// One stored debate as `moot show` gives it: each agent's answer per round (`None`: no
/// answer), each agent's tokens, the whole debate's, and the chosen decision's answer.
struct Shown {
    answers: Vec<Vec<Option<String>>>,
    agent_tokens: Vec<u64>,
    tokens: u64,
    decided: Option<String>,
}

fn shown(env: &Env, run: &str) -> Shown {
    let v = env.json(&["show", run, "--format", "json"]);
    let calls = v["calls"].as_array().unwrap();
    let agents = calls
        .iter()
        .map(|c| c["agent"].as_u64().unwrap() as usize + 1)
        .max()
        .unwrap();
    let rounds = calls
        .iter()
        .map(|c| c["round"].as_u64().unwrap() as usize + 1)
        .max()
        .unwrap();
    let mut answers = vec![vec![None; rounds]; agents];
    let mut agent_tokens = vec![0; agents];
    let mut tokens = 0;
    for c in calls {
        let (agent, round) = (
            c["agent"].as_u64().unwrap() as usize,
            c["round"].as_u64().unwrap() as usize,
        );
        let spent = c["input_tokens"].as_u64().unwrap() + c["output_tokens"].as_u64().unwrap();
        agent_tokens[agent] += spent;
        tokens += spent;
        // Simulated agents answer every call, and these protocols skip none.
        assert!(
            c["response_text"].is_string() && c["skipped"] == false,
            "{c}"
        );
        answers[agent][round] = c["answer"].as_str().map(str::to_string);
    }
    let rule = v["run"]["rule"].as_str().unwrap();
    let decided = v["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == rule)
        .and_then(|d| d["answer"].as_str().map(str::to_string));
    Shown {
        answers,
        agent_tokens,
        tokens,
        decided,
    }
}

/// The counts under `keys` of a JSON object.
fn counts(object: &Value, keys: &[&str]) -> Vec<usize> {
    keys.iter()
        .map(|k| {
            object[*k]
                .as_u64()
                .unwrap_or_else(|| panic!("{k} in {object}")) as usize
        })
        .collect()
}

/// The plurality of `answers` (`None` never wins; ties go to the answer given first).
fn vote(answers: &[Option<String>]) -> Option<String> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for a in answers.iter().flatten() {
        match counts.iter_mut().find(|(x, _)| x == a) {
            Some((_, n)) => *n += 1,
            None => counts.push((a, 1)),
        }
    }
    let best = counts.iter().map(|c| c.1).max()?;
    counts.iter().find(|c| c.1 == best).map(|c| c.0.to_string())
}

/// Issue 35: the controls of `moot report` recomputed here from the stored debates themselves
/// (`moot show`): the round-0 vote against the decision, the martingale check, the flips per
/// agent and team, and self-consistency at the debates' budgets from a 3-sample and a
/// 16-sample cot-sc arm.
#[test]
fn the_report_controls_match_the_stored_debates() {
    let env = Env::new();
    let data = arith_dataset(&env, 12);
    let bench = |name: &str, protocols: &str, agents: &str| {
        env.json(&[
            "bench",
            "--dataset",
            &data,
            "--protocol",
            protocols,
            "--sim",
            "--agents",
            agents,
            "--rounds",
            "1",
            "--run",
            name,
            "--json",
        ])
    };
    let first = bench("ctl", "cot-sc,som,free-mad-n", "3");
    bench("ctl-sc", "cot-sc", "16");
    let report = env.json(&["report", "ctl", "ctl-sc", "--format", "json"]);
    assert_eq!(report["items"], 12);
    // A benchmark's own report carries the same controls as `moot report` reads back.
    assert_eq!(
        first["controls"],
        env.json(&["report", "ctl", "--format", "json"])["controls"]
    );
    let controls = &report["controls"];
    let gold = |i: usize| (i * 7).to_string();
    let items = 1..=12usize;
    let debates = |protocol: &str| -> Vec<(usize, Shown)> {
        items
            .clone()
            .map(|i| (i, shown(&env, &format!("ctl/{protocol}/q{i}"))))
            .collect()
    };
    let close = |a: &Value, b: f64| (a.as_f64().unwrap() - b).abs() < 1e-9;
    let by_protocol = |key: &str, protocol: &str| -> Value {
        controls[key]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["protocol"] == protocol)
            .unwrap_or_else(|| panic!("{protocol} missing from {key}: {controls}"))
            .clone()
    };
    for label in ["cot-sc (ctl)", "cot-sc (ctl-sc)"] {
        assert_eq!(
            by_protocol("vote_vs_decision", label)["paired"],
            Value::Null
        );
        assert_eq!(
            by_protocol("martingale", label)["rounds"],
            serde_json::json!([])
        );
    }
    for protocol in ["som", "free-mad-n"] {
        let stored = debates(protocol);
        // The round-0 vote against the decision.
        let (mut only_vote, mut only_decision, mut both) = (0, 0, 0);
        for (i, d) in &stored {
            let round0: Vec<Option<String>> = d.answers.iter().map(|a| a[0].clone()).collect();
            let v = vote(&round0) == Some(gold(*i));
            let c = d.decided == Some(gold(*i));
            only_vote += usize::from(v && !c);
            only_decision += usize::from(c && !v);
            both += usize::from(v && c);
        }
        let paired = &by_protocol("vote_vs_decision", protocol)["paired"];
        assert_eq!(
            (
                &paired["items"],
                &paired["only_vote"],
                &paired["only_decision"],
                &paired["both_correct"]
            ),
            (
                &12.into(),
                &only_vote.into(),
                &only_decision.into(),
                &both.into()
            ),
            "{protocol}"
        );
        assert!(close(
            &paired["p_value"],
            moot_eval::protocol_totals::mcnemar_exact(only_vote, only_decision)
        ));
        // The martingale check: every simulated agent answers every round.
        let rounds = by_protocol("martingale", protocol)["rounds"].clone();
        assert_eq!(rounds.as_array().unwrap().len(), 1, "{protocol}: round 1");
        let changes: Vec<f64> = stored
            .iter()
            .map(|(i, d)| {
                let share = |r: usize| {
                    d.answers.iter().filter(|a| a[r] == Some(gold(*i))).count() as f64 / 3.0
                };
                share(1) - share(0)
            })
            .collect();
        let mean = changes.iter().sum::<f64>() / 12.0;
        let sd = (changes.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / 11.0).sqrt();
        // t(0.975, 11), from R's qt.
        let half = 2.200_985_16 * sd / 12f64.sqrt();
        let r = &rounds[0];
        assert_eq!(
            (&r["round"], &r["items"], &r["left_out"]),
            (&1.into(), &12.into(), &0.into())
        );
        assert!(close(&r["mean"], mean), "{protocol} {r} {mean}");
        assert!(
            (r["ci95"][0].as_f64().unwrap() - (mean - half)).abs() < 1e-6,
            "{r}"
        );
        assert!(
            (r["ci95"][1].as_f64().unwrap() - (mean + half)).abs() < 1e-6,
            "{r}"
        );
        // Flips per agent (each agent's id and model), and the team's: one mix of three.
        let flips = by_protocol("flips", protocol);
        let mut team = [0usize; 4];
        for agent in 0..3 {
            let (mut to_wrong, mut to_right, mut last_wrong, mut last_right) = (0, 0, 0, 0);
            for (i, d) in &stored {
                let right: Vec<bool> = d.answers[agent]
                    .iter()
                    .map(|a| *a == Some(gold(*i)))
                    .collect();
                for r in 1..right.len() {
                    to_wrong += usize::from(right[r - 1] && !right[r]);
                    to_right += usize::from(!right[r - 1] && right[r]);
                }
                last_wrong += usize::from(right[0] && !right[1]);
                last_right += usize::from(!right[0] && right[1]);
            }
            let row = &flips["by_agent"][agent];
            assert_eq!(row["agent"], format!("sim-{}", agent + 1));
            assert!(
                row["model"].as_str().unwrap().starts_with("sim:p=0.6,"),
                "{row}"
            );
            assert_eq!(row["debates"], 12);
            let f = &row["flips"];
            assert_eq!(
                counts(
                    f,
                    &[
                        "transitions",
                        "right_to_wrong",
                        "wrong_to_right",
                        "first_to_last",
                        "first_to_last_right_to_wrong",
                        "first_to_last_wrong_to_right"
                    ]
                ),
                [12, to_wrong, to_right, 12, last_wrong, last_right],
                "{protocol} agent {agent}"
            );
            for (sum, n) in team
                .iter_mut()
                .zip([to_wrong, to_right, last_wrong, last_right])
            {
                *sum += n;
            }
        }
        let mixes = flips["by_mix"].as_array().unwrap();
        assert_eq!(mixes.len(), 1, "{mixes:?}");
        let model = flips["by_agent"][0]["model"].as_str().unwrap();
        assert_eq!(mixes[0]["mix"], format!("{model}×3"));
        assert_eq!(mixes[0]["decision_correct"], both + only_decision);
        let f = &mixes[0]["flips"];
        assert_eq!(
            counts(
                f,
                &[
                    "right_to_wrong",
                    "wrong_to_right",
                    "first_to_last_right_to_wrong",
                    "first_to_last_wrong_to_right"
                ]
            ),
            team
        );
        // Self-consistency at this debate's budget, from each cot-sc arm's stored samples.
        let budget = stored.iter().map(|(_, d)| d.tokens).sum::<u64>() as f64 / 12.0;
        for (arm, bench_name) in [("cot-sc (ctl)", "ctl"), ("cot-sc (ctl-sc)", "ctl-sc")] {
            let samples: Vec<(usize, Shown)> = items
                .clone()
                .map(|i| (i, shown(&env, &format!("{bench_name}/cot-sc/q{i}"))))
                .collect();
            let stored = samples[0].1.agent_tokens.len();
            let cost = |k: usize| {
                samples
                    .iter()
                    .map(|(_, s)| s.agent_tokens[..k].iter().sum::<u64>())
                    .sum::<u64>() as f64
                    / 12.0
            };
            let k = (1..=stored)
                .take_while(|&k| cost(k) <= budget + 0.5)
                .last()
                .unwrap_or(0);
            let row = controls["self_consistency"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["protocol"] == protocol && r["self_consistency"] == arm)
                .unwrap_or_else(|| panic!("{protocol} × {arm}: {controls}"))
                .clone();
            assert!(close(&row["budget"], budget), "{row} {budget}");
            assert_eq!(
                (&row["samples"], &row["samples_stored"]),
                (&k.into(), &stored.into()),
                "{row}"
            );
            assert!(close(&row["tokens"], cost(k)), "{row}");
            let affordable = ((budget + 0.5) / (cost(stored) / stored as f64)).floor() as usize;
            assert_eq!(row["short"], k == stored && affordable > stored, "{row}");
            let sc_correct = samples
                .iter()
                .filter(|(i, s)| {
                    let first_k: Vec<Option<String>> =
                        s.answers[..k].iter().map(|a| a[0].clone()).collect();
                    vote(&first_k) == Some(gold(*i))
                })
                .count();
            assert_eq!(row["paired"]["sc_correct"], sc_correct, "{row}");
            assert_eq!(
                row["paired"]["protocol_correct"],
                both + only_decision,
                "{row}"
            );
        }
    }
    // Three samples cost less than either debate; sixteen cost more than som, so that arm is cut there.
    let rows = controls["self_consistency"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["self_consistency"] == "cot-sc (ctl)" && r["short"] == true),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .any(|r| r["self_consistency"] == "cot-sc (ctl-sc)"
                && r["short"] == false
                && r["samples"].as_u64().unwrap() < 16),
        "{rows:?}"
    );
    // The Markdown report has every control.
    let md = env.stdout(&["report", "ctl", "ctl-sc"]);
    for needle in [
        "Did the debate beat its own vote?",
        "| cot-sc (ctl) | not applicable: no debate round",
        "Martingale check",
        "Flips by agent",
        "Flips by team mix",
        "Self-consistency at each debate's token budget",
        "short: the budget pays for",
    ] {
        assert!(md.contains(needle), "{needle:?} missing from\n{md}");
    }
}

/// Issue 35: `moot bench --sc-at-budget` adds a cot-sc arm with enough samples for the costliest
/// debate — ⌈1.1 × its tokens per item / a sample's⌉, a sample's cost read from the benchmark's
/// own cot-sc samples — as a benchmark of its own, reported with the first; run again, it reads
/// both back.
#[test]
fn sc_at_budget_runs_a_cot_sc_arm_that_pays_for_the_costliest_debate() {
    let env = Env::new();
    let data = arith_dataset(&env, 10);
    // More than 16 samples need a token budget that pays for them.
    let config = env.write("budget.toml", "[budget]\nmax_total_tokens = 1000000\n");
    let config = config.to_str().unwrap();
    let args = [
        "bench",
        "--config",
        config,
        "--dataset",
        &data,
        "--protocol",
        "cot-sc,som",
        "--sim",
        "--agents",
        "3",
        "--rounds",
        "2",
        "--run",
        "sb",
        "--sc-at-budget",
        "--json",
    ];
    let both = env.json(&args);
    let alone = env.json(&["report", "sb", "--format", "json"]);
    let tokens =
        |p: &Value| p["input_tokens"].as_f64().unwrap() + p["output_tokens"].as_f64().unwrap();
    let (sc, som) = (&alone["protocols"][0], &alone["protocols"][1]);
    assert_eq!(
        (&sc["protocol"], &som["protocol"]),
        (&"cot-sc".into(), &"som".into())
    );
    let budget = tokens(som) / 10.0;
    let per_sample = tokens(sc) / 30.0;
    let k = (1.1 * budget / per_sample).ceil() as usize;
    assert!(
        k > 3,
        "the debate costs more than the three stored samples: {k}"
    );
    let arm = format!("sb-sc{k}");
    let names: Vec<&str> = both["benches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sb", arm.as_str()]);
    let label = format!("cot-sc ({arm})");
    let row = both["controls"]["self_consistency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["protocol"] == "som" && r["self_consistency"] == label.as_str())
        .unwrap_or_else(|| panic!("{}", both["controls"]))
        .clone();
    assert_eq!(row["samples_stored"], k, "{row}");
    assert_eq!(row["short"], false, "{row}");
    assert!(
        (row["budget"].as_f64().unwrap() - budget).abs() < 1e-9,
        "{row}"
    );
    assert!(row["tokens"].as_f64().unwrap() <= budget + 0.5, "{row}");
    // The benchmark's own three samples are short of som's budget, and say so.
    let own = both["controls"]["self_consistency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["protocol"] == "som" && r["self_consistency"] == "cot-sc (sb)")
        .unwrap()
        .clone();
    assert_eq!(
        (&own["samples"], &own["short"]),
        (&3.into(), &true.into()),
        "{own}"
    );
    // `moot report` of both is the same report; running again reads everything back.
    assert_eq!(env.json(&["report", "sb", &arm, "--format", "json"]), both);
    let again = env.raw_json(&args);
    assert_eq!(
        (
            &again["throughput"]["debates"],
            &again["throughput"]["reused_debates"]
        ),
        (&0.into(), &30.into())
    );
    let mut again = again;
    again.as_object_mut().unwrap().remove("throughput");
    assert_eq!(again, both);
    // Without a debate there is no budget to match; without a token budget, 16 agents at most.
    let err = env.refused(&[
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "cot,cot-sc",
        "--sim",
        "--sc-at-budget",
    ]);
    assert!(
        err.contains("--sc-at-budget") && err.contains("debate"),
        "{err}"
    );
    let err = env.refused(&[
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "free-mad-n",
        "--sim",
        "--agents",
        "5",
        "--rounds",
        "3",
        "--run",
        "big",
        "--sc-at-budget",
    ]);
    assert!(
        err.contains("--sc-at-budget: a debate of --protocol free-mad-n makes about 20 calls")
            && err.contains("max_total_tokens to at least 2000"),
        "{err}"
    );
}

/// One team with a decider for each role benchmarks every protocol that has one: each protocol
/// runs the debaters and its own decider, `cot-sc` the debaters alone, and the report decides
/// them by `verdict` and every other rule.
#[test]
fn a_team_with_a_judge_an_aggregator_and_a_chairman_benchmarks_every_judged_protocol() {
    let env = Env::new();
    let data = arith_dataset(&env, 6);
    let config = env.write(
        "deciders.toml",
        "[[agents]]\nid = \"d\"\nbackend = \"sim\"\n\n\
         [[agents]]\nid = \"j\"\nbackend = \"sim\"\nrole = \"judge\"\n\n\
         [[agents]]\nid = \"a\"\nbackend = \"sim\"\nrole = \"aggregator\"\n\n\
         [[agents]]\nid = \"c\"\nbackend = \"sim\"\nrole = \"chairman\"\n",
    );
    let report = env.json(&[
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "cot-sc,judge,assigned,consultancy,moa,council",
        "--config",
        config.to_str().unwrap(),
        "--sim",
        "--agents",
        "3",
        "--rounds",
        "1",
        "--run",
        "judged",
        "--json",
    ]);
    let protocols = report["protocols"].as_array().unwrap();
    let names: Vec<&str> = protocols
        .iter()
        .map(|p| p["protocol"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "cot-sc",
            "judge",
            "assigned",
            "consultancy",
            "moa",
            "council"
        ]
    );
    for p in protocols {
        assert_eq!(p["items"], 6, "{p}");
        let rules: Vec<&str> = p["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["rule"].as_str().unwrap())
            .collect();
        assert!(rules.contains(&"verdict"), "{p}");
    }
    // Calls per item: cot-sc samples three debaters; judge and moa add one debate round and the
    // decider (3 + 3 + 1); consultancy one consultant who answers, argues once, and the judge.
    let calls = |name: &str| {
        protocols.iter().find(|p| p["protocol"] == name).unwrap()["calls"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(calls("cot-sc"), 18);
    assert_eq!(calls("judge"), 42);
    assert_eq!(calls("moa"), 42);
    assert_eq!(calls("consultancy"), 18);
    let md = env
        .moot()
        .args(["report", "judged"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8(md).unwrap();
    assert!(md.contains("council") && md.contains("verdict"), "{md}");
}

/// Issue 43: a benchmark's debates run through the same runner as `moot ask`'s, so
/// `[logging]` applies to them: each debate's start and end are in the log under its run id,
/// and every call line names its run (debates run concurrently share one log).
#[test]
fn a_benchmarks_debates_write_the_run_log() {
    let env = Env::new();
    let data = arith_dataset(&env, 3);
    let log = env.dir.path().join("logs/bench.log");
    let config = env.write(
        "logged.toml",
        &format!(
            "[logging]\nfile = {:?}\nlevel = \"info\"\n",
            log.display().to_string()
        ),
    );
    let report = env.raw_json(&[
        "bench",
        "--config",
        config.to_str().unwrap(),
        "--dataset",
        &data,
        "--protocol",
        "cot-sc,som",
        "--sim",
        "--agents",
        "3",
        "--concurrency",
        "4",
        "--run",
        "logged",
        "--json",
    ]);
    assert_eq!(report["throughput"]["debates"], 6, "{report}");
    let text = std::fs::read_to_string(&log).expect("the benchmark wrote its log");
    let field = |line: &str, key: &str| -> Option<String> {
        line.split(' ')
            .find_map(|w| w.strip_prefix(&format!("{key}=")).map(str::to_string))
    };
    let event = |line: &str| {
        line.split_once(" [")
            .map(|(_, r)| r.split(']').next().unwrap_or("").to_string())
    };
    let mut started = Vec::new();
    let mut ended = Vec::new();
    let mut calls = 0;
    for line in text.lines() {
        match event(line).as_deref() {
            Some("run_start") => started.push(field(line, "run").expect(line)),
            Some("run_end") => ended.push(field(line, "run").expect(line)),
            Some("call") => {
                let run = field(line, "run").expect(line);
                assert!(run.starts_with("logged/"), "{line}");
                calls += 1;
            }
            _ => {}
        }
    }
    started.sort();
    ended.sort();
    let mut expected: Vec<String> = ["cot-sc", "som"]
        .iter()
        .flat_map(|p| (1..=3).map(move |i| format!("logged/{p}/q{i}")))
        .collect();
    expected.sort();
    assert_eq!(started, expected, "{text}");
    assert_eq!(ended, expected, "{text}");
    assert_eq!(
        calls, report["throughput"]["calls"],
        "one call line per stored call"
    );
}

/// `debate.layout` in a benchmark's configuration lays out every debate of it, and `moot
/// report` pairs a benchmark under each layout on the same items (the layouts' comparison).
#[test]
fn a_benchmark_lays_out_its_debates_as_its_configuration_says_and_reports_pair_them() {
    let env = Env::new();
    let data = arith_dataset(&env, 3);
    let shared = env.write("shared.toml", "[debate]\nlayout = \"shared-first\"\n");
    let shared = shared.to_str().unwrap();
    for (name, extra) in [("papers", &[][..]), ("shared", &["--config", shared][..])] {
        let mut args = vec![
            "bench",
            "--sim",
            "--dataset",
            &data,
            "--protocol",
            "som",
            "--run",
            name,
        ];
        args.extend_from_slice(extra);
        env.stdout(&args);
    }
    for (run, layout, template) in [
        ("papers/som/q1", Value::Null, "conformity"),
        (
            "shared/som/q1",
            Value::from("shared-first"),
            "conformity/shared-first",
        ),
    ] {
        let v = env.json(&["show", run, "--format", "json"]);
        assert_eq!(v["run"]["spec"]["layout"], layout, "{run}");
        let debate_call = v["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["round"] == 1 && c["slot"] == "answer")
            .unwrap();
        assert_eq!(debate_call["template"], template, "{run}");
    }
    let report = env.stdout(&["report", "papers", "shared"]);
    assert!(
        report.contains("Paired on the same items")
            && report.contains("| som (papers) | som (shared) |"),
        "{report}"
    );
}

/// Issue 44: identical requests in flight are sent once. `som` and `free-mad-n` open with the
/// same requests; run four debates at once, they make exactly as many model requests as run one
/// at a time (none twice), and the report counts the shared answers as cache hits either way.
#[test]
fn concurrent_debates_send_identical_requests_once() {
    let env = Env::new();
    let data = arith_dataset(&env, 2);
    // A fresh server and store per run. The server answers slowly, so that debates started
    // together are all still waiting for their first answers when the others ask.
    let run = |concurrency: &str| -> (FakeOpenAi, Value) {
        let model = FakeOpenAi::start(Duration::from_millis(300));
        let team = env.write(&format!("team-{concurrency}.toml"), &model.team(3, 1));
        let store = env.dir.path().join(format!("c{concurrency}.db"));
        let report = json_on(
            &env,
            store.to_str().unwrap(),
            &[
                "bench",
                "--config",
                team.to_str().unwrap(),
                "--dataset",
                &data,
                "--protocol",
                "som,free-mad-n",
                "--concurrency",
                concurrency,
                "--run",
                "shared",
                "--json",
            ],
        );
        (model, report)
    };
    let hits = |report: &Value| -> u64 {
        report["protocols"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["cache_hits"].as_u64().unwrap())
            .sum()
    };
    let (one_model, one) = run("1");
    let (four_model, four) = run("4");
    assert!(hits(&one) > 0, "the protocols share requests: {one}");
    assert_eq!(one_model.repeats(), 0);
    assert_eq!(
        four_model.seen().len(),
        one_model.seen().len(),
        "as many model requests at --concurrency 4 as at 1"
    );
    assert_eq!(four_model.repeats(), 0, "no request sent twice");
    assert_eq!(hits(&four), hits(&one), "{four}");
}

/// Issue 58 item 1: `moot bench --name B` again continues B only when it asks what B asked;
/// with other agents, rounds, options or configuration it is refused before any debate,
/// naming what differs and the ways out, and the store keeps B's debates alone.
#[test]
fn bench_again_under_its_name_with_other_settings_is_refused_naming_what_differs() {
    let env = Env::new();
    let data = arith_dataset(&env, 4);
    let base = [
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "som",
        "--sim",
        "--limit",
        "4",
        "--name",
        "same",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    let first = with(&["--agents", "5", "--json"]);
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let report = env.json(&first);
    let calls = report["protocols"][0]["calls"].clone();
    let conf = script(
        &env,
        "other.toml",
        "[debate]\nweights = [1.0, 2.0, 3.0, 4.0]\n",
    );
    let conf = conf.to_str().unwrap().to_string();
    for (extra, names) in [
        (
            vec!["--agents", "3", "--rounds", "3"],
            vec!["agents", "debate.rounds"],
        ),
        (
            vec!["--agents", "5", "-o", "topology=ring"],
            vec!["protocol"],
        ),
        (
            vec!["--agents", "5", "--config", conf.as_str()],
            vec!["debate.weights"],
        ),
    ] {
        let args = with(&extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = env.refused(&args);
        assert!(
            err.contains("benchmark \"same\"") || err.contains("benchmark same"),
            "{err}"
        );
        for name in names {
            assert!(err.contains(name), "{name} not named: {err}");
        }
        assert!(err.contains("--name"), "the way out: {err}");
        assert!(err.contains("moot resume same"), "the way out: {err}");
        assert!(!err.contains("debates read back"), "{err}");
    }
    // Nothing was mixed in: the stored report is the first run's.
    let stored = env.json(&["report", "same", "--format", "json"]);
    assert_eq!(stored["protocols"][0]["calls"], calls);
    assert_eq!(stored["protocols"].as_array().unwrap().len(), 1);
    // The same request again, and one that changes only how it runs, continue it.
    env.json(&first);
    let mut how = first.clone();
    how.extend(["--concurrency", "1"]);
    env.json(&how);
}

/// Issue 58 item 6: `--sc-at-budget` with debates whose self-consistency arm could not have
/// the samples it needs is refused before any debate, naming the setting to change; after a
/// benchmark whose debates cost more than estimated, the arm runs the most samples allowed and
/// the report says it is short, instead of failing with no report.
#[test]
fn sc_at_budget_is_checked_before_any_debate_and_never_loses_the_report() {
    let env = Env::new();
    let data = arith_dataset(&env, 4);
    let args = |name: &str, agents: &str, rounds: &str| -> Vec<String> {
        [
            "bench",
            "--dataset",
            &data,
            "--protocol",
            "som",
            "--sim",
            "--limit",
            "3",
            "--sc-at-budget",
            "--agents",
            agents,
            "--rounds",
            rounds,
            "--name",
            name,
            "--json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let refused = args("big", "5", "3");
    let refused: Vec<&str> = refused.iter().map(String::as_str).collect();
    let err = env.refused(&refused);
    assert!(err.contains("--sc-at-budget"), "{err}");
    assert!(
        err.contains("budget.max_total_tokens to at least 2000"),
        "{err}"
    );
    // Nothing ran: no benchmark of that name is stored.
    let out = env.moot().args(["report", "big"]).output().unwrap();
    assert!(!out.status.success(), "no benchmark was stored");
    // A budget that pays for the samples lets it run.
    let conf = env.write("budget.toml", "[budget]\nmax_total_tokens = 100000\n");
    let mut paid = refused.clone();
    paid.extend(["--config", conf.to_str().unwrap()]);
    let report = env.json(&paid);
    assert_eq!(
        report["protocols"].as_array().unwrap().len(),
        2,
        "som and its arm"
    );
    // 8 agents and one debate round: 16 calls, within the 16 samples an arm may have, but
    // later-round calls read more than a sample: the arm needs more than 16, runs 16, and is
    // marked short.
    let tight = args("tight", "8", "1");
    let tight: Vec<&str> = tight.iter().map(String::as_str).collect();
    let out = env
        .moot()
        .args(&tight)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let arm = &report["controls"]["self_consistency"][0];
    assert!(stderr.contains("the cot-sc arm runs 16"), "{stderr}");
    assert_eq!(arm["short"], true, "{arm}");
    assert_eq!(report["protocols"][1]["protocol"], "cot-sc");
}

/// Issue 58 item 5: over every protocol, a control says "not applicable" only where the
/// decision is, by construction, the round-0 vote: where nothing but the debaters' round-0
/// answers was asked. SVR-MAD (challenges after round 0, no second answer round) gets every
/// control, its martingale check counted per challenge iteration.
#[test]
fn controls_are_not_applicable_only_where_the_decision_is_the_round0_vote() {
    let env = Env::new();
    let data = arith_dataset(&env, 6);
    for entry in moot_core::protocol::PROTOCOLS {
        let name = format!("c-{}", entry.name);
        let out = env
            .moot()
            .args([
                "bench",
                "--dataset",
                &data,
                "--protocol",
                entry.name,
                "--sim",
            ])
            .args(["--agents", "4", "--limit", "6", "--name", &name, "--json"])
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        if out.status.code() == Some(2) {
            // A protocol this dataset cannot run (one that needs passages) is refused whole.
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(entry.name, "assigned" | "consultancy"),
                "{} refused: {err}",
                entry.name
            );
            continue;
        }
        assert!(
            out.status.success(),
            "{}: {}",
            entry.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let vote = &report["controls"]["vote_vs_decision"][0];
        let applicable = !vote["paired"].is_null();
        // What was asked beyond the debaters' round-0 answers, read from the stored calls.
        let mut beyond = false;
        for i in 1..=6 {
            let run: Value = env.json(&[
                "show",
                &format!("{name}/{}/q{i}", entry.name),
                "--format",
                "json",
            ]);
            let agents = run["run"]["spec"]["agents"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for c in run["calls"].as_array().unwrap() {
                let role = agents
                    .get(c["agent"].as_u64().unwrap() as usize)
                    .and_then(|a| a["role"].as_str());
                if c["skipped"] != true
                    && (c["round"] != 0
                        || c["slot"] != "answer"
                        || role.is_some_and(|r| r != "debater"))
                {
                    beyond = true;
                }
            }
        }
        assert_eq!(
            applicable, beyond,
            "{}: controls applicable = {applicable}, asked beyond round 0 = {beyond}: {vote}",
            entry.name
        );
        if entry.name == "svr-mad" {
            assert!(applicable, "svr-mad's decision is not its vote");
            let rounds = &report["controls"]["martingale"][0]["rounds"];
            assert!(!rounds.as_array().unwrap().is_empty(), "{rounds}");
        }
    }
}

/// Issue 58 item 5: `moot show` of a benchmark's debate gives the item's gold answer and
/// whether the decision is right; `moot report --format jsonl` gives each debate as a line
/// (item, gold, each round's answers, decision, correct), agreeing with the report.
#[test]
fn show_grades_a_benchmark_debate_and_report_exports_each_debate_as_jsonl() {
    let env = Env::new();
    common::arith_bench(&env, 5);
    let report = env.json(&["report", "arith", "--format", "json"]);
    let out = env.stdout(&["report", "arith", "--format", "jsonl"]);
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 10, "{out}");
    for p in report["protocols"].as_array().unwrap() {
        let right = rows
            .iter()
            .filter(|r| r["protocol"] == p["protocol"] && r["correct"] == true)
            .count();
        assert_eq!(p["correct"], right, "{p}");
    }
    for row in &rows {
        let item = row["item_id"].as_str().unwrap();
        let n: u64 = item[1..].parse().unwrap();
        assert_eq!(row["gold"], (n * 7).to_string(), "{row}");
        assert_eq!(row["bench"], "arith");
        let rounds = row["rounds"].as_array().unwrap();
        let expected_rounds = if row["protocol"] == "som" { 2 } else { 1 };
        assert_eq!(rounds.len(), expected_rounds, "{row}");
        assert_eq!(
            rounds[0].as_array().unwrap().len(),
            row["agents"].as_array().unwrap().len()
        );
        // `moot show` grades the same debate the same way.
        let run = row["run_id"].as_str().unwrap();
        let shown: Value = env.json(&["show", run, "--format", "json"]);
        assert_eq!(shown["benchmark"]["gold"], row["gold"]);
        assert_eq!(shown["benchmark"]["correct"], row["correct"]);
        let text = env.stdout(&["show", run]);
        let verdict = if row["correct"] == true {
            "right"
        } else {
            "wrong"
        };
        assert!(
            text.contains(&format!(
                "gold: **{}** · the decision is **{verdict}**",
                row["gold"].as_str().unwrap()
            )),
            "{text}"
        );
    }
    // A run that is no benchmark's says nothing of gold.
    let asked = env.json(&["ask", "What is 2 + 2?", "--sim", "--gold", "4", "--json"]);
    let shown: Value = env.json(&[
        "show",
        asked["run_id"].as_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(shown["benchmark"].is_null(), "{shown}");
}

/// Issue 58 item 7: where standard error is not a terminal, a benchmark prints a progress line
/// (count, rate, elapsed time) at least every 10 s, even while no debate finishes.
#[test]
fn a_benchmark_prints_a_progress_line_while_nothing_finishes_when_stderr_is_no_terminal() {
    use std::io::BufRead;
    let env = Env::new();
    let data = arith_dataset(&env, 1);
    let gate = env.dir.path().join("go");
    let agent = script(
        &env,
        "waits.sh",
        &format!(
            "#!/bin/sh\ncat > /dev/null\nwhile [ ! -e {} ]; do sleep 0.2; done\necho 'Final answer: 7'\n",
            gate.display()
        ),
    );
    let a = agent.display();
    let config = env.write(
        "waits.toml",
        &format!(
            "[debate]\nsoft_timeout_ms = 120000\nhard_timeout_ms = 180000\n[security]\ncli_allowed_commands = [\"{a}\"]\n[[agents]]\nid = \"w\"\nbackend = \"cli\"\ncommand = \"{a}\"\n"
        ),
    );
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("moot"))
        .env("MOOT_STORE", env.store())
        .args([
            "bench",
            "--dataset",
            &data,
            "--protocol",
            "cot",
            "--name",
            "slow",
        ])
        .arg("--config")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let beat = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("a progress line within 60 s");
        if line.starts_with("benchmark slow: cot 0/1") {
            break line;
        }
    };
    assert!(beat.contains("/s") && beat.contains("elapsed"), "{beat}");
    std::fs::write(&gate, "").unwrap();
    assert!(child.wait().unwrap().success());
}

/// Issue 58 item 5: on a terminal, `moot report` gives a summary first and every table aligned
/// within the terminal's width; `--format markdown` keeps the full Markdown.
#[test]
fn on_a_terminal_a_report_starts_with_a_summary_and_fits_the_width() {
    let env = Env::new();
    common::arith_bench(&env, 3);
    let moot = assert_cmd::cargo::cargo_bin("moot");
    let on_terminal = |extra: &str| {
        let out = StdCommand::new("script")
            .arg("-qec")
            .arg(format!(
                "stty rows 40 cols 80; {} report arith {extra}",
                moot.display()
            ))
            .arg("/dev/null")
            .env("MOOT_STORE", env.store())
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
    };
    let text = on_terminal("");
    assert!(text.starts_with("Summary\n"), "{text}");
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line:?}",
            line.chars().count()
        );
    }
    assert!(!text.contains("|---|"), "{text}");
    let markdown = on_terminal("--format markdown");
    assert!(markdown.contains("| protocol | accuracy |"), "{markdown}");
}
