//! Any JSONL or CSV file, read through a [`FieldMap`](crate::FieldMap).

use std::collections::HashMap;

use crate::error::{DatasetError, Location};
use crate::item::Item;
use crate::read::{Collector, CsvRecord, Fields, JsonRecord, Record, Source};
use crate::spec::{FileFormat, GenericSpec, OptionsField};

pub(crate) fn load(spec: &GenericSpec) -> Result<Vec<Item>, DatasetError> {
    let src = Source::at(&spec.path);
    let stem = spec.path.file_stem().map_or_else(
        || "dataset".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut out = Collector::new(&src.name);
    match spec.format {
        FileFormat::Jsonl => {
            for (location, obj) in &src.jsonl()? {
                let rec = JsonRecord {
                    file: &src.name,
                    location: *location,
                    obj,
                };
                let item = item(spec, &rec, &stem, out.next_index())?;
                out.push(*location, fields(spec), item)?;
            }
        }
        FileFormat::Csv => {
            let table = src.csv(true)?;
            let columns = table.columns();
            check_columns(spec, &src.name, &table.header, &columns)?;
            for (location, cells) in &table.rows {
                let rec = CsvRecord {
                    file: &src.name,
                    location: *location,
                    columns: &columns,
                    cells,
                };
                let item = item(spec, &rec, &stem, out.next_index())?;
                out.push(*location, fields(spec), item)?;
            }
        }
    }
    Ok(out.items)
}

fn fields(spec: &GenericSpec) -> Fields<'_> {
    Fields {
        question: &spec.fields.question,
        answer: &spec.fields.answer,
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
    Ok(Item {
        id,
        question: rec.text(&f.question)?,
        choices: options,
        gold: rec.text(&f.answer)?.trim().to_string(),
        kind: spec.kind,
        tests: None,
        passage,
    })
}
