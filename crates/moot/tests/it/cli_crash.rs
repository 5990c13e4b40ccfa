//! Crash safety: a benchmark of several questions killed with SIGKILL at several points, each
//! time picked up again by `moot resume`, ends exactly as the same benchmark run without
//! interruption: no stored call is made again or rewritten, none is lost, and the only calls
//! made twice are those in flight when the process died.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common;

use common::{arith_dataset, script, wait_for, Env};

const ITEMS: [&str; 3] = ["q1", "q2", "q3"];
const PROTOCOLS: [&str; 2] = ["som", "cot-sc"];

/// A CLI agent whose answer depends on its id (first argument) and prompt, so every call's
/// response is its own. Every call is logged; once the log reaches the number in `hang-at`, a
/// call leaves `hung`, notes its pid in `sleepers` and hangs.
fn agent(env: &Env) -> PathBuf {
    let d = env.dir.path().display().to_string();
    script(
        env,
        "agent.sh",
        &format!(
            r#"#!/bin/sh
input=$(cat)
h=$(printf '%s %s' "$1" "$input" | cksum | cut -d' ' -f1)
echo "$1 $2 $h" >> {d}/calls.log
n=$(wc -l < {d}/calls.log)
if [ -e {d}/hang-at ] && [ "$n" -ge "$(cat {d}/hang-at)" ] && [ ! -e {d}/hung ]; then
  echo "$$ $(readlink /proc/self/ns/pid)" >> {d}/sleepers
  touch {d}/hung
  exec sleep 60
fi
echo 'SOLUTION:'
echo "Final answer: $((h % 5 + 20))"
"#
        ),
    )
}

fn logged_calls(env: &Env) -> usize {
    std::fs::read_to_string(env.dir.path().join("calls.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// A stored call's identity: protocol, item, round, agent, slot.
type CallKey = (String, String, u64, u64, String);

/// Every stored call of benchmark `bench`, with what was recorded for it.
fn stored_calls(env: &Env, bench: &str) -> BTreeMap<CallKey, Value> {
    let mut all = BTreeMap::new();
    for protocol in PROTOCOLS {
        for item in ITEMS {
            let run = format!("{bench}/{protocol}/{item}");
            let out = env
                .moot()
                .args(["show", &run, "--format", "json"])
                .output()
                .unwrap();
            if !out.status.success() {
                continue; // not started yet
            }
            let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
            for call in shown["calls"].as_array().unwrap() {
                let key = (
                    protocol.to_string(),
                    item.to_string(),
                    call["round"].as_u64().unwrap(),
                    call["agent"].as_u64().unwrap(),
                    call["slot"].to_string(),
                );
                all.insert(key, call.clone());
            }
        }
    }
    all
}

/// The calls that reached an agent (not skipped by the protocol, not answered from the cache).
fn made(calls: &BTreeMap<CallKey, Value>) -> usize {
    calls
        .values()
        .filter(|c| c["skipped"] == false && c["cached"] == false)
        .count()
}

/// What must not differ between a resumed call and the uninterrupted run's.
fn content(call: &Value) -> Value {
    serde_json::json!({
        "messages": call["messages"],
        "response_text": call["response_text"],
        "answer": call["answer"],
        "error": call["error"],
        "skipped": call["skipped"],
    })
}

fn kill_sleepers(env: &Env) {
    let records = std::fs::read_to_string(env.dir.path().join("sleepers")).unwrap_or_default();
    // Each line names a process in its agent's PID namespace; only a running one is killed.
    for pid in records.lines().filter_map(moot_proc::pid_from_record) {
        let _ = StdCommand::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    let _ = std::fs::remove_file(env.dir.path().join("sleepers"));
}

#[test]
fn a_benchmark_killed_at_several_points_resumes_to_the_uninterrupted_result() {
    let env = Env::new();
    let data = arith_dataset(&env, 3);
    let agent = agent(&env);
    let a = agent.display();
    let cfg = env.write(
        "cli.toml",
        &format!(
            "[debate]\nrounds = 2\nanswer = \"numeric\"\nsoft_timeout_ms = 60000\nhard_timeout_ms = 90000\n\n[security]\ncli_allowed_commands = [\"{a}\"]\n\n[[agents]]\nid = \"x\"\nbackend = \"cli\"\ncommand = \"{a}\"\nargs = [\"x\"]\n\n[[agents]]\nid = \"y\"\nbackend = \"cli\"\ncommand = \"{a}\"\nargs = [\"y\"]\n"
        ),
    );
    let bench = |name: &str| -> Vec<String> {
        [
            "bench",
            "--dataset",
            &data,
            "--protocol",
            &PROTOCOLS.join(","),
            "--config",
            cfg.to_str().unwrap(),
            "--concurrency",
            "1",
            "--no-cache",
            "--run",
            name,
            "--json",
        ]
        .map(String::from)
        .to_vec()
    };
    // This machine's configuration allows the agent (a stored one grants nothing).
    let resume = [
        "resume",
        "parts",
        "--concurrency",
        "1",
        "--no-cache",
        "--json",
        "--config",
        cfg.to_str().unwrap(),
    ];

    // The reference: the same benchmark, uninterrupted.
    let reference = env.json(
        &bench("whole")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let whole = stored_calls(&env, "whole");
    let whole_made = logged_calls(&env);
    assert_eq!(
        whole_made,
        3 * 2 * 3 + 3 * 2,
        "som: 2 agents × 3 rounds; cot-sc: 2 agents; for 3 items"
    );
    assert_eq!(made(&whole), whole_made);
    std::fs::remove_file(env.dir.path().join("calls.log")).unwrap();

    // Killed three times, spread over the benchmark (counting calls made, including those made
    // again): in the first question's second round, as the second question starts, as the
    // third does.
    let mut snapshots = Vec::new();
    for (i, hang_at) in [4, 11, 20].into_iter().enumerate() {
        env.write("hang-at", &hang_at.to_string());
        let _ = std::fs::remove_file(env.dir.path().join("hung"));
        let args = if i == 0 {
            bench("parts")
        } else {
            resume.map(String::from).to_vec()
        };
        let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("moot"))
            .args(&args)
            .env("MOOT_STORE", env.store())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for(&env.dir.path().join("hung"), Duration::from_secs(120));
        child.kill().unwrap(); // SIGKILL: nothing gets to clean up.
        child.wait().unwrap();
        kill_sleepers(&env);
        let stored = stored_calls(&env, "parts");
        let invoked = logged_calls(&env);
        assert!(invoked >= hang_at, "{invoked} calls before kill {i}");
        if let Some((before, _)) = snapshots.last() {
            let before: &BTreeMap<CallKey, Value> = before;
            assert!(
                stored.len() > before.len(),
                "kill {i}: no progress since the last one"
            );
        }
        eprintln!("kill {i}: {} calls stored, {invoked} made", stored.len());
        snapshots.push((stored, invoked));
    }

    std::fs::remove_file(env.dir.path().join("hang-at")).unwrap();
    let resumed = env.json(&resume);
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

    let finished = stored_calls(&env, "parts");
    // No call lost: the same calls as the uninterrupted run, with the same prompts and answers.
    assert_eq!(
        finished.keys().collect::<Vec<_>>(),
        whole.keys().collect::<Vec<_>>()
    );
    for (key, call) in &finished {
        assert_eq!(content(call), content(&whole[key]), "{key:?}");
    }
    // No completed call repeated or rewritten: whatever was stored before a kill is still there
    // exactly as it was (recorded at the same instant).
    for (i, (stored, _)) in snapshots.iter().enumerate() {
        for (key, call) in stored {
            assert_eq!(&finished[key], call, "kill {i}: {key:?} changed");
        }
    }
    // The only calls made twice are those a kill cut short. By the last kill every call made
    // had been stored or cut short, and none has been cut short since.
    let (last_stored, last_invoked) = snapshots.last().unwrap();
    let cut_short = last_invoked - made(last_stored);
    let total = logged_calls(&env);
    eprintln!("{total} calls made in all, {cut_short} of them cut short");
    assert_eq!(total - made(&finished), cut_short);
    assert!(
        cut_short <= 3 * 2,
        "{cut_short} calls cut short by 3 kills of rounds of 2 agents"
    );

    // Resuming a finished benchmark makes no call and gives the same report.
    let again = env.json(&resume);
    assert_eq!(comparable(&again), comparable(&reference));
    assert_eq!(logged_calls(&env), total);
}
