//! freemad transcript files (JSON, or its Markdown form) into the store, as runs that
//! `moot show`, `moot decide --run` and `moot report` read like any other (`moot import`).
//!
//! The files are input from elsewhere: each is read only if it is a regular file of at most
//! `max_file_bytes` (a folder's symbolic links only when they lead to one inside the folder;
//! FIFOs and devices never opened), and stored as one transaction, so a file that fails leaves
//! nothing behind. A bad file is reported and the others are still imported; the import fails
//! at the end if any was bad.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use moot_core::decision::{DecisionConfig, Evidence, FreeMadWeights};
use moot_core::text::plural;
use moot_store::{DecisionRecord, Store, StoreError, WholeRun};

use crate::error::{bad_input, InputError};

/// A path as a terminal line shows it: control characters (a hostile file name's escape
/// sequences) escaped.
pub use moot_files::shown;

/// The largest file read unless the caller says otherwise: 64 MiB, some hundred times
/// freemad's longest transcripts, while a file's parsed records take several times its size in
/// memory.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 << 20;

/// A transcript file to read: the path it is named by, and whether it was found in a folder
/// (whose symbolic links are followed only within the folder) or named by the user.
struct Found {
    path: PathBuf,
    folder: Option<PathBuf>,
}

/// What became of one file: told to the caller as each file is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutcome {
    /// Stored now as this run.
    Imported(String),
    /// Stored by an earlier import as this run.
    ImportedBefore(String),
    /// Not imported, and why (the file, its size, its text, or a record the store refused).
    Failed(String),
}

/// Imports the transcript at `path`, or every `.json` and `.md` file of the folder at `path`
/// (sorted by name), as runs named `fm-` and the file's name; `each` is told what became of
/// each file as it is done. Fails with an [`InputError`] when there is no transcript or when
/// any file failed (the others are imported all the same), and stops at once when the store
/// cannot be used (every other file would fail the same way).
pub async fn import(
    path: &Path,
    max_file_bytes: u64,
    via: moot_config::Via,
    store: &dyn Store,
    each: &mut dyn FnMut(&Path, &FileOutcome),
) -> Result<()> {
    let files = transcript_files(path)?;
    if files.is_empty() {
        return bad_input(format!(
            "no freemad transcript (.json or .md) in {}",
            shown(path)
        ));
    }
    let mut failed = 0;
    for found in &files {
        let file = &found.path;
        let outcome = match import_file(found, max_file_bytes, via, store).await {
            Ok(Imported::New(id)) => FileOutcome::Imported(id),
            Ok(Imported::Before(id)) => FileOutcome::ImportedBefore(id),
            Err(Failed::File(why)) => {
                failed += 1;
                FileOutcome::Failed(why)
            }
            Err(Failed::Store(e)) => {
                return Err(anyhow::Error::new(e)).with_context(|| {
                    format!("importing {} (nothing of it was stored)", shown(file))
                })
            }
        };
        each(file, &outcome);
    }
    if failed > 0 {
        return bad_input(format!(
            "{} of {} not imported (each is named above){}",
            failed,
            plural(files.len(), "file"),
            if failed < files.len() {
                "; the others were"
            } else {
                ""
            }
        ));
    }
    Ok(())
}

/// What became of a file that was read.
enum Imported {
    /// Stored now as this run.
    New(String),
    /// Stored by an earlier import as this run.
    Before(String),
}

/// Why a file was not imported.
enum Failed {
    /// The file (what it is, its size, its text) or a record the store refused from it: said,
    /// and the next file is read.
    File(String),
    /// The store cannot be reached or written: the import stops.
    Store(StoreError),
}

impl From<StoreError> for Failed {
    fn from(e: StoreError) -> Failed {
        match e {
            StoreError::Unreachable { .. } | StoreError::ReadOnly(_) => Failed::Store(e),
            e if e.is_unusable_store() => Failed::Store(e),
            // An earlier import's run of the same id that cannot be read: the message says so.
            e @ StoreError::Corrupt { .. } => Failed::File(e.to_string()),
            // A row the database refuses (PostgreSQL takes no NUL in text, SQLite no string
            // past its limit): this file's, and its transaction left nothing.
            e => Failed::File(format!("the store refused it: {e}")),
        }
    }
}

async fn import_file(
    found: &Found,
    max_bytes: u64,
    via: moot_config::Via,
    store: &dyn Store,
) -> Result<Imported, Failed> {
    let file = &found.path;
    if let Some(id) = imported_before(store, file).await? {
        return Ok(Imported::Before(id));
    }
    let text = read_transcript(found, max_bytes, via).map_err(Failed::File)?;
    let doc = moot_freemad::import::transcript_json(&text).map_err(|e| Failed::File(e.0))?;
    drop(text);
    let id = run_id(file);
    let source = file.display().to_string();
    let imported = moot_freemad::import::import(&id, &source, &doc, &moot_engine::timestamp())
        .map_err(|e| Failed::File(e.0))?;
    drop(doc);
    let whole = whole_run(imported).map_err(|e| Failed::File(format!("{e:#}")))?;
    if store.record_whole_run(&whole).await? {
        Ok(Imported::New(id))
    } else {
        // Imported by another process since it was looked for.
        Ok(Imported::Before(id))
    }
}

/// The transcript files `path` names: itself, or the `.json` and `.md` entries of the folder,
/// sorted (what each one is is checked when it is read).
fn transcript_files(path: &Path) -> Result<Vec<Found>> {
    let meta = std::fs::metadata(path)
        .map_err(|e| InputError(format!("cannot read {}: {e}", shown(path))))?;
    if !meta.is_dir() {
        return Ok(vec![Found {
            path: path.to_path_buf(),
            folder: None,
        }]);
    }
    let entries = std::fs::read_dir(path)
        .map_err(|e| InputError(format!("cannot read {}: {e}", shown(path))))?;
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| InputError(format!("cannot read {}: {e}", shown(path))))?;
        let entry = entry.path();
        if entry.extension().is_some_and(|x| x == "json" || x == "md") {
            files.push(entry);
        }
    }
    files.sort();
    Ok(files
        .into_iter()
        .map(|file| Found {
            path: file,
            folder: Some(path.to_path_buf()),
        })
        .collect())
}

/// The text of a transcript file, or why it is not read. Only a regular file is opened: a
/// FIFO would block the import forever and a device (`/dev/zero`) never ends. A folder's
/// symbolic link is followed only to a file inside the folder. The kind is checked before the
/// file is opened and again on the open file (non-blocking, and not following a link where
/// none was expected), so a file swapped in between is caught too; at most `max_bytes + 1`
/// bytes are read whatever its size claims.
fn read_transcript(found: &Found, max_bytes: u64, via: moot_config::Via) -> Result<String, String> {
    let named = &found.path;
    let (target, follow) = match &found.folder {
        // Named by the user: a link is theirs to follow.
        None => (named.clone(), true),
        Some(folder) => {
            let link = std::fs::symlink_metadata(named).map_err(|e| e.to_string())?;
            if link.file_type().is_symlink() {
                let target = std::fs::canonicalize(named)
                    .map_err(|e| format!("a symbolic link that leads nowhere readable: {e}"))?;
                let inside = std::fs::canonicalize(folder).map_err(|e| e.to_string())?;
                if !target.starts_with(&inside) {
                    return Err(format!(
                        "a symbolic link to {}, outside the folder: not read",
                        shown(&target)
                    ));
                }
                (target, false)
            } else {
                (named.clone(), false)
            }
        }
    };
    let links = if follow {
        moot_files::Links::Follow
    } else {
        moot_files::Links::Refuse
    };
    let limit = moot_files::Limit::new(max_bytes, "moot import reads from a file");
    let data = moot_files::read_bytes_with(&target, limit, links).map_err(|e| match e.problem {
        moot_files::Problem::TooLarge { size, .. } => format!(
            "{} ({} or more reads it)",
            e.problem,
            via.assignment(
                moot_config::Field::MaxFileBytes,
                size.unwrap_or(0).max(max_bytes.saturating_add(1))
            )
        ),
        problem => problem.to_string(),
    })?;
    moot_config::dialect::utf8_text("the file", data)
}

/// The run id a file becomes: `fm-` and its whole name, so that no two files of a folder share
/// one (`a.b.json` and `a-b.json`, `x.json` and `x.md`) and importing the file again finds it.
/// Letters, digits, `-`, `_` and `.` stay; any other byte is written `~` and two hex digits
/// (`~` itself too), which keeps the names apart.
fn run_id(file: &Path) -> String {
    let name = file.file_name().map(OsStrExt::as_bytes).unwrap_or_default();
    let mut id = String::from("fm-");
    for &b in name {
        if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
            id.push(char::from(b));
        } else {
            id.push_str(&format!("~{b:02x}"));
        }
    }
    id
}

/// The run id moot import gave a file before ids kept the whole name: `fm-` and its stem, any
/// character but letters, digits, `-` and `_` made `-` (so it could be another file's).
fn earlier_run_id(file: &Path) -> String {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let safe: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("fm-{safe}")
}

/// The run an earlier import made of `file`, if any: its id, or the id an older moot gave it
/// when that run's question names a file of the same name (another file that mapped to the
/// same old id is not this one).
async fn imported_before(store: &dyn Store, file: &Path) -> Result<Option<String>, StoreError> {
    let id = run_id(file);
    match store.run(&id).await {
        Ok(_) => return Ok(Some(id)),
        Err(StoreError::RunNotFound(_)) => {}
        Err(e) => return Err(e),
    }
    let earlier = earlier_run_id(file);
    match store.run(&earlier).await {
        Ok(run) => {
            let source = moot_freemad::import::source_of(&run.question).map(Path::new);
            let same = source.and_then(Path::file_name) == file.file_name();
            Ok(same.then_some(earlier))
        }
        Err(StoreError::RunNotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The run with its calls and every rule's decision (under freemad's scoring defaults),
/// finished with freemad's final solution: written as one.
fn whole_run(imported: moot_freemad::import::Imported) -> Result<WholeRun> {
    let moot_freemad::import::Imported { run, calls } = imported;
    let spec = serde_json::from_value(run.spec.clone()).context("the imported spec")?;
    let transcript = moot_engine::transcript_of(&spec, &calls);
    let config = DecisionConfig {
        weights: FreeMadWeights::default(),
        normalize: true,
        ..DecisionConfig::default()
    };
    let decisions = moot_engine::decide_all_with(
        &transcript,
        &Evidence::default(),
        &Default::default(),
        &config,
    )
    .into_iter()
    .map(|d| DecisionRecord {
        run_id: run.id.clone(),
        rule: d.rule.to_string(),
        answer: d.answer.as_ref().map(|a| a.canonical().to_string()),
        decision: moot_engine::decision_json(&d),
        decided_at: run.created_at.clone(),
    })
    .collect();
    Ok(WholeRun {
        run,
        calls,
        decisions,
        validations: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_keep_every_file_name_apart() {
        let id = |name: &str| run_id(Path::new(name));
        assert_eq!(id("/t/a.b.json"), "fm-a.b.json");
        assert_eq!(id("/t/a-b.json"), "fm-a-b.json");
        assert_ne!(id("x.json"), id("x.md"));
        assert_eq!(id("x y~.md"), "fm-x~20y~7e.md");
        assert_eq!(earlier_run_id(Path::new("/t/a.b.json")), "fm-a-b");
    }

    #[test]
    fn shown_paths_escape_control_characters() {
        assert_eq!(shown(Path::new("a\u{1b}[2Jb.json")), "a\\u{1b}[2Jb.json");
    }
}
