//! Ctrl-C (SIGINT) or SIGTERM to moot ends its agents too: every agent CLI's process group,
//! grandchildren included, is killed before moot goes. Real agent CLIs would otherwise keep
//! running under init, spending on the user's account.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{script, wait_for, Env};

fn pid_in(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}

fn alive(pid: u32) -> bool {
    // A zombie has exited; only a process still running counts.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// Two cli agents that each leave their pid and a grandchild's pid in `dir`, then wait 30 s.
fn sleepy_team(env: &Env) -> (String, Vec<PathBuf>) {
    let d = env.dir.path().display().to_string();
    let mut cfg = String::from(
        "[debate]\nprotocol = \"cot-sc\"\nanswer = \"numeric\"\nsoft_timeout_ms = 120000\nhard_timeout_ms = 120000\n\n",
    );
    let mut allowed = Vec::new();
    let mut pid_files = Vec::new();
    let mut agents = String::new();
    for id in ["a", "b"] {
        let agent = script(
            env,
            &format!("{id}.sh"),
            &format!(
                "#!/bin/sh\nsleep 30 &\necho $! > {d}/{id}.child.pid\necho $$ > {d}/{id}.pid\nwait\n"
            ),
        );
        allowed.push(format!("\"{}\"", agent.display()));
        agents.push_str(&format!(
            "[[agents]]\nid = \"{id}\"\nbackend = \"cli\"\ncommand = \"{}\"\n\n",
            agent.display()
        ));
        pid_files.push(env.dir.path().join(format!("{id}.pid")));
        pid_files.push(env.dir.path().join(format!("{id}.child.pid")));
    }
    cfg.push_str(&format!(
        "[security]\ncli_allowed_commands = [{}]\n\n{agents}",
        allowed.join(", ")
    ));
    (
        env.write("sleepy.toml", &cfg).display().to_string(),
        pid_files,
    )
}

fn start(env: &Env, args: &[&str]) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("moot"))
        .env("MOOT_STORE", env.store())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("moot starts")
}

/// Starts `moot ARGS` with the sleepy team, waits until every agent runs, sends `signal`, and
/// checks that no agent process outlives moot.
fn signal_ends_the_agents(args: &[&str], signal: &str) {
    let env = Env::new();
    let (cfg, pid_files) = sleepy_team(&env);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--config", &cfg]);
    let mut moot = start(&env, &all);
    for f in &pid_files {
        wait_for(f, Duration::from_secs(60));
    }
    // The pid is written before the agent waits; both processes are running now.
    let pids: Vec<u32> = pid_files.iter().map(|f| pid_in(f)).collect();
    assert!(pids.iter().all(|&p| alive(p)), "{pids:?}");
    let sent = Command::new("kill")
        .args([signal, &moot.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = moot.wait().unwrap();
    assert!(
        !status.success(),
        "moot {args:?} after {signal}: {status:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
    assert!(
        left.is_empty(),
        "moot {args:?} after {signal}: agent processes still running: {left:?}"
    );
}

#[test]
fn ctrl_c_to_ask_ends_its_agents() {
    signal_ends_the_agents(&["ask", "What is 17 * 24?"], "-INT");
}

#[test]
fn sigterm_to_ask_ends_its_agents() {
    signal_ends_the_agents(&["ask", "What is 17 * 24?"], "-TERM");
}

#[test]
fn signals_to_bench_end_its_agents() {
    let env = Env::new();
    let dataset = common::arith_dataset(&env, 2);
    for signal in ["-INT", "-TERM"] {
        signal_ends_the_agents(
            &[
                "bench",
                "--dataset",
                &dataset,
                "--protocol",
                "cot-sc",
                "--run",
                &format!("b{signal}"),
            ],
            signal,
        );
    }
}
