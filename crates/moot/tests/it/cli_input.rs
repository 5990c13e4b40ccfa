//! Bad input through the binary: configurations that cannot run (missing agent programs,
//! impossible sizes and quorums, unbounded rounds), missing arguments, configurations that are
//! not UTF-8, and counts printed with the right noun.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common;

use common::{arith_dataset, script, Env};

/// Runs `moot ARGS` in `env`, expects exit code 2 with one line on stderr, and returns it.
fn refused(env: &Env, args: &[&str]) -> String {
    let err = env.refused(args);
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one-line error for {args:?}, got {err:?}"
    );
    assert!(err.starts_with("moot: error: "), "{err}");
    err
}

/// `moot config check FILE`'s exit code and output (stdout, then stderr).
fn check(env: &Env, path: &Path) -> (Option<i32>, String) {
    let out = env
        .moot()
        .args(["config", "check", path.to_str().unwrap()])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

fn check_ok(env: &Env, path: &Path) -> String {
    let (code, text) = check(env, path);
    assert_eq!(code, Some(0), "{}: {text}", path.display());
    text
}

fn check_refused(env: &Env, path: &Path, needles: &[&str]) -> String {
    let (code, text) = check(env, path);
    assert_eq!(code, Some(2), "{}: {text}", path.display());
    for needle in needles {
        assert!(text.contains(needle), "{needle:?} missing from {text:?}");
    }
    text
}

/// Three scripted agents answering 408.
const SCRIPTED: &str = "[[agents]]\nid = \"a\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 408\"]\n\n[[agents]]\nid = \"b\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 408\"]\n\n[[agents]]\nid = \"c\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 408\"]\n";

// 1. A cli agent's program must exist and be executable.

fn cli_config(program: &str) -> String {
    format!(
        "[debate]\nanswer = \"numeric\"\n\n[retry]\nmax_retries = 3\nmin_delay_ms = 2000\nmax_delay_ms = 4000\n\n[security]\ncli_allowed_commands = [\"{program}\"]\n\n[[agents]]\nid = \"ok\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 408\"]\n\n[[agents]]\nid = \"ghost\"\nbackend = \"cli\"\ncommand = \"{program}\"\n"
    )
}

#[test]
fn a_cli_agent_without_its_program_is_a_configuration_error() {
    let env = Env::new();
    let missing = env.dir.path().join("no-such-agent");
    let plain = env.write("agent.sh", "#!/bin/sh\necho 'SOLUTION:'; echo 408\n");
    let cases = [
        (missing.display().to_string(), "does not exist"),
        (plain.display().to_string(), "is not executable"),
    ];
    for (program, why) in &cases {
        let cfg = env.write("cli.toml", &cli_config(program));
        let checked = check_refused(&env, &cfg, &["ghost", program, why, "agents[1]"]);
        // `ask` fails at once (no retries, no "(no answer)") with the same message.
        let started = Instant::now();
        let asked = refused(
            &env,
            &["ask", "What is 17 * 24?", "--config", cfg.to_str().unwrap()],
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(asked.trim(), checked.trim());
        // `bench` too.
        let data = arith_dataset(&env, 2);
        let benched = refused(
            &env,
            &[
                "bench",
                "--dataset",
                &data,
                "--protocol",
                "cot-sc",
                "--config",
                cfg.to_str().unwrap(),
            ],
        );
        assert_eq!(benched.trim(), checked.trim());
    }
    // A bare name is looked up on PATH, as the agent is started.
    let cfg = env.write("path.toml", &cli_config("moot-no-such-agent-anywhere"));
    check_refused(
        &env,
        &cfg,
        &["ghost", "moot-no-such-agent-anywhere", "not found on PATH"],
    );
    let cfg = env.write("sh.toml", &cli_config("sh"));
    check_ok(&env, &cfg);
    // Once executable, the same file is fine.
    let agent = script(&env, "agent.sh", "#!/bin/sh\necho 'SOLUTION:'; echo 408\n");
    let cfg = env.write("cli.toml", &cli_config(&agent.display().to_string()));
    check_ok(&env, &cfg);
}

// 2. Impossible settings name their key.

#[test]
fn min_agents_above_the_agents_is_refused_not_lowered() {
    let env = Env::new();
    let cfg = env.write(
        "min.toml",
        &format!("[debate]\nmin_agents = 5\nanswer = \"numeric\"\n\n{SCRIPTED}"),
    );
    let path = cfg.to_str().unwrap();
    check_refused(
        &env,
        &cfg,
        &["min.toml", "debate.min_agents = 5", "3 agents"],
    );
    let err = refused(&env, &["ask", "What is 17 * 24?", "--config", path]);
    assert!(err.contains("debate.min_agents = 5"), "{err}");
    let data = arith_dataset(&env, 2);
    let err = refused(
        &env,
        &[
            "bench",
            "--dataset",
            &data,
            "--protocol",
            "som",
            "--config",
            path,
        ],
    );
    assert!(err.contains("debate.min_agents = 5"), "{err}");
    // Enough agents make it possible; fewer through --agents make it impossible again.
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--config",
        path,
        "--agents",
        "5",
        "--json",
    ]);
    assert_eq!(v["answer"], "408");
    let ok = env.write(
        "ok.toml",
        &format!("[debate]\nmin_agents = 3\nanswer = \"numeric\"\n\n{SCRIPTED}"),
    );
    check_ok(&env, &ok);
    let err = refused(
        &env,
        &[
            "ask",
            "What is 17 * 24?",
            "--config",
            ok.to_str().unwrap(),
            "--agents",
            "2",
        ],
    );
    assert!(
        err.contains("debate.min_agents = 3") && err.contains("--agents"),
        "{err}"
    );
    // Unset, the default quorum fits any number of agents.
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--agents",
        "1",
        "--json",
    ]);
    assert!(v["answer"].is_string(), "{v}");
}

#[test]
fn quorums_and_topologies_the_agents_cannot_satisfy_are_refused() {
    let env = Env::new();
    let data = arith_dataset(&env, 2);
    let sim = ["ask", "What is 17 * 24?", "--sim", "--gold", "408"];
    for (protocol, options, needle) in [
        (
            "sparse",
            &["topology=k-reviewers", "k=3"][..],
            "protocol.k = 3",
        ),
        (
            "sparse",
            &["topology=star", "hub=4"][..],
            "protocol.hub = 4",
        ),
        ("group-debate", &["groups=4"][..], "protocol.groups = 4"),
        (
            "sparse",
            &["topology=groups", "groups=5"][..],
            "protocol.groups = 5",
        ),
        (
            "svr-mad",
            &["accept_after=3"][..],
            "protocol.accept_after = 3",
        ),
        (
            "svr-mad",
            &["challengers=3"][..],
            "protocol.challengers = 3",
        ),
    ] {
        let mut args: Vec<&str> = sim.to_vec();
        args.extend(["--protocol", protocol]);
        for o in options {
            args.extend(["-o", o]);
        }
        let err = refused(&env, &args);
        assert!(err.contains(needle) && err.contains("3 agents"), "{err}");
        // With more agents the same settings run.
        args.extend(["--agents", "6", "--json"]);
        let v = env.json(&args);
        assert!(v["run_id"].is_string(), "{v}");
        // bench checks them for its agents too.
        let mut bench = vec![
            "bench",
            "--dataset",
            &data,
            "--protocol",
            protocol,
            "--sim",
            "--agents",
            "3",
        ];
        for o in options {
            bench.extend(["-o", o]);
        }
        let err = refused(&env, &bench);
        assert!(err.contains(needle), "{err}");
        // And config check, from the file.
        let table: String = options
            .iter()
            .map(|o| {
                let (k, v) = o.split_once('=').unwrap();
                match v.parse::<u64>() {
                    Ok(n) => format!("{k} = {n}\n"),
                    Err(_) => format!("{k} = \"{v}\"\n"),
                }
            })
            .collect();
        let cfg = env.write(
            "topology.toml",
            &format!("[debate]\nprotocol = \"{protocol}\"\n\n[protocol]\n{table}\n{SCRIPTED}"),
        );
        check_refused(&env, &cfg, &["topology.toml", needle]);
    }
    // A protocol's own default that the agents cannot satisfy (k-reviewers' k = 2 among two).
    let err = refused(
        &env,
        &[
            "ask",
            "q",
            "--sim",
            "--gold",
            "1",
            "--protocol",
            "sparse",
            "-o",
            "topology=k-reviewers",
            "--agents",
            "2",
        ],
    );
    assert!(
        err.contains("k-reviewers") && err.contains("2 agents"),
        "{err}"
    );
}

/// `--concurrency` is one flag wherever a benchmark's debates run (`bench`, `resume`, `work`):
/// a count below 1 is refused by the parser, naming the flag, before any store is opened.
#[test]
fn concurrency_below_one_is_refused_by_every_command_that_takes_it() {
    let env = Env::new();
    for (args, needle) in [
        (
            &["resume", "b", "--concurrency", "0"][..],
            "'--concurrency <CONCURRENCY>': must be at least 1",
        ),
        (
            &["resume", "b", "--concurrency", "-2"][..],
            "'--concurrency <CONCURRENCY>': must not be negative",
        ),
        (
            &["work", "b", "--concurrency", "0"][..],
            "'--concurrency <CONCURRENCY>': must be at least 1",
        ),
    ] {
        let err = refused(&env, args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    assert!(!env.store().exists(), "no store is opened for a bad flag");
}

#[test]
fn zero_and_negative_counts_are_refused_with_their_key() {
    let env = Env::new();
    let data = arith_dataset(&env, 2);
    for (args, needle) in [
        (
            &["ask", "q", "--agents", "0"][..],
            "'--agents <AGENTS>': must be at least 1",
        ),
        (
            &["ask", "q", "--agents", "-2"][..],
            "'--agents <AGENTS>': must not be negative",
        ),
        (
            &["ask", "q", "--rounds", "-1"][..],
            "'--rounds <ROUNDS>': must not be negative",
        ),
        (
            &["ask", "q", "--rounds", "x"][..],
            "'--rounds <ROUNDS>': expected a whole number",
        ),
        (
            &[
                "bench",
                "--dataset",
                &data,
                "--protocol",
                "som",
                "--agents",
                "0",
            ][..],
            "--agents",
        ),
        (
            &[
                "bench",
                "--dataset",
                &data,
                "--protocol",
                "som",
                "--rounds",
                "-3",
            ][..],
            "--rounds",
        ),
        (
            &[
                "bench",
                "--dataset",
                &data,
                "--protocol",
                "som",
                "--limit",
                "0",
            ][..],
            "--limit",
        ),
        (
            &[
                "bench",
                "--dataset",
                &data,
                "--protocol",
                "som",
                "--concurrency",
                "0",
            ][..],
            "--concurrency",
        ),
        (
            &[
                "ask",
                "q",
                "--sim",
                "--gold",
                "1",
                "--protocol",
                "sparse",
                "-o",
                "topology=k-reviewers",
                "-o",
                "k=0",
            ][..],
            "protocol.k must be at least 1",
        ),
        (
            &[
                "ask",
                "q",
                "--sim",
                "--gold",
                "1",
                "--protocol",
                "group-debate",
                "-o",
                "groups=0",
            ][..],
            "protocol.groups must be at least 1",
        ),
        (
            &[
                "ask",
                "q",
                "--sim",
                "--gold",
                "1",
                "--protocol",
                "svr-mad",
                "-o",
                "challengers=0",
            ][..],
            "protocol.challengers must be at least 1",
        ),
        (
            &[
                "ask",
                "q",
                "--sim",
                "--gold",
                "1",
                "--protocol",
                "sparse",
                "-o",
                "topology=k-reviewers",
                "-o",
                "k=-1",
            ][..],
            "k",
        ),
    ] {
        let err = refused(&env, args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // In a file, in each format.
    for (name, text, needle) in [
        ("neg.toml", "[debate]\nrounds = -1\n", "rounds = -1"),
        ("neg.yaml", "debate:\n  rounds: -1\n", "rounds: -1"),
        (
            "neg.json",
            "{\"debate\": {\"rounds\": -1}}",
            "\"rounds\": -1",
        ),
        (
            "min.toml",
            "[debate]\nmin_agents = 0\n",
            "debate.min_agents",
        ),
        (
            "calls.toml",
            "[debate]\nmax_concurrent_calls = 0\n",
            "debate.max_concurrent_calls",
        ),
        (
            "soft.toml",
            "[debate]\nsoft_timeout_ms = 0\n",
            "debate.soft_timeout_ms",
        ),
        (
            "k.toml",
            "[debate]\nprotocol = \"sparse\"\n[protocol]\ntopology = \"k-reviewers\"\nk = 0\n",
            "protocol.k",
        ),
        (
            "layout.toml",
            "[debate]\nlayout = \"shared_first\"\n",
            "debate.layout = \"shared_first\" is not a prompt layout (expected one of papers, shared-first)",
        ),
        (
            "layout.yaml",
            "debate:\n  layout: first\n",
            "debate.layout = \"first\" is not a prompt layout",
        ),
        (
            "tokens.toml",
            "[budget]\nmax_total_tokens = 0\n",
            "budget.max_total_tokens",
        ),
        (
            "time.toml",
            "[budget]\nmax_total_time_sec = 0\n",
            "budget.max_total_time_sec",
        ),
        (
            "max.toml",
            "[[agents]]\nid = \"a\"\nbackend = \"local\"\nmax_tokens = 0\n",
            "agents[0].max_tokens",
        ),
    ] {
        let cfg = env.write(name, text);
        check_refused(&env, &cfg, &[name, needle]);
    }
    // What was valid stays valid: zero debate rounds (round 0 alone) and the example.
    let v = env.json(&[
        "ask",
        "q",
        "--sim",
        "--gold",
        "1",
        "--protocol",
        "som",
        "--rounds",
        "0",
        "--json",
    ]);
    assert_eq!(v["rounds"].as_array().unwrap().len(), 1, "{v}");
}

// 3. Rounds and agents are bounded unless a token budget pays for more.

#[test]
fn rounds_and_agents_are_bounded_unless_the_budget_pays() {
    let env = Env::new();
    let sim = ["ask", "What is 17 * 24?", "--sim", "--gold", "408"];
    let run = |extra: &[&str]| -> String {
        let mut args = sim.to_vec();
        args.extend(extra);
        let started = Instant::now();
        let err = refused(&env, &args);
        assert!(started.elapsed() < Duration::from_secs(5), "{args:?}");
        err
    };
    let err = run(&["--rounds", "1000000"]);
    assert!(
        err.contains("--rounds 1000000") && err.contains("limit of 1000 debate rounds"),
        "{err}"
    );
    let err = run(&["--rounds", "11"]);
    assert!(
        err.contains("--rounds 11")
            && err.contains("limit of 10 debate rounds")
            && err.contains("budget.max_total_tokens to at least 3600"),
        "{err}"
    );
    let err = run(&["--agents", "17"]);
    assert!(
        err.contains("--agents 17")
            && err.contains("limit of 16 agents")
            && err.contains("budget.max_total_tokens"),
        "{err}"
    );
    // At the caps, it runs.
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--rounds",
        "10",
        "--json",
    ]);
    assert_eq!(v["rounds"].as_array().unwrap().len(), 11);
    // A budget that pays for every call raises them; one that does not says how much would.
    let paid = env.write(
        "paid.toml",
        "[debate]\nprotocol = \"som\"\n\n[budget]\nmax_total_tokens = 3600\n",
    );
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--config",
        paid.to_str().unwrap(),
        "--rounds",
        "11",
        "--json",
    ]);
    assert_eq!(v["rounds"].as_array().unwrap().len(), 12, "{v}");
    let err = run(&["--config", paid.to_str().unwrap(), "--rounds", "12"]);
    assert!(
        err.contains("raise budget.max_total_tokens from 3600 to at least 3900"),
        "{err}"
    );
    let err = run(&["--config", paid.to_str().unwrap(), "--rounds", "1001"]);
    assert!(err.contains("limit of 1000 debate rounds"), "{err}");
    // In a file, for config check, and for bench.
    let many = env.write("many.toml", "[debate]\nrounds = 50\n");
    check_refused(
        &env,
        &many,
        &["many.toml", "debate.rounds = 50", "budget.max_total_tokens"],
    );
    let budgeted = env.write(
        "budgeted.toml",
        "[debate]\nrounds = 50\n\n[budget]\nmax_total_tokens = 100000\n",
    );
    check_ok(&env, &budgeted);
    let data = arith_dataset(&env, 2);
    let err = refused(
        &env,
        &[
            "bench",
            "--dataset",
            &data,
            "--protocol",
            "som",
            "--sim",
            "--rounds",
            "11",
        ],
    );
    assert!(err.contains("--rounds 11"), "{err}");
    let err = refused(
        &env,
        &[
            "bench",
            "--dataset",
            &data,
            "--protocol",
            "som",
            "--sim",
            "--config",
            many.to_str().unwrap(),
        ],
    );
    assert!(err.contains("debate.rounds = 50"), "{err}");
}

// 4. Argument errors name the argument.

#[test]
fn missing_required_arguments_are_named() {
    let env = Env::new();
    for (args, needle) in [
        (
            &["extract"][..],
            "missing required argument --kind <KIND> (see --help)",
        ),
        (
            &["ask"][..],
            "missing required argument <QUESTION> (see --help)",
        ),
        (
            &["show"][..],
            "missing required argument <RUN> (see --help)",
        ),
        (
            &["bench"][..],
            "missing required arguments --dataset <DATASET>, --protocol <PROTOCOL>",
        ),
        (&["config", "check"][..], "missing required argument <FILE>"),
    ] {
        let err = refused(&env, args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // Other argument errors keep what clap says beyond its first line.
    let err = refused(&env, &["show", "r1", "--format", "yaml"]);
    assert!(
        err.contains("invalid value 'yaml' for '--format <FORMAT>'")
            && err.contains("possible values: json, markdown"),
        "{err}"
    );
    let err = refused(&env, &["show", "r1", "--formt", "json"]);
    assert!(
        err.contains("unexpected argument '--formt'")
            && err.contains("a similar argument exists: '--format'"),
        "{err}"
    );
    let err = refused(&env, &["sho"]);
    assert!(err.contains("a similar subcommand exists: 'show'"), "{err}");
}

// 5. A configuration that is not UTF-8 says where.

#[test]
fn invalid_utf8_in_a_config_names_the_file_and_position() {
    let env = Env::new();
    for (name, head) in [
        ("bad.toml", &b"[debate]\nrounds = 1\n# caf"[..]),
        ("bad.yaml", &b"debate:\n  rounds: 1\n# caf"[..]),
        (
            "bad.json",
            &b"{\"debate\":\n {\"rounds\": 1,\n \"protocol\": \"caf"[..],
        ),
    ] {
        let mut bytes = head.to_vec();
        let offset = bytes.len();
        let column = head.rsplit(|b| *b == b'\n').next().unwrap().len() + 1;
        bytes.extend(b"\xe9 au lait\n");
        if name.ends_with("json") {
            bytes.extend(b"\"}}\n");
        }
        let path = env.dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let expected = format!(
            "is not valid UTF-8: byte 0xE9 at byte offset {offset} (line 3, column {column})"
        );
        let err = check_refused(&env, &path, &[name, &expected]);
        let asked = refused(&env, &["ask", "q", "--config", path.to_str().unwrap()]);
        assert_eq!(asked, err);
    }
}

// 6. One is singular.

#[test]
fn counts_of_one_take_the_singular() {
    let env = Env::new();
    let one = env.write(
        "one.toml",
        "[debate]\nprotocol = \"som\"\nrounds = 1\n\n[[agents]]\nid = \"a\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 408\"]\n",
    );
    let text = check_ok(&env, &one);
    assert!(
        text.contains("ok (1 agent, protocol som, 1 debate round)"),
        "{text}"
    );
    let two = env.write("two.toml", "[debate]\nrounds = 2\n");
    let text = check_ok(&env, &two);
    assert!(
        text.contains("(3 default agents, protocol free-mad-n, 2 debate rounds)"),
        "{text}"
    );
    let out = env
        .moot()
        .args([
            "ask",
            "What is 17 * 24?",
            "--sim",
            "--gold",
            "408",
            "--protocol",
            "cot",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(cot, 1 agent, 0 debate rounds)"), "{text}");
    assert!(text.contains(" · 1 call · "), "{text}");
    let run = text
        .lines()
        .find_map(|l| l.strip_prefix("Run: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    let out = env
        .moot()
        .args(["show", &run])
        .assert()
        .success()
        .get_output()
        .clone();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("- 1 model call (0 skipped)"), "{shown}");
    let data = arith_dataset(&env, 3);
    let out = env
        .moot()
        .args([
            "bench",
            "--dataset",
            &data,
            "--protocol",
            "cot",
            "--sim",
            "--limit",
            "1",
            "--run",
            "single",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stderr.contains("benchmark single: 1 item of "), "{stderr}");
    assert!(stdout.contains("Benchmark single: 1 item of "), "{stdout}");
}

#[test]
fn negative_values_are_values_not_flags() {
    let env = Env::new();
    // A simulated team told the gold answer -7 answers it.
    let v = env.json(&["ask", "What is 3 - 10?", "--sim", "--gold", "-7", "--json"]);
    assert_eq!(v["answer"], "-7", "{v}");
    let out = env
        .moot()
        .args(["extract", "--kind", "numeric", "--gold", "-7"])
        .write_stdin("3 - 10 = -7.\nFinal answer: -7")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["correct"], true, "{v}");
}

#[test]
fn questions_past_the_size_cap_are_refused_before_any_call() {
    let env = Env::new();
    // Past the default cap (64 KiB), within what one argument may carry (128 KiB).
    let big = "x".repeat(100_000);
    let err = env.refused(&["ask", &big, "--sim", "--gold", "1"]);
    assert!(
        err.contains("debate.max_question_bytes") && err.contains("65536") && err.len() < 1000,
        "{}",
        &err[..err.len().min(1000)]
    );
    // The cap is a setting.
    let cfg = env.write("big.toml", "[debate]\nmax_question_bytes = 200000\n");
    let v = env.json(&[
        "ask",
        &big,
        "--sim",
        "--gold",
        "1",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
    ]);
    assert!(v["run_id"].is_string());
}

/// Issue 32 item 2: `config convert` writes the input file's name into a comment; a name with
/// a newline and TOML after it stays in the comment, and the converted file has the input's
/// agents only.
#[test]
fn a_file_name_cannot_add_configuration_to_a_converted_file() {
    let env = Env::new();
    let name = "team\n[[agents]]\nid = \"evil\"\nbackend = \"cli\"\ncommand = \"sh\"\n#.yaml";
    let path = env.write(
        name,
        "agents:\n  - id: one\n    type: claude_code\n    cli_command: \"true\"\n  - id: two\n    type: openai_codex\n    cli_command: \"true\"\nsecurity:\n  cli_allowed_commands: [\"true\"]\n",
    );
    let converted = env.stdout(&["config", "convert", path.to_str().unwrap()]);
    assert!(
        !converted
            .lines()
            .any(|l| l.trim_start().starts_with("id = \"evil\"")),
        "{converted}"
    );
    assert!(
        converted
            .lines()
            .next()
            .unwrap()
            .contains("team\\n[[agents]]"),
        "{converted}"
    );
    let written = env.write("converted.toml", &converted);
    let shown = env.stdout(&["config", "check", written.to_str().unwrap()]);
    assert!(!shown.contains("evil"), "{shown}");
    assert_eq!(converted.matches("[[agents]]\n").count(), 2, "{converted}");
}

/// Issue 32 item 4: model and user text in `moot show` is text: escape sequences reach the
/// terminal as visible escapes, HTML and links are escaped or fenced, a backtick in an agent
/// id cannot end its code span, and a `|` cannot split a table row; `report.md` of a benchmark
/// named like a script is text too.
#[test]
fn hostile_text_is_shown_as_text_in_markdown_and_on_the_terminal() {
    let env = Env::new();
    let response = "\u{1b}]0;pwned\u{7}\u{1b}[2J<img src=x onerror=alert(1)>\n[click](javascript:alert(1))\n```\n</code><script>alert(2)</script>\nFinal answer: 4|5";
    // JSON's string escapes (\u001b) are TOML's too.
    let toml_text = serde_json::to_string(response).unwrap();
    let config = env.write(
        "hostile.toml",
        &format!(
            "[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"text\"\n\n[[agents]]\nid = \"a`b\"\nbackend = \"scripted\"\nresponses = [{toml_text}]\n\n[[agents]]\nid = \"c|d\"\nbackend = \"scripted\"\nresponses = [{toml_text}]\n"
        ),
    );
    let v = env.json(&[
        "ask",
        "<script>alert(3)</script> [x](javascript:alert(4)) | what?",
        "--json",
        "--config",
        config.to_str().unwrap(),
    ]);
    let run = v["run_id"].as_str().unwrap();
    let shown = env.stdout(&["show", run]);
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "raw escapes"
    );
    assert!(shown.contains("\\u{1b}]0;pwned"), "{shown}");
    assert!(
        shown.contains("**Question:** \\<script\\>alert(3)\\</script\\> \\[x\\](javascript:alert(4)) \\| what?"),
        "{shown}"
    );
    assert!(shown.contains("(``a`b``, "), "{shown}");
    // Each response sits in a fence longer than the one inside it.
    assert!(shown.contains("````text\n\\u{1b}]0;pwned"), "{shown}");
    // Outside the fences, no raw HTML or link is left.
    let mut fence: Option<usize> = None;
    for line in shown.lines() {
        let ticks = line.chars().take_while(|&c| c == '`').count();
        match fence {
            Some(n) if ticks >= n && line.trim_matches('`').is_empty() => fence = None,
            Some(_) => {}
            None if ticks >= 3 => fence = Some(ticks),
            None => {
                // Markup starts at a character no backslash escapes.
                for raw in ["<img", "<script", "](javascript:"] {
                    let raw_at = line
                        .match_indices(raw)
                        .any(|(i, _)| !line[..i].ends_with('\\'));
                    assert!(!raw_at, "{raw} outside a fence: {line}");
                }
            }
        }
    }
    // Every row of the decisions table has the header's cells.
    let unescaped_pipes = |l: &str| {
        let b = l.as_bytes();
        (0..b.len())
            .filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\'))
            .count()
    };
    let table: Vec<&str> = shown
        .lines()
        .skip_while(|l| !l.starts_with("## Decisions"))
        .filter(|l| l.starts_with('|'))
        .collect();
    assert!(table.len() > 2, "{shown}");
    assert!(table.iter().all(|l| unescaped_pipes(l) == 4), "{table:?}");

    // A benchmark named like markup reports it as text ('/' is not allowed in a name).
    let dataset = arith_dataset(&env, 2);
    let name = "<img src=x onerror=alert(5)>";
    env.stdout(&[
        "bench",
        "--sim",
        "--dataset",
        &dataset,
        "--protocol",
        "som",
        "--run",
        name,
    ]);
    let report = env.stdout(&["report", name]);
    assert!(!report.replace("\\<", "").contains("<img"), "{report}");
    assert!(
        report.contains("\\<img src=x onerror=alert(5)\\>"),
        "{report}"
    );
}

/// Issue 56 item 8: what a model wrote reaches the terminal through every JSON output with its
/// C1 controls and bidirectional overrides escaped, as the Markdown view escapes them, and
/// reads back as the same JSON.
#[test]
fn json_outputs_escape_c1_and_bidi_controls() {
    let env = Env::new();
    // TOML's own escapes: a CSI, a right-to-left override and its pop, a DEL.
    let reply = r#""a\u009B31m b\u202Edrowssap\u202C c\u007F\nFinal answer: 7""#;
    let config = env.write(
        "c1.toml",
        &format!(
            "[debate]\nprotocol = \"cot\"\n\n[[agents]]\nid = \"a\"\nbackend = \"scripted\"\nresponses = [{reply}]\n"
        ),
    );
    let config = config.to_str().unwrap();
    let v = env.json(&["ask", "What is 3 + 4?", "--json", "--config", config]);
    let run = v["run_id"].as_str().unwrap().to_string();
    let raw =
        |c: char| ('\u{7f}'..='\u{9f}').contains(&c) || ('\u{202a}'..='\u{202e}').contains(&c);
    for format in ["json", "freemad"] {
        let text = env.stdout(&["show", &run, "--format", format]);
        assert!(!text.chars().any(raw), "{format}: {text:?}");
        assert!(
            text.contains("\\u009b") && text.contains("\\u202e"),
            "{format}: {text}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            back.to_string().contains('\u{202e}'),
            "{format}: the value is kept"
        );
    }
}

/// Issue 57 item 2: a configuration nested far past any real one is refused by every reader
/// with an error that says so (no stack overflow), and the error quotes a bounded part of the
/// line (TOML's parser quotes the whole line; a configuration may be 16 MiB on one line).
#[test]
fn deeply_nested_configurations_are_refused_in_a_bounded_message() {
    let env = Env::new();
    let depth = 200_000;
    let (open, close) = ("[".repeat(depth), "]".repeat(depth));
    for (name, text, reason) in [
        (
            "deep.toml",
            format!("[debate]\nx = {open}{close}\n"),
            "recursion",
        ),
        (
            "deep.yaml",
            format!("agents: {open}{close}\n"),
            "recursion limit",
        ),
        (
            "deep.json",
            format!("{{\"debate\": {{\"x\": {open}{close}}}}}"),
            "",
        ),
    ] {
        let path = env.write(name, &text);
        let (code, err) = check(&env, &path);
        assert_ne!(code, Some(0), "{name}");
        // Not killed by a signal (a stack overflow aborts): an exit code and a message.
        assert!(code.is_some(), "{name}: {err}");
        assert!(
            err.contains(reason),
            "{name}: {}",
            &err[..err.len().min(300)]
        );
        assert!(err.len() < 4_000, "{name}: {} bytes", err.len());
    }
}

/// Every subcommand of `moot --help`, with its own subcommands (`store copy`, `config check`,
/// `bench status`): the command lines one help page names.
fn every_command() -> Vec<Vec<String>> {
    let moot = assert_cmd::cargo::cargo_bin("moot");
    let help = |args: &[String]| {
        let out = std::process::Command::new(&moot)
            .args(args)
            .arg("--help")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The names listed under "Commands:" of a help page.
    let listed = |text: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .map(|n| n.trim_end_matches(',').to_string())
            .filter(|n| n != "help")
            .collect()
    };
    let mut commands = Vec::new();
    for name in listed(&help(&[])) {
        let path = vec![name];
        let subs = listed(&help(&path));
        commands.push(path.clone());
        for sub in subs {
            commands.push(vec![path[0].clone(), sub]);
        }
    }
    commands
}

/// Issue 58 item 8: one CLI. `--store` is taken only by commands that use a store; every
/// positional argument is described in its help.
#[test]
fn store_is_a_flag_only_of_commands_that_use_a_store_and_every_positional_is_described() {
    let moot = assert_cmd::cargo::cargo_bin("moot");
    let commands = every_command();
    assert!(commands.len() > 20, "{commands:?}");
    let uses_store = [
        "ask",
        "resume",
        "fork",
        "bench",
        "bench status",
        "work",
        "store path",
        "store init",
        "show",
        "list",
        "report",
        "decide",
        "regrade",
        "import",
        "serve",
    ];
    for command in &commands {
        let out = std::process::Command::new(&moot)
            .args(command)
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        let joined = command.join(" ");
        assert_eq!(
            help.contains("--store <STORE>"),
            uses_store.contains(&joined.as_str()),
            "moot {joined}: --store offered only where a store is used:\n{help}"
        );
        // Each positional argument line carries a description after its name.
        let arguments = help
            .lines()
            .skip_while(|l| !l.starts_with("Arguments:"))
            .skip(1)
            .take_while(|l| !l.is_empty() && !l.starts_with("Options:"));
        for line in arguments.filter(|l| l.trim_start().starts_with(['<', '['])) {
            let described = line
                .trim()
                .split_once("  ")
                .is_some_and(|(_, rest)| !rest.trim().is_empty())
                || help.contains(&format!("{}\n          ", line.trim()));
            assert!(
                described,
                "moot {joined}: {line:?} has no description:\n{help}"
            );
        }
    }
    for refused in [
        &["extract", "--store", "x.db"][..],
        &["config", "example", "--store", "x.db"],
    ] {
        let out = std::process::Command::new(&moot)
            .args(refused)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{refused:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--store"),
            "{refused:?}"
        );
    }
}

/// Issue 58 item 8: `moot decide` with neither input names both; agents are numbered from 1
/// with their ids in its explanations, as `moot show` and `moot fork --agent` number them.
#[test]
fn decide_names_both_inputs_and_numbers_agents_as_show_and_fork_do() {
    let env = Env::new();
    let err = env.refused(&["decide"]);
    assert!(
        err.contains("--trajectory") && err.contains("--run"),
        "{err}"
    );
    let asked = env.json(&[
        "ask",
        "What is 2 + 2?",
        "--sim",
        "--gold",
        "4",
        "--agents",
        "3",
        "--json",
    ]);
    let run = asked["run_id"].as_str().unwrap();
    let decided = env.json(&["decide", "--run", run, "--rule", "free-mad"]);
    let first = &decided["explanation"][0];
    assert_eq!(first["round"], 0);
    assert_eq!(first["agent"], 1, "{decided}");
    assert_eq!(first["agent_id"], "sim-1", "{decided}");
    let shown = env.stdout(&["show", run]);
    assert!(shown.contains("### Agent 1 (`sim-1`"), "{shown}");
}

/// Issue 58 item 8: one help style: every command's summary in `moot --help` is one short
/// line that starts with a capital and does not end with a full stop (the details are in the
/// command's own --help).
#[test]
fn every_command_summary_is_one_short_line_in_one_style() {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("moot"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(commands.len() > 15, "{help}");
    for line in commands {
        assert!(line.chars().count() <= 100, "too long: {line:?}");
        let summary = line
            .trim_start()
            .split_once(' ')
            .map_or("", |(_, s)| s.trim());
        assert!(summary.starts_with(char::is_uppercase), "{line:?}");
        assert!(!summary.ends_with('.'), "{line:?}");
    }
}
