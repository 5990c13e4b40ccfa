//! Drives `moot ask`, `show`, `decide --run`, `resume` and `config` on scripted and CLI agents
//! with a real SQLite store (no model needed).

use std::path::PathBuf;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use crate::common;

use common::{script, wait_for, Env};

const SCRIPTED: &str = r#"
[debate]
protocol = "free-mad-n"
rounds = 2
answer = "numeric"
soft_timeout_ms = 5000
hard_timeout_ms = 10000

[[agents]]
id = "a"
backend = "scripted"
responses = ["17*24 = 408\nFinal answer: 408"]

[[agents]]
id = "b"
backend = "scripted"
responses = ["Final answer: 418", "Final answer: 418", "I was wrong. Final answer: 408"]

[[agents]]
id = "c"
backend = "scripted"
responses = ["Final answer: 408", "Final answer: 418", "Final answer: 418"]
"#;

#[test]
fn ask_show_and_decide_a_scripted_debate() {
    let env = Env::new();
    let cfg = env.write("c.toml", SCRIPTED);
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["answer"], "408");
    assert_eq!(v["rule"], "free-mad");
    assert_eq!(v["calls"], 9);
    assert_eq!(v["rounds"].as_array().unwrap().len(), 3);
    assert_eq!(v["rounds"][2], serde_json::json!(["408", "408", "418"]));
    assert!(v["tokens"]["input"].as_u64().unwrap() > 0);
    let run = v["run_id"].as_str().unwrap().to_string();

    let shown = env.json(&["show", &run, "--format", "json"]);
    assert_eq!(shown["run"]["id"], run.as_str());
    assert_eq!(shown["calls"].as_array().unwrap().len(), 9);
    assert_eq!(shown["calls"][3]["peers"], serde_json::json!([1, 2]));
    let md = env
        .moot()
        .args(["show", &run])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8(md).unwrap();
    assert!(
        md.contains("# Run ") && md.contains("## Round 2") && md.contains("| free-mad | 408 |"),
        "{md}"
    );

    let all = env.json(&["decide", "--run", &run, "--rule", "all"]);
    let answers: Vec<(&str, &str)> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["rule"].as_str().unwrap(), d["answer"].as_str().unwrap()))
        .collect();
    assert_eq!(
        answers,
        vec![
            ("majority-last", "408"),
            ("free-mad", "408"),
            ("max-consistency", "408"),
            // No challenges in a free-mad run: SVR-MAD's fallback vote. b's post-debate answers
            // tie (418, 408) and its pre-debate 418 breaks it; c holds 418 after the debate.
            ("svr", "418"),
            ("sid-et", "408"),
            // No judge, aggregator or chairman: the debaters' last-round plurality.
            ("verdict", "408")
        ]
    );
    let maj = env.json(&["decide", "--run", &run, "--rule", "majority-last"]);
    assert_eq!(maj["scores"], serde_json::json!({"408": 2.0, "418": 1.0}));
}

#[test]
fn ask_text_output_and_protocol_override() {
    let env = Env::new();
    let cfg = env.write("c.toml", SCRIPTED);
    let out = env
        .moot()
        .args([
            "ask",
            "What is 17 * 24?",
            "--config",
            cfg.to_str().unwrap(),
            "--protocol",
            "cot",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.starts_with("Answer: 408\n"), "{out}");
    assert!(
        out.contains("chosen by majority-last (cot, 1 agent, 0 debate rounds)"),
        "{out}"
    );
    assert!(out.contains("Run: r"), "{out}");
}

#[test]
fn unknown_runs_and_bad_configs_are_clear_errors() {
    let env = Env::new();
    // A store to look in (reading commands never create one).
    env.json(&[
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--json",
    ]);
    let out = env
        .moot()
        .args(["show", "r-nope"])
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&out).contains("r-nope"));
    let out = env
        .moot()
        .args(["decide", "--run", "r-nope"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&out).contains("r-nope"));
    let bad = env.write("bad.toml", "[debate]\nprotocl = \"som\"\n");
    let out = env
        .moot()
        .args(["config", "check", bad.to_str().unwrap()])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("bad.toml") && err.contains("protocl"), "{err}");
    let bad = env.write("bad.yaml", "agents:\n  - id: x\n    backend: gpt\n");
    let out = env
        .moot()
        .args(["config", "check", bad.to_str().unwrap()])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(
        err.contains("bad.yaml") && err.contains("agents[0].backend"),
        "{err}"
    );
}

#[test]
fn retry_and_rate_limit_settings_are_checked() {
    let env = Env::new();
    let check = |name: &str, text: &str| {
        let path = env.write(name, text);
        let out = env
            .moot()
            .args(["config", "check", path.to_str().unwrap()])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let agent = "[[agents]]\nid = \"a\"\nbackend = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n";
    let (code, err) = check("rpm.toml", &format!("{agent}requests_per_minute = 0\n"));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("agents[0].requests_per_minute must be > 0"),
        "{err}"
    );
    let (code, err) = check(
        "retry.toml",
        &format!("[retry]\nmin_delay_ms = 5000\nmax_delay_ms = 10\n\n{agent}"),
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("retry.min_delay_ms"), "{err}");
    let (code, err) = check("typo.toml", &format!("[retry]\nmax_retry = 2\n\n{agent}"));
    assert_eq!(code, Some(2));
    assert!(err.contains("max_retry"), "{err}");
    let (code, err) = check(
        "ok.toml",
        &format!(
            "[retry]\nmax_retries = 0\n\n{agent}tokens_per_minute = 100000\nmax_in_flight = 4\n"
        ),
    );
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn config_example_passes_config_check() {
    let env = Env::new();
    let out = env
        .moot()
        .args(["config", "example"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let path = env.write("example.toml", &String::from_utf8(out).unwrap());
    let out = env
        .moot()
        .args(["config", "check", path.to_str().unwrap()])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&out).contains("ok (3 agents"));
}

/// A CLI agent that answers at once in round 0 and, while `slow` exists, takes a long time in
/// debate rounds; it leaves a marker when a debate round starts.
fn agent_script(env: &Env) -> PathBuf {
    let dir = env.dir.path().display().to_string();
    script(
        env,
        "agent.sh",
        &format!(
            "#!/bin/sh\ncat > /dev/null\nif [ \"$1\" = critique ]; then\n  echo x >> {dir}/critique-calls\n  touch {dir}/in-critique\n  if [ -e {dir}/slow ]; then sleep 60; fi\n  echo 'SOLUTION:'; echo 'Final answer: 408'\nelse\n  echo x >> {dir}/generate-calls\n  echo 'SOLUTION:'; echo 'Final answer: 408'\nfi\n"
        ),
    )
}

/// Two agents from [`agent_script`] under `som` with one debate round: the configuration file.
fn held_config(env: &Env) -> PathBuf {
    let script = agent_script(env);
    let s = script.display();
    env.write(
        "cli.toml",
        &format!(
            "[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"numeric\"\nsoft_timeout_ms = 60000\nhard_timeout_ms = 90000\nmin_agents = 2\n\n[security]\ncli_allowed_commands = [\"{s}\"]\n\n[[agents]]\nid = \"x\"\nbackend = \"cli\"\ncommand = \"{s}\"\n\n[[agents]]\nid = \"y\"\nbackend = \"cli\"\ncommand = \"{s}\"\n"
        ),
    )
}

/// Starts `moot ask` on two agents from [`agent_script`] and returns once its round 1 has
/// started (and is held there while `slow` exists): the process, its stderr, the run id and
/// the configuration file.
fn ask_held_in_round_one(
    env: &Env,
) -> (
    std::process::Child,
    std::io::BufReader<std::process::ChildStderr>,
    String,
    PathBuf,
) {
    let cfg = held_config(env);
    env.write("slow", "");
    let bin = assert_cmd::cargo::cargo_bin("moot");
    let mut child = StdCommand::new(&bin)
        .args(["ask", "What is 17 * 24?", "--config", cfg.to_str().unwrap()])
        .env("MOOT_STORE", env.store())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (stderr, run) = common::run_id_from_stderr(&mut child);
    wait_for(&env.dir.path().join("in-critique"), Duration::from_secs(60));
    (child, stderr, run, cfg)
}

/// What `moot resume RUN --config CFG` says when it refuses (exit 2).
fn resume_refused(env: &Env, run: &str, cfg: &std::path::Path) -> String {
    let out = env
        .moot()
        .args(["resume", run, "--config", cfg.to_str().unwrap()])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_killed_debate_resumes_without_repeating_calls() {
    let env = Env::new();
    let (mut child, stderr, run, cfg) = ask_held_in_round_one(&env);
    // While its process lives, the run is running, and resuming it (a second process asking
    // the same calls) is refused.
    let shown = env.json(&["show", &run, "--format", "json"]);
    assert_eq!(shown["run"]["status"], "running");
    let refused = resume_refused(&env, &run, &cfg);
    assert!(
        refused.contains("is still running") && refused.contains("ask its calls twice"),
        "{refused}"
    );
    // Round 0 is stored; the process dies in the middle of round 1.
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stderr);
    // Its owner is gone: interrupted at once (on this machine), with the way on.
    let shown = env.json(&["show", &run, "--format", "json"]);
    assert_eq!(shown["run"]["status"], "interrupted");
    let page = env.stdout(&["show", &run]);
    assert!(page.contains("status: interrupted"), "{page}");
    assert!(
        page.contains(&format!("`moot resume {run}` continues it")),
        "{page}"
    );
    assert_eq!(
        shown["calls"].as_array().unwrap().len(),
        2,
        "round 0 stored before the crash"
    );
    std::fs::remove_file(env.dir.path().join("slow")).unwrap();
    // This machine's configuration allows the agent (a stored one grants nothing).
    let v = env.json(&["resume", &run, "--json", "--config", cfg.to_str().unwrap()]);
    assert_eq!(v["answer"], "408");
    assert_eq!(v["calls"], 4);
    let generate = std::fs::read_to_string(env.dir.path().join("generate-calls")).unwrap();
    assert_eq!(generate.lines().count(), 2, "round 0 was not repeated");
    let again = env
        .moot()
        .args(["resume", &run])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&again).contains("already finished"));
}

#[test]
fn a_debate_out_of_budget_ends_cleanly_with_the_reason_recorded() {
    let env = Env::new();
    let cfg = env.write(
        "budget.toml",
        "[debate]\nprotocol = \"som\"\nrounds = 2\n\n[budget]\nmax_total_tokens = 10\n\n[[agents]]\nid = \"a\"\nbackend = \"scripted\"\nresponses = [\"17 * 24 = 408. Final answer: 408\"]\n\n[[agents]]\nid = \"b\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 408\"]\n",
    );
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["answer"], "408", "round 0's answers decide: {v}");
    let shown = env.json(&["show", v["run_id"].as_str().unwrap(), "--format", "json"]);
    let skipped: Vec<&serde_json::Value> = shown["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["skipped"] == true)
        .collect();
    assert_eq!(skipped.len(), 4, "rounds 1 and 2 of both agents: {shown}");
    assert!(skipped[0]["error"]
        .as_str()
        .unwrap()
        .starts_with("budget: max_total_tokens (10) spent"));
    let bad = env.write("bad.toml", "[budget]\nmax_agent_time_sec = -1\n");
    let err = env.refused(&["config", "check", bad.to_str().unwrap()]);
    assert!(err.contains("budget.max_agent_time_sec"), "{err}");
}

#[test]
fn a_stopped_owner_silent_past_the_limit_is_not_resumed_over() {
    let env = Env::new();
    let (mut child, stderr, run, cfg) = ask_held_in_round_one(&env);
    // The owner is stopped (`kill -STOP`), and its heartbeat is made ten minutes old, as if it
    // had been stopped that long: it still exists, and may go on at any moment.
    let pid = child.id().to_string();
    assert!(StdCommand::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap()
        .success());
    common::sqlite_exec(
        &env.store(),
        &format!("UPDATE runs SET heartbeat_ms = heartbeat_ms - 600000 WHERE id = '{run}'"),
    );
    let shown = env.json(&["show", &run, "--format", "json"]);
    assert_eq!(shown["run"]["status"], "running");
    let refused = resume_refused(&env, &run, &cfg);
    assert!(
        refused.contains("is still running") && refused.contains("--force"),
        "{refused}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stderr);
    let shown = env.json(&["show", &run, "--format", "json"]);
    assert_eq!(shown["run"]["status"], "interrupted");
}

/// Issue 56 item 6: `moot bench` run again under the name of a benchmark whose owner lives —
/// here stopped with SIGSTOP in the middle of a debate — is refused as `moot resume` is, and
/// asks none of its calls again.
#[test]
fn a_benchmark_whose_owner_lives_is_not_run_again_under_its_name() {
    let env = Env::new();
    let cfg = held_config(&env);
    let data = common::arith_dataset(&env, 1);
    env.write("slow", "");
    let args = [
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "som",
        "--run",
        "held",
        "--config",
        cfg.to_str().unwrap(),
    ];
    let bin = assert_cmd::cargo::cargo_bin("moot");
    let mut owner = StdCommand::new(&bin)
        .args(args)
        .env("MOOT_STORE", env.store())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::wait_for(&env.dir.path().join("in-critique"), Duration::from_secs(60));
    let stopped = StdCommand::new("kill")
        .args(["-STOP", &owner.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let calls = |what: &str| {
        std::fs::read_to_string(env.dir.path().join(what))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let before = (calls("generate-calls"), calls("critique-calls"));
    let refused = env.refused(&args);
    assert!(
        refused.contains("benchmark held is still being run")
            && refused.contains("moot resume held --force"),
        "{refused}"
    );
    assert_eq!((calls("generate-calls"), calls("critique-calls")), before);
    owner.kill().unwrap();
    owner.wait().unwrap();
}

/// Issue 58 item 7: on a terminal, `moot ask`'s live lines name agents by id, as the summary
/// does.
#[test]
fn the_live_display_names_agents_by_id() {
    let env = crate::common::Env::new();
    let moot = assert_cmd::cargo::cargo_bin("moot");
    let out = std::process::Command::new("script")
        .args(["-qec"])
        .arg(format!(
            "{} ask 'What is 2 + 2?' --sim --gold 4 --store memory:",
            moot.display()
        ))
        .arg("/dev/null")
        .env("MOOT_STORE", env.store())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("round 0 · agent sim-1: "), "{text}");
    assert!(!text.contains("round 0 · agent 1: "), "{text}");
}

/// On a terminal, `moot ask`'s live lines show an answer's text, never its terminal controls.
#[test]
fn the_live_display_never_passes_an_answers_terminal_controls_through() {
    let env = crate::common::Env::new();
    // TOML's escapes: ESC and BEL in the scripted reply.
    let reply = r#""Final answer: \u001b]0;PWNED\u0007\u001b[31mred""#;
    let config = env.write(
        "hostile.toml",
        &format!(
            "[debate]\nanswer = \"text\"\n[[agents]]\nid = \"s\"\nbackend = \"scripted\"\nresponses = [{reply}]\n"
        ),
    );
    let moot = assert_cmd::cargo::cargo_bin("moot");
    let out = std::process::Command::new("script")
        .arg("-qec")
        .arg(format!(
            "{} ask 'Name a colour' --config {} --store memory:",
            moot.display(),
            config.display()
        ))
        .arg("/dev/null")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("round 0 · agent s: "), "{text}");
    // The answer is folded to lower case as text answers are; its ESC must not reach the
    // terminal raw.
    assert!(!text.contains("agent s: \u{1b}"), "{text:?}");
    assert!(text.contains("agent s: \\u{1b}]0;pwned"), "{text:?}");
}
