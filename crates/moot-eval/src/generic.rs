//! Any JSONL, CSV or Parquet file, read through a [`FieldMap`](crate::FieldMap).

use std::collections::HashMap;

use moot_core::answer::option_letter;
use moot_core::AnswerKind;
use moot_store::{LeftOut, LeftOutItem};

use crate::error::{BadGold, DatasetError, Location, Place};
use crate::item::Item;
use crate::parquet_file;
use crate::read::{Collector, CsvRecord, Fields, JsonRecord, Record, Source};
use crate::spec::{FileFormat, GenericSpec, OptionsField};

/// What a generic load gives: the items, those left out, and notes on how golds were read.
pub(crate) struct Loaded {
    pub items: Vec<Item>,
    pub left_out: Option<LeftOut>,
    pub notes: Vec<String>,
}

pub(crate) fn load(spec: &GenericSpec, skip_invalid: bool) -> Result<Loaded, DatasetError> {
    let stem = spec.path.file_stem().map_or_else(
        || "dataset".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let name = spec.path.display().to_string();
    let mut reading = Reading {
        spec,
        stem,
        skip_invalid,
        out: Collector::new(&name),
        left_out: Vec::new(),
        records: 0,
        forms: GoldForms::default(),
    };
    match spec.format {
        FileFormat::Jsonl => {
            let src = Source::at(&spec.path);
            for (location, obj) in &src.jsonl()? {
                reading.record(&JsonRecord {
                    file: &src.name,
                    location: *location,
                    obj,
                })?;
            }
        }
        FileFormat::Csv => {
            let src = Source::at(&spec.path);
            let table = src.csv(true)?;
            let columns = table.columns();
            check_columns(spec, &src.name, &table.header, &columns)?;
            for (location, cells) in &table.rows {
                reading.record(&CsvRecord {
                    file: &src.name,
                    location: *location,
                    columns: &columns,
                    cells,
                })?;
            }
        }
        FileFormat::Parquet => {
            for shard in parquet_file::shards(&spec.path)? {
                parquet_file::each_row(&shard, |location, obj| {
                    reading.record(&JsonRecord {
                        file: &shard.name,
                        location,
                        obj: &obj,
                    })
                })?;
            }
        }
    }
    reading.finish(&name)
}

/// One file's reading: every record becomes an item, or (with `skip_invalid`) is left out when
/// it cannot be scored.
struct Reading<'a> {
    spec: &'a GenericSpec,
    stem: String,
    skip_invalid: bool,
    out: Collector,
    left_out: Vec<LeftOutItem>,
    /// Records seen: the next record's index, which its default id counts (so an item keeps its
    /// id whether or not an earlier one was left out).
    records: usize,
    forms: GoldForms,
}

impl Reading<'_> {
    fn record(&mut self, rec: &impl Record) -> Result<(), DatasetError> {
        let index = self.records;
        self.records += 1;
        let fields = Fields {
            question: &self.spec.fields.question,
            answer: &self.spec.fields.answer,
        };
        let made = item(self.spec, rec, &self.stem, index, &mut self.forms)
            .and_then(|item| self.out.push(rec.location(), fields, item));
        let Err(e) = made else { return Ok(()) };
        match e.item_problem() {
            Some(problem) if self.skip_invalid => {
                let id = self
                    .spec
                    .fields
                    .id
                    .as_deref()
                    .and_then(|f| rec.text_opt(f).ok().flatten())
                    .map(|id| id.trim().to_string())
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("{}/{index}", self.stem));
                self.left_out.push(LeftOutItem {
                    id,
                    place: Place::new(rec.file(), rec.location()).to_string(),
                    problem,
                    message: e.to_string(),
                });
                Ok(())
            }
            _ => Err(e),
        }
    }

    fn finish(self, name: &str) -> Result<Loaded, DatasetError> {
        if self.out.items.is_empty() {
            if let Some(first) = self.left_out.first() {
                return Err(DatasetError::AllLeftOut {
                    file: name.to_string(),
                    count: self.left_out.len(),
                    first: first.message.clone(),
                });
            }
        }
        let notes = self.forms.notes(self.spec);
        let left_out = (!self.left_out.is_empty()).then_some(LeftOut {
            of: self.records as u64,
            items: self.left_out,
        });
        Ok(Loaded {
            items: self.out.items,
            left_out,
            notes,
        })
    }
}

/// Every mapped column must be in the header; said once, before any row.
fn check_columns(
    spec: &GenericSpec,
    file: &str,
    header: &[String],
    columns: &HashMap<String, usize>,
) -> Result<(), DatasetError> {
    let f = &spec.fields;
    let mut needed = vec![f.question.as_str(), f.answer.as_str()];
    match &f.options {
        Some(OptionsField::List(c)) => needed.push(c),
        Some(OptionsField::Columns(cs)) => needed.extend(cs.iter().map(String::as_str)),
        None => {}
    }
    needed.extend(f.id.as_deref());
    needed.extend(f.context.as_deref());
    needed.extend(f.labels.as_deref());
    match needed.iter().find(|c| !columns.contains_key(**c)) {
        Some(missing) => Err(DatasetError::malformed(
            file,
            Location::File,
            format!(
                "no column `{missing}` in the header (columns: {})",
                header.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

fn item(
    spec: &GenericSpec,
    rec: &impl Record,
    stem: &str,
    index: usize,
    forms: &mut GoldForms,
) -> Result<Item, DatasetError> {
    let f = &spec.fields;
    let options = match &f.options {
        None => vec![],
        Some(OptionsField::List(field)) => rec.list(field)?,
        Some(OptionsField::Columns(cols)) => {
            let mut opts = cols
                .iter()
                .map(|c| Ok(rec.text_opt(c)?.unwrap_or_default()))
                .collect::<Result<Vec<String>, DatasetError>>()?;
            while opts.last().is_some_and(|o| o.trim().is_empty()) {
                opts.pop();
            }
            opts
        }
    };
    // Two options alike make a gold that names one of them name both, and an answer that
    // picks the other right or wrong by chance.
    if let (Some(field), Some((first, again))) = (&f.options, first_repeat(&options)) {
        let field = match field {
            OptionsField::List(field) => field.as_str(),
            OptionsField::Columns(columns) => columns.get(again).map_or("", String::as_str),
        };
        return Err(rec.bad(
            field,
            format!(
                "options {} and {} are the same text ({})",
                first + 1,
                again + 1,
                crate::error::quoted(options[again].trim())
            ),
        ));
    }
    let id = match &f.id {
        Some(field) => {
            let id = rec.text(field)?.trim().to_string();
            if id.is_empty() {
                return Err(rec.bad(field, "empty id"));
            }
            id
        }
        None => format!("{stem}/{index}"),
    };
    let passage = match &f.context {
        Some(field) => {
            let passage = rec.text(field)?;
            if passage.trim().is_empty() {
                return Err(rec.bad(field, "empty passage"));
            }
            Some(passage)
        }
        None => None,
    };
    let question = rec.text(&f.question)?;
    let gold = gold(spec, rec, &options, forms)?;
    Ok(Item {
        id,
        question,
        choices: options,
        gold,
        kind: spec.kind,
        tests: None,
        passage,
    })
}

/// How many golds were read in each form; said to the user when a form was inferred.
#[derive(Default)]
struct GoldForms {
    /// Read as a 0-based index because the field held a whole number (not asked for).
    detected_index: usize,
    /// Read as an option's own text.
    option_text: usize,
}

impl GoldForms {
    fn notes(&self, spec: &GenericSpec) -> Vec<String> {
        let f = &spec.fields;
        let options = match &f.options {
            Some(OptionsField::List(field)) => field.as_str(),
            _ => "the options",
        };
        let mut notes = Vec::new();
        if self.detected_index > 0 {
            notes.push(format!(
                "{} gold answers of field `{}` read as 0-based indexes into `{options}`: the \
                 field holds whole numbers (answer_index=false reads them as letters or option \
                 texts)",
                self.detected_index, f.answer
            ));
        }
        if self.option_text > 0 {
            notes.push(format!(
                "{} gold answers of field `{}` read as the text of one of the options",
                self.option_text, f.answer
            ));
        }
        notes
    }
}

/// The letter of option `index` (`0` → `A`), or why there is none.
fn letter(
    index: usize,
    place: impl FnOnce(&'static str, String) -> DatasetError,
) -> Result<String, DatasetError> {
    option_letter(index).map(String::from).ok_or_else(|| {
        place(
            "is past the 26 options a choice can letter",
            format!("option {index}, counted from 0"),
        )
    })
}

/// The gold answer's text. For a choice it is reduced to its option's letter when it is given
/// another way: a label of `labels=F` (ARC's `answerKey` in `choices.label`), a 0-based index
/// (`answer_index=true`, or a whole number where the options are a list: MMLU as `cais/mmlu`
/// ships it), or an option's own text. A letter as written stays as it is; anything else is
/// parsed as a stored answer (by [`Collector::push`]).
fn gold(
    spec: &GenericSpec,
    rec: &impl Record,
    options: &[String],
    forms: &mut GoldForms,
) -> Result<String, DatasetError> {
    let f = &spec.fields;
    let raw = rec.text(&f.answer)?.trim().to_string();
    if spec.kind != AnswerKind::Choice {
        return Ok(raw);
    }
    let bad = |problem: &'static str, detail: String| {
        DatasetError::BadGold(Box::new(BadGold {
            place: Place::new(rec.file(), rec.location()),
            field: f.answer.clone(),
            gold: raw.clone(),
            problem,
            detail,
        }))
    };
    if let Some(labels_field) = &f.labels {
        let labels = rec.list(labels_field)?;
        if let Some((first, again)) = first_repeat(&labels) {
            return Err(rec.bad(
                labels_field,
                format!(
                    "labels {} and {} are the same ({})",
                    first + 1,
                    again + 1,
                    crate::error::quoted(labels[again].trim())
                ),
            ));
        }
        if labels.len() != options.len() {
            return Err(rec.bad(
                labels_field,
                format!(
                    "{} labels for {} options (one label per option)",
                    labels.len(),
                    options.len()
                ),
            ));
        }
        let at = labels.iter().position(|l| l.trim() == raw).or_else(|| {
            labels
                .iter()
                .position(|l| l.trim().eq_ignore_ascii_case(&raw))
        });
        return match at {
            Some(i) => letter(i, bad),
            None => Err(bad(
                "is none of the labels",
                format!("labels in `{labels_field}`: {}", labels.join(", ")),
            )),
        };
    }
    let detected = f.answer_index.is_none()
        && matches!(f.options, Some(OptionsField::List(_)))
        && rec.holds_whole_number(&f.answer);
    if f.answer_index == Some(true) || detected {
        let Ok(i) = raw.parse::<usize>() else {
            return Err(bad(
                "is not an index of the options",
                "an index is a whole number from 0".into(),
            ));
        };
        if i >= options.len() {
            return Err(bad(
                "is not an index of the options",
                format!("{} options, indexed from 0", options.len()),
            ));
        }
        forms.detected_index += usize::from(detected);
        return letter(i, bad);
    }
    if !is_letter(&raw) {
        let folded = fold(&raw);
        let mut matching = options
            .iter()
            .enumerate()
            .filter(|(_, o)| fold(o) == folded);
        if let (Some((i, _)), None) = (matching.next(), matching.next()) {
            forms.option_text += 1;
            return letter(i, bad);
        }
    }
    Ok(raw)
}

/// Whether the gold is written as a letter (`C`, `(C)`), which is read as one.
fn is_letter(raw: &str) -> bool {
    let inner = raw
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(raw);
    inner.len() == 1 && inner.chars().all(|c| c.is_ascii_alphabetic())
}

/// Text compared without case or runs of white space.
fn fold(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The places (0-based) of the first text that appears twice in `texts`, compared trimmed and
/// ignoring case; `None` when all differ.
fn first_repeat(texts: &[String]) -> Option<(usize, usize)> {
    let mut seen = std::collections::HashMap::new();
    for (i, text) in texts.iter().enumerate() {
        let key = text.trim().to_lowercase();
        if key.is_empty() {
            continue;
        }
        if let Some(&first) = seen.get(&key) {
            return Some((first, i));
        }
        seen.insert(key, i);
    }
    None
}
