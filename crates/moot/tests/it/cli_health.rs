//! `moot health`: one line per agent, exit 1 when any agent cannot answer.

use crate::common;

use std::path::Path;

use common::Env;

/// A shell-script agent running `body`, by its path.
fn agent(env: &Env, name: &str, body: &str) -> String {
    common::script(env, name, &format!("#!/bin/sh\n{body}\n"))
        .display()
        .to_string()
}

fn health(env: &Env, config: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let out = env
        .moot()
        .arg("health")
        .arg("--config")
        .arg(config)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn each_agent_gets_a_line_and_any_failure_fails_the_command() {
    let env = Env::new();
    let d = env.dir.path();
    let good = agent(&env, "good.sh", "cat > /dev/null; echo ready");
    let bad = agent(&env, "bad.sh", "echo 'weights not found' >&2; exit 3");
    let slow = agent(&env, "slow.sh", "exec sleep 30");
    let gone = d.join("gone.sh").display().to_string();
    let config = d.join("h.toml");
    std::fs::write(
        &config,
        format!(
            r#"[security]
cli_allowed_commands = ["{good}", "{bad}", "{slow}", "{gone}"]
[[agents]]
id = "good"
backend = "cli"
command = "{good}"
[[agents]]
id = "bad"
backend = "cli"
command = "{bad}"
[[agents]]
id = "slow"
backend = "cli"
command = "{slow}"
[[agents]]
id = "gone"
backend = "cli"
command = "{gone}"
[[agents]]
id = "sim"
backend = "sim"
"#
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (code, out, err) = health(&env, &config, &["--timeout-ms", "1000"]);
    assert!(
        started.elapsed().as_secs() < 20,
        "the slow agent was not cut off"
    );
    assert_eq!(code, Some(1), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert_eq!(
        lines[5],
        "environment: clear: cli agents get PATH, HOME, LANG only"
    );
    assert!(
        lines[0].starts_with("good: ok (cli: answered in") && lines[0].ends_with("\"ready\")"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("bad: FAILED") && lines[1].contains("weights not found"),
        "{out}"
    );
    assert_eq!(lines[2], "slow: FAILED (cli: no answer within 1.0 s)");
    assert!(
        lines[3].starts_with("gone: FAILED") && lines[3].contains("does not exist"),
        "{out}"
    );
    assert!(lines[4].starts_with("sim: ok"), "{out}");
    assert!(
        err.contains("3 of 5 agents not healthy: bad, slow, gone"),
        "{err}"
    );
}

#[test]
fn a_freemad_configurations_agents_are_probed_with_the_arguments_freemad_gives_them() {
    let env = Env::new();
    let d = env.dir.path();
    let agent = agent(
        &env,
        "agent.sh",
        "cat > /dev/null; echo \"SOLUTION: ok $*\"",
    );
    let config = d.join("fm.yaml");
    std::fs::write(
        &config,
        format!(
            "agents:\n  - {{id: a, type: claude_code, cli_command: \"{agent} --model x\", cli_mode_arg: true}}\n  - {{id: b, type: openai_codex, cli_command: \"{agent}\"}}\nsecurity:\n  cli_allowed_commands: [\"{agent}\"]\n"
        ),
    )
    .unwrap();
    let (code, out, err) = health(&env, &config, &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("a: ok (cli: answered in") && out.contains("SOLUTION: ok --model x generate"),
        "{out}"
    );
    assert!(out.contains("b: ok (cli: answered in"), "{out}");
}

/// Issue 58 item 2: agents behind one unreachable server fail alike, and the retried call's
/// error is the same each time: each distinct error is said once.
#[test]
fn health_says_each_distinct_error_once() {
    let env = Env::new();
    let (_held, port) = crate::common::refusing_port();
    let config = env.dir.path().join("down.toml");
    let agent = |id: &str| {
        format!(
            "[[agents]]\nid = \"{id}\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
        )
    };
    std::fs::write(
        &config,
        format!(
            "[retry]\nmax_retries = 2\nmin_delay_ms = 1\nmax_delay_ms = 2\n{}{}[[agents]]\nid = \"up\"\nbackend = \"sim\"\n",
            agent("first"),
            agent("second")
        ),
    )
    .unwrap();
    let (code, out, err) = health(&env, &config, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("first: FAILED"), "{out}");
    assert_eq!(
        out.matches("refused").count(),
        1,
        "the refusal is said once, for its three tries and both agents: {out}"
    );
    assert!(lines[0].contains("3 tries"), "{out}");
    assert_eq!(
        lines[1], "second: FAILED (openai: the same error as first)",
        "{out}"
    );
    assert!(lines[2].starts_with("up: ok"), "{out}");
}

/// What an agent program writes and what a configuration names its agents are data: `moot
/// health` prints them as text, never as terminal controls.
#[test]
fn health_never_passes_an_agents_terminal_controls_through() {
    let env = Env::new();
    let hostile = agent(
        &env,
        "hostile.sh",
        "printf '\\033]0;PWNED\\007\\033[31mRED\\033[0m' >&2; exit 3",
    );
    let config = env.dir.path().join("h.toml");
    std::fs::write(
        &config,
        format!(
            "[security]\ncli_allowed_commands = [\"{hostile}\"]\n[[agents]]\nid = \"c1\\u001b[31mred\"\nbackend = \"cli\"\ncommand = \"{hostile}\"\n"
        ),
    )
    .unwrap();
    let (code, out, _) = health(&env, &config, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(out.contains("PWNED"), "the text is shown, escaped: {out:?}");
}
