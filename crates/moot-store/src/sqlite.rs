//! The SQLite store: one file, WAL journal, foreign keys on.
//!
//! How a file is opened depends on the [`Access`] asked for. Before anything is written, an
//! existing file is inspected through a read-only connection: a file that is not a SQLite
//! database, a damaged one, a SQLite database of another program, and a store migrated by a
//! newer moot are refused there, so that no error path changes a byte of what is stored.
//! Reading ([`Access::Read`]) never creates, migrates or writes the file: an up-to-date store is
//! opened read-only (SQLite may still create the usual `-wal`/`-shm` companions of a WAL file, as
//! every SQLite reader does; where it cannot, on a read-only filesystem or folder, the file is
//! read as immutable); an older store is copied into memory, and the copy is migrated and read.
//!
//! Where the file lives is checked first too: a FIFO, socket or device (at the path or as one of
//! SQLite's `-wal`, `-shm` and `-journal` companions) is refused before anything opens it, a
//! writing command on a read-only filesystem or without permission is refused in one line, and
//! a full disk is said to be one, naming the store. Processes that open one new (or older) store
//! at once migrate it once: the migration runs in one `BEGIN IMMEDIATE` transaction, which the
//! others wait for before they find nothing left to apply.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqliteOwnedBuf, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions, Connection, SqliteConnection, SqlitePool};

use crate::access::Access;
use crate::error::{database_message, StoreError};
use crate::queries::{delegate_store, lease_ms, run_columns, store_queries, Dialect, Rows};
use crate::records::{
    sort_bench_items, BenchItemRecord, BenchJobRecord, BenchRecord, CallBatch, CallCursor,
    CallRecord, DecisionRecord, JobCounts, JobState, RunFilter, RunOutcome, RunRecord, RunStatus,
    ValidationRecord, WholeRun, WorkerRecord,
};
use crate::rows::{
    all, bench_from_row, bench_item_from_row, call_from_row, call_status, decision_from_row,
    job_from_row, json_text, parse_json, run_from_row, validation_from_row, worker_from_row,
    Columns,
};

/// The schema, one migration per file in `migrations/sqlite/`; a store records which it has applied.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

// SQLite's primary result codes for a file that cannot be opened, is damaged, or is not a
// database (https://sqlite.org/rescode.html).
const SQLITE_BUSY: i32 = 5;
const SQLITE_READONLY: i32 = 8;
const SQLITE_IOERR: i32 = 10;
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_FULL: i32 = 13;
const SQLITE_CANTOPEN: i32 = 14;
const SQLITE_NOTADB: i32 = 26;

/// Free space under which a disk I/O error on a store is taken for a full disk: SQLite says
/// "disk I/O error", not "disk is full", when it cannot grow the `-shm` file it maps.
const NEARLY_FULL_BYTES: u64 = 1 << 20;

/// The files SQLite keeps beside a store and opens without asking.
const COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// What the error says when a writing command meets a read-only filesystem.
const READ_ONLY_FILESYSTEM: &str = "it is on a read-only filesystem (reading commands such as moot show and moot report can still open it)";

#[derive(Debug, Clone)]
pub struct SqliteStore {
    queries: Queries,
    path: PathBuf,
    read_only: bool,
    group: Arc<GroupCommit>,
}

/// Call batches and outcomes recorded at the same moment by concurrent debates, committed
/// together. SQLite commits one transaction at a time and a commit costs far more than a row,
/// so whoever gets the turn writes everything queued meanwhile in one transaction; the others
/// find their write already done when their turn comes.
#[derive(Debug, Default)]
struct GroupCommit {
    queue: std::sync::Mutex<Vec<Queued>>,
    turn: tokio::sync::Mutex<()>,
}

#[derive(Debug)]
struct Queued {
    /// Shared with the debate that queued it, which writes it alone if the writer that took
    /// it is cancelled.
    write: Arc<Write>,
    written: tokio::sync::oneshot::Sender<Result<(), StoreError>>,
}

/// What a debate queues for the next group commit.
#[derive(Debug)]
enum Write {
    Calls(CallBatch),
    Outcome(RunOutcome),
}

impl Write {
    fn add_to<'a>(&'a self, rows: &mut Rows<'a>) {
        match self {
            Write::Calls(batch) => rows.add_batch(batch),
            Write::Outcome(outcome) => rows.outcomes.push(outcome),
        }
    }
}

/// The queries behind [`Store`], whose errors [`SqliteStore`] locates (names the store in).
#[derive(Debug, Clone)]
struct Queries {
    /// Writes. SQLite lets one connection write at a time; a writer on another connection does
    /// not queue but sleeps in SQLite's busy handler (1 to 100 ms a try), which is why calls are
    /// written in group commits and reads go to their own pool. One connection alone would end
    /// the sleeps, but a caller that holds a write in a future it stops polling (a worker's
    /// debates while it claims the next job) would then wait on itself.
    pool: SqlitePool,
    /// Reads, which WAL lets run beside the writer.
    read: SqlitePool,
}

/// What an existing file holds, as seen without writing to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Schema {
    /// A SQLite database without tables (an empty file): a store nothing was recorded in.
    Empty,
    /// Every migration this binary knows is applied.
    Current,
    /// Some are not applied yet: written by an older moot.
    Older,
}

/// SQLite answered busy (`SQLITE_BUSY`): another connection holds what this one needs.
fn refused_busy(e: &StoreError) -> bool {
    matches!(e, StoreError::Database(db) if primary_code(db) == Some(SQLITE_BUSY))
}

/// SQLite's primary result code of a database error.
fn primary_code(e: &sqlx::Error) -> Option<i32> {
    match e {
        sqlx::Error::Database(d) => d.code()?.parse::<i32>().ok().map(|c| c & 0xff),
        _ => None,
    }
}

/// Names the store in errors that are about its file: damaged or not a database, not
/// openable, not writable, or on a full disk.
fn located(path: &Path, e: StoreError) -> StoreError {
    let StoreError::Database(db) = &e else {
        return e;
    };
    match primary_code(db) {
        Some(SQLITE_CORRUPT | SQLITE_NOTADB) => StoreError::NotAStore {
            path: path.to_path_buf(),
            reason: database_message(db),
        },
        Some(SQLITE_CANTOPEN) => StoreError::CannotOpen {
            path: path.to_path_buf(),
            reason: database_message(db),
        },
        Some(SQLITE_FULL) => StoreError::DiskFull {
            path: path.to_path_buf(),
        },
        Some(SQLITE_IOERR) if nearly_full(path) => StoreError::DiskFull {
            path: path.to_path_buf(),
        },
        Some(SQLITE_READONLY) => StoreError::NotWritable {
            path: path.to_path_buf(),
            reason: database_message(db),
        },
        _ => e,
    }
}

/// Whether the filesystem holding `path` has (almost) no space left for its user.
fn nearly_full(path: &Path) -> bool {
    rustix::fs::statvfs(folder_of(path))
        .is_ok_and(|fs| fs.f_bavail.saturating_mul(fs.f_frsize) < NEARLY_FULL_BYTES)
}

/// The folder that holds `path` (`.` for a bare file name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// SQLite's file `suffix` (`-wal`, `-shm`, `-journal`) beside the store at `path`.
fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Refuses a store whose `-wal`, `-shm` or `-journal` is not a regular file: SQLite opens them
/// without asking, and would block on a FIFO or write through a device.
fn check_companions(path: &Path) -> Result<(), StoreError> {
    for suffix in COMPANIONS {
        let beside = companion(path, suffix);
        if let Some(kind) = std::fs::metadata(&beside)
            .ok()
            .and_then(|m| moot_files::not_regular(&m.file_type()))
        {
            return Err(StoreError::CannotOpen {
                path: path.to_path_buf(),
                reason: format!("{} is {kind}, not a file", beside.display()),
            });
        }
    }
    Ok(())
}

/// Whether this process may write `path` (a file or folder): `Err` with why not when the
/// filesystem is read-only or permission is denied, `Ok` otherwise (SQLite reports anything
/// else when it tries).
fn may_write(path: &Path) -> Result<(), String> {
    use rustix::io::Errno;
    match rustix::fs::access(path, rustix::fs::Access::WRITE_OK) {
        Err(Errno::ROFS) => Err(READ_ONLY_FILESYSTEM.into()),
        Err(Errno::ACCESS | Errno::PERM) => Err(format!(
            "no permission to write {} (reading commands such as moot show and moot report can still open it)",
            path.display()
        )),
        _ => Ok(()),
    }
}

/// Refuses, before SQLite is asked, a store that a writing command cannot write: on a
/// read-only filesystem, or without permission to write the file (`found`) or its folder,
/// where SQLite makes the WAL's `-wal` and `-shm` files.
fn check_writable(path: &Path, found: bool) -> Result<(), StoreError> {
    let folder = folder_of(path);
    let file = found.then_some(path);
    for target in file.into_iter().chain([folder]) {
        may_write(target).map_err(|reason| StoreError::NotWritable {
            path: path.to_path_buf(),
            reason,
        })?;
    }
    Ok(())
}

fn migrate_error(path: &Path, e: MigrateError) -> StoreError {
    match e {
        MigrateError::Execute(db) | MigrateError::ExecuteMigration(db, _) => {
            match located(path, StoreError::Database(db)) {
                StoreError::Database(db) => StoreError::Migrate {
                    path: path.to_path_buf(),
                    message: database_message(&db),
                },
                other => other,
            }
        }
        other => StoreError::Migrate {
            path: path.to_path_buf(),
            message: other.to_string(),
        },
    }
}

/// Brings the store at `pool` to this binary's schema in one `BEGIN IMMEDIATE` transaction.
/// SQLite has no lock for sqlx's migrator to take, and processes that opened one new store at
/// once each migrated it as if alone ("table runs already exists"); now the first to take the
/// write lock migrates, and the others wait for it, then list the migrations applied (inside
/// their own transaction) and find nothing left to do. A migration that fails leaves none of
/// them applied.
async fn migrate_file(pool: &SqlitePool, path: &Path) -> Result<(), StoreError> {
    let mut conn = pool.acquire().await.map_err(|e| located(path, e.into()))?;
    let mut tx = conn
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(|e| located(path, e.into()))?;
    MIGRATOR
        .run(&mut *tx)
        .await
        .map_err(|e| migrate_error(path, e))?;
    tx.commit().await.map_err(|e| located(path, e.into()))
}

/// Creates the default location's folder (the user data directory's `moot`): a writing command
/// may, unlike an explicit `--store` path's folder, which must exist.
pub(crate) fn create_default_folder(path: &Path) -> Result<(), StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::CannotOpen {
            path: path.to_path_buf(),
            reason: format!("creating the folder {}: {e}", dir.display()),
        })?;
    }
    Ok(())
}

/// Whether a store file is at `path` (an error when something that cannot be one is there, or
/// beside it: a folder, FIFO, socket or device, which are refused before anything opens them).
fn exists(path: &Path) -> Result<bool, StoreError> {
    check_companions(path)?;
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(StoreError::CannotOpen {
            path: path.to_path_buf(),
            reason: "it is a folder".into(),
        }),
        Ok(m) => match moot_files::not_regular(&m.file_type()) {
            Some(kind) => Err(StoreError::CannotOpen {
                path: path.to_path_buf(),
                reason: format!("it is {kind}, not a file"),
            }),
            None => Ok(true),
        },
        // A file where a folder of the path should be: nothing there (`check_folder` names it).
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(StoreError::CannotOpen {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }),
    }
}

/// Refuses to create a store whose folder is missing, naming the first folder that is.
fn check_folder(path: &Path) -> Result<(), StoreError> {
    let Some(parent) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    match std::fs::metadata(parent) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(StoreError::CannotOpen {
            path: path.to_path_buf(),
            reason: format!("{} is not a folder", parent.display()),
        }),
        Err(_) => {
            let mut missing = parent;
            while let Some(up) = missing.parent().filter(|d| !d.as_os_str().is_empty()) {
                if up.exists() {
                    break;
                }
                missing = up;
            }
            Err(StoreError::NoFolder {
                path: path.to_path_buf(),
                folder: missing.to_path_buf(),
            })
        }
    }
}

/// Options for the file at `path`, which SQLite never creates unless `create` is set.
fn file_options(path: &Path) -> SqliteConnectOptions {
    // A relative name SQLite could take for a URI (`file:…`) is made explicitly relative.
    let name = if path.is_relative() && path.to_string_lossy().starts_with("file:") {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    };
    SqliteConnectOptions::new()
        .filename(name)
        .create_if_missing(false)
        .busy_timeout(std::time::Duration::from_secs(10))
}

/// Options for reading the existing file at `path`. A reader of a WAL file needs its `-wal`
/// and `-shm`, which SQLite makes beside it; where it cannot (a read-only filesystem or folder)
/// and they are not there, the file is opened immutable: nothing can be writing it there, and
/// SQLite then reads the file alone. A `-wal` that holds changes but has no `-shm` beside it is
/// refused there instead: only through a `-shm` can SQLite read it, and reading without it
/// would silently miss what it holds.
fn reading_options(path: &Path) -> Result<SqliteConnectOptions, StoreError> {
    let options = file_options(path).read_only(true);
    let (wal, shm) = (companion(path, "-wal"), companion(path, "-shm"));
    if may_write(folder_of(path)).is_ok() || (wal.exists() && shm.exists()) {
        return Ok(options);
    }
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        return Err(StoreError::CannotOpen {
            path: path.to_path_buf(),
            reason: format!(
                "{} holds changes that SQLite reads only with a -shm file beside it, which cannot be made in {}: copy the store with its -wal to a folder moot can write",
                wal.display(),
                folder_of(path).display()
            ),
        });
    }
    Ok(options.immutable(true))
}

/// Opens one read-only connection to the existing file at `path`.
async fn read_only_connection(path: &Path) -> Result<SqliteConnection, StoreError> {
    reading_options(path)?
        .connect()
        .await
        .map_err(|e| located(path, e.into()))
}

/// What the existing file at `path` holds, refusing what this binary must not write to or read:
/// not a database, damaged, another program's database, or a newer moot's store.
async fn inspect(path: &Path) -> Result<Schema, StoreError> {
    if is_truncated(path) {
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
            reason: "database disk image is malformed".into(),
        });
    }
    let mut conn = read_only_connection(path).await?;
    let schema = inspect_connection(&mut conn, path).await;
    let _ = conn.close().await;
    schema.map_err(|e| located(path, e))
}

/// Whether the file is shorter than its own SQLite header says. SQLite opens such a file and
/// only fails on the first read of a lost page, which may come long after a command started (or
/// never, for a query that happens to avoid it); the header makes it an O(1) check at open.
///
/// Not while the `-wal` holds frames: the file's header may then be ahead of the file, and
/// rightly. A checkpoint copies pages from the WAL into the file, the first page (whose header
/// counts every page) among the first, and one that a full disk cut short leaves the header
/// counting pages the file never got; SQLite reads them from the WAL, and the store is whole.
fn is_truncated(path: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    if std::fs::metadata(companion(path, "-wal")).is_ok_and(|m| m.len() > 0) {
        return false;
    }
    // Never blocks, whatever was put at the path since it was checked.
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
    else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut header = [0u8; 100];
    if file.read_exact(&mut header).is_err() || !header.starts_with(b"SQLite format 3\0") {
        return false;
    }
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return false;
    };
    let be32 = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    // The page count is only meaningful when the version that wrote it also wrote the change
    // counter (SQLite's "version-valid-for" rule).
    let pages = u64::from(be32(28));
    let count_valid = be32(92) == be32(24) && pages > 0;
    count_valid && len < page_size.saturating_mul(pages)
}

async fn inspect_connection(
    conn: &mut SqliteConnection,
    path: &Path,
) -> Result<Schema, StoreError> {
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&mut *conn)
            .await?;
    if tables.is_empty() {
        return Ok(Schema::Empty);
    }
    if !tables.iter().any(|t| t == "_sqlx_migrations") {
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
            reason: "a SQLite database without moot's tables".into(),
        });
    }
    let applied: Vec<(i64, bool)> =
        sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&mut *conn)
            .await?;
    let known: HashSet<i64> = MIGRATOR.iter().map(|m| m.version).collect();
    let newest_known = known.iter().copied().max().unwrap_or(0);
    if let Some(found) = applied
        .iter()
        .map(|(v, _)| *v)
        .filter(|v| !known.contains(v))
        .max()
    {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            known: newest_known,
        });
    }
    if let Some((version, _)) = applied.iter().find(|(_, success)| !success) {
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
            reason: format!("migration {version} did not complete"),
        });
    }
    Ok(if applied.len() == known.len() {
        Schema::Current
    } else {
        Schema::Older
    })
}

impl SqliteStore {
    /// Opens the store at `path`, creating it if missing ([`Access::Create`]; its folder must
    /// exist).
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, Access::Create).await
    }

    /// Opens the store at `path` for `access` (see [`Access`] for what each may create or change).
    pub async fn open_with(path: &Path, access: Access) -> Result<SqliteStore, StoreError> {
        let found = exists(path)?;
        match access {
            Access::Read | Access::Write if !found => Err(StoreError::NotFound {
                path: path.to_path_buf(),
                default: false,
            }),
            Access::Read => match inspect(path).await? {
                Schema::Current => SqliteStore::read_file(path).await,
                Schema::Empty => SqliteStore::read_upgraded_copy(path, false).await,
                Schema::Older => SqliteStore::read_upgraded_copy(path, true).await,
            },
            Access::Write | Access::Create => {
                let schema = if found {
                    inspect(path).await?
                } else {
                    check_folder(path)?;
                    Schema::Empty
                };
                check_writable(path, found)?;
                SqliteStore::write_file(path, !found, schema != Schema::Current).await
            }
        }
    }

    /// A read-write pool on the file, migrated to this binary's schema unless it was found
    /// current (`migrate` false). Opening is tried again while SQLite answers busy at once:
    /// processes that open one new file together each turn it to WAL as their first
    /// connection is made, and of two that hold it to read and both ask to change it SQLite
    /// refuses one at once, without waiting (its deadlock rule; the busy timeout covers waits,
    /// not that). Such a refusal passes as soon as the other has switched, so a few tries a few
    /// milliseconds apart open the store.
    async fn write_file(
        path: &Path,
        create: bool,
        migrate: bool,
    ) -> Result<SqliteStore, StoreError> {
        use backon::{ExponentialBuilder, Retryable};
        let open = || SqliteStore::try_write_file(path, create, migrate);
        open.retry(
            ExponentialBuilder::default()
                .with_min_delay(std::time::Duration::from_millis(5))
                .with_max_delay(std::time::Duration::from_millis(500))
                .with_max_times(12)
                .with_jitter(),
        )
        .when(refused_busy)
        .await
    }

    async fn try_write_file(
        path: &Path,
        create: bool,
        migrate: bool,
    ) -> Result<SqliteStore, StoreError> {
        let options = file_options(path)
            .create_if_missing(create)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|e| located(path, e.into()))?;
        if migrate {
            migrate_file(&pool, path).await?;
        }
        let read = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(file_options(path).foreign_keys(true))
            .await
            .map_err(|e| located(path, e.into()))?;
        Ok(SqliteStore {
            queries: Queries { pool, read },
            path: path.to_path_buf(),
            read_only: false,
            group: Arc::default(),
        })
    }

    /// A read-only pool on a current store's file.
    async fn read_file(path: &Path) -> Result<SqliteStore, StoreError> {
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(reading_options(path)?.foreign_keys(true))
            .await
            .map_err(|e| located(path, e.into()))?;
        Ok(SqliteStore {
            queries: Queries {
                read: pool.clone(),
                pool,
            },
            path: path.to_path_buf(),
            read_only: true,
            group: Arc::default(),
        })
    }

    /// An older (or empty) store read without changing it: its pages are copied into memory
    /// through a read-only connection (WAL content included) unless it has none (`copy`
    /// false: an empty database), the copy is migrated, and the store reads the migrated copy.
    async fn read_upgraded_copy(path: &Path, copy: bool) -> Result<SqliteStore, StoreError> {
        let mut pages = Vec::new();
        if copy {
            let mut source = read_only_connection(path).await?;
            let serialized = source
                .serialize(None)
                .await
                .map_err(|e| located(path, e.into()));
            let _ = source.close().await;
            pages = serialized?.to_vec();
        }
        // Bytes 18 and 19 of the header say 2 for a WAL file; an in-memory copy has no WAL.
        if pages.len() >= 100 {
            pages[18] = 1;
            pages[19] = 1;
        }
        let mut memory = SqliteConnectOptions::new()
            .connect()
            .await
            .map_err(StoreError::from)?;
        if !pages.is_empty() {
            memory
                .deserialize(None, SqliteOwnedBuf::try_from(&pages[..])?, false)
                .await
                .map_err(|e| located(path, e.into()))?;
        }
        MIGRATOR
            .run(&mut memory)
            .await
            .map_err(|e| migrate_error(path, e))?;
        let migrated: Arc<Vec<u8>> = Arc::new(memory.serialize(None).await?.to_vec());
        let _ = memory.close().await;
        // One connection, kept open: each in-memory database is its own connection's.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .after_connect(move |conn, _| {
                let migrated = Arc::clone(&migrated);
                Box::pin(async move {
                    let buf = SqliteOwnedBuf::try_from(&migrated[..])?;
                    conn.deserialize(None, buf, true).await
                })
            })
            .connect_with(SqliteConnectOptions::new())
            .await?;
        Ok(SqliteStore {
            queries: Queries {
                read: pool.clone(),
                pool,
            },
            path: path.to_path_buf(),
            read_only: true,
            group: Arc::default(),
        })
    }

    /// The file this store reads (and, unless opened read-only, writes).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Refuses a write through a store opened with [`Access::Read`].
    fn writable(&self) -> Result<(), StoreError> {
        if self.read_only {
            Err(StoreError::ReadOnly(self.path.clone()))
        } else {
            Ok(())
        }
    }

    /// Names the store in an error about its file.
    fn located<T>(&self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        r.map_err(|e| located(&self.path, e))
    }
}

impl GroupCommit {
    /// The queue; a panic while it was held left nothing half-done in it (pushes and takes are
    /// whole), so a poisoned lock is taken as it is.
    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Vec<Queued>> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// SQLite's side of the shared queries (see [`crate::queries`]).
const SQLITE: Dialect = Dialect {
    now_ms: SQLITE_NOW_MS,
    // One statement: SQLite runs one writer at a time, so no two workers see the same row.
    claim: "UPDATE bench_jobs SET state = 'running', previous_worker = worker, worker = $2,
              lease_until = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + $3,
              claimed_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER),
              attempts = attempts + 1, error = NULL
            WHERE rowid = (SELECT rowid FROM bench_jobs
                           WHERE bench = $1 AND (state = 'pending' OR (state = 'running'
                             AND lease_until < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)))
                           ORDER BY seq LIMIT 1)
            RETURNING *",
    // Newest first by the time stored, the insertion order breaking ties within a millisecond;
    // everything past the first `keep` goes.
    cache_trim: "DELETE FROM cache WHERE rowid IN \
                 (SELECT rowid FROM cache ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET $1)",
    cache_entries: "SELECT key, response_json FROM cache ORDER BY created_at, rowid",
    answer_contains_2: "$2 IS NULL OR instr(lower(answer), lower($2)) > 0",
    now_us: "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)",
    greater: "MAX",
};

const SQLITE_NOW_MS: &str = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";

store_queries!(Queries, SQLITE);

delegate_store!(SqliteStore);

impl SqliteStore {
    /// Writes `batch` with whatever other debates queued at the same time (see [`GroupCommit`]).
    async fn write_batch(&self, batch: &CallBatch) -> Result<(), StoreError> {
        self.write_grouped(Write::Calls(batch.clone())).await
    }

    /// Writes `outcome` with whatever other debates queued at the same time.
    async fn write_outcome(&self, outcome: RunOutcome) -> Result<(), StoreError> {
        self.write_grouped(Write::Outcome(outcome)).await
    }

    async fn write_grouped(&self, write: Write) -> Result<(), StoreError> {
        let (written, result) = tokio::sync::oneshot::channel();
        let write = Arc::new(write);
        self.group.lock_queue().push(Queued {
            write: Arc::clone(&write),
            written,
        });
        {
            let _turn = self.group.turn.lock().await;
            let queued = std::mem::take(&mut *self.group.lock_queue());
            if !queued.is_empty() {
                self.commit_together(queued).await;
            }
        }
        match result.await {
            Ok(written) => written,
            // The writer that took this write was cancelled before it answered (its
            // transaction rolled back): it is written here on its own.
            Err(_) => self.write_alone(&write).await,
        }
    }

    async fn write_alone(&self, write: &Write) -> Result<(), StoreError> {
        let mut rows = Rows::default();
        write.add_to(&mut rows);
        self.queries.write_rows(&rows).await
    }

    /// Commits `queued` in one transaction and tells each debate. When it fails, each write is
    /// made again on its own, so one write's error (a run that does not exist) fails only its
    /// own debate.
    async fn commit_together(&self, queued: Vec<Queued>) {
        let mut rows = Rows::default();
        for q in &queued {
            q.write.add_to(&mut rows);
        }
        let together = self.queries.write_rows(&rows).await;
        drop(rows);
        if let [_] = queued.as_slice() {
            if let Some(q) = queued.into_iter().next() {
                let _ = q.written.send(together);
            }
            return;
        }
        for q in queued {
            let written = match &together {
                Ok(()) => Ok(()),
                Err(_) => self.write_alone(&q.write).await,
            };
            let _ = q.written.send(written);
        }
    }

    /// Copies the WAL into the file first (without waiting on other processes), so that the file
    /// alone holds what this store wrote even if the process ends before its connections do.
    async fn close_store(&self) {
        if !self.read_only {
            let _ = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&self.queries.pool)
                .await;
        }
        self.queries.pool.close().await;
        self.queries.read.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use serde_json::json;

    mod media;

    fn run(id: &str) -> RunRecord {
        RunRecord {
            id: id.into(),
            created_at: "2026-11-21T10:00:00Z".into(),
            question: "q".into(),
            protocol: "som".into(),
            rule: "majority-last".into(),
            spec: json!({"rounds": 1}),
            config: json!({}),
            status: RunStatus::Running,
            answer: None,
            finished_at: None,
            silent_ms: None,
            owner: None,
            fork: None,
        }
    }

    fn call(round: u32, agent: u32, text: Option<&str>) -> CallRecord {
        crate::conformance::full_call("r1", round, agent, text)
    }

    /// A raw read-write connection to `path` (created if missing), for building test files.
    async fn raw(path: &Path) -> SqliteConnection {
        SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .connect()
            .await
            .unwrap()
    }

    /// Writes a store at `path` as the first migration left it, with one call.
    async fn first_migration_store(path: &Path) {
        let mut conn = raw(path).await;
        // As moot wrote it: a WAL file.
        sqlx::query("PRAGMA journal_mode = WAL")
            .execute(&mut conn)
            .await
            .unwrap();
        let init = include_str!("../migrations/sqlite/20261121000001_init.sql");
        sqlx::raw_sql(init).execute(&mut conn).await.unwrap();
        sqlx::raw_sql(
            "INSERT INTO runs VALUES ('r1', 't', 'q', 'som', 'majority-last', '{}', '{}', 'done', '7', 't');
             INSERT INTO calls (run_id, round, agent, agent_id, backend, mode, template, template_hash,
               messages_json, peers_json, status, response_text, answer, latency_ms, recorded_at)
             VALUES ('r1', 1, 0, 'a0', 'b', 'critique', 'conformity', 'h', '[]', '[1,2]', 'ok', 'Final answer: 7', '7', 5, 't');",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        // Record the first migration as applied, the way sqlx does.
        let first = MIGRATOR.iter().next().unwrap();
        sqlx::query("CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, success BOOLEAN NOT NULL, checksum BLOB NOT NULL, execution_time BIGINT NOT NULL)")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (?, ?, TRUE, ?, 0)")
            .bind(first.version)
            .bind(&*first.description)
            .bind(&*first.checksum)
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }

    #[tokio::test]
    async fn an_unknown_run_status_is_an_error_not_running() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_run(&run("r1")).await.unwrap();
        // As a newer moot (or damage) could leave it: the schema's CHECK is bypassed.
        let mut conn = raw(&path).await;
        sqlx::raw_sql(
            "PRAGMA ignore_check_constraints = ON; UPDATE runs SET status = 'paused' WHERE id = 'r1';",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        let e = store.run("r1").await.unwrap_err().to_string();
        assert_eq!(
            e,
            "stored status of run r1 is unreadable: unknown run status \"paused\""
        );
        for status in [RunStatus::Running, RunStatus::Done, RunStatus::Failed] {
            assert_eq!(RunStatus::parse(status.as_str()), Some(status));
        }
    }

    /// Issue 32 item 7: `moot store copy` stops on an unreadable row; the error names the call
    /// (run, round, agent, slot, column) so that it can be found and mended.
    #[tokio::test]
    async fn an_unreadable_call_is_named_by_its_run_round_agent_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_run(&run("r1")).await.unwrap();
        store.record_call(&call(0, 0, Some("x"))).await.unwrap();
        store.record_call(&call(0, 1, Some("x"))).await.unwrap();
        let mut conn = raw(&path).await;
        sqlx::raw_sql("UPDATE calls SET messages_json = '{' WHERE agent = 1;")
            .execute(&mut conn)
            .await
            .unwrap();
        let e = store.calls("r1").await.unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "stored messages of the call in round 0, agent 1 (answer) of run r1 is unreadable: EOF while parsing an object at line 1 column 1"
        );
    }

    /// Issue 32 item 10: a count past `i64::MAX` was bound as a wrapped negative number and read
    /// back as 0; it is stored as the largest the column holds.
    #[tokio::test]
    async fn a_count_past_what_a_column_holds_is_stored_as_its_largest_not_wrapped() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("s.db")).await.unwrap();
        store.create_run(&run("r1")).await.unwrap();
        let huge = CallRecord {
            input_tokens: u64::MAX,
            output_tokens: i64::MAX as u64 + 1,
            processed_input_tokens: Some(u64::MAX),
            cache_write_input_tokens: None,
            latency_ms: u64::MAX,
            ..call(0, 0, Some("x"))
        };
        store.record_call(&huge).await.unwrap();
        let read = &store.calls("r1").await.unwrap()[0];
        let most = i64::MAX as u64;
        assert_eq!(
            (
                read.input_tokens,
                read.output_tokens,
                read.processed_input_tokens,
                read.latency_ms
            ),
            (most, most, Some(most), most)
        );
    }

    #[tokio::test]
    async fn a_run_silent_past_the_limit_is_interrupted_until_its_owner_beats_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_run(&run("r1")).await.unwrap();
        assert_eq!(store.run("r1").await.unwrap().shown_status(), "running");
        // As the store would look had another machine's process written the run and stopped
        // a minute ago (its process cannot be looked up from here).
        let mut conn = raw(&path).await;
        sqlx::raw_sql(
            "UPDATE runs SET heartbeat_ms = heartbeat_ms - 60000, owner = 'elsewhere/boot/1' WHERE id = 'r1';",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        let silent = store.run("r1").await.unwrap();
        assert!(
            silent.silent_ms.is_some_and(|ms| ms >= 60_000),
            "{silent:?}"
        );
        assert_eq!(silent.shown_status(), "interrupted");
        // Ten seconds of silence elsewhere is still a live run.
        sqlx::raw_sql("UPDATE runs SET heartbeat_ms = heartbeat_ms + 50000 WHERE id = 'r1';")
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(store.run("r1").await.unwrap().shown_status(), "running");
        // Resumed: the new owner beats.
        sqlx::raw_sql("UPDATE runs SET heartbeat_ms = heartbeat_ms - 50000 WHERE id = 'r1';")
            .execute(&mut conn)
            .await
            .unwrap();
        store.beat_run("r1").await.unwrap();
        let beaten = store.run("r1").await.unwrap();
        assert_eq!(beaten.shown_status(), "running");
        assert_eq!(beaten.owner.as_deref(), Some(crate::owner::this_process()));
    }

    #[tokio::test]
    async fn a_stored_call_outside_any_debates_bounds_is_an_error_naming_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_run(&run("r1")).await.unwrap();
        store
            .record_call(&call(0, 0, Some("Final answer: 7")))
            .await
            .unwrap();
        // As an edited file (or a hostile copy) could hold it: a billion rounds, and a round
        // number past u32 that must not wrap into range.
        for round in ["1000000000", "4294967301"] {
            let mut conn = raw(&path).await;
            sqlx::raw_sql(&format!(
                "UPDATE calls SET round = {round} WHERE run_id = 'r1'"
            ))
            .execute(&mut conn)
            .await
            .unwrap();
            let e = store.calls("r1").await.unwrap_err().to_string();
            assert!(e.starts_with("run r1: a call in round "), "{e}");
        }
    }

    #[tokio::test]
    async fn the_slot_migration_keeps_every_existing_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        first_migration_store(&path).await;
        let store = SqliteStore::open(&path).await.unwrap();
        let calls = store.calls("r1").await.unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].slot, "answer");
        assert_eq!(calls[0].ncomm, 2, "NComm back-filled from the peers shown");
        assert_eq!(calls[0].response_text.as_deref(), Some("Final answer: 7"));
    }

    #[tokio::test]
    async fn round_trips_runs_calls_and_decisions_on_a_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moot.db");
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_run(&run("r1")).await.unwrap();
        store
            .record_call(&call(0, 1, Some("Final answer: 7")))
            .await
            .unwrap();
        store.record_call(&call(0, 0, None)).await.unwrap();
        let calls = store.calls("r1").await.unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].agent, 0);
        assert_eq!(calls[0], call(0, 0, None));
        assert_eq!(calls[1], call(0, 1, Some("Final answer: 7")));
        store
            .record_decision(&DecisionRecord {
                run_id: "r1".into(),
                rule: "free-mad".into(),
                answer: Some("7".into()),
                decision: crate::DecisionJson::from_value(&json!({"scores": {"7": 20.0}})),
                decided_at: "t".into(),
            })
            .await
            .unwrap();
        store
            .finish_run("r1", RunStatus::Done, Some("7"), "t2")
            .await
            .unwrap();
        drop(store);
        // Reopening applies no migration twice and sees everything.
        let store = SqliteStore::open(&path).await.unwrap();
        let r = store.run("r1").await.unwrap();
        assert_eq!(
            (r.status, r.answer.as_deref()),
            (RunStatus::Done, Some("7"))
        );
        assert_eq!(
            store.decisions("r1").await.unwrap()[0].decision.value(),
            json!({"scores": {"7": 20.0}})
        );
        assert_eq!(
            store.list_runs(&RunFilter::newest(10)).await.unwrap().len(),
            1
        );
        assert!(matches!(
            store.run("nope").await,
            Err(StoreError::RunNotFound(_))
        ));
        assert!(matches!(
            store.finish_run("nope", RunStatus::Done, None, "t").await,
            Err(StoreError::RunNotFound(_))
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn passes_every_store_conformance_check() {
        let dir = tempfile::tempdir().unwrap();
        let made = std::sync::atomic::AtomicUsize::new(0);
        crate::conformance::check_whole_conformance(|| async {
            let n = made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = dir.path().join(format!("s{n}.db"));
            std::sync::Arc::new(SqliteStore::open(&path).await.unwrap())
                as std::sync::Arc<dyn Store>
        })
        .await;
    }

    /// Issue 42, LOW 9: a `rate_allowances` row set far ahead by hand (`tat_us` = 9×10^18)
    /// stalled every debate of that model until its hard deadline. The next take resets it,
    /// says so, and goes ahead; so for the largest value a row can hold, and for a time in the
    /// past (the smallest), which is simply taken.
    #[tokio::test]
    async fn a_rate_allowance_set_far_ahead_by_hand_is_reset_not_waited_on() {
        use crate::records::Allowance;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path).await.unwrap();
        let key = "openai:gpt#requests";
        let (cost, tolerance) = (1_000_000, 2_000_000);
        let set = |tat: i64| {
            let path = path.clone();
            async move {
                let mut conn = raw(&path).await;
                sqlx::query("INSERT OR REPLACE INTO rate_allowances VALUES ($1, $2)")
                    .bind(key)
                    .bind(tat)
                    .execute(&mut conn)
                    .await
                    .unwrap();
                conn.close().await.unwrap();
            }
        };
        for hostile in [9_000_000_000_000_000_000, i64::MAX] {
            set(hostile).await;
            let taken = store.take_allowance(key, cost, tolerance).await.unwrap();
            assert!(
                matches!(taken, Allowance::Reset { ahead } if ahead.as_secs() > 8_000_000_000_000),
                "{hostile}: {taken:?}"
            );
            // Reset to now and the cost: one more fits the burst, the next waits its share.
            assert_eq!(
                store.take_allowance(key, cost, tolerance).await.unwrap(),
                Allowance::Taken
            );
            let Allowance::Wait(wait) = store.take_allowance(key, cost, tolerance).await.unwrap()
            else {
                panic!("the burst is spent");
            };
            assert!(wait <= std::time::Duration::from_secs(1), "{wait:?}");
        }
        set(i64::MIN).await;
        assert_eq!(
            store.take_allowance(key, cost, tolerance).await.unwrap(),
            Allowance::Taken
        );
        store.close().await;
    }

    #[tokio::test]
    async fn a_call_for_an_unknown_run_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("m.db")).await.unwrap();
        assert!(store.record_call(&call(0, 0, Some("x"))).await.is_err());
    }

    const ACCESSES: [Access; 3] = [Access::Read, Access::Write, Access::Create];

    /// The names in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A store with `runs` runs of some size (several pages), closed so the WAL is checkpointed.
    async fn filled_store(path: &Path, runs: usize) {
        let store = SqliteStore::open(path).await.unwrap();
        for i in 0..runs {
            let mut r = run(&format!("r{i}"));
            r.question = "q".repeat(2000);
            store.create_run(&r).await.unwrap();
        }
        store.close().await;
        // Everything into the file itself, and no companion left: closing checkpoints only when
        // the last connection goes, which on a busy machine may be after `close` returns, and a
        // `-wal` still holding pages would stand in for the parts a test cuts from the file.
        let mut conn = raw(path).await;
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        for suffix in COMPANIONS {
            let _ = std::fs::remove_file(companion(path, suffix));
        }
    }

    /// Asserts one line that says what is wrong, with no cause chain that repeats it.
    fn one_clear_line(e: &StoreError, expected: &str) {
        let text = e.to_string();
        assert_eq!(text, expected);
        assert!(!text.contains('\n'));
        assert!(
            std::error::Error::source(e).is_none(),
            "the cause is in the message already: {e:?}"
        );
    }

    /// Every access mode refuses the file at `path` with `expected` (one line, no cause chain,
    /// an unusable store) and leaves its bytes as they were.
    async fn refused_everywhere_and_untouched(path: &Path, expected: &str) {
        let before = std::fs::read(path).unwrap();
        for access in ACCESSES {
            let e = SqliteStore::open_with(path, access).await.unwrap_err();
            one_clear_line(&e, expected);
            assert!(e.is_unusable_store(), "{e}");
            assert!(
                std::fs::read(path).unwrap() == before,
                "{access:?} changed it"
            );
        }
    }

    #[tokio::test]
    async fn a_missing_store_is_created_only_to_write_and_only_in_a_folder_that_exists() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("typo.db");
        for access in [Access::Read, Access::Write] {
            let e = SqliteStore::open_with(&path, access).await.unwrap_err();
            one_clear_line(&e, &format!("no store at {}", path.display()));
            assert!(e.is_unusable_store());
        }
        assert!(listing(dir.path()).is_empty(), "nothing created");
        let deep = dir.path().join("nodir").join("typo").join("moot.db");
        for access in ACCESSES {
            let e = SqliteStore::open_with(&deep, access).await.unwrap_err();
            assert!(e.is_unusable_store(), "{e}");
        }
        let e = SqliteStore::open_with(&deep, Access::Create)
            .await
            .unwrap_err();
        one_clear_line(
            &e,
            &format!(
                "cannot create the store {}: the folder {} does not exist",
                deep.display(),
                dir.path().join("nodir").display()
            ),
        );
        assert!(listing(dir.path()).is_empty(), "no folder created");
        let store = SqliteStore::open_with(&path, Access::Create).await.unwrap();
        store.create_run(&run("r1")).await.unwrap();
        store.close().await;
        let made = listing(dir.path());
        assert!(
            made.iter().all(|n| n.starts_with("typo.db")),
            "only the store (and its WAL files): {made:?}"
        );
    }

    #[tokio::test]
    async fn a_folder_is_not_a_store() {
        let dir = tempfile::tempdir().unwrap();
        for access in ACCESSES {
            let e = SqliteStore::open_with(dir.path(), access)
                .await
                .unwrap_err();
            one_clear_line(
                &e,
                &format!(
                    "cannot open the store {}: it is a folder",
                    dir.path().display()
                ),
            );
        }
    }

    #[tokio::test]
    async fn a_file_of_random_bytes_is_refused_in_one_line_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("random.db");
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let bytes: Vec<u8> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        refused_everywhere_and_untouched(
            &path,
            &format!(
                "the store {} is not a moot database or is corrupt: file is not a database",
                path.display()
            ),
        )
        .await;
        assert_eq!(listing(dir.path()), ["random.db"]);
    }

    #[tokio::test]
    async fn a_truncated_store_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.db");
        filled_store(&path, 40).await;
        let whole = std::fs::read(&path).unwrap();
        assert!(whole.len() > 40 * 2000, "the runs are in the file");
        let cut = &whole[..whole.len() / 2];
        std::fs::write(&path, cut).unwrap();
        refused_everywhere_and_untouched(
            &path,
            &format!(
            "the store {} is not a moot database or is corrupt: database disk image is malformed",
            path.display()
        ),
        )
        .await;
    }

    #[tokio::test]
    async fn another_programs_database_is_not_written_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        let mut conn = raw(&path).await;
        sqlx::raw_sql("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        refused_everywhere_and_untouched(
            &path,
            &format!(
            "the store {} is not a moot database or is corrupt: a SQLite database without moot's tables",
            path.display()
        ),
        )
        .await;
    }

    #[tokio::test]
    async fn a_store_from_a_newer_moot_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("newer.db");
        filled_store(&path, 3).await;
        let mut conn = raw(&path).await;
        sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (20991231000001, 'from the future', TRUE, x'00', 0)")
            .execute(&mut conn)
            .await
            .unwrap();
        // Into the file itself, whichever connection closes last.
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        let known = MIGRATOR.iter().map(|m| m.version).max().unwrap();
        refused_everywhere_and_untouched(
            &path,
            &format!(
            "the store {} was written by a newer moot (schema version 20991231000001; this moot knows up to {known}): use that version of moot or a newer one",
            path.display()
        ),
        )
        .await;
    }

    #[tokio::test]
    async fn reading_a_current_store_never_writes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        filled_store(&path, 2).await;
        let before = std::fs::read(&path).unwrap();
        let store = SqliteStore::open_with(&path, Access::Read).await.unwrap();
        assert_eq!(
            store.list_runs(&RunFilter::newest(10)).await.unwrap().len(),
            2
        );
        assert!(matches!(
            store.create_run(&run("r9")).await,
            Err(StoreError::ReadOnly(_))
        ));
        assert!(matches!(
            store.cache_put("k", &json!(1)).await,
            Err(StoreError::ReadOnly(_))
        ));
        store.close().await;
        assert!(
            std::fs::read(&path).unwrap() == before,
            "read-only changed it"
        );
    }

    #[tokio::test]
    async fn a_reader_sees_what_a_writer_still_running_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let writer = SqliteStore::open(&path).await.unwrap();
        writer.create_run(&run("r1")).await.unwrap();
        let reader = SqliteStore::open_with(&path, Access::Read).await.unwrap();
        assert_eq!(reader.run("r1").await.unwrap().id, "r1");
        writer.create_run(&run("r2")).await.unwrap();
        assert_eq!(
            reader
                .list_runs(&RunFilter::newest(10))
                .await
                .unwrap()
                .len(),
            2
        );
        reader.close().await;
        writer.close().await;
    }

    #[tokio::test]
    async fn an_older_store_is_read_through_an_upgraded_copy_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        first_migration_store(&path).await;
        let before = std::fs::read(&path).unwrap();
        let store = SqliteStore::open_with(&path, Access::Read).await.unwrap();
        let calls = store.calls("r1").await.unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!((calls[0].slot.as_str(), calls[0].ncomm), ("answer", 2));
        // A count stored since (prompt-cache writes) reads as unknown, not as zero.
        assert_eq!(calls[0].cache_write_input_tokens, None);
        assert_eq!(store.run("r1").await.unwrap().answer.as_deref(), Some("7"));
        assert!(matches!(
            store.record_call(&calls[0]).await,
            Err(StoreError::ReadOnly(_))
        ));
        store.close().await;
        assert!(std::fs::read(&path).unwrap() == before, "not migrated");
        // A writing command migrates it.
        let store = SqliteStore::open_with(&path, Access::Write).await.unwrap();
        store.record_call(&calls[0]).await.unwrap();
        store.close().await;
        let mut conn = raw(&path).await;
        let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(applied as usize, MIGRATOR.iter().count());
        conn.close().await.unwrap();
    }

    #[tokio::test]
    async fn an_empty_file_reads_as_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.db");
        std::fs::write(&path, b"").unwrap();
        let store = SqliteStore::open_with(&path, Access::Read).await.unwrap();
        assert!(matches!(
            store.run("r1").await,
            Err(StoreError::RunNotFound(_))
        ));
        assert!(store
            .list_runs(&RunFilter::newest(5))
            .await
            .unwrap()
            .is_empty());
        store.close().await;
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        // Writing to it makes it a store.
        let store = SqliteStore::open_with(&path, Access::Write).await.unwrap();
        store.create_run(&run("r1")).await.unwrap();
    }

    #[test]
    fn locations() {
        use crate::location::StoreLocation;
        let file = |p: &str| StoreLocation::Sqlite {
            path: p.into(),
            default: false,
        };
        assert_eq!(StoreLocation::parse("x.db"), file("x.db"));
        assert_eq!(
            StoreLocation::parse("sqlite:///tmp/a.db"),
            file("/tmp/a.db")
        );
        assert!(matches!(
            StoreLocation::parse("postgres://u@h/db"),
            StoreLocation::Postgres(_)
        ));
        assert_eq!(StoreLocation::parse("memory:"), StoreLocation::Memory);
        assert_eq!(StoreLocation::parse("memory"), file("memory"));
        assert!(matches!(
            StoreLocation::parse("POSTGRESQL://u@h/db"),
            StoreLocation::Postgres(_)
        ));
        assert_eq!(StoreLocation::parse("SQLITE:a.db"), file("a.db"));
        for libpq in ["host=db dbname=moot password=x", "password='x' dbname=m"] {
            assert!(
                matches!(StoreLocation::parse(libpq), StoreLocation::Refused(ref why) if !why.contains('x')),
                "{libpq}"
            );
        }
        // A file whose name merely holds `=` is still a file.
        assert_eq!(StoreLocation::parse("runs=2.db"), file("runs=2.db"));
    }
}
