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
