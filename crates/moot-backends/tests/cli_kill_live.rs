//! [`kill_live_agents`] (what moot calls at SIGINT and SIGTERM) ends every running `cli` agent
//! and everything it started, setsid descendants included. It kills every agent of the process,
//! so it has a test process of its own.

use std::path::Path;
use std::time::{Duration, Instant};

use moot_backends::cli::{kill_live_agents, CliConfig, CliModel};
use moot_backends::{ChatMessage, CompletionRequest, LanguageModel};
use moot_proc::is_running as alive;

/// The live process a script's pid record names, as seen from here (the agent runs in a PID
/// namespace of its own).
fn read_pid(path: &Path) -> Option<u32> {
    moot_proc::pid_from_record(&std::fs::read_to_string(path).ok()?)
}

#[tokio::test]
async fn kill_live_agents_ends_a_running_agent_and_its_setsid_descendants() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_string_lossy().to_string();
    let script = dir.path().join("agent.sh");
    std::fs::write(
        &script,
        "setsid sleep 1000 </dev/null >/dev/null 2>&1 &\n\
         echo \"$! $(readlink /proc/self/ns/pid)\" > \"$1/sleeper.pid.tmp\" && mv \"$1/sleeper.pid.tmp\" \"$1/sleeper.pid\"\n\
         echo \"$$ $(readlink /proc/self/ns/pid)\" > \"$1/agent.pid.tmp\" && mv \"$1/agent.pid.tmp\" \"$1/agent.pid\"\n\
         sleep 1000\n",
    )
    .unwrap();
    let model = CliModel::new(CliConfig {
        allowed_commands: vec!["sh".into()],
        ..CliConfig::new("sh", vec![script.to_string_lossy().to_string(), d])
    })
    .unwrap();
    let mut call = Box::pin(model.complete(CompletionRequest::new(vec![ChatMessage::user("x")])));
    let started = Instant::now();
    let agent = loop {
        tokio::select! {
            result = call.as_mut() => panic!("the call returned: {result:?}"),
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
        if let Some(pid) = read_pid(&dir.path().join("agent.pid")) {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the script never started"
        );
    };
    let sleeper = read_pid(&dir.path().join("sleeper.pid")).expect("sleeper pid");
    assert!(alive(agent) && alive(sleeper));

    // The call is still running (its future alive): only kill_live_agents can end these.
    kill_live_agents();
    let deadline = Instant::now() + Duration::from_secs(2);
    while (alive(agent) || alive(sleeper)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !alive(sleeper),
        "the setsid sleeper outlived kill_live_agents"
    );
    assert!(!alive(agent), "the agent outlived kill_live_agents");
    // And the call ends, failed, without waiting for any deadline.
    let result = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call ends once its agent is killed");
    assert!(result.is_err(), "{result:?}");
}
