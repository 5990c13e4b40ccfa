//! BIG-Bench Hard: one JSON file per task, `{"examples": [{"input", "target"}, …]}`.

use std::path::Path;

use moot_core::answer::option_letter;
use moot_core::AnswerKind;
use serde_json::Value;

use crate::error::{DatasetError, Location};
use crate::gold::paren_letter;
use crate::item::Item;
use crate::read::{Collector, Fields, JsonRecord, Record, Source};
use crate::spec_error::{close_names, SpecError};

/// The 27 BIG-Bench Hard tasks, in the order `bbh` loads them (alphabetical).
pub const BBH_TASKS: [&str; 27] = [
    "boolean_expressions",
    "causal_judgement",
    "date_understanding",
    "disambiguation_qa",
    "dyck_languages",
    "formal_fallacies",
    "geometric_shapes",
    "hyperbaton",
    "logical_deduction_five_objects",
    "logical_deduction_seven_objects",
    "logical_deduction_three_objects",
    "movie_recommendation",
    "multistep_arithmetic_two",
    "navigate",
    "object_counting",
    "penguins_in_a_table",
    "reasoning_about_colored_objects",
    "ruin_names",
    "salient_translation_error_detection",
    "snarks",
    "sports_understanding",
    "temporal_sequences",
    "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects",
    "tracking_shuffled_objects_three_objects",
    "web_of_lies",
    "word_sorting",
];

/// The answer kind of a BBH task (see the crate documentation for the reasons).
pub fn task_kind(task: &str) -> Option<AnswerKind> {
    Some(match task {
        "boolean_expressions"
        | "causal_judgement"
        | "navigate"
        | "sports_understanding"
        | "web_of_lies" => AnswerKind::YesNo,
        "multistep_arithmetic_two" | "object_counting" => AnswerKind::Numeric,
        "dyck_languages" | "formal_fallacies" | "word_sorting" => AnswerKind::Text,
        "date_understanding"
        | "disambiguation_qa"
        | "geometric_shapes"
        | "hyperbaton"
        | "logical_deduction_five_objects"
        | "logical_deduction_seven_objects"
        | "logical_deduction_three_objects"
        | "movie_recommendation"
        | "penguins_in_a_table"
        | "reasoning_about_colored_objects"
        | "ruin_names"
        | "salient_translation_error_detection"
        | "snarks"
        | "temporal_sequences"
        | "tracking_shuffled_objects_five_objects"
        | "tracking_shuffled_objects_seven_objects"
        | "tracking_shuffled_objects_three_objects" => AnswerKind::Choice,
        _ => return None,
    })
}

const OPTIONS_HEADER: &str = "\nOptions:\n";

/// Splits a BBH input that ends with `\nOptions:\n(A) …\n(B) …` into the text before the block
/// and the option texts. `None` when the input does not end with such a block (letters in
/// order from A, one per line). The input is exactly
/// `question + "\nOptions:\n" + "(A) " + options[0] + "\n(B) " + …`.
pub(crate) fn split_options(input: &str) -> Option<(&str, Vec<String>)> {
    let at = input.rfind(OPTIONS_HEADER)?;
    let (question, block) = (&input[..at], &input[at + OPTIONS_HEADER.len()..]);
    let mut options = Vec::new();
    for (i, line) in block.split('\n').enumerate() {
        let letter = option_letter(i)?;
        options.push(line.strip_prefix(&format!("({letter}) "))?.to_string());
    }
    Some((question, options))
}

/// Loads one task, or all 27 in alphabetical order.
pub(crate) fn load(dir: &Path, task: Option<&str>) -> Result<Vec<Item>, DatasetError> {
    match task {
        Some(t) => load_task(dir, t),
        None => {
            let mut items = Vec::new();
            for t in BBH_TASKS {
                items.extend(load_task(dir, t)?);
            }
            Ok(items)
        }
    }
}

fn load_task(dir: &Path, task: &str) -> Result<Vec<Item>, DatasetError> {
    let kind = task_kind(task).ok_or_else(|| SpecError::UnknownPart {
        noun: "BBH task",
        part: task.to_string(),
        close: close_names(task, &BBH_TASKS),
        valid: &BBH_TASKS,
    })?;
    let src = Source::in_data_dir(dir, &format!("bbh/{task}.json"));
    let doc = src.json()?;
    let examples = doc
        .get("examples")
        .and_then(Value::as_array)
        .ok_or_else(|| DatasetError::malformed(&src.name, Location::File, "no `examples` list"))?;
    let mut out = Collector::new(&src.name);
    for (i, example) in examples.iter().enumerate() {
        let rec = JsonRecord::entry(&src.name, "examples", i, example)?;
        let location = rec.location;
        let input = rec.text("input")?;
        let target = rec.text("target")?.trim().to_string();
        let (question, options, gold, item_kind) = if kind == AnswerKind::Choice {
            let split = split_options(&input);
            match (paren_letter(&target), split) {
                (Some(letter), Some((q, opts))) => {
                    (q.to_string(), opts, letter.to_string(), AnswerKind::Choice)
                }
                (Some(letter), None) => (input.clone(), vec![], letter.to_string(), kind),
                // A target that is an option's text rather than a letter (three rows whose
                // options were split at commas upstream): kept as free text.
                (None, Some((q, opts))) => (q.to_string(), opts, target, AnswerKind::Text),
                (None, None) => (input.clone(), vec![], target, AnswerKind::Text),
            }
        } else {
            (input.clone(), vec![], target, kind)
        };
        let item = Item {
            id: format!("bbh:{task}/{}", out.next_index()),
            question,
            choices: options,
            gold,
            kind: item_kind,
            tests: None,
            passage: None,
        };
        out.push(
            location,
            Fields {
                question: "input",
                answer: "target",
            },
            item,
        )?;
    }
    Ok(out.items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_has_a_kind() {
        for t in BBH_TASKS {
            assert!(task_kind(t).is_some(), "{t}");
        }
        assert_eq!(task_kind("nope"), None);
    }

    #[test]
    fn options_block_splits_losslessly() {
        let input = "Which is red?\nOptions:\n(A) grass\n(B) blood";
        let (q, opts) = split_options(input).unwrap();
        assert_eq!(q, "Which is red?");
        assert_eq!(opts, ["grass", "blood"]);
        let rebuilt = format!(
            "{q}{OPTIONS_HEADER}{}",
            opts.iter()
                .enumerate()
                .map(|(i, o)| format!("({}) {o}", option_letter(i).unwrap()))
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert_eq!(rebuilt, input);
    }

    #[test]
    fn non_letter_blocks_are_not_options() {
        assert_eq!(split_options("Valid?\nOptions:\n- valid\n- invalid"), None);
        assert_eq!(split_options("Q\nOptions:\n(A) x\n(C) y"), None);
        assert_eq!(split_options("no options here"), None);
    }
}
