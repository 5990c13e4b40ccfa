//! [`StoreError`]: what can go wrong with a store, each a one-line message.

use std::path::PathBuf;

/// What can go wrong with a store. Each message is one line that names the store when the
/// store itself is the problem; none repeats its cause (no `source()` whose text is already in
/// the message), so a `{:#}` chain prints it once.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A query failed for a reason that is not the store file's (locked, disk full, …).
    #[error("database error: {}", database_message(.0))]
    Database(sqlx::Error),
    /// A reading command (or [`Access::Write`]) was pointed at a file that does not exist.
    #[error("no store at {}{}", .path.display(), if *.default { " (the default location; pass --store FILE or set MOOT_STORE to use another)" } else { "" })]
    NotFound { path: PathBuf, default: bool },
    /// A new store's folder does not exist (only the default location's folder is created).
    #[error("cannot create the store {}: the folder {} does not exist", .path.display(), .folder.display())]
    NoFolder { path: PathBuf, folder: PathBuf },
    /// The file cannot be opened at all (a folder, no permission).
    #[error("cannot open the store {}: {reason}", .path.display())]
    CannotOpen { path: PathBuf, reason: String },
    /// Not a SQLite file, a SQLite file of another program, or a damaged store.
    #[error("the store {} is not a moot database or is corrupt: {reason}", .path.display())]
    NotAStore { path: PathBuf, reason: String },
    /// The store was migrated by a newer moot, to a schema this binary does not know.
    #[error("the store {} was written by a newer moot (schema version {found}; this moot knows up to {known}): use that version of moot or a newer one", .path.display())]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    /// An older store could not be brought up to this binary's schema.
    #[error("cannot upgrade the store {}: {message}", .path.display())]
    Migrate { path: PathBuf, message: String },
    /// A writing command on a store that cannot be written (a read-only filesystem, no
    /// permission): reading commands still open it.
    #[error("the store {} cannot be written: {reason}", .path.display())]
    NotWritable { path: PathBuf, reason: String },
    /// The store's disk (or its quota) is full: the write that did not fit is not recorded,
    /// and everything recorded before it stays.
    #[error("the store {} cannot be written: its disk is full (free some space and run again; nothing stored before is lost)", .path.display())]
    DiskFull { path: PathBuf },
    /// A write through a store opened with [`Access::Read`].
    #[error("the store {} was opened read-only", .0.display())]
    ReadOnly(PathBuf),
    #[error("run {0:?} not found")]
    RunNotFound(String),
    #[error("benchmark {0:?} not found")]
    BenchNotFound(String),
    #[error("a benchmark named {0:?} already exists")]
    BenchExists(String),
    /// A call placed outside the bounds any debate can have (see
    /// [`crate::records::MAX_STORED_ROUND`]): refused when written, and an error naming the
    /// run when read, never a grid of a billion rounds.
    #[error("run {run}: {message}")]
    OutOfBounds { run: String, message: String },
    #[error("stored {what} of run {run} is unreadable: {message}")]
    Corrupt {
        run: String,
        /// The column, and for a call which one (`messages of the call in round 0, agent 1
        /// (answer)`), so the row can be found and mended.
        what: String,
        message: String,
    },
    #[error("{0}")]
    Location(String),
    /// The database server cannot be reached: refused, gone away mid-run, timed out, or it
    /// refused the credentials or the database name. Nothing recorded before is lost.
    #[error("the store {store} cannot be reached: {reason}")]
    Unreachable { store: String, reason: String },
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        StoreError::Database(e)
    }
}

impl StoreError {
    /// The store given cannot be used as it is (missing, in a missing folder, unreadable, not a
    /// moot database, damaged, from a newer moot, or not writable by a writing command): a problem with what the user pointed at,
    /// not a failure of moot. A server that cannot be reached is not one of these: it may be
    /// back in a moment (a worker restarted by its scheduler then carries on).
    pub fn is_unusable_store(&self) -> bool {
        matches!(
            self,
            StoreError::NotFound { .. }
                | StoreError::NoFolder { .. }
                | StoreError::CannotOpen { .. }
                | StoreError::NotAStore { .. }
                | StoreError::NotWritable { .. }
                | StoreError::TooNew { .. }
                | StoreError::Location(_)
        )
    }
}

/// The message of a database error without sqlx's prefix and SQLite's result code.
pub(crate) fn database_message(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(d) => d.message().to_string(),
        other => other.to_string(),
    }
}
