//! A reader that stops reading (`moot show RUN | head -c1`) ends moot quietly, as it ends any
//! Unix tool: no panic, no error message, exit 0. moot handles the failed write (EPIPE) on its
//! standard output; it does not restore SIGPIPE for the whole process, which would kill it when
//! an agent CLI closes its stdin.

use crate::common;

use std::process::{Output, Stdio};

use common::Env;

/// Runs `moot ARGS` with a standard output whose reader is already gone: every write to it
/// fails with EPIPE, however little moot prints.
fn into_a_closed_pipe(env: &Env, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    std::process::Command::new(assert_cmd::cargo::cargo_bin("moot"))
        .env("MOOT_STORE", env.store())
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("moot runs")
}

fn quiet(env: &Env, args: &[&str]) {
    let out = into_a_closed_pipe(env, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "moot {args:?}: {stderr}"
    );
    assert_eq!(out.status.code(), Some(0), "moot {args:?}: {stderr}");
}

#[test]
fn a_reader_that_goes_away_ends_moot_quietly() {
    let env = Env::new();
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--json",
    ]);
    let run = v["run_id"].as_str().unwrap().to_string();
    quiet(&env, &["show", &run, "--format", "json"]);
    quiet(&env, &["show", &run, "--format", "freemad"]);
    quiet(&env, &["show", &run]);
    quiet(&env, &["decide", "--run", &run, "--rule", "all"]);
    quiet(&env, &["config", "example"]);
    let spec = env.write(
        "tiny.toml",
        "title = \"Tiny\"\ndebates = 5\nrounds = 1\nagents = 3\n\n[agent]\naccuracy = 0.5\n\n[[arms]]\nlabel = \"som\"\nprotocol = \"som\"\n\n[[arms]]\nlabel = \"cot\"\nprotocol = \"cot-sc\"\n\n[x]\nparam = \"accuracy\"\nvalues = [0.4, 0.6]\n",
    );
    let out = env.dir.path().join("out");
    quiet(
        &env,
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
}
