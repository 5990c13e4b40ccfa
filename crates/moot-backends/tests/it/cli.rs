//! The agent-CLI backend against real child processes (small `sh` scripts in a tempdir).
//!
//! Scripts are run as `sh SCRIPT …` rather than executed directly: a freshly written executable
//! can fail to exec with ETXTBSY while another test thread forks.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use moot_backends::cli::{parse_sections, CliConfig, CliModel};
use moot_backends::{
    BackendError, CallMode, ChatMessage, Completion, CompletionRequest, ErrorClass, LanguageModel,
};
use moot_proc::{is_running as alive, processes_with_argument};

struct Scripts {
    dir: tempfile::TempDir,
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, body: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, body).expect("write script");
        path.to_string_lossy().to_string()
    }

    /// A model running `sh SCRIPT extra_args… MODE`.
    fn model(&self, name: &str, body: &str, extra_args: &[&str]) -> CliModel {
        CliModel::new(self.config(name, body, extra_args)).expect("sh is allowed")
    }

    fn config(&self, name: &str, body: &str, extra_args: &[&str]) -> CliConfig {
        let script = self.write(name, body);
        let mut args = vec![script];
        args.extend(extra_args.iter().map(|a| a.to_string()));
        CliConfig {
            allowed_commands: vec!["sh".into()],
            ..CliConfig::new("sh", args)
        }
    }
}

fn request(mode: CallMode, messages: Vec<ChatMessage>) -> CompletionRequest {
    CompletionRequest {
        mode,
        ..CompletionRequest::new(messages)
    }
}

fn ask(text: &str) -> CompletionRequest {
    request(CallMode::Generate, vec![ChatMessage::user(text)])
}

async fn run(model: &CliModel, req: CompletionRequest) -> Result<Completion, BackendError> {
    tokio::time::timeout(Duration::from_secs(30), model.complete(req))
        .await
        .expect("the agent call should not hang")
}

#[tokio::test]
async fn mode_argument_and_prompt_arrive() {
    let s = Scripts::new();
    let m = s.model(
        "echo.sh",
        "printf 'mode=%s args=%s\\n' \"$2\" \"$1\"\ncat\n",
        &["first"],
    );
    let req = request(
        CallMode::Critique,
        vec![
            ChatMessage::system("Disagree if wrong."),
            ChatMessage::user("Is 7 prime?"),
        ],
    );
    let c = run(&m, req).await.unwrap();
    assert_eq!(
        c.text,
        "mode=critique args=first\n### System\nDisagree if wrong.\n\n### User\nIs 7 prime?"
    );
    // Approximate usage: whitespace-separated words.
    assert_eq!(c.usage.input_tokens, 10);
    assert_eq!(c.usage.output_tokens, 12);
    assert_eq!(c.usage.processed_input_tokens, None);
    assert!(c.logprobs.is_none());

    let c = run(&m, ask("hello")).await.unwrap();
    assert!(
        c.text.starts_with("mode=generate args=first\n"),
        "{}",
        c.text
    );
}

#[tokio::test]
async fn large_prompts_do_not_deadlock() {
    // 300 KB in and out: more than a pipe buffer both ways, written and read concurrently.
    let s = Scripts::new();
    let m = s.model("cat.sh", "cat\n", &[]);
    let big = "word ".repeat(60_000);
    let c = run(&m, ask(&big)).await.unwrap();
    assert_eq!(c.text, format!("### User\n{}", big.trim_end()));
    assert_eq!(c.usage.output_tokens, 60_002);
}

#[tokio::test]
async fn solution_and_reasoning_sections() {
    let s = Scripts::new();
    let m = s.model(
        "agent.sh",
        "cat > /dev/null\nprintf 'SOLUTION:\\n18\\n\\nREASONING:\\n16 - 3 - 4 = 9 eggs, 9 * $2 = $18\\n'\n",
        &[],
    );
    let c = run(&m, ask("Janet's ducks…")).await.unwrap();
    assert_eq!(
        c.text,
        "SOLUTION:\n18\n\nREASONING:\n16 - 3 - 4 = 9 eggs, 9 * $2 = $18"
    );
    let sections = parse_sections(&c.text);
    assert_eq!(sections.solution.as_deref(), Some("18"));
    assert_eq!(
        sections.reasoning.as_deref(),
        Some("16 - 3 - 4 = 9 eggs, 9 * $2 = $18")
    );

    // No markers is fine: the whole output is the answer.
    let m = s.model("plain.sh", "echo '  The answer is 4.  '\n", &[]);
    let c = run(&m, ask("2+2")).await.unwrap();
    assert_eq!(c.text, "The answer is 4.");
    assert_eq!(parse_sections(&c.text).solution, None);
}

#[tokio::test]
async fn a_command_not_allowed_is_refused_without_running() {
    let s = Scripts::new();
    let marker = s.path("ran");
    let script = s.write(
        "evil.sh",
        &format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    );
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for allowed in [vec![], vec!["sh".to_string()], vec!["evil.sh".to_string()]] {
        let config = CliConfig {
            allowed_commands: allowed,
            ..CliConfig::new(script.clone(), vec![])
        };
        let err = CliModel::new(config).unwrap_err();
        assert!(
            matches!(&err, BackendError::Config(m) if m.contains("not in the allowed commands")),
            "{err}"
        );
    }
    // `sh` may not be smuggled in as a shell command string either.
    let config = CliConfig {
        allowed_commands: vec!["sh".into()],
        ..CliConfig::new(format!("sh -c 'touch {}'", marker.display()), vec![])
    };
    assert!(CliModel::new(config).is_err());
    // A refused configuration never becomes a model, so there is no call to wait for: nothing
    // was started, now or later.
    assert!(!marker.exists(), "a refused command must never run");
}

#[tokio::test]
async fn arguments_are_not_interpreted_by_a_shell() {
    let s = Scripts::new();
    let marker = s.path("pwned");
    let hostile = format!(
        "$(touch {}); `touch {}`",
        marker.display(),
        marker.display()
    );
    let m = s.model("args.sh", "printf '%s' \"$1\"\n", &[&hostile]);
    let c = run(&m, ask("x")).await.unwrap();
    assert_eq!(c.text, hostile);
    assert!(!marker.exists());
}

#[tokio::test]
async fn output_is_capped_and_the_process_killed() {
    let s = Scripts::new();
    for (name, body) in [
        ("stdout.sh", "exec yes 'flood'\n"),
        ("stderr.sh", "exec yes 'flood' >&2\n"),
    ] {
        let config = CliConfig {
            max_output_bytes: 1000,
            ..s.config(name, body, &[])
        };
        let m = CliModel::new(config).unwrap();
        let started = Instant::now();
        let err = run(&m, ask("go")).await.unwrap_err();
        assert!(
            matches!(&err, BackendError::Policy(m) if m.contains("output exceeds 1000 bytes")),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }
    // Exactly at the cap is fine.
    let config = CliConfig {
        max_output_bytes: 10,
        ..s.config("ten.sh", "printf '0123456789'\n", &[])
    };
    let c = run(&CliModel::new(config).unwrap(), ask("go"))
        .await
        .unwrap();
    assert_eq!(c.text, "0123456789");
}

#[tokio::test]
async fn a_failing_command_reports_status_and_stderr_tail() {
    let s = Scripts::new();
    let m = s.model(
        "fail.sh",
        "echo 'partial answer'\n\
         i=0; while [ $i -lt 100 ]; do printf 'noise-noise-' >&2; i=$((i+1)); done\n\
         echo 'model not found' >&2\n\
         exit 3\n",
        &[],
    );
    let err = run(&m, ask("x")).await.unwrap_err();
    let BackendError::AgentFailed(message) = &err else {
        panic!("expected an agent failure, got {err:?}");
    };
    assert_eq!(err.class(), ErrorClass::Permanent, "not retried");
    assert!(message.contains("exit status: 3"), "{message}");
    assert!(message.ends_with("model not found"), "{message}");
    let stderr_part = message.split("stderr: ").nth(1).unwrap();
    assert!(stderr_part.len() <= 500, "{}", stderr_part.len());

    // A command that cannot be started is a configuration error: permanent too.
    let config = CliConfig {
        allowed_commands: vec!["/nonexistent/agent".into()],
        ..CliConfig::new("/nonexistent/agent", vec![])
    };
    let m = CliModel::new(config).unwrap();
    let err = run(&m, ask("x")).await.unwrap_err();
    assert!(
        matches!(&err, BackendError::Config(m) if m.contains("cannot start")),
        "{err}"
    );
    assert_eq!(err.class(), ErrorClass::Permanent);
}

fn env_of(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn the_environment_is_cleared_or_inherited_as_configured() {
    let s = Scripts::new();
    // `env` runs as a separate program, so this is what the agent process received (sh itself
    // may add PWD, SHLVL, _ and OLDPWD to what it exports).
    let body = "exec env\n";
    let m = s.model("env.sh", body, &[]);
    let c = run(&m, ask("x")).await.unwrap();
    let shell_added = ["PWD", "OLDPWD", "SHLVL", "_"];
    for (key, value) in env_of(&c.text) {
        assert!(
            ["PATH", "HOME", "LANG"].contains(&key.as_str()) || shell_added.contains(&key.as_str()),
            "unexpected variable {key} in the agent's environment"
        );
        if key == "PATH" {
            assert_eq!(Some(value), std::env::var("PATH").ok());
        }
    }
    assert!(env_of(&c.text).iter().any(|(k, _)| k == "PATH"));

    // A variable of ours that is not listed stays out; listed, it is passed through. Cargo sets
    // CARGO_MANIFEST_DIR for test processes.
    let name = "CARGO_MANIFEST_DIR";
    let ours = std::env::var(name)
        .expect("cargo sets CARGO_MANIFEST_DIR for test processes (run this test with cargo test)");
    assert!(!env_of(&c.text).iter().any(|(k, _)| k == name));
    let config = CliConfig {
        env_allow: vec![name.to_string()],
        ..s.config("env2.sh", body, &[])
    };
    let c = run(&CliModel::new(config).unwrap(), ask("x"))
        .await
        .unwrap();
    assert!(env_of(&c.text).contains(&(name.to_string(), ours.clone())));

    // Inheriting (freemad's way), the agent gets every variable of ours, listed or not.
    let config = CliConfig {
        env: moot_backends::cli::CliEnv::Inherit,
        ..s.config("env3.sh", body, &[])
    };
    let c = run(&CliModel::new(config).unwrap(), ask("x"))
        .await
        .unwrap();
    let got = env_of(&c.text);
    assert!(got.contains(&(name.to_string(), ours)));
    for (key, value) in std::env::vars_os() {
        let (Some(key), Some(value)) = (key.to_str(), value.to_str()) else {
            continue;
        };
        let (key, value) = (key.to_string(), value.to_string());
        // The shell may rewrite its own bookkeeping variables.
        if !shell_added.contains(&key.as_str()) && !value.contains('\n') {
            assert!(
                got.contains(&(key.clone(), value)),
                "{key} was not inherited"
            );
        }
    }
}

/// The live process a script's pid record names (`echo "$$ $(readlink /proc/self/ns/pid)"`:
/// an agent runs in a PID namespace of its own, where its pids are not ours), as seen from here.
fn read_pid(path: &Path) -> Option<u32> {
    moot_proc::pid_from_record(&std::fs::read_to_string(path).ok()?)
}

async fn wait_gone(pids: &[u32], within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let living: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if living.is_empty() || Instant::now() > deadline {
            return living;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn cancellation_kills_the_whole_process_group() {
    let s = Scripts::new();
    let dir = s.dir.path().to_string_lossy().to_string();
    let m = s.model(
        "hang.sh",
        "sleep 1000 &\n\
         echo \"$! $(readlink /proc/self/ns/pid)\" > \"$1/grandchild.pid.tmp\" && mv \"$1/grandchild.pid.tmp\" \"$1/grandchild.pid\"\n\
         echo \"$$ $(readlink /proc/self/ns/pid)\" > \"$1/leader.pid.tmp\" && mv \"$1/leader.pid.tmp\" \"$1/leader.pid\"\n\
         sleep 1000\n",
        &[&dir],
    );
    let leader_file = s.path("leader.pid");
    let grandchild_file = s.path("grandchild.pid");
    let started = Instant::now();
    // A 300 ms deadline; on a loaded machine the script may need longer to write its pids, so
    // the deadline counts from when both are there (bounded at 20 s).
    // The pids are read while the call runs (afterwards, their namespace is gone).
    let pids_written = async {
        loop {
            if let (Some(leader), Some(grandchild)) =
                (read_pid(&leader_file), read_pid(&grandchild_file))
            {
                tokio::time::sleep(Duration::from_millis(300)).await;
                return (leader, grandchild);
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the script never started"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let (leader, grandchild) = tokio::select! {
        result = m.complete(ask("never answered")) => panic!("the call returned: {result:?}"),
        pids = pids_written => pids,
    }; // the call's future is dropped here
    let living = wait_gone(&[leader, grandchild], Duration::from_secs(2)).await;
    assert!(
        living.is_empty(),
        "still running 2 s after cancellation: {living:?}"
    );
}

#[tokio::test]
async fn a_timeout_cancels_like_a_deadline() {
    let s = Scripts::new();
    let dir = s.dir.path().to_string_lossy().to_string();
    let m = s.model(
        "slow.sh",
        "sleep 1000 &\necho \"$! $(readlink /proc/self/ns/pid)\" > \"$1/bg.pid.tmp\" && mv \"$1/bg.pid.tmp\" \"$1/bg.pid\"\nsleep 1000\n",
        &[&dir],
    );
    let bg_file = s.path("bg.pid");
    let mut call = Box::pin(m.complete(ask("x")));
    // The script runs (its background job exists) before the timeout starts: on a loaded
    // machine it may need longer than the timeout to get there (bounded at 20 s).
    let started = Instant::now();
    let bg = loop {
        tokio::select! {
            result = &mut call => panic!("the call returned: {result:?}"),
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
        if let Some(pid) = read_pid(&bg_file) {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the script never started"
        );
    };
    let out = tokio::time::timeout(Duration::from_millis(300), call).await;
    assert!(
        out.is_err(),
        "the call should still be running at the deadline"
    );
    assert!(
        wait_gone(&[bg], Duration::from_secs(2)).await.is_empty(),
        "the background job outlived the timed-out call"
    );
}

#[tokio::test]
async fn leftovers_holding_the_output_are_killed_after_exit() {
    // The agent answers and exits, but a background job keeps stdout open: the call still
    // returns promptly with the answer, and the job is killed.
    let s = Scripts::new();
    let marker = sleeper_marker(40);
    let m = s.model(
        "leaky.sh",
        &format!("sleep {marker} &\necho 'SOLUTION: 5'\n"),
        &[],
    );
    let started = Instant::now();
    let c = run(&m, ask("x")).await.unwrap();
    assert_eq!(c.text, "SOLUTION: 5");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        wait_no_survivors(&marker, Duration::from_secs(2)).await,
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn an_agent_ignoring_sigterm_is_still_killed_at_the_deadline() {
    let s = Scripts::new();
    let dir = s.dir.path().to_string_lossy().to_string();
    let m = s.model(
        "stubborn.sh",
        "trap '' TERM\necho \"$$ $(readlink /proc/self/ns/pid)\" > \"$1/me.pid.tmp\" && mv \"$1/me.pid.tmp\" \"$1/me.pid\"\nwhile true; do sleep 1; done\n",
        &[&dir],
    );
    let pid_file = s.path("me.pid");
    let call = m.complete(ask("x"));
    let waited = tokio::time::timeout(Duration::from_secs(3), async {
        // The call is dropped once the script has written its pid, after setting its trap.
        tokio::select! {
            result = call => panic!("the call returned: {result:?}"),
            pid = async {
                loop {
                    if let Some(pid) = read_pid(&pid_file) {
                        return pid;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            } => pid,
        }
    })
    .await;
    let pid = waited.expect("the script never started");
    assert!(
        wait_gone(&[pid], Duration::from_secs(2)).await.is_empty(),
        "SIGKILL to the group ends a process that ignores SIGTERM"
    );
}

#[tokio::test]
async fn the_working_directory_and_the_input_cap_apply() {
    let s = Scripts::new();
    let work = tempfile::tempdir().unwrap();
    let mut config = s.config("pwd.sh", "cat > /dev/null\npwd\n", &[]);
    config.working_dir = Some(work.path().to_path_buf());
    let m = CliModel::new(config.clone()).unwrap();
    let out = run(&m, ask("where are you?")).await.unwrap();
    assert_eq!(
        std::fs::canonicalize(out.text.trim()).unwrap(),
        std::fs::canonicalize(work.path()).unwrap()
    );

    config.max_input_bytes = 100;
    let m = CliModel::new(config.clone()).unwrap();
    let err = run(&m, ask(&"x".repeat(500))).await.unwrap_err();
    assert!(
        matches!(&err, BackendError::Policy(msg) if msg.contains("input cap of 100")),
        "{err:?}"
    );

    config.working_dir = Some(s.path("no-such-dir"));
    assert!(CliModel::new(config).is_err());
}

/// A `sleep` argument no other process has: `1000.` and digits unique to this test process and
/// `n`, so that a survivor can be found by its command line alone.
fn sleeper_marker(n: u32) -> String {
    format!("1000.{}{n:03}", std::process::id())
}

/// Waits until no live process has `marker` as an argument, or `within` passes; the survivors.
async fn wait_no_survivors(marker: &str, within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let living = processes_with_argument(marker);
        if living.is_empty() || Instant::now() > deadline {
            return living;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `path` holds a pid, failing after 20 s (a loaded machine may start a script
/// slowly); the call racing it must not return first.
async fn pid_while_running<F>(call: &mut std::pin::Pin<Box<F>>, path: &Path) -> u32
where
    F: std::future::Future<Output = Result<Completion, BackendError>>,
{
    let started = Instant::now();
    loop {
        tokio::select! {
            result = call.as_mut() => panic!("the call returned: {result:?}"),
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
        if let Some(pid) = read_pid(path) {
            return pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the script never started"
        );
    }
}

#[tokio::test]
async fn an_answer_is_read_at_once_though_a_setsid_descendant_holds_stdout_and_it_dies() {
    // The hostile tester's agent: it answers, leaves a sleeper in a session of its own holding
    // its stdout, and exits. The answer comes at once, and the sleeper does not outlive the call.
    let s = Scripts::new();
    let marker = sleeper_marker(1);
    let m = s.model(
        "setsid.sh",
        &format!("echo 'The answer is 42.'\nsetsid sleep {marker} &\n"),
        &[],
    );
    let started = Instant::now();
    let c = tokio::time::timeout(Duration::from_secs(20), m.complete(ask("x")))
        .await
        .expect("the answer is read when the agent exits, not when its sleeper closes stdout")
        .unwrap();
    let took = started.elapsed();
    assert_eq!(c.text, "The answer is 42.");
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    assert_eq!(
        wait_no_survivors(&marker, Duration::from_secs(2)).await,
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn a_detached_setsid_daemon_dies_when_the_agent_answers_and_when_it_fails() {
    // Output detached: the call ends as soon as the agent exits; the daemon must end with it.
    let s = Scripts::new();
    for (n, (name, exit, ok)) in [("answers.sh", "", true), ("fails.sh", "exit 3\n", false)]
        .into_iter()
        .enumerate()
    {
        let marker = sleeper_marker(10 + n as u32);
        let m = s.model(
            name,
            &format!(
                "setsid sleep {marker} </dev/null >/dev/null 2>&1 &\n\
                 echo 'SOLUTION: 5'\n{exit}"
            ),
            &[],
        );
        let result = run(&m, ask("x")).await;
        assert_eq!(result.is_ok(), ok, "{name}: {result:?}");
        assert_eq!(
            wait_no_survivors(&marker, Duration::from_secs(2)).await,
            Vec::<u32>::new(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn cancellation_kills_setsid_descendants_and_their_orphans() {
    // A sleeper in a session of its own, and one whose setsid parent has exited (an orphan, as a
    // double-forked daemon is); the agent itself waits. Dropping the call ends all of them.
    let s = Scripts::new();
    let dir = s.dir.path().to_string_lossy().to_string();
    let marker = sleeper_marker(20);
    let m = s.model(
        "daemons.sh",
        &format!(
            "setsid sleep {marker} </dev/null >/dev/null 2>&1 &\n\
             echo \"$! $(readlink /proc/self/ns/pid)\" > \"$1/a.pid\"\n\
             setsid sh -c 'sleep {marker} </dev/null >/dev/null 2>&1 & echo \"$! $(readlink /proc/self/ns/pid)\" > \"$1/b.pid.tmp\"' sh \"$1\" &\n\
             wait $!\n\
             mv \"$1/b.pid.tmp\" \"$1/b.pid\"\n\
             sleep 1000\n"
        ),
        &[&dir],
    );
    let mut call = Box::pin(m.complete(ask("x")));
    let orphan = pid_while_running(&mut call, &s.path("b.pid")).await;
    let sleeper = read_pid(&s.path("a.pid")).expect("sleeper pid");
    assert!(alive(orphan) && alive(sleeper));
    drop(call);
    let living = wait_gone(&[sleeper, orphan], Duration::from_secs(2)).await;
    assert!(
        living.is_empty(),
        "still running after cancellation: {living:?}"
    );
    assert_eq!(
        wait_no_survivors(&marker, Duration::from_secs(2)).await,
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn an_agent_in_a_namespace_cannot_kill_the_process_it_runs_below() {
    if moot_proc::namespace_gap().is_some() {
        return; // the next test is this machine's
    }
    // Its parent is its namespace's pid 1, which no signal from inside reaches; the reaper
    // outside it has no pid there at all.
    let s = Scripts::new();
    let marker = sleeper_marker(31);
    let m = s.model(
        "regicide.sh",
        &format!("sleep {marker} &\nkill -9 $PPID\nkill -9 1\necho 'SOLUTION: 5'\n"),
        &[],
    );
    let c = run(&m, ask("x")).await.unwrap();
    assert_eq!(c.text, "SOLUTION: 5");
    assert_eq!(
        wait_no_survivors(&marker, Duration::from_secs(2)).await,
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn without_a_namespace_an_agent_that_kills_its_reaper_fails_at_once_for_good_and_its_process_group_dies(
) {
    if moot_proc::namespace_gap().is_none() {
        return; // the test above is this machine's
    }
    // The agent SIGKILLs the process it runs below (its parent, the reaper) and carries on,
    // holding its stdout. Nothing can then hold a process that leaves the group, but the call
    // must not wait for the agent, must not be retried (each try would do it again), and what
    // is left in the agent's process group must die.
    let s = Scripts::new();
    let dir = s.dir.path().to_string_lossy().to_string();
    let marker = sleeper_marker(30);
    let m = s.model(
        "regicide.sh",
        &format!(
            "sleep {marker} &\necho $! > \"$1/bg.pid\"\necho $$ > \"$1/me.pid\"\nkill -9 $PPID\necho 'SOLUTION: 5'\nwait\n"
        ),
        &[&dir],
    );
    let started = Instant::now();
    let err = run(&m, ask("x")).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.class(), ErrorClass::Permanent, "{err:?}");
    let pids: Vec<u32> = ["bg.pid", "me.pid"]
        .iter()
        .filter_map(|f| read_pid(&s.path(f)))
        .collect();
    assert_eq!(
        pids.len(),
        2,
        "both pids are written before the reaper is killed"
    );
    assert_eq!(
        wait_gone(&pids, Duration::from_secs(2)).await,
        Vec::<u32>::new()
    );
    assert_eq!(
        wait_no_survivors(&marker, Duration::from_secs(2)).await,
        Vec::<u32>::new()
    );
}
