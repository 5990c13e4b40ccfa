//! Drives the `moot` binary: `extract` and `decide` (trajectory form).

use assert_cmd::Command;
use serde_json::{json, Value};

fn moot() -> Command {
    Command::cargo_bin("moot").expect("binary built")
}

fn run_json(args: &[&str], stdin: &str) -> Value {
    let out = moot()
        .args(args)
        .write_stdin(stdin)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("stdout is JSON")
}

fn run_error(args: &[&str], stdin: &str) -> String {
    let out = moot()
        .args(args)
        .write_stdin(stdin)
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(out.stdout.is_empty(), "nothing on stdout on error");
    let err = String::from_utf8(out.stderr).expect("utf-8");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one-line error, got {err:?}"
    );
    err
}

#[test]
fn extract_numeric_with_gold() {
    let v = run_json(
        &["extract", "--kind", "numeric", "--gold", "1250.5"],
        "**Answer:** $1,250.50\n",
    );
    assert_eq!(v, json!({"answer": "1250.5", "correct": true}));
    let v = run_json(
        &["extract", "--kind", "numeric", "--gold", "025"],
        "So m+n = 25.\n\\boxed{25}",
    );
    assert_eq!(v, json!({"answer": "25", "correct": true}));
}

#[test]
fn extract_without_gold_has_no_correct_field() {
    let v = run_json(&["extract", "--kind", "numeric"], "#### 18");
    assert_eq!(v, json!({"answer": "18"}));
}

#[test]
fn extract_unparsed_is_null_and_wrong() {
    let v = run_json(
        &["extract", "--kind", "numeric", "--gold", "7"],
        "I am not sure how to approach this.",
    );
    assert_eq!(v, json!({"answer": null, "correct": false}));
}

#[test]
fn extract_choice_by_option_text() {
    let v = run_json(
        &[
            "extract",
            "--kind",
            "choice",
            "--options",
            "Paris,London,Berlin",
            "--gold",
            "B",
        ],
        "The capital of the UK is London.\nThe answer is London.",
    );
    assert_eq!(v, json!({"answer": "B", "correct": true}));
}

#[test]
fn extract_math_yes_no_text() {
    let v = run_json(
        &["extract", "--kind", "math", "--gold", "\\frac{1}{2}"],
        "so $\\boxed{\\dfrac{1}{2}}$",
    );
    assert_eq!(v["correct"], json!(true));
    let v = run_json(
        &["extract", "--kind", "math", "--gold", "0.5"],
        "\\boxed{\\frac12}",
    );
    assert_eq!(v["correct"], json!(true));
    let v = run_json(
        &["extract", "--kind", "yes-no", "--gold", "false"],
        "No, because it cannot.",
    );
    assert_eq!(v, json!({"answer": "no", "correct": true}));
    let v = run_json(
        &["extract", "--kind", "text", "--gold", "valid"],
        "The argument is deductively valid.\nThe answer is: **Valid**.",
    );
    assert_eq!(v, json!({"answer": "valid", "correct": true}));
}

#[test]
fn extract_bad_input_is_exit_2_with_one_line() {
    let err = run_error(&["extract", "--kind", "number"], "1");
    assert!(err.contains("number"), "{err}");
    let err = run_error(&["extract", "--kind", "numeric", "--gold", "seven"], "7");
    assert!(err.contains("--gold"), "{err}");
    let err = run_error(&["extract", "--kind", "numeric", "--options", "a,b"], "7");
    assert!(err.contains("--choices"), "{err}");
}

fn decide(args: &[&str], trajectory: &Value) -> Value {
    let mut all = vec!["decide", "--trajectory", "-"];
    all.extend_from_slice(args);
    run_json(&all, &trajectory.to_string())
}

#[test]
fn decide_free_mad_and_majority_disagree() {
    // Hand computed in moot-core: A = 80, B = 20 under FREE-MAD; B wins the last round.
    let t = json!({"answers": [["A", "A", "A"], ["A", "A", "B"], ["A", "A", "B"]]});
    let v = decide(&["--rule", "free-mad"], &t);
    assert_eq!(v["rule"], "free-mad");
    assert_eq!(v["answer"], "A");
    assert!((v["scores"]["A"].as_f64().unwrap() - 80.0).abs() < 1e-9);
    assert!((v["scores"]["B"].as_f64().unwrap() - 20.0).abs() < 1e-9);
    assert!(v["explanation"].as_array().unwrap().len() >= 9);
    let v = decide(&["--rule", "majority-last"], &t);
    assert_eq!(v["answer"], "B");
    assert_eq!(v["scores"], json!({"A": 1.0, "B": 2.0}));
}

#[test]
fn decide_all_lists_every_rule() {
    let t = json!({"answers": [["7", null], ["8", "8"], [null, {"missing": true}]]});
    let v = decide(&["--rule", "all", "--kind", "numeric"], &t);
    let rules: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        vec![
            "majority-last",
            "free-mad",
            "max-consistency",
            "svr",
            "sid-et",
            "verdict"
        ]
    );
    for d in v.as_array().unwrap() {
        // svr's fallback vote: agent 1 has no readable post-debate answer and votes its
        // pre-debate 7, agent 2 votes 8; the tie goes to the first seen.
        let expected = if d["rule"] == "svr" { "7" } else { "8" };
        assert_eq!(d["answer"], expected, "{d}");
    }
}

#[test]
fn decide_numeric_kind_merges_equivalent_answers() {
    let t = json!({"answers": [["0.5", "1/2"], ["3", "3"], ["0.50", "0.5"]]});
    let v = decide(&["--rule", "majority-last", "--kind", "numeric"], &t);
    assert_eq!(v["answer"], "0.5");
    assert_eq!(v["scores"], json!({"0.5": 2.0, "3": 1.0}));
    // Without a kind the strings are compared exactly.
    let v = decide(&["--rule", "majority-last"], &t);
    assert_eq!(v["scores"], json!({"1/2": 1.0, "3": 1.0, "0.5": 1.0}));
}

#[test]
fn decide_weights_normalize_and_ties() {
    let t = json!({"answers": [["A", "A"], ["B", "B"], ["B", "C"]]});
    let v = decide(&["--rule", "free-mad", "--normalize"], &t);
    assert_eq!(v["answer"], "A");
    let v = decide(&["--rule", "free-mad", "--weights", "1,0,0,0"], &t);
    assert_eq!(v["answer"], "B");
    let tie = json!({"answers": [["A", "A"], ["B", "B"]]});
    let v = decide(&["--rule", "free-mad"], &tie);
    assert_eq!(v["answer"], "A");
    assert_eq!(v["tie"]["candidates"], json!(["A", "B"]));
    let a = decide(
        &["--rule", "free-mad", "--tie-break", "random", "--seed", "9"],
        &tie,
    );
    let b = decide(
        &["--rule", "free-mad", "--tie-break", "random", "--seed", "9"],
        &tie,
    );
    assert_eq!(a, b);
}

#[test]
fn decide_reads_a_file() {
    let dir = std::env::temp_dir().join(format!("moot-decide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.json");
    std::fs::write(&path, r#"{"answers": [["x"], ["y"], ["y"]]}"#).unwrap();
    let out = moot()
        .args(["decide", "--rule", "majority-last", "--trajectory"])
        .arg(&path)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["answer"], "y");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn decide_malformed_input_is_exit_2_naming_the_problem() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            r#"{"answers": [["A", "B"], ["A"]]}"#,
            &[],
            // Agents are named from 1: the second row is agent 2.
            "agent 2 has 1 round but agent 1 has 2 (rows",
        ),
        (r#"{"answers": []}"#, &[], "empty"),
        (r#"{"answers": [[]]}"#, &[], "no rounds"),
        (r#"{"answers": [["A", 3]]}"#, &[], "answers[0][1]"),
        (r#"{"answers": ["A"]}"#, &[], "answers[0]"),
        (r#"{"answer": [["A"]]}"#, &[], "unknown key"),
        (r#"[["A"]]"#, &[], "object"),
        ("not json", &[], "not valid JSON"),
        (
            r#"{"answers": [["seven"]]}"#,
            &["--kind", "numeric"],
            "answers[0][0]",
        ),
        (
            r#"{"answers": [["A"]]}"#,
            &["--weights", "1,2,3"],
            "--weights",
        ),
        (
            r#"{"answers": [["A"]]}"#,
            &["--weights", "1,2,-3,4"],
            "--weights",
        ),
        (r#"{"answers": [["A"]]}"#, &["--rule", "vote"], "--rule"),
    ];
    for (input, extra, needle) in cases {
        let mut args = vec!["decide", "--trajectory", "-"];
        args.extend_from_slice(extra);
        let err = run_error(&args, input);
        assert!(
            err.contains(needle),
            "{input}: expected {needle:?} in {err:?}"
        );
    }
    let err = run_error(&["decide", "--trajectory", "/nonexistent/t.json"], "");
    assert!(err.contains("/nonexistent/t.json"), "{err}");
}
