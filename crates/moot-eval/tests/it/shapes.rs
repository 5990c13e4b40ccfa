//! Datasets in the shapes researchers have them (issue 47): Hugging Face's nested options, golds
//! given as a label, an index or an option's text, GSM-Plus's unscorable items, and Parquet.
//! Every fixture is written here for the test, in the shape of the dataset it is named after;
//! none is copied from a dataset.

use std::fs;
use std::path::Path;

use moot_eval::{load, load_with, DatasetError, DatasetSpec, LoadOptions};

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    fs::write(&path, text).expect("write");
    path.display().to_string()
}

fn spec(s: &str) -> DatasetSpec {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Each item's id and gold, as loaded.
fn golds(spec_text: &str) -> Vec<(String, String)> {
    let d = load(&spec(spec_text), Path::new("/unused")).unwrap_or_else(|e| panic!("{e}"));
    d.items.into_iter().map(|i| (i.id, i.gold)).collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

const ARC: &str = r#"{"id": "Mercury_1", "question": "Which gas do plants take in?", "choices": {"text": ["oxygen", "carbon dioxide", "helium", "neon"], "label": ["A", "B", "C", "D"]}, "answerKey": "B"}
{"id": "Mercury_2", "question": "Which is a mammal?", "choices": {"text": ["trout", "frog", "whale", "newt"], "label": ["1", "2", "3", "4"]}, "answerKey": "3"}
"#;

#[test]
fn arc_nested_options_and_labels() {
    let dir = tempfile::tempdir().expect("dir");
    let file = write(dir.path(), "arc.jsonl", ARC);
    let s = format!(
        "jsonl:{file}?kind=choice&options=choices.text&labels=choices.label&answer=answerKey&id=id"
    );
    assert_eq!(golds(&s), pairs(&[("Mercury_1", "B"), ("Mercury_2", "C")]));
    let d = load(&spec(&s), Path::new("/unused")).expect("loaded");
    assert_eq!(d.items[1].choices, ["trout", "frog", "whale", "newt"]);
    assert!(d.notes.is_empty(), "{:?}", d.notes);
}

#[test]
fn commonsenseqa_labels_and_an_empty_key() {
    let dir = tempfile::tempdir().expect("dir");
    let file = write(
        dir.path(),
        "csqa.jsonl",
        r#"{"id": "c1", "question": "Where do you keep milk cold?", "question_concept": "milk", "choices": {"label": ["A", "B", "C", "D", "E"], "text": ["oven", "fridge", "garden", "attic", "car"]}, "answerKey": "B"}
{"id": "c2", "question": "What has keys but no locks?", "question_concept": "keys", "choices": {"label": ["A", "B", "C", "D", "E"], "text": ["door", "piano", "box", "safe", "car"]}, "answerKey": ""}
"#,
    );
    let s = format!(
        "jsonl:{file}?kind=choice&options=choices.text&labels=choices.label&answer=answerKey&id=id"
    );
    // CommonsenseQA's test split has no keys: an empty key names no option.
    let err = load(&spec(&s), Path::new("/unused")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{file} line 2: gold \"\" from field `answerKey` is none of the labels (labels in \
             `choices.label`: A, B, C, D, E)"
        )
    );
    let d = load_with(
        &spec(&s),
        Path::new("/unused"),
        LoadOptions { skip_invalid: true },
    )
    .expect("loaded");
    assert_eq!(d.items.len(), 1);
    assert_eq!(d.items[0].gold, "B");
    let left = d.left_out.expect("left out");
    assert_eq!((left.of, left.items.len()), (2, 1));
    assert_eq!(left.items[0].id, "c2");
    assert_eq!(left.items[0].problem, "gold is none of the labels");
}

#[test]
fn mmlu_as_cais_ships_it_reads_the_index() {
    let dir = tempfile::tempdir().expect("dir");
    let file = write(
        dir.path(),
        "mmlu.jsonl",
        r#"{"question": "2 + 2 =", "subject": "elementary_mathematics", "choices": ["3", "4", "5", "22"], "answer": 1}
{"question": "Which is a noble gas?", "subject": "chemistry", "choices": ["argon", "iron", "salt", "wood"], "answer": 0}
{"question": "Last one?", "subject": "x", "choices": ["a", "b", "c", "d"], "answer": 3}
"#,
    );
    // Detected: a whole number where the options are a list; said in a note.
    let s = format!("jsonl:{file}?kind=choice&options=choices");
    assert_eq!(
        golds(&s),
        pairs(&[("mmlu/0", "B"), ("mmlu/1", "A"), ("mmlu/2", "D")])
    );
    let d = load(&spec(&s), Path::new("/unused")).expect("loaded");
    assert_eq!(d.notes.len(), 1, "{:?}", d.notes);
    assert!(
        d.notes[0]
            .starts_with("3 gold answers of field `answer` read as 0-based indexes into `choices`"),
        "{:?}",
        d.notes
    );
    // Asked for: the same, and no note.
    let d = load(
        &spec(&format!("{s}&answer_index=true")),
        Path::new("/unused"),
    )
    .expect("loaded");
    assert!(d.notes.is_empty());
    assert_eq!(d.items[0].gold, "B");
    // Refused: the numbers are then read as letters, which they are not.
    let err = load(
        &spec(&format!("{s}&answer_index=false")),
        Path::new("/unused"),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("line 1: gold answer \"1\" from field `answer` does not parse as choice"),
        "{err}"
    );
    // An index past the options.
    let bad = write(
        dir.path(),
        "past.jsonl",
        "{\"question\": \"q\", \"choices\": [\"a\", \"b\"], \"answer\": 2}\n",
    );
    let err = load(
        &spec(&format!("jsonl:{bad}?kind=choice&options=choices")),
        Path::new("/unused"),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{bad} line 1: gold \"2\" from field `answer` is not an index of the options (2 \
             options, indexed from 0)"
        )
    );
}

#[test]
fn a_gold_may_be_an_options_own_text() {
    let dir = tempfile::tempdir().expect("dir");
    let file = write(
        dir.path(),
        "text.jsonl",
        r#"{"question": "Capital of France?", "options": ["Berlin", "Paris", "Rome"], "answer": "paris"}
{"question": "Letters stay letters", "options": ["A", "B", "C"], "answer": "C"}
"#,
    );
    assert_eq!(
        golds(&format!("jsonl:{file}?kind=choice&options=options")),
        pairs(&[("text/0", "B"), ("text/1", "C")])
    );
}

#[test]
fn gsm_plus_none_golds_are_left_out_by_count() {
    let dir = tempfile::tempdir().expect("dir");
    let file = write(
        dir.path(),
        "gsmplus.jsonl",
        r#"{"question": "Tom has 3 apples and buys 4. How many?", "answer": "7", "perturbation": "numerical substitution"}
{"question": "Tom has apples and buys 4. How many?", "answer": "None", "perturbation": "critical thinking"}
{"question": "Ann has 10 pens and loses 2. How many?", "answer": "8", "perturbation": "distraction insertion"}
{"question": "Ann has pens and loses some. How many?", "answer": "None", "perturbation": "critical thinking"}
"#,
    );
    let s = format!("jsonl:{file}?kind=numeric");
    let err = load(&spec(&s), Path::new("/unused")).unwrap_err();
    assert!(matches!(err, DatasetError::Gold { .. }), "{err:?}");
    assert!(err.to_string().contains("line 2"), "{err}");
    let d = load_with(
        &spec(&s),
        Path::new("/unused"),
        LoadOptions { skip_invalid: true },
    )
    .expect("loaded");
    // Ids count records, so the items keep the ids they have in the whole file.
    let ids: Vec<&str> = d.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["gsmplus/0", "gsmplus/2"]);
    let left = d.left_out.expect("left out");
    assert_eq!(left.of, 4);
    let left_ids: Vec<&str> = left.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(left_ids, ["gsmplus/1", "gsmplus/3"]);
    assert_eq!(left.by_problem(), [("gold does not parse as numeric", 2)]);
    assert_eq!(
        moot_eval::report::left_out_summary(&left),
        "2 of 4 items left out: 2 gold does not parse as numeric"
    );
    assert!(
        left.items[0].place.ends_with("gsmplus.jsonl line 2"),
        "{:?}",
        left.items[0]
    );
}

#[test]
fn a_file_left_out_whole_is_refused_and_file_faults_are_not_skipped() {
    let dir = tempfile::tempdir().expect("dir");
    let none = write(
        dir.path(),
        "none.jsonl",
        "{\"question\": \"q\", \"answer\": \"None\"}\n{\"question\": \"r\", \"answer\": \"n/a\"}\n",
    );
    let skip = LoadOptions { skip_invalid: true };
    let err = load_with(
        &spec(&format!("jsonl:{none}?kind=numeric")),
        Path::new("/u"),
        skip,
    )
    .unwrap_err();
    assert!(
        matches!(err, DatasetError::AllLeftOut { count: 2, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("every item was left out (2)"),
        "{err}"
    );
    // Bad JSON and repeated ids are the file's fault: never left out.
    let broken = write(
        dir.path(),
        "broken.jsonl",
        "{\"question\": \"q\", \"answer\": 1}\n{oops\n",
    );
    let err = load_with(
        &spec(&format!("jsonl:{broken}?kind=numeric")),
        Path::new("/u"),
        skip,
    )
    .unwrap_err();
    assert!(err.to_string().contains("line 2: invalid JSON"), "{err}");
    let twice = write(
        dir.path(),
        "twice.jsonl",
        "{\"id\": \"a\", \"question\": \"q\", \"answer\": 1}\n{\"id\": \"a\", \"question\": \"r\", \"answer\": 2}\n",
    );
    let err = load_with(
        &spec(&format!("jsonl:{twice}?kind=numeric&id=id")),
        Path::new("/u"),
        skip,
    )
    .unwrap_err();
    assert!(matches!(err, DatasetError::DuplicateId { .. }), "{err:?}");
}

#[test]
fn a_missing_nested_field_names_the_path_the_line_and_what_is_there() {
    let dir = tempfile::tempdir().expect("dir");
    let file = write(dir.path(), "arc.jsonl", ARC);
    let err = load(
        &spec(&format!(
            "jsonl:{file}?kind=choice&options=choices.txt&answer=answerKey"
        )),
        Path::new("/unused"),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{file} line 1: missing field `choices.txt` (`choices` has no field `txt`; its \
             fields: text, label)"
        )
    );
    let err = load(
        &spec(&format!(
            "jsonl:{file}?kind=choice&options=choice.text&answer=answerKey"
        )),
        Path::new("/unused"),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("missing field `choice.text` (no field `choice`; fields: "),
        "{err}"
    );
    let err = load(
        &spec(&format!(
            "jsonl:{file}?kind=choice&options=choices.text.x&answer=answerKey"
        )),
        Path::new("/unused"),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains(
            "(`choices.text` is a list: step into it with a number (`choices.text.0`), not `x`)"
        ),
        "{err}"
    );
    // A list entry by number, and a key that holds a dot itself.
    let odd = write(
        dir.path(),
        "odd.jsonl",
        r#"{"q": {"parts": ["What is 6 * 7?", "ignored"]}, "gold.value": 42}
"#,
    );
    assert_eq!(
        golds(&format!(
            "jsonl:{odd}?kind=numeric&question=q.parts.0&answer=gold.value"
        )),
        pairs(&[("odd/0", "42")])
    );
    let d = load(
        &spec(&format!(
            "jsonl:{odd}?kind=numeric&question=q.parts.0&answer=gold.value"
        )),
        Path::new("/unused"),
    )
    .expect("loaded");
    assert_eq!(d.items[0].question, "What is 6 * 7?");
}

/// The error of loading `lines` (JSONL) as ARC writes its choices: texts in `choices.text`,
/// labels in `choices.label`, the gold in `answerKey`.
fn arc_refusal(lines: &str) -> String {
    let dir = tempfile::tempdir().expect("dir");
    let file = write(dir.path(), "arc.jsonl", lines);
    load(
        &spec(&format!(
            "jsonl:{file}?kind=choice&options=choices.text&labels=choices.label&answer=answerKey"
        )),
        Path::new("/unused"),
    )
    .unwrap_err()
    .to_string()
}

#[test]
fn labels_must_match_the_options_one_to_one() {
    let err = arc_refusal(
        r#"{"question": "q", "choices": {"text": ["a", "b", "c"], "label": ["A", "B"]}, "answerKey": "B"}
"#,
    );
    assert!(
        err.ends_with(
            "line 1: 2 labels for 3 options (one label per option) in field `choices.label`"
        ),
        "{err}"
    );
}

#[test]
fn options_or_labels_written_twice_are_refused_naming_the_line() {
    let err = arc_refusal(concat!(
        r#"{"question": "q1", "choices": {"text": ["a", "b", "c"], "label": ["A", "B", "C"]}, "answerKey": "B"}"#,
        "\n",
        r#"{"question": "q2", "choices": {"text": ["a", "b", " B "], "label": ["A", "B", "C"]}, "answerKey": "B"}"#,
        "\n",
    ));
    assert!(
        err.ends_with("line 2: options 2 and 3 are the same text (\"B\") in field `choices.text`"),
        "{err}"
    );
    let err = arc_refusal(
        r#"{"question": "q", "choices": {"text": ["a", "b", "c"], "label": ["A", "B", "A"]}, "answerKey": "B"}
"#,
    );
    assert!(
        err.ends_with("line 1: labels 1 and 3 are the same (\"A\") in field `choices.label`"),
        "{err}"
    );
}
