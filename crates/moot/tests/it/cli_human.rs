//! A person as an agent on the terminal (`backend = "human"` under `moot ask`): the question is
//! shown on stderr, the answer typed on stdin, stored like any call; abstaining and running out
//! of time leave a call without a response, and the debate goes on.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common;

use common::Env;

/// Two scripted debaters and a judge a person answers for.
fn config(env: &Env, answer_within: &str) -> String {
    let path = env.write(
        "human.toml",
        &format!(
            "[debate]\nprotocol = \"judge\"\nrounds = 1\n\n\
             [[agents]]\nid = \"d1\"\nbackend = \"scripted\"\nresponses = [\"It is 408.\\nFinal answer: 408\"]\n\n\
             [[agents]]\nid = \"d2\"\nbackend = \"scripted\"\nresponses = [\"It is 418.\\nFinal answer: 418\"]\n\n\
             [[agents]]\nid = \"person\"\nbackend = \"human\"\nrole = \"judge\"\nanswer_within = \"{answer_within}\"\n"
        ),
    );
    path.display().to_string()
}

/// `moot ask … --json` with `typed` on stdin (kept open after it when `close` is false), its
/// stdout as JSON and its stderr.
fn ask(env: &Env, config: &str, typed: &str, close: bool) -> (Value, String) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("moot"))
        .args([
            "ask",
            "What is 17 * 24?",
            "--config",
            config,
            "--answer",
            "numeric",
            "--json",
        ])
        .env("MOOT_STORE", env.store())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("moot runs");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(typed.as_bytes()).expect("typed");
    let open = if close {
        drop(stdin);
        None
    } else {
        Some(stdin)
    };
    let out = child.wait_with_output().expect("moot ends");
    drop(open);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}")),
        stderr,
    )
}

fn judge_call(env: &Env, run: &Value) -> Value {
    let shown = env.json(&["show", run["run_id"].as_str().unwrap(), "--format", "json"]);
    shown["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["agent"] == 2 && c["skipped"] == false)
        .cloned()
        .expect("the judge's call")
}

#[test]
fn a_person_judges_on_the_terminal_and_their_answer_is_stored_like_any_call() {
    let env = Env::new();
    let config = config(&env, "2m");
    let (run, stderr) = ask(
        &env,
        &config,
        "Agent 1 multiplied correctly.\nFinal answer: 408\n.\n",
        true,
    );
    assert_eq!(run["answer"], "408", "{run}");
    assert_eq!(run["rule"], "verdict");
    // The person saw the debate and how to answer.
    assert!(
        stderr.contains("moot asks you, as agent person"),
        "{stderr}"
    );
    assert!(stderr.contains("It is 418."), "{stderr}");
    assert!(stderr.contains("then a line with only \".\""), "{stderr}");
    assert!(stderr.contains("You have 120 s"), "{stderr}");
    let call = judge_call(&env, &run);
    assert_eq!(
        call["response_text"],
        "Agent 1 multiplied correctly.\nFinal answer: 408"
    );
    assert_eq!(call["answer"], "408");
    assert!(
        call["backend"]
            .as_str()
            .unwrap_or_default()
            .contains("human"),
        "{call}"
    );
}

/// The error of the judge's call, which must have no response.
fn unanswered(env: &Env, run: &Value) -> String {
    let call = judge_call(env, run);
    assert!(call["response_text"].is_null(), "{call}");
    call["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_person_who_abstains_leaves_the_verdict_to_the_debaters_vote() {
    let env = Env::new();
    let config = config(&env, "2m");
    let (run, _) = ask(&env, &config, "abstain\n", true);
    let error = unanswered(&env, &run);
    assert!(error.contains("the person abstained"), "{error}");
    // No verdict: the debaters' vote decides (a tie between 408 and 418, broken by agent order).
    assert_eq!(run["answer"], "408", "{run}");
}

#[test]
fn a_person_who_does_not_answer_in_time_is_a_call_without_a_response() {
    let env = Env::new();
    let config = config(&env, "1s");
    // Stdin stays open and nothing is typed.
    let (run, _) = ask(&env, &config, "", false);
    let error = unanswered(&env, &run);
    assert!(error.contains("did not answer within 1 s"), "{error}");
}

#[test]
fn a_benchmark_refuses_an_agent_a_person_answers_for_by_name() {
    let env = Env::new();
    let config = config(&env, "2m");
    let dataset = common::arith_dataset(&env, 1);
    let err = env.refused(&[
        "bench",
        "--dataset",
        &dataset,
        "--protocol",
        "judge",
        "--config",
        &config,
    ]);
    assert!(
        err.contains("agent \"person\" is answered by a person"),
        "{err}"
    );
}
