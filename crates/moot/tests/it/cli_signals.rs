//! A `cli` agent's processes end with its call, and with moot: Ctrl-C (SIGINT) or SIGTERM to moot
//! ends every agent and everything it started (setsid descendants included) before moot goes,
//! and an agent that answered and left something running is read at once, its leftovers killed.
//! Real agent CLIs would otherwise keep running under init, spending on the user's account.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{script, survivors_after, wait_for_pid, Env, PID_NAMESPACE};
use moot_proc::is_running as alive;

/// Two cli agents that each leave their pid, a grandchild's pid and the pid of a sleeper in a
/// session of its own (setsid, out of reach of the agent's process group) in `dir`, then wait.
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
                "#!/bin/sh\nsleep 30 &\necho \"$! {PID_NAMESPACE}\" > {d}/{id}.child.pid\nsetsid sleep 1000 &\necho \"$! {PID_NAMESPACE}\" > {d}/{id}.setsid.pid\necho \"$$ {PID_NAMESPACE}\" > {d}/{id}.pid\nwait\n"
            ),
        );
        allowed.push(format!("\"{}\"", agent.display()));
        agents.push_str(&format!(
            "[[agents]]\nid = \"{id}\"\nbackend = \"cli\"\ncommand = \"{}\"\n\n",
            agent.display()
        ));
        pid_files.push(env.dir.path().join(format!("{id}.pid")));
        pid_files.push(env.dir.path().join(format!("{id}.child.pid")));
        pid_files.push(env.dir.path().join(format!("{id}.setsid.pid")));
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
        .stderr(Stdio::piped())
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
    // The pids are written before the agent waits; all its processes are running now.
    let pids: Vec<u32> = pid_files
        .iter()
        .map(|f| wait_for_pid(f, Duration::from_secs(60)))
        .collect();
    assert!(pids.iter().all(|&p| alive(p)), "{pids:?}");
    let sent = Command::new("kill")
        .args([signal, &moot.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut moot.stderr.take().unwrap(), &mut stderr).unwrap();
    let status = moot.wait().unwrap();
    assert!(
        !status.success(),
        "moot {args:?} after {signal}: {status:?}"
    );
    // Issue 58 item 4: an interrupted command says how to go on, with the --config given (a
    // SIGKILL leaves moot no chance to).
    if signal != "-KILL" {
        let said = stderr
            .lines()
            .find_map(|l| l.strip_prefix("moot: interrupted; to go on: "))
            .unwrap_or_else(|| panic!("moot {args:?} after {signal} said: {stderr}"));
        assert!(
            said.starts_with("moot resume ") && said.ends_with(&format!(" --config {cfg}")),
            "{said}"
        );
    }
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
fn sigkill_to_ask_ends_its_agents_too() {
    // moot gets no chance to act: what it holds closing is all that can end the agents.
    signal_ends_the_agents(&["ask", "What is 17 * 24?"], "-KILL");
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

/// A config of two cli agents running `agent` (which answers 7), with a 60 s deadline.
fn team_of(agent: &Path, protocol: &str) -> String {
    let a = agent.display();
    format!(
        "[debate]\nprotocol = \"{protocol}\"\nanswer = \"numeric\"\nsoft_timeout_ms = 60000\nhard_timeout_ms = 60000\n\n\
         [security]\ncli_allowed_commands = [\"{a}\"]\n\n\
         [[agents]]\nid = \"a\"\nbackend = \"cli\"\ncommand = \"{a}\"\n\n\
         [[agents]]\nid = \"b\"\nbackend = \"cli\"\ncommand = \"{a}\"\n"
    )
}

/// The hostile tester's agent: it answers 7, starts a sleeper (`sleep MARKER`) in a session of
/// its own that holds its stdout, notes the call in a `sleeper.*` file, and exits.
fn answer_and_leave_a_sleeper(env: &Env, marker: &str) -> PathBuf {
    let d = env.dir.path().display();
    script(
        env,
        "leaver.sh",
        &format!(
            "#!/bin/sh\ncat > /dev/null\necho 'SOLUTION:'\necho 'Final answer: 7'\nsetsid sleep {marker} &\nmktemp {d}/sleeper.XXXXXX > /dev/null\n"
        ),
    )
}

/// How many calls left a sleeper (the `sleeper.*` files).
fn sleepers(env: &Env) -> usize {
    std::fs::read_dir(env.dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("sleeper."))
        })
        .count()
}

/// Runs `moot ARGS` to its end, failing after `within`; its output and how long it took.
fn run_within(env: &Env, args: &[&str], within: Duration) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let mut moot = Command::new(assert_cmd::cargo::cargo_bin("moot"))
        .env("MOOT_STORE", env.store())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("moot starts");
    // Read both pipes on threads, so that a full pipe cannot stall moot.
    let mut out = moot.stdout.take().unwrap();
    let mut err = moot.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).map(|_| v)
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).map(|_| v)
    });
    let status = loop {
        if let Some(status) = moot.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > within {
            let _ = moot.kill();
            let _ = moot.wait();
            panic!("moot {args:?} still running after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let output = std::process::Output {
        status,
        stdout: out.join().unwrap().unwrap(),
        stderr: err.join().unwrap().unwrap(),
    };
    (output, took)
}

#[test]
fn ask_reads_an_answer_at_once_though_a_setsid_sleeper_holds_stdout_and_leaves_none() {
    let env = Env::new();
    let marker = common::sleeper_marker(1);
    let agent = answer_and_leave_a_sleeper(&env, &marker);
    let cfg = env.write("leaver.toml", &team_of(&agent, "cot-sc"));
    let (out, took) = run_within(
        &env,
        &[
            "ask",
            "What is 1 * 7?",
            "--json",
            "--config",
            cfg.to_str().unwrap(),
        ],
        Duration::from_secs(50),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["answer"], "7", "{v}");
    assert!(took < Duration::from_secs(20), "moot ask took {took:?}");
    assert_eq!(sleepers(&env), 2, "one sleeper per call");
    assert_eq!(
        survivors_after(&marker, Duration::from_secs(10)),
        Vec::<u32>::new()
    );
}

#[test]
fn bench_reads_answers_at_once_though_setsid_sleepers_hold_stdout_and_leaves_none() {
    let env = Env::new();
    let marker = common::sleeper_marker(2);
    let agent = answer_and_leave_a_sleeper(&env, &marker);
    let cfg = env.write("leaver.toml", &team_of(&agent, "cot-sc"));
    let dataset = common::arith_dataset(&env, 1);
    let (out, took) = run_within(
        &env,
        &[
            "bench",
            "--dataset",
            &dataset,
            "--protocol",
            "cot-sc",
            "--config",
            cfg.to_str().unwrap(),
            "--run",
            "leaver",
            "--json",
        ],
        Duration::from_secs(50),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["protocols"][0]["accuracy"], 1.0, "{v}");
    assert!(took < Duration::from_secs(20), "moot bench took {took:?}");
    assert_eq!(sleepers(&env), 2, "one sleeper per call");
    assert_eq!(
        survivors_after(&marker, Duration::from_secs(10)),
        Vec::<u32>::new()
    );
}
