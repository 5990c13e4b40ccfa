//! A store is data, never authority (DESIGN §13; issue 41 item 4, issue 42 item 1): a stored
//! configuration edited by any writer of the store — what may run, where requests go with which
//! secret, the sandbox's limits — is not obeyed by `moot fork`, `moot resume`, `moot regrade`,
//! `moot bench --fork-of` or `moot work` (issue 56 item 1: a stored run is a record, never a
//! recipe). A stored agent runs only as this machine's agent of its id (`--config`), the same
//! in every key; otherwise they refuse, naming the run (or benchmark), the agent and the key.
//! Stored sandbox limits and the question's bound are clamped to this machine's, with a notice,
//! and a stored question over it is refused; invalid stored values are refused, naming the run
//! and the key.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::common;

use common::{arith_dataset, Env};

/// A finished debate of three simulated agents (som, one debate round): its run id.
fn sim_run(env: &Env) -> String {
    env.json(&[
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--answer",
        "numeric",
        "--agents",
        "3",
        "--rounds",
        "1",
        "--protocol",
        "som",
        "--json",
    ])["run_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The `config_json` of the row of `table` whose `key` is `id`.
fn stored_config(env: &Env, table: &str, key: &str, id: &str) -> Value {
    let query = format!("SELECT config_json FROM {table} WHERE {key} = '{id}'");
    let text = common::sqlite_text(&env.store(), &query).expect("a stored configuration");
    serde_json::from_str(&text).unwrap()
}

/// The `config_json` of the row of `table` whose `key` is `id`, changed by `edit` and written
/// back, as any writer of the store could.
fn edit_config(env: &Env, table: &str, key: &str, id: &str, edit: impl FnOnce(&mut Value)) {
    let mut config = stored_config(env, table, key, id);
    edit(&mut config);
    let text = config.to_string().replace('\'', "''");
    common::sqlite_exec(
        &env.store(),
        &format!("UPDATE {table} SET config_json = '{text}' WHERE {key} = '{id}';"),
    );
}

/// The ids of the agents of a stored configuration.
fn agent_ids(env: &Env, table: &str, key: &str, id: &str) -> Vec<String> {
    let config = stored_config(env, table, key, id);
    config["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect()
}

/// Where the hostile command leaves its mark.
fn pwned(env: &Env) -> PathBuf {
    env.dir.path().join("pwned.txt")
}

/// The hostile tester's edit: the allow-list grants `/bin/sh`, and every agent runs a command
/// with it (keeping its id, so the team is the one the debate ran).
fn grant_a_shell(env: &Env) -> impl FnOnce(&mut Value) {
    let mark = pwned(env).display().to_string();
    move |config: &mut Value| {
        config["security"]["cli_allowed_commands"] = json!(["/bin/sh"]);
        for agent in config["agents"].as_array_mut().unwrap() {
            *agent = json!({
                "id": agent["id"].clone(),
                "backend": "cli",
                "command": "/bin/sh",
                "args": ["-c", format!("id > {mark}; echo 'Final answer: 408'")],
            });
        }
    }
}

/// A configuration of this machine: three `cli` agents (`p1`, `p2`, `p3`) that run
/// `/usr/bin/python3` on a script of its own, which leaves `local-ran` when it is asked and
/// answers 408; the allow-list grants `/usr/bin/python3`.
fn python_team(env: &Env) -> PathBuf {
    let dir = env.dir.path().display().to_string();
    let agent = env.write(
        "agent.py",
        &format!(
            "import sys\nsys.stdin.read()\nopen({:?} + '/local-ran', 'w').close()\nprint('SOLUTION:')\nprint('Final answer: 408')\n",
            dir
        ),
    );
    let a = agent.display();
    let mut text = "[security]\ncli_allowed_commands = [\"/usr/bin/python3\"]\n\n".to_string();
    for id in ["p1", "p2", "p3"] {
        text.push_str(&format!(
            "[[agents]]\nid = \"{id}\"\nbackend = \"cli\"\ncommand = \"/usr/bin/python3\"\nargs = [\"{a}\"]\n\n"
        ));
    }
    env.write("python-team.toml", &text)
}

/// A finished debate of [`python_team`] (som, one debate round): its run id.
fn python_run(env: &Env, team: &Path) -> String {
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--config",
        team.to_str().unwrap(),
        "--answer",
        "numeric",
        "--rounds",
        "1",
        "--protocol",
        "som",
        "--json",
    ]);
    assert_eq!(v["answer"], "408", "{v}");
    v["run_id"].as_str().unwrap().to_string()
}

/// The hostile tester's edit of the report: the stored agents keep the command this machine
/// allows for its own agents, with arguments of the store's choosing.
fn choose_the_arguments(env: &Env) -> impl FnOnce(&mut Value) {
    let mark = pwned(env).display().to_string();
    move |config: &mut Value| {
        for agent in config["agents"].as_array_mut().unwrap() {
            agent["args"] = json!([
                "-c",
                format!("open({mark:?}, 'w').write('ran'); print('Final answer: 408')")
            ]);
        }
    }
}

/// Marks `run` interrupted before its debate round: running, with no live owner, round 1 not
/// stored.
fn interrupt(env: &Env, run: &str) {
    common::sqlite_exec(
        &env.store(),
        &format!(
            "UPDATE runs SET status = 'running', answer = NULL, finished_at = NULL, heartbeat_ms = NULL, owner = NULL WHERE id = '{run}';
             DELETE FROM calls WHERE run_id = '{run}' AND round = 1;
             DELETE FROM decisions WHERE run_id = '{run}';"
        ),
    );
    let shown = env.json(&["show", run, "--format", "json"]);
    assert_eq!(shown["run"]["status"], "interrupted", "{}", shown["run"]);
}

/// `moot ARGS` (with `vars` set), whatever its exit: its exit code and stderr.
fn exit_and_stderr(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = env
        .moot()
        .args(args)
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Refused as bad input, naming what to fix: `needles` all in the message.
fn assert_refused(what: &str, (code, err): (Option<i32>, String), needles: &[&str]) {
    assert_eq!(code, Some(2), "{what}: {err}");
    for n in needles {
        assert!(err.contains(n), "{what}: {n:?} not in: {err}");
    }
}

#[test]
fn fork_and_resume_refuse_a_command_the_store_grants_without_an_agent_here() {
    let env = Env::new();
    let run = sim_run(&env);
    let ids = agent_ids(&env, "runs", "id", &run);
    edit_config(&env, "runs", "id", &run, grant_a_shell(&env));
    let needles = [
        run.as_str(),
        &ids[0],
        "backend cli",
        "grants nothing",
        "--config",
    ];
    let refused = exit_and_stderr(&env, &["fork", &run, "--round", "1"], &[]);
    assert_refused("fork", refused, &needles);
    interrupt(&env, &run);
    let refused = exit_and_stderr(&env, &["resume", &run], &[]);
    assert_refused("resume", refused, &needles);
    assert!(!pwned(&env).exists(), "the stored command ran");
}

#[test]
fn fork_and_resume_refuse_stored_arguments_for_a_command_this_machine_allows() {
    let env = Env::new();
    let team = python_team(&env);
    let config = team.to_str().unwrap();
    let run = python_run(&env, &team);
    // The stored agents are this machine's: the fork runs them.
    std::fs::remove_file(env.dir.path().join("local-ran")).unwrap();
    let v = env.json(&["fork", &run, "--round", "1", "--config", config, "--json"]);
    assert_eq!(v["answer"], "408", "{v}");
    assert!(env.dir.path().join("local-ran").exists());

    // The same command with arguments the store chose: refused, naming the key.
    edit_config(&env, "runs", "id", &run, choose_the_arguments(&env));
    let needles = [
        run.as_str(),
        "agent \"p1\" differs",
        "agents[0].args",
        "--config",
    ];
    let refused = exit_and_stderr(
        &env,
        &["fork", &run, "--round", "1", "--config", config],
        &[],
    );
    assert_refused("fork", refused, &needles);
    interrupt(&env, &run);
    let refused = exit_and_stderr(&env, &["resume", &run, "--config", config], &[]);
    assert_refused("resume", refused, &needles);
    assert!(!pwned(&env).exists(), "the stored arguments ran");
}

#[test]
fn fork_and_resume_refuse_a_stored_question_over_this_machines_bound() {
    let env = Env::new();
    let run = sim_run(&env);
    // 8 MB: 128 times the default bound, in the spec the debate asks from.
    common::sqlite_exec(
        &env.store(),
        &format!("UPDATE runs SET spec_json = json_set(spec_json, '$.question', printf('%.*c', 8388608, 'x')) WHERE id = '{run}';"),
    );
    let needles = [
        run.as_str(),
        "its question is 8388608 bytes",
        "debate.max_question_bytes = 65536",
    ];
    let refused = exit_and_stderr(&env, &["fork", &run, "--round", "1"], &[]);
    assert_refused("fork", refused, &needles);
    interrupt(&env, &run);
    let refused = exit_and_stderr(&env, &["resume", &run], &[]);
    assert_refused("resume", refused, &needles);
    // The run's listed question: the same bound.
    common::sqlite_exec(
        &env.store(),
        &format!("UPDATE runs SET question = printf('%.*c', 8388608, 'y') WHERE id = '{run}';"),
    );
    let refused = exit_and_stderr(&env, &["resume", &run], &[]);
    assert_refused("resume", refused, &needles);
}

#[test]
fn a_stored_endpoint_and_key_variable_get_no_connection_and_are_named() {
    let env = Env::new();
    let run = sim_run(&env);
    let ids = agent_ids(&env, "runs", "id", &run);
    // A listener that records every request it gets and answers 500.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    {
        let seen = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let request = common::read_http_request(&mut stream);
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&request).into_owned());
                let _ = stream.write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        });
    }
    let secret = "s3cret-value-of-a-token-moot-must-not-send";
    edit_config(&env, "runs", "id", &run, |config| {
        config["retry"]["max_retries"] = json!(0);
        for agent in config["agents"].as_array_mut().unwrap() {
            *agent = json!({
                "id": agent["id"].clone(),
                "backend": "openai",
                "base_url": format!("http://127.0.0.1:{port}/v1"),
                "model": "m",
                "api_key_env": "MOOT_TEST_STORED_SECRET",
            });
        }
    });
    let vars = [("MOOT_TEST_STORED_SECRET", secret)];
    let (code, err) = exit_and_stderr(&env, &["fork", &run, "--round", "1"], &vars);
    assert_eq!(
        seen.lock().unwrap().clone(),
        Vec::<String>::new(),
        "requests reached the stored endpoint"
    );
    assert!(!err.contains(secret), "{err}");
    assert_refused(
        "fork",
        (code, err),
        &[
            &run,
            &ids[0],
            "backend openai",
            "grants nothing",
            "--config",
        ],
    );
}

/// A program whose tests take 6 s: over this machine's 5 s limit, under a stored 40 s.
const SLOW: &str = "import time\ndef add(a, b):\n    time.sleep(3)\n    return a + b";

#[test]
fn regrade_clamps_stored_sandbox_limits_to_this_machines_and_refuses_invalid_values() {
    let env = Env::new();
    let reply = format!("Here it is:\n```python\n{SLOW}\n```\n");
    let cfg = env.write(
        "code.toml",
        &format!(
            "[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"code\"\n\n[[agents]]\nid = \"a0\"\nbackend = \"scripted\"\nresponses = [{reply:?}]\n"
        ),
    );
    let tests = env.write(
        "test_add.py",
        "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n",
    );
    let v = env.json(&[
        "ask",
        "Write add(a, b).",
        "--config",
        cfg.to_str().unwrap(),
        "--tests",
        tests.to_str().unwrap(),
        "--json",
    ]);
    let run = v["run_id"].as_str().unwrap().to_string();
    let tests_verdict = |v: &Value| {
        v["validations"][SLOW]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == "tests")
            .map(|c| c["verdict"].clone())
    };
    let before = tests_verdict(&v);
    assert_eq!(before, Some(json!("timed-out")), "{v}");

    let original = common::sqlite_text(
        &env.store(),
        &format!("SELECT config_json FROM runs WHERE id = '{run}'"),
    )
    .unwrap();
    let restore = |env: &Env| {
        let text = original.replace('\'', "''");
        common::sqlite_exec(
            &env.store(),
            &format!("UPDATE runs SET config_json = '{text}' WHERE id = '{run}';"),
        );
    };

    // Huge stored limits: clamped to this machine's, said on stderr, and the grade runs under
    // them (the program still times out, so no verdict changes).
    edit_config(&env, "runs", "id", &run, |c| {
        c["validation"]["timeout_ms"] = json!(40_000);
        c["validation"]["processes"] = json!(4096);
        c["validation"]["memory_mb"] = json!(1_048_576);
    });
    let out = env
        .moot()
        .args(["regrade", &run, "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let regraded: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(regraded["changed"], json!([]), "{regraded}");
    for key in [
        "validation.timeout_ms",
        "validation.processes",
        "validation.memory_mb",
    ] {
        assert!(
            err.lines().any(|l| l.contains(&run) && l.contains(key)),
            "no notice naming {run} and {key}: {err}"
        );
    }

    // Invalid stored values are refused, naming the run and the key.
    for (key, value, needle) in [
        ("timeout_ms", json!(0), "validation.timeout_ms"),
        ("rounds", json!(-1), "debate.rounds"),
        ("rounds", json!(100_000), "debate.rounds"),
    ] {
        restore(&env);
        let section = if key == "rounds" {
            "debate"
        } else {
            "validation"
        };
        edit_config(&env, "runs", "id", &run, |c| {
            c[section][key] = value.clone()
        });
        let refused = exit_and_stderr(&env, &["regrade", &run], &[]);
        assert_refused(
            &format!("{section}.{key} = {value}"),
            refused,
            &[&run, needle],
        );
    }

    // Stored tests over a `--tests` file's bound are not sent to the sandbox.
    restore(&env);
    common::sqlite_exec(
        &env.store(),
        &format!("UPDATE runs SET spec_json = json_set(spec_json, '$.tests.tests', printf('%.*c', 16777217, 'x')) WHERE id = '{run}';"),
    );
    let refused = exit_and_stderr(&env, &["regrade", &run], &[]);
    assert_refused(
        "16 MiB of tests",
        refused,
        &[&run, "its tests are 16777217 bytes"],
    );
}

#[test]
fn work_resume_and_bench_fork_refuse_a_command_a_stored_benchmark_grants() {
    let env = Env::new();
    let data = arith_dataset(&env, 2);
    // A plan for workers whose stored configuration grants a shell.
    env.stdout(&[
        "bench",
        "--sim",
        "--dataset",
        &data,
        "--protocol",
        "som",
        "--run",
        "plan",
        "--detach",
    ]);
    let ids = agent_ids(&env, "benches", "name", "plan");
    edit_config(&env, "benches", "name", "plan", grant_a_shell(&env));
    let refused = exit_and_stderr(&env, &["work", "plan", "--worker-id", "w"], &[]);
    assert_refused(
        "work",
        refused,
        &["benchmark plan", &ids[0], "backend cli", "grants nothing"],
    );
    let refused = exit_and_stderr(&env, &["resume", "plan"], &[]);
    assert_refused(
        "resume",
        refused,
        &["benchmark plan", &ids[0], "grants nothing"],
    );
    assert!(!pwned(&env).exists(), "the stored command ran");

    // A finished benchmark whose debate's stored configuration grants a shell.
    env.stdout(&[
        "bench",
        "--sim",
        "--dataset",
        &data,
        "--protocol",
        "som",
        "--limit",
        "1",
        "--run",
        "base",
    ]);
    let run = common::sqlite_text(
        &env.store(),
        "SELECT run_id FROM bench_items WHERE bench = 'base'",
    )
    .unwrap();
    edit_config(&env, "runs", "id", &run, grant_a_shell(&env));
    let refused = exit_and_stderr(
        &env,
        &["bench", "--fork-of", "base", "--round", "1", "--run", "f"],
        &[],
    );
    assert_refused(
        "bench --fork-of",
        refused,
        &[&run, &ids[0], "grants nothing"],
    );
    assert!(!pwned(&env).exists(), "the stored command ran");
}
