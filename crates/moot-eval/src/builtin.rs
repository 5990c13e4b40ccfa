//! The built-in datasets' files and how each record becomes an [`Item`]; each loader is named
//! by its entry in [`crate::registry::DATASETS`].

use std::path::Path;

use moot_core::answer::option_letter;
use moot_core::AnswerKind;
use serde_json::Value;

use crate::error::{DatasetError, Location};
use crate::gold;
use crate::item::Item;
use crate::read::{Collector, CsvRecord, Fields, JsonRecord, Record, Source};
use crate::spec_error::SpecError;

/// The 57 MMLU subjects, in the order `mmlu` loads them (alphabetical).
pub const MMLU_SUBJECTS: [&str; 57] = [
    "abstract_algebra",
    "anatomy",
    "astronomy",
    "business_ethics",
    "clinical_knowledge",
    "college_biology",
    "college_chemistry",
    "college_computer_science",
    "college_mathematics",
    "college_medicine",
    "college_physics",
    "computer_security",
    "conceptual_physics",
    "econometrics",
    "electrical_engineering",
    "elementary_mathematics",
    "formal_logic",
    "global_facts",
    "high_school_biology",
    "high_school_chemistry",
    "high_school_computer_science",
    "high_school_european_history",
    "high_school_geography",
    "high_school_government_and_politics",
    "high_school_macroeconomics",
    "high_school_mathematics",
    "high_school_microeconomics",
    "high_school_physics",
    "high_school_psychology",
    "high_school_statistics",
    "high_school_us_history",
    "high_school_world_history",
    "human_aging",
    "human_sexuality",
    "international_law",
    "jurisprudence",
    "logical_fallacies",
    "machine_learning",
    "management",
    "marketing",
    "medical_genetics",
    "miscellaneous",
    "moral_disputes",
    "moral_scenarios",
    "nutrition",
    "philosophy",
    "prehistory",
    "professional_accounting",
    "professional_law",
    "professional_medicine",
    "professional_psychology",
    "public_relations",
    "security_studies",
    "sociology",
    "us_foreign_policy",
    "virology",
    "world_religions",
];

/// The GSM-Ranges files (`gsm_ranges/LEVEL.csv`).
pub const GSM_RANGES_LEVELS: [&str; 3] = ["original", "level4", "level6"];

fn jsonl_items(
    src: &Source,
    mut make: impl FnMut(&JsonRecord<'_>, usize) -> Result<(Item, Fields<'static>), DatasetError>,
) -> Result<Vec<Item>, DatasetError> {
    let rows = src.jsonl()?;
    let mut out = Collector::new(&src.name);
    for (location, obj) in &rows {
        let rec = JsonRecord {
            file: &src.name,
            location: *location,
            obj,
        };
        let (item, fields) = make(&rec, out.next_index())?;
        out.push(*location, fields, item)?;
    }
    Ok(out.items)
}

/// `#### N` at the end of a GSM8K-style solution.
fn hashes_gold(rec: &impl Record, field: &str) -> Result<String, DatasetError> {
    let solution = rec.text(field)?;
    gold::after_hashes(&solution).ok_or_else(|| rec.bad(field, "no `#### N`"))
}

pub(crate) fn gsm8k(dir: &Path) -> Result<Vec<Item>, DatasetError> {
    let src = Source::in_data_dir(dir, "gsm8k/test.jsonl");
    jsonl_items(&src, |rec, i| {
        let item = Item {
            id: format!("gsm8k/{i}"),
            question: rec.text("question")?,
            choices: vec![],
            gold: hashes_gold(rec, "answer")?,
            kind: AnswerKind::Numeric,
            tests: None,
            passage: None,
        };
        Ok((item, fields("question", "answer")))
    })
}

const fn fields(question: &'static str, answer: &'static str) -> Fields<'static> {
    Fields { question, answer }
}

/// MATH / MATH-500 (`NAME/test.jsonl`): `answer` when the record has it, else the last
/// `\boxed{}` of `solution`.
pub(crate) fn math(dir: &Path, name: &str) -> Result<Vec<Item>, DatasetError> {
    let src = Source::in_data_dir(dir, &format!("{name}/test.jsonl"));
    jsonl_items(&src, |rec, i| {
        let (gold, answer_field) = match rec.text_opt("answer")? {
            Some(a) => (a, "answer"),
            None => {
                let solution = rec.text("solution")?;
                let boxed = gold::last_boxed(&solution)
                    .ok_or_else(|| rec.bad("solution", "no `answer` field and no `\\boxed{…}`"))?;
                (boxed.to_string(), "solution")
            }
        };
        let item = Item {
            id: format!("{name}/{i}"),
            question: rec.text("problem")?,
            choices: vec![],
            gold: gold.trim().to_string(),
            kind: AnswerKind::Math,
            tests: None,
            passage: None,
        };
        Ok((item, fields("problem", answer_field)))
    })
}

/// AIME: an integer answer, possibly zero-padded ("025"), kept as written.
pub(crate) fn aime(dir: &Path, name: &str) -> Result<Vec<Item>, DatasetError> {
    let src = Source::in_data_dir(dir, &format!("{name}/test.jsonl"));
    jsonl_items(&src, |rec, i| {
        let item = Item {
            id: format!("{name}/{i}"),
            question: rec.text("problem")?,
            choices: vec![],
            gold: rec.text("answer")?.trim().to_string(),
            kind: AnswerKind::Numeric,
            tests: None,
            passage: None,
        };
        Ok((item, fields("problem", "answer")))
    })
}

/// One MMLU subject, or all 57 in alphabetical order.
pub(crate) fn mmlu(dir: &Path, subject: Option<&str>) -> Result<Vec<Item>, DatasetError> {
    match subject {
        Some(s) => mmlu_subject(dir, s),
        None => {
            let mut items = Vec::new();
            for s in MMLU_SUBJECTS {
                items.extend(mmlu_subject(dir, s)?);
            }
            Ok(items)
        }
    }
}

/// One MMLU subject: CSV without a header, `question,A,B,C,D,letter`.
fn mmlu_subject(dir: &Path, subject: &str) -> Result<Vec<Item>, DatasetError> {
    let src = Source::in_data_dir(dir, &format!("mmlu/test/{subject}_test.csv"));
    let table = src.csv(false)?;
    let mut out = Collector::new(&src.name);
    for (location, cells) in &table.rows {
        if cells.len() != 6 {
            return Err(DatasetError::malformed(
                &src.name,
                *location,
                format!(
                    "expected 6 columns (question, A, B, C, D, answer letter), found {}",
                    cells.len()
                ),
            ));
        }
        let item = Item {
            id: format!("mmlu:{subject}/{}", out.next_index()),
            question: cells[0].clone(),
            choices: cells[1..5].to_vec(),
            gold: cells[5].trim().to_string(),
            kind: AnswerKind::Choice,
            tests: None,
            passage: None,
        };
        out.push(*location, fields("column 1", "column 6"), item)?;
    }
    Ok(out.items)
}

/// MMLU-Pro: `options` list (up to ten, A–J), `answer` letter, checked against `answer_index`.
/// The whole is `test.jsonl`; the part `logical_fallacies` is a file apart.
pub(crate) fn mmlu_pro(dir: &Path, part: Option<&str>) -> Result<Vec<Item>, DatasetError> {
    let (file, prefix) = match part {
        Some(p) => (format!("mmlu_pro/test_{p}.jsonl"), format!("mmlu-pro:{p}")),
        None => ("mmlu_pro/test.jsonl".to_string(), "mmlu-pro".to_string()),
    };
    let src = Source::in_data_dir(dir, &file);
    jsonl_items(&src, |rec, i| {
        let gold = rec.text("answer")?.trim().to_string();
        if let Some(index) = rec.get("answer_index").and_then(Value::as_u64) {
            let expected = usize::try_from(index).ok().and_then(option_letter);
            if expected.map(String::from).as_deref() != Some(gold.as_str()) {
                return Err(rec.bad(
                    "answer",
                    format!("letter {gold:?} disagrees with answer_index {index}"),
                ));
            }
        }
        let item = Item {
            id: format!("{prefix}/{i}"),
            question: rec.text("question")?,
            choices: rec
                .list("options")?
                .into_iter()
                .map(|o| o.trim().to_string())
                .collect(),
            gold,
            kind: AnswerKind::Choice,
            tests: None,
            passage: None,
        };
        Ok((item, fields("question", "answer")))
    })
}

/// StrategyQA: the dev file (the whole, `None`), `train`, or BIG-bench's packaging
/// (`bigbench`).
pub(crate) fn strategyqa(dir: &Path, part: Option<&str>) -> Result<Vec<Item>, DatasetError> {
    let bigbench = part == Some("bigbench");
    let (file, prefix, list) = match part {
        Some("bigbench") => (
            "strategyqa/bigbench_strategyqa/task.json".to_string(),
            "strategyqa:bigbench".to_string(),
            Some("examples"),
        ),
        Some(split) => (
            format!("strategyqa/{split}.json"),
            format!("strategyqa:{split}"),
            None,
        ),
        None => (
            "strategyqa/dev.json".to_string(),
            "strategyqa".to_string(),
            None,
        ),
    };
    let src = Source::in_data_dir(dir, &file);
    let doc = src.json()?;
    let entries = match list {
        None => doc.as_array(),
        Some(key) => doc.get(key).and_then(Value::as_array),
    }
    .ok_or_else(|| {
        DatasetError::malformed(
            &src.name,
            Location::File,
            match list {
                None => "expected a JSON list of questions".to_string(),
                Some(key) => format!("expected an object with an `{key}` list"),
            },
        )
    })?;
    let list_name = list.unwrap_or("questions");
    let mut out = Collector::new(&src.name);
    for (i, entry) in entries.iter().enumerate() {
        let rec = JsonRecord::entry(&src.name, list_name, i, entry)?;
        let location = rec.location;
        let (question, gold, f) = if bigbench {
            (
                rec.text("input")?,
                bigbench_yes(&rec)?,
                fields("input", "target_scores"),
            )
        } else {
            let answer = rec
                .get("answer")
                .ok_or_else(|| DatasetError::missing_field(&src.name, location, "answer"))?;
            let yes = answer
                .as_bool()
                .ok_or_else(|| rec.bad("answer", "expected true or false"))?;
            (rec.text("question")?, yes, fields("question", "answer"))
        };
        let item = Item {
            id: format!("{prefix}/{i}"),
            question,
            choices: vec![],
            gold: if gold { "yes" } else { "no" }.to_string(),
            kind: AnswerKind::YesNo,
            tests: None,
            passage: None,
        };
        out.push(location, f, item)?;
    }
    Ok(out.items)
}

/// BIG-bench `target_scores` `{"Yes": 1, "No": 0}`: whether the best-scored target is Yes.
fn bigbench_yes(rec: &JsonRecord<'_>) -> Result<bool, DatasetError> {
    let field = "target_scores";
    let scores = rec
        .get(field)
        .and_then(Value::as_object)
        .ok_or_else(|| rec.bad(field, "expected an object of scores"))?;
    let best = scores
        .iter()
        .filter_map(|(k, v)| v.as_f64().map(|s| (k, s)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k.to_ascii_lowercase())
        .ok_or_else(|| rec.bad(field, "no scored target"))?;
    match best.as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        other => Err(rec.bad(
            field,
            format!("best target {other:?} is neither Yes nor No"),
        )),
    }
}

/// GSM-Ranges: one level's CSV with a header (`index,question,answer`); the answer ends with
/// `#### N`. There is no whole: a level must be named.
pub(crate) fn gsm_ranges(dir: &Path, level: Option<&str>) -> Result<Vec<Item>, DatasetError> {
    let Some(level) = level else {
        return Err(SpecError::MissingVariant {
            dataset: "gsm-ranges",
            valid: GSM_RANGES_LEVELS
                .iter()
                .map(|l| format!("gsm-ranges:{l}"))
                .collect(),
        }
        .into());
    };
    let src = Source::in_data_dir(dir, &format!("gsm_ranges/{level}.csv"));
    let table = src.csv(true)?;
    let columns = table.columns();
    for needed in ["question", "answer"] {
        if !columns.contains_key(needed) {
            return Err(DatasetError::malformed(
                &src.name,
                Location::File,
                format!(
                    "no column `{needed}` in the header (columns: {})",
                    table.header.join(", ")
                ),
            ));
        }
    }
    let mut out = Collector::new(&src.name);
    for (location, cells) in &table.rows {
        let rec = CsvRecord {
            file: &src.name,
            location: *location,
            columns: &columns,
            cells,
        };
        let item = Item {
            id: format!("gsm-ranges:{level}/{}", out.next_index()),
            question: rec.text("question")?,
            choices: vec![],
            gold: hashes_gold(&rec, "answer")?,
            kind: AnswerKind::Numeric,
            tests: None,
            passage: None,
        };
        out.push(*location, fields("question", "answer"), item)?;
    }
    Ok(out.items)
}
