//! Extraction against a table of realistic model responses (tests/data/responses.json): the
//! styles of GSM8K, MATH-500, AIME, MMLU(-Pro), BBH and StrategyQA answers, written as small and
//! large instruct models write them. Each row names the answer a careful grader would extract
//! (`expected`, canonical form) and/or whether it matches the gold answer (`gold`, `correct`).

use moot_core::answer::{is_correct, Answer, AnswerKind, ExtractContext};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Row {
    id: String,
    kind: String,
    text: String,
    #[serde(default)]
    options: Vec<String>,
    /// Absent on math rows that grade by equivalence; `null` means "no answer".
    #[serde(default, deserialize_with = "present")]
    expected: Option<Option<String>>,
    #[serde(default)]
    gold: Option<String>,
    #[serde(default)]
    correct: Option<bool>,
}

/// Distinguishes a present `null` (`Some(None)`) from an absent key (`None`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

fn rows() -> Vec<Row> {
    let text = include_str!("../data/responses.json");
    serde_json::from_str(text).expect("responses.json is valid")
}

#[test]
fn table_has_enough_rows_of_every_kind() {
    let rows = rows();
    assert!(rows.len() >= 150, "{} rows", rows.len());
    for kind in AnswerKind::ALL {
        let n = rows.iter().filter(|r| r.kind == kind.name()).count();
        assert!(n >= 10, "only {n} rows of kind {kind}");
    }
}

#[test]
fn every_row_extracts_as_a_grader_would() {
    let mut failures = Vec::new();
    let rows = rows();
    for row in &rows {
        let kind: AnswerKind = row
            .kind
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", row.id));
        let ctx = ExtractContext {
            choices: &row.options,
        };
        let got = Answer::extract(kind, &row.text, &ctx);
        let got_text = got.as_ref().map(|a| a.canonical().to_string());
        // `expected` is given for every kind but math, whose rows grade by equivalence (and
        // give `expected: null` only for responses without an answer).
        if let Some(expected) = &row.expected {
            if got_text != *expected {
                failures.push(format!(
                    "{}: expected {expected:?}, got {got_text:?}",
                    row.id
                ));
                continue;
            }
        } else if kind != AnswerKind::Math {
            failures.push(format!("{}: a {kind} row needs `expected`", row.id));
        }
        if let (Some(gold), Some(correct)) = (&row.gold, row.correct) {
            let gold = Answer::parse(kind, gold, &ctx)
                .unwrap_or_else(|| panic!("{}: gold {gold:?} unreadable", row.id));
            if is_correct(got.as_ref(), &gold) != correct {
                failures.push(format!(
                    "{}: extracted {:?} vs gold {:?}: expected correct={correct}",
                    row.id,
                    got_text,
                    gold.canonical()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows fail:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}
