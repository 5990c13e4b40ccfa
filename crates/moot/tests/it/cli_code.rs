//! Code answers through the `moot` binary: every distinct program checked in the sandbox with
//! the user's tests, the verdicts stored and shown, and `--require-passing` making failing
//! programs lose, in `ask` and in `decide --run`.

use crate::common;

use common::Env;
use serde_json::Value;

const WRONG: &str = "def add(a, b):\n    return a - b";
const RIGHT: &str = "def add(a, b):\n    return a + b";
const ENDLESS: &str = "def add(a, b):\n    while True:\n        pass";

/// A team of scripted agents: each gives its program in a fenced block, every round.
fn config(env: &Env, programs: &[&str], extra: &str) -> String {
    let mut text =
        format!("[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"code\"\n\n{extra}\n");
    for (i, p) in programs.iter().enumerate() {
        let reply = format!("Here it is:\n```python\n{p}\n```\n");
        text.push_str(&format!(
            "[[agents]]\nid = \"a{i}\"\nbackend = \"scripted\"\nresponses = [{reply:?}]\n\n"
        ));
    }
    env.write("code.toml", &text).display().to_string()
}

fn tests(env: &Env) -> String {
    env.write(
        "test_add.py",
        "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n",
    )
    .display()
    .to_string()
}

/// `moot ask "Write add(a, b)." --config CFG --tests TESTS --json`.
fn ask_with_tests(env: &Env, cfg: &str, tests: &str) -> Value {
    env.json(&[
        "ask",
        "Write add(a, b).",
        "--config",
        cfg,
        "--tests",
        tests,
        "--json",
    ])
}

fn verdicts(v: &Value, program: &str) -> Vec<(String, String)> {
    v["validations"][program]
        .as_array()
        .unwrap_or_else(|| panic!("no checks of {program:?} in {v}"))
        .iter()
        .map(|c| {
            (
                c["check"].as_str().unwrap().to_string(),
                c["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn programs_are_run_with_the_tests_and_failing_ones_can_be_made_to_lose() {
    let env = Env::new();
    let cfg = config(&env, &[WRONG, WRONG, RIGHT], "");
    let tests = tests(&env);
    let q = "Write a function add(a, b) that returns the sum.";
    let v = env.json(&["ask", q, "--config", &cfg, "--tests", &tests, "--json"]);
    // Two agents hold the wrong program: the majority picks it, and its checks say so.
    assert_eq!(v["answer"], WRONG);
    assert_eq!(
        verdicts(&v, WRONG),
        [
            ("syntax".into(), "passed".into()),
            ("tests".into(), "failed".into())
        ]
    );
    assert_eq!(
        verdicts(&v, RIGHT),
        [
            ("syntax".into(), "passed".into()),
            ("tests".into(), "passed".into())
        ]
    );
    // The detail names the assert that failed, with its source line.
    assert_eq!(
        v["validations"][WRONG][1]["detail"],
        "AssertionError: assert add(2, 3) == 5 (line 1)"
    );
    let run = v["run_id"].as_str().unwrap().to_string();

    // The stored run re-decided: as stored, then with failing programs losing.
    let d = env.json(&["decide", "--run", &run, "--rule", "majority-last"]);
    assert_eq!(d["answer"], WRONG);
    let d = env.json(&[
        "decide",
        "--run",
        &run,
        "--rule",
        "majority-last",
        "--require-passing",
    ]);
    assert_eq!(d["answer"], RIGHT);

    // `moot show` names programs in its tables and lists each with its checks.
    let shown = env.stdout(&["show", &run]);
    assert!(shown.contains("answer: **P1**"), "{shown}");
    assert!(
        shown.contains("## Programs checked in the sandbox"),
        "{shown}"
    );
    assert!(
        shown.contains("### P1 — syntax passed")
            && shown.contains("tests failed (AssertionError: assert add(2, 3) == 5 (line 1))"),
        "{shown}"
    );
    assert!(shown.contains(&format!("```text\n{RIGHT}\n```")), "{shown}");
    let shown = env.json(&["show", &run, "--format", "json"]);
    assert_eq!(shown["validations"].as_array().map(Vec::len), Some(4));

    // freemad's transcript shape carries the real checks in its `syntax` and `sandbox`
    // validators.
    let fm = env.json(&["show", &run, "--format", "freemad"]);
    let validators: Vec<&Value> = fm["validation"].as_object().unwrap().values().collect();
    assert_eq!(validators.len(), 2, "{fm}");
    let failing: Vec<&&Value> = validators
        .iter()
        .filter(|v| v["sandbox"]["passed"] == false)
        .collect();
    assert_eq!(failing.len(), 1, "{fm}");
    assert_eq!(
        failing[0]["sandbox"]["errors"][0],
        "failed: AssertionError: assert add(2, 3) == 5 (line 1)"
    );
    assert_eq!(failing[0]["sandbox"]["confidence"], 0.4);
    assert!(validators.iter().all(|v| v["syntax"]["passed"] == true));
    // The winner (the wrong program) passed three of freemad's four validators.
    assert_eq!(fm["metrics"]["validation_pass_rate"], 0.75);

    // Asked with --require-passing, the passing program wins outright.
    let v = env.json(&[
        "ask",
        q,
        "--config",
        &cfg,
        "--tests",
        &tests,
        "--require-passing",
        "--json",
    ]);
    assert_eq!(v["answer"], RIGHT);

    // The text output names programs and marks their verdicts.
    let text = env.stdout(&["ask", q, "--config", &cfg, "--tests", &tests]);
    assert!(
        text.contains(
            "Answer: P1✗ (syntax passed · tests failed (AssertionError: assert add(2, 3) == 5 \
             (line 1)))"
        ),
        "{text}"
    );
    assert!(text.contains("a0 P1✗ · a1 P1✗ · a2 P2✓"), "{text}");
    assert!(text.contains(&format!("```\n{WRONG}\n```")), "{text}");
}

#[test]
fn an_endless_program_is_stopped_and_the_debate_still_ends() {
    let env = Env::new();
    let cfg = config(
        &env,
        &[ENDLESS, RIGHT],
        "[validation]\ntimeout_ms = 1500\nrequire_passing = true\n",
    );
    let tests = tests(&env);
    let started = std::time::Instant::now();
    let v = ask_with_tests(&env, &cfg, &tests);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(
        verdicts(&v, ENDLESS),
        [
            ("syntax".into(), "passed".into()),
            ("tests".into(), "timed-out".into())
        ]
    );
    assert_eq!(v["answer"], RIGHT);
}

#[test]
fn syntax_is_checked_without_tests_and_the_sandbox_can_be_turned_off() {
    let env = Env::new();
    let broken = "def add(a, b)\n    return a + b";
    let cfg = config(&env, &[broken, RIGHT], "");
    let v = env.json(&["ask", "Write add(a, b).", "--config", &cfg, "--json"]);
    assert_eq!(
        verdicts(&v, broken),
        [("syntax".into(), "syntax-error".into())]
    );
    assert_eq!(verdicts(&v, RIGHT), [("syntax".into(), "passed".into())]);

    let cfg = config(&env, &[broken, RIGHT], "[validation]\nsandbox = false\n");
    let v = env.json(&["ask", "Write add(a, b).", "--config", &cfg, "--json"]);
    assert_eq!(v["validations"], serde_json::json!({}));

    // Tests for an answer kind that is not code are refused.
    let tests = tests(&env);
    let err = env.refused(&[
        "ask",
        "What is 2+3?",
        "--answer",
        "numeric",
        "--tests",
        &tests,
    ]);
    assert!(err.contains("--answer code"), "{err}");
}

#[test]
fn a_log_file_records_the_debate_and_its_checks() {
    let env = Env::new();
    let log = env.dir.path().join("logs/moot.log");
    let cfg = config(
        &env,
        &[WRONG, RIGHT],
        &format!(
            "[logging]\nfile = {:?}\nlevel = \"info\"\n",
            log.display().to_string()
        ),
    );
    let tests = tests(&env);
    let v = ask_with_tests(&env, &cfg, &tests);
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<&str> = text
        .lines()
        .map(|l| l.split_once(" [").unwrap().1.split(']').next().unwrap())
        .collect();
    assert_eq!(events.first(), Some(&"run_start"));
    assert_eq!(events.last(), Some(&"run_end"));
    assert_eq!(events.iter().filter(|e| **e == "call").count(), 4, "{text}");
    assert_eq!(
        events.iter().filter(|e| **e == "round_end").count(),
        2,
        "{text}"
    );
    // Every line names its run first: runs that share a log (a benchmark's) stay apart.
    let run = v["run_id"].as_str().unwrap();
    assert!(
        text.lines().all(|l| l.contains(&format!("] run={run} "))),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "WARNING [validation_done] run={run} program=P1 check=tests verdict=failed \
             detail=\"AssertionError: assert add(2, 3) == 5 (line 1)\""
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "INFO [validation_done] run={run} program=P2 check=tests verdict=passed"
        )),
        "{text}"
    );
    // Info does not carry responses; the question is quoted.
    assert!(!text.contains("[call_output]"));
    assert!(text.contains("question=\"Write add(a, b).\""), "{text}");

    // Structured: JSON lines whose message is the event as a JSON string (freemad's layout),
    // appended to the same file; debug adds each response.
    let cfg = config(
        &env,
        &[RIGHT],
        &format!(
            "[logging]\nfile = {:?}\nlevel = \"debug\"\nstructured = true\n",
            log.display().to_string()
        ),
    );
    env.json(&["ask", "Write add(a, b).", "--config", &cfg, "--json"]);
    let text = std::fs::read_to_string(&log).unwrap();
    let structured: Vec<Value> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!structured.is_empty());
    let messages: Vec<Value> = structured
        .iter()
        .map(|l| serde_json::from_str(l["message"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(messages[0]["event"], "run_start");
    let output = messages
        .iter()
        .find(|m| m["event"] == "call_output")
        .unwrap();
    assert!(output["text"].as_str().unwrap().contains("```python"));
    assert!(structured.iter().any(|l| l["level"] == "DEBUG"));
}

#[test]
fn humaneval_is_graded_by_its_tests() {
    let env = Env::new();
    // Weak simulated agents, so that some chosen programs fail their tests.
    let weak = "sim = { accuracy = 0.3 }\n";
    let cfg = env.write(
        "weak.toml",
        &format!(
            "[[agents]]\nid = \"a\"\nbackend = \"sim\"\n{weak}\n[[agents]]\nid = \"b\"\nbackend = \"sim\"\n{weak}\n[[agents]]\nid = \"c\"\nbackend = \"sim\"\n{weak}"
        ),
    );
    let cfg = cfg.display().to_string();
    let report = env.json(&[
        "bench",
        "--sim",
        "--config",
        &cfg,
        "--dataset",
        "humaneval",
        "--limit",
        "6",
        "--protocol",
        "som",
        "--run",
        "he",
        "--json",
    ]);
    assert_eq!(report["graded_by_tests"], 6);
    let correct = report["protocols"][0]["correct"].as_u64().unwrap();
    // Each debate's chosen program counts as right exactly when its tests ran and every check
    // passed.
    let dataset =
        moot_eval::load(&"humaneval".parse().unwrap(), std::path::Path::new(".")).unwrap();
    let drawn = moot_eval::subsample(&dataset.items, Some(6), 41);
    let mut passed = 0;
    for item in &drawn {
        let shown = env.json(&["show", &format!("he/som/{}", item.id), "--format", "json"]);
        let answer = shown["run"]["answer"].as_str().unwrap().to_string();
        let checks: Vec<&Value> = shown["validations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["answer"] == answer.as_str())
            .collect();
        assert!(
            !checks.is_empty(),
            "{}: the chosen program was checked",
            item.id
        );
        if checks.iter().any(|c| c["check"] == "tests")
            && checks.iter().all(|c| c["verdict"] == "passed")
        {
            passed += 1;
        }
    }
    assert_eq!(passed, correct);
    assert!(correct < 6, "some chosen programs fail: {report}");
    let text = env.stdout(&["report", "he"]);
    assert!(
        text.contains("Accuracy on 6 code items is pass@1"),
        "{text}"
    );
}

#[test]
fn tests_or_require_passing_with_the_sandbox_off_are_refused() {
    let env = Env::new();
    let off = config(&env, &[RIGHT], "[validation]\nsandbox = false\n");
    let tests = tests(&env);
    let err = env.refused(&[
        "ask",
        "Write add(a, b).",
        "--config",
        &off,
        "--tests",
        &tests,
    ]);
    assert!(
        err.contains("validation.sandbox = false") && err.contains("--tests"),
        "{err}"
    );
    let err = env.refused(&[
        "ask",
        "Write add(a, b).",
        "--config",
        &off,
        "--require-passing",
    ]);
    assert!(err.contains("validation.require_passing"), "{err}");
    let in_config = config(
        &env,
        &[RIGHT],
        "[validation]\nsandbox = false\nrequire_passing = true\n",
    );
    let err = env.refused(&["ask", "Write add(a, b).", "--config", &in_config]);
    assert!(err.contains("validation.require_passing"), "{err}");
    // A benchmark of a dataset with tests.
    let sim_off = env.write(
        "sim-off.toml",
        "[validation]\nsandbox = false\n\n[[agents]]\nid = \"a\"\nbackend = \"sim\"\n",
    );
    let err = env.refused(&[
        "bench",
        "--sim",
        "--config",
        &sim_off.display().to_string(),
        "--dataset",
        "humaneval",
        "--limit",
        "2",
        "--protocol",
        "cot",
        "--run",
        "off",
    ]);
    assert!(
        err.contains("validation.sandbox = false") && err.contains("humaneval"),
        "{err}"
    );
}

/// A program that forges its verdict under the single-process grader of moot 0.1 (it finds the
/// bootstrap's reporting function through the garbage collector).
const FORGED: &str = "import gc, os\nfor o in gc.get_objects():\n    if callable(o) and getattr(o, '__name__', '') == 'say':\n        o('finished')\nos._exit(0)";

#[test]
fn regrade_replaces_a_forged_stored_verdict_and_lists_it() {
    let env = Env::new();
    let cfg = config(&env, &[FORGED], "");
    let tests = tests(&env);
    let v = ask_with_tests(&env, &cfg, &tests);
    let run = v["run_id"].as_str().unwrap().to_string();
    assert_eq!(
        verdicts(&v, FORGED),
        [
            ("syntax".into(), "passed".into()),
            ("tests".into(), "exited-early".into())
        ]
    );
    // The store as the old grader left it: the forged program "passed".
    let store = env.store();
    let edit = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\ndb.execute(\"UPDATE validations SET verdict = 'passed', detail = '' WHERE check_kind = 'tests'\")\ndb.commit()\n",
        ])
        .arg(&store)
        .status()
        .unwrap();
    assert!(edit.success());

    let out = env.json(&["regrade", &run, "--json"]);
    assert_eq!(out["debates"], 1);
    assert_eq!(out["programs"], 1);
    let changed = out["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{out}");
    assert_eq!(changed[0]["program"], FORGED);
    assert_eq!(changed[0]["before"]["verdict"], "passed");
    assert_eq!(changed[0]["after"]["verdict"], "exited-early");
    let shown = env.json(&["show", &run, "--format", "json"]);
    let stored: Vec<&Value> = shown["validations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"] == "tests")
        .collect();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["verdict"], "exited-early");
    // Nothing changes the second time.
    let text = env.stdout(&["regrade", &run]);
    assert!(
        text.contains("regraded 1 programs of 1 debates: 0 verdicts changed"),
        "{text}"
    );
    let err = env.refused(&["regrade", "no-such-run"]);
    assert!(err.contains("no run or benchmark named"), "{err}");
}

/// Issue 58 item 9: two formattings of one program, which the rules count as one answer, are
/// one program everywhere: one label in `ask`'s output and `moot show`, one sandbox run (its
/// checks stored once), and the other text shares its verdicts.
#[test]
fn formattings_the_rules_count_as_one_program_are_shown_and_checked_as_one() {
    let env = Env::new();
    let tight = "def add(a, b):\n    return a+b";
    let cfg = config(&env, &[RIGHT, tight, RIGHT], "");
    let tests = tests(&env);
    let v = ask_with_tests(&env, &cfg, &tests);
    assert_eq!(v["answer"], RIGHT, "{v}");
    assert_eq!(verdicts(&v, RIGHT), verdicts(&v, tight), "{v}");
    let run = v["run_id"].as_str().unwrap();
    let text = env.stdout(&[
        "ask",
        "Write add(a, b).",
        "--config",
        &cfg,
        "--tests",
        &tests,
    ]);
    assert!(text.contains("P1"), "{text}");
    assert!(!text.contains("P2"), "one program, one label: {text}");
    let shown = env.stdout(&["show", run]);
    assert!(!shown.contains("P2"), "one program, one label: {shown}");
    assert_eq!(
        shown.matches("### P").count(),
        1,
        "one program in the sandbox section: {shown}"
    );
    let stored = common::sqlite_text(
        &env.store(),
        &format!(
            "SELECT CAST(COUNT(DISTINCT answer) AS TEXT) FROM validations WHERE run_id = '{run}'"
        ),
    );
    assert_eq!(stored.as_deref(), Some("1"), "checked once");
}
