//! The built-in datasets' files and how each record becomes an [`Item`].

use std::path::Path;

use moot_core::AnswerKind;
use serde_json::Value;

use crate::bbh;
use crate::error::{DatasetError, Location};
use crate::gold;
use crate::item::Item;
use crate::read::{Collector, CsvRecord, Fields, JsonRecord, Record, Source};
use crate::spec::{
    check_name, DatasetSpec, GsmRangesLevel, MmluProSubset, StrategyQaSplit, MMLU_SUBJECTS,
};

/// Loads a dataset: built-in ones from the data directory, generic ones from their own path.
pub(crate) fn load(spec: &DatasetSpec, dir: &Path) -> Result<Vec<Item>, DatasetError> {
    use DatasetSpec as D;
    match spec {
        D::Gsm8k => gsm8k(dir),
        D::Math500 => math(dir, "math500", "math500/test.jsonl"),
        D::Math => math(dir, "math", "math/test.jsonl"),
        D::Aime2024 => aime(dir, "aime2024"),
        D::Aime2025 => aime(dir, "aime2025"),
        D::Mmlu(None) => {
            let mut items = Vec::new();
            for subject in MMLU_SUBJECTS {
                items.extend(mmlu(dir, subject)?);
            }
            Ok(items)
        }
        D::Mmlu(Some(subject)) => {
            check_name(subject, &MMLU_SUBJECTS, |s| {
                crate::spec::SpecError::UnknownMmluSubject {
                    subject: s.to_string(),
                    close: crate::spec::close_names(s, &MMLU_SUBJECTS),
                }
            })?;
            mmlu(dir, subject)
        }
        D::MmluPro(subset) => mmlu_pro(dir, *subset),
        D::Bbh(task) => bbh::load(dir, task.as_deref()),
        D::StrategyQa(split) => strategyqa(dir, *split),
        D::GsmRanges(level) => gsm_ranges(dir, *level),
        D::HumanEval => crate::humaneval::load(),
        D::Generic(g) => crate::generic::load(g),
    }
}

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

fn gsm8k(dir: &Path) -> Result<Vec<Item>, DatasetError> {
    let src = Source::in_data_dir(dir, "gsm8k/test.jsonl");
    jsonl_items(&src, |rec, i| {
        let item = Item {
            id: format!("gsm8k/{i}"),
            question: rec.text("question")?,
            options: vec![],
            gold: hashes_gold(rec, "answer")?,
            kind: AnswerKind::Numeric,
            tests: None,
        };
        Ok((item, fields("question", "answer")))
    })
}

const fn fields(question: &'static str, answer: &'static str) -> Fields<'static> {
    Fields { question, answer }
}

/// MATH / MATH-500: `answer` when the record has it, else the last `\boxed{}` of `solution`.
fn math(dir: &Path, name: &str, file: &str) -> Result<Vec<Item>, DatasetError> {
    let src = Source::in_data_dir(dir, file);
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
            options: vec![],
            gold: gold.trim().to_string(),
            kind: AnswerKind::Math,
            tests: None,
        };
        Ok((item, fields("problem", answer_field)))
    })
}

/// AIME: an integer answer, possibly zero-padded ("025"), kept as written.
fn aime(dir: &Path, name: &str) -> Result<Vec<Item>, DatasetError> {
    let src = Source::in_data_dir(dir, &format!("{name}/test.jsonl"));
    jsonl_items(&src, |rec, i| {
        let item = Item {
            id: format!("{name}/{i}"),
            question: rec.text("problem")?,
            options: vec![],
            gold: rec.text("answer")?.trim().to_string(),
            kind: AnswerKind::Numeric,
            tests: None,
        };
        Ok((item, fields("problem", "answer")))
    })
}

/// One MMLU subject: CSV without a header, `question,A,B,C,D,letter`.
fn mmlu(dir: &Path, subject: &str) -> Result<Vec<Item>, DatasetError> {
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
            options: cells[1..5].to_vec(),
            gold: cells[5].trim().to_string(),
            kind: AnswerKind::Choice,
            tests: None,
        };
        out.push(*location, fields("column 1", "column 6"), item)?;
    }
    Ok(out.items)
}

/// MMLU-Pro: `options` list (up to ten, A–J), `answer` letter, checked against `answer_index`.
fn mmlu_pro(dir: &Path, subset: MmluProSubset) -> Result<Vec<Item>, DatasetError> {
    let (file, prefix) = match subset {
        MmluProSubset::All => ("mmlu_pro/test.jsonl", "mmlu-pro"),
        MmluProSubset::LogicalFallacies => (
            "mmlu_pro/test_logical_fallacies.jsonl",
            "mmlu-pro:logical_fallacies",
        ),
    };
    let src = Source::in_data_dir(dir, file);
    jsonl_items(&src, |rec, i| {
        let gold = rec.text("answer")?.trim().to_string();
        if let Some(index) = rec.get("answer_index").and_then(Value::as_u64) {
            let expected = u8::try_from(index)
                .ok()
                .and_then(|n| n.checked_add(b'A'))
                .map(char::from);
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
            options: rec
                .list("options")?
                .into_iter()
                .map(|o| o.trim().to_string())
                .collect(),
            gold,
            kind: AnswerKind::Choice,
            tests: None,
        };
        Ok((item, fields("question", "answer")))
    })
}

fn strategyqa(dir: &Path, split: StrategyQaSplit) -> Result<Vec<Item>, DatasetError> {
    let (file, prefix, list) = match split {
        StrategyQaSplit::Dev => ("strategyqa/dev.json", "strategyqa", None),
        StrategyQaSplit::Train => ("strategyqa/train.json", "strategyqa:train", None),
        StrategyQaSplit::BigBench => (
            "strategyqa/bigbench_strategyqa/task.json",
            "strategyqa:bigbench",
            Some("examples"),
        ),
    };
    let src = Source::in_data_dir(dir, file);
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
        let (question, gold, f) = match split {
            StrategyQaSplit::Dev | StrategyQaSplit::Train => {
                let answer = rec
                    .get("answer")
                    .ok_or_else(|| DatasetError::missing_field(&src.name, location, "answer"))?;
                let yes = answer
                    .as_bool()
                    .ok_or_else(|| rec.bad("answer", "expected true or false"))?;
                (rec.text("question")?, yes, fields("question", "answer"))
            }
            StrategyQaSplit::BigBench => (
                rec.text("input")?,
                bigbench_yes(&rec)?,
                fields("input", "target_scores"),
            ),
        };
        let item = Item {
            id: format!("{prefix}/{i}"),
            question,
            options: vec![],
            gold: if gold { "yes" } else { "no" }.to_string(),
            kind: AnswerKind::YesNo,
            tests: None,
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

/// GSM-Ranges: CSV with a header (`index,question,answer`); the answer ends with `#### N`.
fn gsm_ranges(dir: &Path, level: GsmRangesLevel) -> Result<Vec<Item>, DatasetError> {
    let src = Source::in_data_dir(dir, &format!("gsm_ranges/{}.csv", level.name()));
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
            id: format!("gsm-ranges:{}/{}", level.name(), out.next_index()),
            question: rec.text("question")?,
            options: vec![],
            gold: hashes_gold(&rec, "answer")?,
            kind: AnswerKind::Numeric,
            tests: None,
        };
        out.push(*location, fields("question", "answer"), item)?;
    }
    Ok(out.items)
}
