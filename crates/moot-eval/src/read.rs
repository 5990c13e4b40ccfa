//! Reading files into records, and fields out of records, with errors that say where.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{DatasetError, Location, Place};
use crate::item::Item;

/// The largest dataset file read: 1 GiB, a hundred times the largest of the data folder
/// (MMLU-Pro's, some 10 MB), while its parsed records take several times its size in memory.
pub const MAX_DATASET_BYTES: moot_files::Limit =
    moot_files::Limit::new(1 << 30, "moot reads from a dataset file");

/// A JSONL line's location and object.
pub(crate) type JsonRow = (Location, Map<String, Value>);

/// A file to read: its name in messages and its path on disk.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub name: String,
    pub path: PathBuf,
}

impl Source {
    /// A file of the data directory, named by its path relative to it (`gsm8k/test.jsonl`).
    pub fn in_data_dir(data_dir: &Path, relative: &str) -> Source {
        Source {
            name: relative.to_string(),
            path: data_dir.join(relative),
        }
    }

    pub fn at(path: &Path) -> Source {
        Source {
            name: path.display().to_string(),
            path: path.to_path_buf(),
        }
    }

    /// The file's text (a leading byte-order mark dropped): a regular file of at most
    /// [`MAX_DATASET_BYTES`], never a FIFO or a device.
    pub fn read(&self) -> Result<String, DatasetError> {
        let text =
            moot_files::read_text(&self.path, MAX_DATASET_BYTES).map_err(|e| self.failed(e))?;
        Ok(text
            .strip_prefix('\u{feff}')
            .map(str::to_string)
            .unwrap_or(text))
    }

    /// The file opened for a reader that reads it in parts (a Parquet file's row groups),
    /// checked as [`Source::read`] checks it: a regular file of at most [`MAX_DATASET_BYTES`].
    pub fn open(&self) -> Result<std::fs::File, DatasetError> {
        moot_files::open_regular(&self.path, MAX_DATASET_BYTES, moot_files::Links::Follow)
            .map_err(|e| self.failed(e))
    }

    /// Why this file (or folder) was not read, as the dataset error that names it: missing,
    /// not UTF-8 (malformed), or unreadable for the system's reason.
    pub fn failed(&self, e: moot_files::FileError) -> DatasetError {
        match e.problem {
            _ if e.is_not_found() => DatasetError::MissingFile {
                file: self.name.clone(),
                path: self.path.clone(),
            },
            moot_files::Problem::NotUtf8(bad) => {
                DatasetError::malformed(&self.name, Location::File, bad.to_string())
            }
            problem => DatasetError::Unreadable {
                file: self.name.clone(),
                path: self.path.clone(),
                problem,
            },
        }
    }

    /// [`Source::failed`] for an error of the system (listing a folder, reading its metadata).
    pub fn io_failed(&self, e: std::io::Error) -> DatasetError {
        self.failed(moot_files::FileError {
            path: self.path.clone(),
            problem: moot_files::Problem::Io(e),
        })
    }

    /// The non-blank lines of a JSONL file as JSON objects, with their line numbers.
    pub fn jsonl(&self) -> Result<Vec<JsonRow>, DatasetError> {
        let text = self.read()?;
        let mut rows = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let loc = Location::Line(i + 1);
            match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(obj)) => rows.push((loc, obj)),
                Ok(other) => {
                    return Err(DatasetError::malformed(
                        &self.name,
                        loc,
                        format!("expected a JSON object, found {}", describe(&other)),
                    ))
                }
                Err(e) => {
                    return Err(DatasetError::malformed(
                        &self.name,
                        loc,
                        format!("invalid JSON: {e}"),
                    ))
                }
            }
        }
        Ok(rows)
    }

    /// A whole JSON document.
    pub fn json(&self) -> Result<Value, DatasetError> {
        let text = self.read()?;
        serde_json::from_str(&text).map_err(|e| {
            DatasetError::malformed(&self.name, Location::File, format!("invalid JSON: {e}"))
        })
    }

    /// The records of a CSV file: the header (when `has_header`) and each data row with its
    /// location. Rows may have any number of cells; callers check the count they need.
    pub fn csv(&self, has_header: bool) -> Result<CsvTable, DatasetError> {
        let text = self.read()?;
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        let mut header = None;
        let mut rows = Vec::new();
        for (i, record) in reader.records().enumerate() {
            let record = record.map_err(|e| {
                let loc = match e.position() {
                    Some(p) => Location::Row {
                        row: (p.record() as usize + usize::from(!has_header)).max(1),
                        line: p.line(),
                    },
                    None => Location::File,
                };
                DatasetError::malformed(&self.name, loc, format!("invalid CSV: {e}"))
            })?;
            let cells: Vec<String> = record.iter().map(str::to_string).collect();
            if has_header && i == 0 {
                header = Some(cells);
                continue;
            }
            let line = record.position().map_or(0, |p| p.line());
            let row = rows.len() + 1;
            rows.push((Location::Row { row, line }, cells));
        }
        if has_header && header.is_none() {
            return Err(DatasetError::malformed(
                &self.name,
                Location::File,
                "empty file: no header row",
            ));
        }
        Ok(CsvTable {
            header: header.unwrap_or_default(),
            rows,
        })
    }
}

pub(crate) struct CsvTable {
    pub header: Vec<String>,
    pub rows: Vec<(Location, Vec<String>)>,
}

impl CsvTable {
    /// Column positions by header name (the first column of a repeated name wins).
    pub fn columns(&self) -> HashMap<String, usize> {
        let mut map = HashMap::new();
        for (i, name) in self.header.iter().enumerate() {
            map.entry(name.trim().to_string()).or_insert(i);
        }
        map
    }
}

/// A short description of a JSON value's type, for messages.
pub(crate) fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A JSON value as answer or question text: strings as they are, numbers in their JSON form,
/// booleans as `yes` / `no`.
pub(crate) fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "yes" } else { "no" }.to_string()),
        _ => None,
    }
}

/// One record's fields, by name, wherever the record came from.
pub(crate) trait Record {
    fn file(&self) -> &str;
    fn location(&self) -> Location;

    /// The field as text; `None` when the record has no such field.
    fn text_opt(&self, field: &str) -> Result<Option<String>, DatasetError>;

    /// The field as a list of texts.
    fn list(&self, field: &str) -> Result<Vec<String>, DatasetError>;

    /// The field as text; a missing field is an error.
    fn text(&self, field: &str) -> Result<String, DatasetError> {
        self.text_opt(field)?
            .ok_or_else(|| DatasetError::missing_field(self.file(), self.location(), field))
    }

    /// Whether the field holds a whole number as such (a JSON or Parquet integer, not text):
    /// a choice's gold written so is read as an index into the options.
    fn holds_whole_number(&self, _field: &str) -> bool {
        false
    }

    fn bad(&self, field: &str, problem: impl Into<String>) -> DatasetError {
        DatasetError::bad_field(self.file(), self.location(), field, problem)
    }
}

/// A JSON object read from a JSONL line or a JSON document's list.
pub(crate) struct JsonRecord<'a> {
    pub file: &'a str,
    pub location: Location,
    pub obj: &'a Map<String, Value>,
}

impl<'a> JsonRecord<'a> {
    /// Entry `index` of the list `list` in a JSON document, which must be an object.
    pub fn entry(
        file: &'a str,
        list: &'static str,
        index: usize,
        value: &'a Value,
    ) -> Result<JsonRecord<'a>, DatasetError> {
        let location = Location::Entry { list, index };
        let obj = value
            .as_object()
            .ok_or_else(|| DatasetError::malformed(file, location, "expected a JSON object"))?;
        Ok(JsonRecord {
            file,
            location,
            obj,
        })
    }
}

impl JsonRecord<'_> {
    /// The field by name or dotted path (see [`lookup`]); `None` when it is missing or null.
    pub fn get(&self, field: &str) -> Option<&Value> {
        lookup(self.obj, field).ok()
    }

    /// The field, or the error naming the path and where it broke off.
    fn required(&self, field: &str) -> Result<&Value, DatasetError> {
        lookup(self.obj, field).map_err(|detail| DatasetError::MissingField {
            place: Place::new(self.file, self.location),
            field: field.to_string(),
            detail,
        })
    }
}

/// A field of a JSON object by name or by dotted path, as Hugging Face exports nest them
/// (`choices.text`, `choices.label`, `meta.id`). A key spelled as written wins, since keys may
/// hold dots; otherwise each part steps into an object, and a part that is a number
/// (`choices.0`) into a list. Null reads as missing. `Err` carries, for a path, where it broke
/// off (`choices` has no field `txt`; its fields: label, text); `None` for a plain name.
pub(crate) fn lookup<'a>(
    obj: &'a Map<String, Value>,
    path: &str,
) -> Result<&'a Value, Option<String>> {
    if let Some(v) = obj.get(path) {
        return if v.is_null() { Err(None) } else { Ok(v) };
    }
    let mut parts = path.split('.');
    let (Some(first), true) = (parts.next(), path.contains('.')) else {
        return Err(None);
    };
    let mut at = first.to_string();
    let mut value = obj
        .get(first)
        .filter(|v| !v.is_null())
        .ok_or_else(|| Some(format!("no field `{first}`; fields: {}", keys(obj))))?;
    for part in parts {
        let next = match value {
            Value::Object(o) => o
                .get(part)
                .filter(|v| !v.is_null())
                .ok_or_else(|| format!("`{at}` has no field `{part}`; its fields: {}", keys(o))),
            Value::Array(list) => match part.parse::<usize>() {
                Ok(i) => list
                    .get(i)
                    .filter(|v| !v.is_null())
                    .ok_or_else(|| format!("`{at}` has {} entries, none at {i}", list.len())),
                Err(_) => Err(format!(
                    "`{at}` is a list: step into it with a number (`{at}.0`), not `{part}`"
                )),
            },
            other => Err(format!(
                "`{at}` is {}, with no field `{part}`",
                describe(other)
            )),
        };
        value = next.map_err(Some)?;
        at = format!("{at}.{part}");
    }
    Ok(value)
}

/// Keys an error lists at most: a record may have thousands.
const KEYS_SHOWN: usize = 12;

/// An object's keys, for messages: `id, question, choices`, the first [`KEYS_SHOWN`] of them.
fn keys(obj: &Map<String, Value>) -> String {
    if obj.is_empty() {
        return "none".to_string();
    }
    let mut shown = obj
        .keys()
        .take(KEYS_SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if obj.len() > KEYS_SHOWN {
        shown.push_str(&format!(", … ({} in all)", obj.len()));
    }
    shown
}

impl Record for JsonRecord<'_> {
    fn file(&self) -> &str {
        self.file
    }

    fn location(&self) -> Location {
        self.location
    }

    fn text_opt(&self, field: &str) -> Result<Option<String>, DatasetError> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => value_text(v)
                .map(Some)
                .ok_or_else(|| self.bad(field, format!("expected text, found {}", describe(v)))),
        }
    }

    fn text(&self, field: &str) -> Result<String, DatasetError> {
        let v = self.required(field)?;
        value_text(v)
            .ok_or_else(|| self.bad(field, format!("expected text, found {}", describe(v))))
    }

    fn holds_whole_number(&self, field: &str) -> bool {
        self.get(field)
            .is_some_and(|v| v.as_u64().is_some() || v.as_i64().is_some())
    }

    fn list(&self, field: &str) -> Result<Vec<String>, DatasetError> {
        let v = self.required(field)?;
        json_list(v).ok_or_else(|| {
            self.bad(
                field,
                format!("expected a list of texts, found {}", describe(v)),
            )
        })
    }
}

fn json_list(v: &Value) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|o| match o {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .collect()
}

/// A CSV row read through its header.
pub(crate) struct CsvRecord<'a> {
    pub file: &'a str,
    pub location: Location,
    pub columns: &'a HashMap<String, usize>,
    pub cells: &'a [String],
}

impl Record for CsvRecord<'_> {
    fn file(&self) -> &str {
        self.file
    }

    fn location(&self) -> Location {
        self.location
    }

    /// A column missing from the header is an error (caught once, before the rows); a row too
    /// short to reach the column reads as a missing field.
    fn text_opt(&self, field: &str) -> Result<Option<String>, DatasetError> {
        Ok(self
            .columns
            .get(field)
            .and_then(|&i| self.cells.get(i))
            .cloned())
    }

    fn list(&self, field: &str) -> Result<Vec<String>, DatasetError> {
        let cell = self.text(field)?;
        let v: Value = serde_json::from_str(&cell)
            .map_err(|_| self.bad(field, "expected a JSON list of option texts"))?;
        json_list(&v).ok_or_else(|| self.bad(field, "expected a JSON list of option texts"))
    }
}

/// Collects one file's items: checks each has a question and a gold answer that parses under
/// its kind, and that ids are unique.
pub(crate) struct Collector {
    file: String,
    pub items: Vec<Item>,
    seen: HashMap<String, Location>,
}

/// The field names an item was read from, for messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields<'a> {
    pub question: &'a str,
    pub answer: &'a str,
}

impl Collector {
    pub fn new(file: &str) -> Collector {
        Collector {
            file: file.to_string(),
            items: Vec::new(),
            seen: HashMap::new(),
        }
    }

    /// The index the next item gets in this file.
    pub fn next_index(&self) -> usize {
        self.items.len()
    }

    pub fn push(
        &mut self,
        location: Location,
        fields: Fields<'_>,
        item: Item,
    ) -> Result<(), DatasetError> {
        let place = || Place::new(&self.file, location);
        if item.question.trim().is_empty() {
            return Err(DatasetError::bad_field(
                &self.file,
                location,
                fields.question,
                "empty question",
            ));
        }
        if item.gold_answer().is_none() {
            return Err(DatasetError::Gold {
                place: place(),
                field: fields.answer.to_string(),
                gold: item.gold.clone(),
                kind: item.kind,
            });
        }
        if let Some(&first) = self.seen.get(&item.id) {
            return Err(DatasetError::DuplicateId {
                place: place(),
                id: item.id.clone(),
                first,
            });
        }
        self.seen.insert(item.id.clone(), location);
        self.items.push(item);
        Ok(())
    }
}
