//! Load errors: each names the file, the place in it and the field at fault.

use std::fmt;
use std::path::PathBuf;

use moot_core::AnswerKind;

use crate::data_dir::DATA_DIR_VAR;
use crate::spec_error::SpecError;

/// Where in a dataset file something is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The file as a whole (its header, its top-level structure).
    File,
    /// A line of a JSONL file, counted from 1 (blank lines included).
    Line(usize),
    /// A data row of a CSV file counted from 1 (a header row is not counted), and the line of the
    /// file it starts on (a quoted cell may span lines).
    Row { row: usize, line: u64 },
    /// A row of a Parquet file, counted from 1 within its file.
    Record(usize),
    /// An entry of a JSON document's list, counted from 0 like the item ids (`examples[120]`).
    Entry { list: &'static str, index: usize },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File => Ok(()),
            Location::Line(n) => write!(f, "line {n}"),
            Location::Row { row, line } => write!(f, "row {row} (line {line})"),
            Location::Record(n) => write!(f, "row {n}"),
            Location::Entry { list, index } => write!(f, "{list}[{index}]"),
        }
    }
}

/// A file (named relative to the data directory for the built-in datasets) and a place in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub location: Location,
}

impl Place {
    pub(crate) fn new(file: &str, location: Location) -> Place {
        Place {
            file: file.to_string(),
            location,
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location {
            Location::File => f.write_str(&self.file),
            loc => write!(f, "{} {loc}", self.file),
        }
    }
}

/// How many characters of a gold an error quotes: a bad row costs its message no more.
pub const QUOTED_CHARS: usize = 200;

/// `text` quoted for an error: whole when short, else its first [`QUOTED_CHARS`] characters
/// and its size (a 5 MB gold is not echoed whole).
pub fn quoted(text: &str) -> String {
    if text.chars().count() <= QUOTED_CHARS {
        return format!("{text:?}");
    }
    let head: String = text.chars().take(QUOTED_CHARS).collect();
    format!(
        "{head:?}… ({} in all)",
        moot_files::bytes(text.len() as u64)
    )
}

/// A choice's gold that names no option. `problem` is the same for like items (they are
/// counted together when left out); `detail` says what there was.
#[derive(Debug, thiserror::Error)]
#[error("{place}: gold {} from field `{field}` {problem} ({detail})", quoted(.gold))]
pub struct BadGold {
    pub place: Place,
    pub field: String,
    pub gold: String,
    pub problem: &'static str,
    pub detail: String,
}

/// Why a dataset could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The data directory itself is missing.
    #[error(
        "data directory {} does not exist; set {DATA_DIR_VAR} to the folder that holds gsm8k/, \
         mmlu/, bbh/, … (without it, ../shared/data from the current directory is used)",
        .path.display()
    )]
    MissingDataDir { path: PathBuf },
    /// A dataset file is missing from an existing data directory (or a generic file is missing).
    #[error("dataset file {file} not found (looked at {})", .path.display())]
    MissingFile { file: String, path: PathBuf },
    /// A dataset file that is not read: the system's reason, or a FIFO, a device, a folder, a
    /// file past 1 GiB (see `moot_files`).
    #[error("cannot read {}: {problem}", file_and_path(.file, .path))]
    Unreadable {
        file: String,
        path: PathBuf,
        problem: moot_files::Problem,
    },
    /// The file or a record is not what its format requires (bad JSON, wrong column count, …).
    #[error("{place}: {message}")]
    Malformed { place: Place, message: String },
    /// A field the mapping names is not in the record; `detail` says where a dotted path broke
    /// off (`choices` has no field `txt`; its fields: label, text).
    #[error("{place}: missing field `{field}`{}", detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    MissingField {
        place: Place,
        field: String,
        detail: Option<String>,
    },
    /// A field is present but unusable: `gsm8k/test.jsonl line 17: no `#### N` in field `answer``.
    #[error("{place}: {problem} in field `{field}`")]
    BadField {
        place: Place,
        field: String,
        problem: String,
    },
    /// The gold answer, once reduced, does not parse under the item's answer kind.
    #[error("{place}: gold answer {} from field `{field}` does not parse as {kind}", quoted(.gold))]
    Gold {
        place: Place,
        field: String,
        gold: String,
        kind: AnswerKind,
    },
    /// A choice's gold that names no option: a label not among the labels, an index past the
    /// options (boxed: it is the largest).
    #[error(transparent)]
    BadGold(Box<BadGold>),
    /// Two records of a generic file map to the same id.
    #[error("{place}: duplicate id {id:?} (first at {first})")]
    DuplicateId {
        place: Place,
        id: String,
        first: Location,
    },
    /// `--skip-invalid` left out every item of the file.
    #[error("{file}: every item was left out ({count}); the first: {first}")]
    AllLeftOut {
        file: String,
        count: usize,
        first: String,
    },
    #[error(transparent)]
    Spec(#[from] SpecError),
}

impl DatasetError {
    pub(crate) fn malformed(file: &str, location: Location, message: impl Into<String>) -> Self {
        DatasetError::Malformed {
            place: Place::new(file, location),
            message: message.into(),
        }
    }

    pub(crate) fn missing_field(file: &str, location: Location, field: &str) -> Self {
        DatasetError::MissingField {
            place: Place::new(file, location),
            field: field.to_string(),
            detail: None,
        }
    }

    /// Why the item this error is about cannot be scored, as a class shared by like items
    /// ("gold does not parse as numeric", "missing field `answer`"), when the error is about one
    /// item's fields and `--skip-invalid` may leave the item out; `None` for an error about the
    /// file (bad JSON, a missing column, a duplicate id), which stops the load.
    pub fn item_problem(&self) -> Option<String> {
        match self {
            DatasetError::Gold { kind, .. } => Some(format!("gold does not parse as {kind}")),
            DatasetError::BadGold(bad) => Some(format!("gold {}", bad.problem)),
            DatasetError::MissingField { field, .. } => Some(format!("missing field `{field}`")),
            DatasetError::BadField { field, problem, .. } => {
                Some(format!("{problem} in field `{field}`"))
            }
            _ => None,
        }
    }

    pub(crate) fn bad_field(
        file: &str,
        location: Location,
        field: &str,
        problem: impl Into<String>,
    ) -> Self {
        DatasetError::BadField {
            place: Place::new(file, location),
            field: field.to_string(),
            problem: problem.into(),
        }
    }
}

/// A file's name in messages, with its path when that says more (a data folder's file).
fn file_and_path(file: &str, path: &std::path::Path) -> String {
    let shown = moot_files::shown(path);
    if shown == file {
        shown
    } else {
        format!("{file} ({shown})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_gold_is_quoted_up_to_its_bound() {
        assert_eq!(quoted("42"), "\"42\"");
        let long = "7".repeat(5_000_000);
        let shown = quoted(&long);
        assert!(shown.len() < QUOTED_CHARS + 40, "{}", shown.len());
        assert!(shown.ends_with("… (5000000 bytes in all)"), "{shown}");
    }

    #[test]
    fn messages_name_file_place_and_field() {
        let e = DatasetError::bad_field(
            "gsm8k/test.jsonl",
            Location::Line(17),
            "answer",
            "no `#### N`",
        );
        assert_eq!(
            e.to_string(),
            "gsm8k/test.jsonl line 17: no `#### N` in field `answer`"
        );
        let e = DatasetError::missing_field(
            "bbh/navigate.json",
            Location::Entry {
                list: "examples",
                index: 3,
            },
            "target",
        );
        assert_eq!(
            e.to_string(),
            "bbh/navigate.json examples[3]: missing field `target`"
        );
        let e = DatasetError::malformed("x.csv", Location::File, "empty file");
        assert_eq!(e.to_string(), "x.csv: empty file");
        let e = DatasetError::MissingDataDir {
            path: PathBuf::from("/nowhere"),
        };
        assert!(e.to_string().contains("/nowhere"));
        assert!(e.to_string().contains("MOOT_DATA_DIR"));
    }
}
