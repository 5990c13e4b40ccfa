//! `moot bench` on dataset files in the shapes Hugging Face exports them (issue 47): each loads
//! with one `--dataset` string and scores as its gold says; GSM-Plus's unscorable items are left
//! out by count with `--skip-invalid`. Fixtures are written here for the test.

use crate::common;

use common::Env;
use serde_json::Value;

/// Three simulated agents that always answer the gold: every debate's decided answer is the
/// gold as the loader read it, so the stored answers show how each gold was read.
const TRUTHFUL: &str = "[[agents]]\nid = \"a\"\nbackend = \"sim\"\nsim = { accuracy = 1.0 }\n\n\
[[agents]]\nid = \"b\"\nbackend = \"sim\"\nsim = { accuracy = 1.0 }\n\n\
[[agents]]\nid = \"c\"\nbackend = \"sim\"\nsim = { accuracy = 1.0 }\n";

/// Runs a benchmark of `dataset` under som and returns its JSON report and stderr.
fn bench(env: &Env, dataset: &str, name: &str, extra: &[&str]) -> (Value, String) {
    let config = env.write("truthful.toml", TRUTHFUL);
    let mut args = vec![
        "bench",
        "--dataset",
        dataset,
        "--protocol",
        "som",
        "--rounds",
        "1",
        "--config",
        config.to_str().unwrap(),
        "--name",
        name,
        "--json",
    ];
    args.extend(extra);
    let out = env.moot().args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{dataset}: {stderr}");
    let report = serde_json::from_slice(&out.stdout).unwrap();
    (report, stderr)
}

/// The decided answer of `name`'s som debate on `item`.
fn decided(env: &Env, name: &str, item: &str) -> String {
    let v = env.json(&["show", &format!("{name}/som/{item}"), "--format", "json"]);
    let rule = v["run"]["rule"].as_str().unwrap();
    v["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == rule)
        .and_then(|d| d["answer"].as_str())
        .unwrap_or_else(|| panic!("{name}/{item}: no answer in {v}"))
        .to_string()
}

fn accuracy(report: &Value) -> f64 {
    report["protocols"][0]["accuracy"].as_f64().unwrap()
}

#[test]
fn arc_commonsenseqa_and_mmlu_shapes_score_as_their_golds_say() {
    let env = Env::new();
    let arc = env.write(
        "arc.jsonl",
        r#"{"id": "arc-1", "question": "Which gas do plants take in?", "choices": {"text": ["oxygen", "carbon dioxide", "helium", "neon"], "label": ["A", "B", "C", "D"]}, "answerKey": "B"}
{"id": "arc-2", "question": "Which is a mammal?", "choices": {"text": ["trout", "frog", "whale", "newt"], "label": ["1", "2", "3", "4"]}, "answerKey": "3"}
"#,
    );
    let dataset = format!(
        "jsonl:{}?kind=choice&options=choices.text&labels=choices.label&answer=answerKey&id=id",
        arc.display()
    );
    let (report, _) = bench(&env, &dataset, "arc", &[]);
    assert_eq!(accuracy(&report), 1.0);
    assert_eq!(decided(&env, "arc", "arc-1"), "B");
    assert_eq!(decided(&env, "arc", "arc-2"), "C");

    let csqa = env.write(
        "csqa.jsonl",
        r#"{"id": "cs-1", "question": "Where is milk kept cold?", "question_concept": "milk", "choices": {"label": ["A", "B", "C", "D", "E"], "text": ["oven", "fridge", "garden", "attic", "car"]}, "answerKey": "B"}
{"id": "cs-2", "question": "What has keys but opens no lock?", "question_concept": "keys", "choices": {"label": ["A", "B", "C", "D", "E"], "text": ["door", "safe", "box", "car", "piano"]}, "answerKey": "E"}
"#,
    );
    let dataset = format!(
        "jsonl:{}?kind=choice&options=choices.text&labels=choices.label&answer=answerKey&id=id",
        csqa.display()
    );
    bench(&env, &dataset, "csqa", &[]);
    assert_eq!(decided(&env, "csqa", "cs-2"), "E");

    let mmlu = env.write(
        "mmlu.jsonl",
        r#"{"question": "2 + 2 =", "subject": "elementary_mathematics", "choices": ["3", "4", "5", "22"], "answer": 1}
{"question": "Which is a noble gas?", "subject": "chemistry", "choices": ["argon", "iron", "salt", "wood"], "answer": 0}
"#,
    );
    let dataset = format!("jsonl:{}?kind=choice&options=choices", mmlu.display());
    let (report, stderr) = bench(&env, &dataset, "mmlu", &[]);
    assert_eq!(accuracy(&report), 1.0);
    assert_eq!(decided(&env, "mmlu", "mmlu/0"), "B");
    assert_eq!(decided(&env, "mmlu", "mmlu/1"), "A");
    // The index was inferred, and the user is told so.
    assert!(
        stderr.contains("2 gold answers of field `answer` read as 0-based indexes into `choices`"),
        "{stderr}"
    );
}

#[test]
fn gsm_plus_unscorable_items_are_left_out_by_count_and_listed_by_id() {
    let env = Env::new();
    let file = env.write(
        "gsmplus.jsonl",
        r#"{"question": "Tom has 3 apples and buys 4. How many now?", "answer": "7", "perturbation_type": "numerical substitution"}
{"question": "Tom has some apples and buys 4. How many now?", "answer": "None", "perturbation_type": "critical thinking"}
{"question": "Ann has 10 pens and loses 2. How many now?", "answer": "8", "perturbation_type": "distraction insertion"}
"#,
    );
    let dataset = format!("jsonl:{}?kind=numeric", file.display());
    // Without the flag: refused, naming the line, the field and the value, and the way on.
    let err = env.refused(&["bench", "--dataset", &dataset, "--protocol", "som", "--sim"]);
    assert!(
        err.contains("line 2: gold answer \"None\" from field `answer` does not parse as numeric")
            && err.contains("--skip-invalid leaves such items out"),
        "{err}"
    );
    let (report, stderr) = bench(&env, &dataset, "plus", &["--skip-invalid"]);
    assert!(
        stderr.contains("1 of 3 items left out: 1 gold does not parse as numeric"),
        "{stderr}"
    );
    assert_eq!(report["protocols"][0]["items"], 2);
    let left = &report["benches"][0]["left_out"];
    assert_eq!(left["of"], 3);
    assert_eq!(left["items"][0]["id"], "gsmplus/1");
    assert_eq!(
        left["items"][0]["problem"],
        "gold does not parse as numeric"
    );
    // The report read back from the store says the same, in its header.
    let markdown = env.stdout(&["report", "plus"]);
    assert!(
        markdown
            .contains("Of its dataset, 1 of 3 items left out: 1 gold does not parse as numeric"),
        "{markdown}"
    );
    assert_eq!(
        env.json(&["report", "plus", "--format", "json"])["benches"][0]["left_out"],
        *left
    );
    // Resumed, it reads the dataset as it started: with the items left out again.
    let resumed = env.moot().args(["resume", "plus"]).output().unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    // A file with nothing left to score is an error even so.
    let none = env.write(
        "none.jsonl",
        "{\"question\": \"q\", \"answer\": \"None\"}\n",
    );
    let err = env.refused(&[
        "bench",
        "--dataset",
        &format!("jsonl:{}?kind=numeric", none.display()),
        "--protocol",
        "som",
        "--sim",
        "--skip-invalid",
    ]);
    assert!(err.contains("every item was left out (1)"), "{err}");
}

/// A dataset file is not the user's: a record's keys and a CSV header reach the error that names
/// them, but never the terminal raw (an escape sequence there would clear the screen or retitle
/// the window), and a record with thousands of keys does not make a message of thousands.
#[test]
fn errors_quoting_a_dataset_file_reach_the_terminal_escaped_and_bounded() {
    let env = Env::new();
    let mut keys: Vec<String> = (0..500).map(|i| format!("\"k{i}\": 1")).collect();
    keys.push("\"\\u001b]0;owned\\u0007\\u001b[2J\": 2".to_string());
    let file = env.write(
        "keys.jsonl",
        &format!(
            "{{\"question\": \"q\", \"choices\": {{{}}}, \"answer\": \"A\"}}\n",
            keys.join(", ")
        ),
    );
    let err = env.refused(&[
        "bench",
        "--dataset",
        &format!("jsonl:{}?kind=choice&options=choices.text", file.display()),
        "--protocol",
        "som",
        "--sim",
    ]);
    assert!(
        err.contains("`choices` has no field `text`; its fields: k0, k1,")
            && err.contains("… (501 in all)"),
        "{err}"
    );
    assert!(err.len() < 1000, "{} bytes: {err}", err.len());
    let csv = env.write("bad.csv", "question,\u{1b}[2Janswer\nq,1\n");
    let err = env.refused(&[
        "bench",
        "--dataset",
        &format!("csv:{}?kind=numeric", csv.display()),
        "--protocol",
        "som",
        "--sim",
    ]);
    assert!(err.contains("no column `answer`"), "{err}");
    assert!(
        !err.contains('\u{1b}') && err.contains("\\u{1b}[2Janswer"),
        "{err:?}"
    );
}
