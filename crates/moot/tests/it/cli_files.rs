//! Files a user names (issue 42 item 5, the class of LOW 10c): a FIFO or a device given as a
//! configuration, a tests file, a dataset, a sweep spec or a trajectory is refused at once, by
//! name, and never read: before, a FIFO hung the command until someone wrote to it, and
//! /dev/zero was read until memory ran out.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Env;

/// A FIFO at `name` in `env`'s folder.
fn fifo(env: &Env, name: &str) -> PathBuf {
    let path = env.dir.path().join(name);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the file.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    path
}

/// Runs `moot ARGS` with a deadline (a command that blocks on a FIFO or reads a device for
/// ever is killed at it, and fails the test); expects exit code 2 and returns stderr.
fn refused(env: &Env, args: &[&str]) -> String {
    let out = env
        .moot()
        .args(args)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    err
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_fifo_as_the_config_is_refused_at_once_by_name() {
    let env = Env::new();
    let fifo = fifo(&env, "fifo.toml");
    let line = format!(
        "moot: error: cannot read config {}: a FIFO, not a regular file\n",
        fifo.display()
    );
    for args in [
        vec!["ask", "--sim", "--config", s(&fifo), "What is 2 + 2?"],
        vec!["config", "check", s(&fifo)],
        vec!["config", "convert", s(&fifo)],
        vec!["health", "--config", s(&fifo)],
        vec![
            "bench",
            "--sim",
            "--dataset",
            "gsm8k",
            "--protocol",
            "som",
            "--run",
            "b",
            "--config",
            s(&fifo),
        ],
    ] {
        assert_eq!(refused(&env, &args), line, "{args:?}");
    }
}

#[test]
fn a_device_as_the_config_is_refused_not_read_for_ever() {
    let env = Env::new();
    for args in [
        vec!["ask", "--sim", "--config", "/dev/zero", "What is 2 + 2?"],
        vec!["config", "check", "/dev/zero"],
    ] {
        assert_eq!(
            refused(&env, &args),
            "moot: error: cannot read config /dev/zero: a device, not a regular file\n",
            "{args:?}"
        );
    }
}

#[test]
fn a_fifo_as_the_tests_file_is_refused_at_once_by_name() {
    let env = Env::new();
    let fifo = fifo(&env, "tests.py");
    let err = refused(
        &env,
        &[
            "ask",
            "--sim",
            "--gold",
            "def f(x): return x",
            "--tests",
            s(&fifo),
            "Write f(x) returning x.",
        ],
    );
    assert_eq!(
        err,
        format!(
            "moot: error: --tests {}: a FIFO, not a regular file\n",
            fifo.display()
        )
    );
}

#[test]
fn a_fifo_as_a_dataset_file_is_refused_at_once_by_name() {
    let env = Env::new();
    let fifo = fifo(&env, "data.jsonl");
    let dataset = format!(
        "jsonl:{}?kind=numeric&question=q&answer=a&id=id",
        fifo.display()
    );
    let err = refused(
        &env,
        &[
            "bench",
            "--sim",
            "--dataset",
            &dataset,
            "--protocol",
            "som",
            "--run",
            "b",
        ],
    );
    assert!(
        err.starts_with("moot: error: ")
            && err.contains(&format!("{}: a FIFO, not a regular file", fifo.display()))
            && err.lines().count() == 1,
        "{err}"
    );
    // A file of the data folder, read by a dataset's name, the same.
    let data = env.dir.path().join("data");
    std::fs::create_dir_all(data.join("gsm8k")).unwrap();
    let c = std::ffi::CString::new(s(&data.join("gsm8k/test.jsonl"))).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the file.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let err = refused(
        &env,
        &[
            "bench",
            "--sim",
            "--dataset",
            "gsm8k",
            "--data-dir",
            s(&data),
            "--protocol",
            "som",
            "--run",
            "g",
        ],
    );
    assert!(
        err.contains("gsm8k/test.jsonl") && err.contains("a FIFO, not a regular file"),
        "{err}"
    );
}

#[test]
fn a_fifo_as_the_sweep_spec_is_refused_at_once_by_name() {
    let env = Env::new();
    let fifo = fifo(&env, "spec.toml");
    let out = env.dir.path().join("out");
    let err = refused(&env, &["sweep", s(&fifo), "--out", s(&out)]);
    assert_eq!(
        err,
        format!(
            "moot: error: cannot read {}: a FIFO, not a regular file\n",
            fifo.display()
        )
    );
}

#[test]
fn a_fifo_or_a_device_as_the_trajectory_is_refused_at_once_by_name() {
    let env = Env::new();
    let fifo = fifo(&env, "trajectory.json");
    let err = refused(&env, &["decide", "--trajectory", s(&fifo)]);
    assert_eq!(
        err,
        format!(
            "moot: error: cannot read trajectory {}: a FIFO, not a regular file\n",
            fifo.display()
        )
    );
    let err = refused(&env, &["decide", "--trajectory", "/dev/zero"]);
    assert_eq!(
        err,
        "moot: error: cannot read trajectory /dev/zero: a device, not a regular file\n"
    );
}

/// `moot ARGS` with /dev/zero as stdin, within a deadline (killed at it, failing the test);
/// expects exit code 2 and returns stderr.
fn refused_with_endless_stdin(env: &Env, args: &[&str]) -> String {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("moot"));
    cmd.env("MOOT_STORE", env.store())
        .args(args)
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: kill(2) on the child this test started, which has not been waited on
            // (its waiter is still blocked).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("{args:?}: still reading stdin after 30 s");
        }
    };
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    err
}

/// Stdin is bounded as a named file is: /dev/zero as `moot decide --trajectory -` or `moot
/// extract`'s response is refused once the bound is passed, naming it.
#[test]
fn endless_stdin_is_refused_once_past_its_bound() {
    let env = Env::new();
    assert_eq!(
        refused_with_endless_stdin(&env, &["decide", "--trajectory", "-"]),
        "moot: error: cannot read the trajectory from stdin: more than the 64 MiB moot reads from a trajectory\n"
    );
    assert_eq!(
        refused_with_endless_stdin(&env, &["extract", "--kind", "numeric"]),
        "moot: error: cannot read the response from stdin: more than the 8 MiB moot extract reads from a response\n"
    );
}
