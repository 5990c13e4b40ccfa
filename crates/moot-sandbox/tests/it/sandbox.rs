//! The sandbox against real bubblewrap: programs that pass and fail, and programs that try to
//! escape — loop forever, write outside their tmp, open a socket, eat memory,
//! flood their output — each stopped and reported, with the host untouched.

use std::time::{Duration, Instant};

use moot_core::validation::{CheckKind, TestSuite, Verdict};
use moot_sandbox::{Limits, RunOutput, Sandbox};

fn sandbox(limits: Limits) -> Sandbox {
    Sandbox::new(limits).unwrap_or_else(|e| {
        panic!("{e} (the sandbox tests need bubblewrap: scripts/setup.sh installs it)")
    })
}

fn quick() -> Limits {
    Limits {
        timeout: Duration::from_secs(3),
        ..Limits::default()
    }
}

async fn execute(program: &str) -> RunOutput {
    sandbox(quick())
        .execute(program)
        .await
        .expect("the sandbox runs")
}

#[tokio::test]
async fn a_solution_that_passes_its_tests_passes() {
    let suite = TestSuite {
        preamble: "from typing import List\n".into(),
        tests: "def check(candidate):\n    assert candidate([1, 2]) == 3\n\ncheck(total)\n".into(),
        ..TestSuite::default()
    };
    let program = "def total(xs: List[int]) -> int:\n    return sum(xs)\n";
    let v = sandbox(quick()).run_tests(program, &suite).await.unwrap();
    assert_eq!(v.check, CheckKind::Tests);
    assert_eq!(v.verdict, Verdict::Passed, "{v:?}");
    // A pass says how much was checked.
    assert_eq!(v.detail, "1 assert held");
}

#[tokio::test]
async fn a_future_import_in_a_humaneval_answer_compiles_and_passes() {
    // Issue 41: the prompt's imports go before the program, and a __future__ import must come
    // first in a module; the answer below was graded a syntax error.
    let suite = TestSuite::dataset(
        "from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    \"\"\"Sum.\"\"\"\n",
        "    return sum(xs)\n",
        "\n\ndef check(candidate):\n    assert candidate([1, 2]) == 3\n    assert candidate([]) == 0\n",
        "total",
    );
    let program = "\"\"\"A total.\"\"\"\nfrom __future__ import annotations\n\n\ndef total(xs: List[int]) -> int:\n    return sum(xs)\n";
    let v = sandbox(quick()).run_tests(program, &suite).await.unwrap();
    assert_eq!(v.verdict, Verdict::Passed, "{v:?}");
    assert_eq!(v.detail, "2 asserts held");
}

#[tokio::test]
async fn failures_say_why() {
    let out = execute("def f():\n    return 2\n\nassert f() == 1, 'f() should be 1'\n").await;
    assert_eq!(out.verdict, Verdict::Failed);
    assert_eq!(out.detail, "AssertionError: f() should be 1");
    // The traceback names the solution's own lines.
    assert!(
        out.stderr.contains("solution.py\", line 4"),
        "{}",
        out.stderr
    );

    let v = sandbox(quick())
        .check_syntax("def f(:\n    pass\n")
        .await
        .unwrap();
    assert_eq!(v.verdict, Verdict::SyntaxError);
    assert!(v.detail.contains("line 1"), "{}", v.detail);
    let v = sandbox(quick())
        .check_syntax("def f():\n    return 1\n")
        .await
        .unwrap();
    assert_eq!(v.verdict, Verdict::Passed);
    // Checking syntax does not run the program.
    let v = sandbox(quick())
        .check_syntax("raise SystemExit(5)\n")
        .await
        .unwrap();
    assert_eq!(v.verdict, Verdict::Passed);
}

#[tokio::test]
async fn an_exit_before_the_tests_end_does_not_pass() {
    let out = execute("import sys\nsys.exit(0)\nassert False\n").await;
    assert_eq!(out.verdict, Verdict::ExitedEarly, "{out:?}");
    // Printing something that looks like the end marker does not help either.
    let out = execute("print('moot-0000000000000000 finished')\nimport os\nos._exit(0)\n").await;
    assert_eq!(out.verdict, Verdict::ExitedEarly, "{out:?}");
}

#[tokio::test]
async fn a_loop_that_never_ends_is_killed_at_the_timeout() {
    let started = Instant::now();
    let out = execute("while True:\n    pass\n").await;
    let took = started.elapsed();
    assert_eq!(out.verdict, Verdict::TimedOut, "{out:?}");
    assert_eq!(out.detail, "killed after 3000 ms");
    assert!(took < Duration::from_secs(6), "took {took:?}");
}

#[tokio::test]
async fn writes_outside_the_private_tmp_fail_and_the_host_is_untouched() {
    let host = tempfile::tempdir().unwrap();
    let host_file = host.path().join("escaped.txt");
    let out = execute(&format!(
        "open({:?}, 'w').write('x')\n",
        host_file.display().to_string()
    ))
    .await;
    assert_eq!(out.verdict, Verdict::Failed);
    assert!(
        out.detail.contains("No such file or directory"),
        "{}",
        out.detail
    );
    assert!(!host_file.exists());

    for path in ["/usr/moot-escape", "/etc/moot-escape"] {
        let out = execute(&format!("open({path:?}, 'w').write('x')\n")).await;
        assert_eq!(out.verdict, Verdict::Failed, "{path}");
        assert!(
            out.detail.contains("Read-only file system"),
            "{path}: {}",
            out.detail
        );
        assert!(!std::path::Path::new(path).exists());
    }

    // Its own tmp is writable, private and gone afterwards.
    let out = execute(
        "import os\nopen('/tmp/moot-inside', 'w').write('x')\nassert os.listdir('/tmp') == ['moot-inside']\n",
    )
    .await;
    assert_eq!(out.verdict, Verdict::Passed, "{out:?}");
    assert!(!std::path::Path::new("/tmp/moot-inside").exists());

    // The host's files other than /usr and /etc are not even visible.
    let here = std::env::current_dir().unwrap();
    let out = execute(&format!(
        "import os\nassert not os.path.exists({:?})\nassert sorted(os.listdir('/')) == sorted(set(os.listdir('/')) & {{'bin','dev','etc','lib','lib32','lib64','libx32','proc','sbin','tmp','usr'}})\n",
        here.display().to_string()
    ))
    .await;
    assert_eq!(out.verdict, Verdict::Passed, "{out:?}");
}

#[tokio::test]
async fn sockets_reach_nothing() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = execute(&format!(
        "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
    ))
    .await;
    assert_eq!(out.verdict, Verdict::Failed, "{out:?}");
    assert!(
        out.detail.contains("unreachable") || out.detail.contains("refused"),
        "{}",
        out.detail
    );
    // The host's listener saw nobody.
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(accepted.is_err(), "the sandbox reached the host");

    let out =
        execute("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)\n").await;
    assert_eq!(out.verdict, Verdict::Failed, "{out:?}");
}

#[tokio::test]
async fn memory_and_output_are_capped() {
    let out = execute("x = bytearray(2 << 30)\n").await;
    assert_eq!(out.verdict, Verdict::Failed, "{out:?}");
    assert_eq!(out.detail, "MemoryError");

    let out = execute("while True:\n    print('x' * 1000)\n").await;
    assert_eq!(out.verdict, Verdict::OutputLimit, "{out:?}");
}

#[tokio::test]
async fn the_probe_passes_here() {
    sandbox(quick()).probe().await.expect("the sandbox starts");
}
