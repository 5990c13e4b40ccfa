//! Storage for runs, calls and decisions (see docs/architecture.md, Storage).
//!
//! [`Store`] is the interface the engine and CLI use; [`SqliteStore`] is the embedded default (one
//! file, WAL journal, migrations from `migrations/`). Every call is written as soon as it
//! completes, before the engine uses its outcome, so a killed process loses nothing it acted on.
//!
//! A store is opened for an [`Access`]: reading never creates, migrates or writes a store; only
//! [`Access::Create`] (commands that record new runs) creates one, and only in a folder that
//! exists, except the default location's. A file that is not a moot store, is damaged, or was
//! written by a newer moot is refused before anything is written to it.

mod memory;
mod sqlite;

use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use memory::MemoryStore;
pub use sqlite::SqliteStore;

/// What can go wrong with a store. Each message is one line that names the store when the
/// store itself is the problem; none repeats its cause (no `source()` whose text is already in
/// the message), so a `{:#}` chain prints it once.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A query failed for a reason that is not the store file's (locked, disk full, …).
    #[error("database error: {}", sqlite::database_message(.0))]
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
    /// A write through a store opened with [`Access::Read`].
    #[error("the store {} was opened read-only", .0.display())]
    ReadOnly(PathBuf),
    #[error("run {0:?} not found")]
    RunNotFound(String),
    #[error("benchmark {0:?} not found")]
    BenchNotFound(String),
    #[error("a benchmark named {0:?} already exists")]
    BenchExists(String),
    #[error("stored {what} of run {run} is unreadable: {message}")]
    Corrupt {
        run: String,
        what: &'static str,
        message: String,
    },
    #[error("{0}")]
    Location(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        StoreError::Database(e)
    }
}

impl StoreError {
    /// The store given cannot be used as it is (missing, in a missing folder, unreadable, not a
    /// moot database, damaged, or from a newer moot): a problem with what the user pointed at,
    /// not a failure of moot.
    pub fn is_unusable_store(&self) -> bool {
        matches!(
            self,
            StoreError::NotFound { .. }
                | StoreError::NoFolder { .. }
                | StoreError::CannotOpen { .. }
                | StoreError::NotAStore { .. }
                | StoreError::TooNew { .. }
                | StoreError::Location(_)
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Done,
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
        }
    }

    /// The status a store spells `s`; `None` for a word this moot does not know (a newer
    /// moot's status, or damage), which must not read as a run still running.
    pub fn parse(s: &str) -> Option<RunStatus> {
        [RunStatus::Running, RunStatus::Done, RunStatus::Failed]
            .into_iter()
            .find(|status| status.as_str() == s)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: String,
    pub created_at: String,
    pub question: String,
    pub protocol: String,
    pub rule: String,
    pub spec: serde_json::Value,
    pub config: serde_json::Value,
    pub status: RunStatus,
    pub answer: Option<String>,
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub run_id: String,
    pub round: u32,
    pub agent: u32,
    /// `answer`, `judge:<author>` or `challenge:<challenger>` (see `moot_core::debate::Slot`).
    #[serde(default = "answer_slot")]
    pub slot: String,
    pub agent_id: String,
    pub backend: String,
    pub mode: String,
    pub template: String,
    pub template_hash: String,
    pub messages: serde_json::Value,
    pub peers: Vec<u32>,
    /// `Some` when the agent responded.
    pub response_text: Option<String>,
    pub answer: Option<String>,
    /// Why there is no response (deadline, error), or why the protocol skipped the call.
    pub error: Option<String>,
    /// The protocol recorded this call without asking the model (`error` says why).
    #[serde(default)]
    pub skipped: bool,
    pub finish: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub processed_input_tokens: Option<u64>,
    pub logprob_tokens: Option<u64>,
    pub logprob_mean: Option<f64>,
    pub logprob_min: Option<f64>,
    pub perplexity: Option<f64>,
    pub latency_ms: u64,
    pub recorded_at: String,
    /// Masks, orderings, faults, challenges: how the protocol assembled the prompt.
    #[serde(default)]
    pub notes: serde_json::Value,
    /// Pairwise context transfers in this call's prompt.
    #[serde(default)]
    pub ncomm: u32,
    /// The response came from the request cache: its tokens were not spent again.
    #[serde(default)]
    pub cached: bool,
    /// Attempts that failed before this call's outcome, as `[{error, class, wait_ms}]`.
    #[serde(default = "empty_list")]
    pub retries: serde_json::Value,
}

fn empty_list() -> serde_json::Value {
    serde_json::Value::Array(Vec::new())
}

fn answer_slot() -> String {
    "answer".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    pub run_id: String,
    pub rule: String,
    pub answer: Option<String>,
    /// The full decision output (scores, tie, explanation).
    pub decision: serde_json::Value,
    pub decided_at: String,
}

/// A benchmark: which debates it is made of is in its [`BenchItemRecord`]s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    pub name: String,
    pub created_at: String,
    /// The dataset's name as `moot-eval` writes it (`gsm8k`, `bbh:navigate`, …).
    pub dataset: String,
    pub protocols: Vec<String>,
    /// How many items were drawn (`None`: all).
    pub limit: Option<u64>,
    pub seed: u64,
    pub config: serde_json::Value,
}

/// One item's debate under one protocol of a benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchItemRecord {
    pub bench: String,
    pub protocol: String,
    pub item_id: String,
    pub position: u32,
    pub gold: String,
    pub run_id: String,
}

#[async_trait]
pub trait Store: Send + Sync {
    async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError>;
    /// Records one call; recording the same (run, round, agent, slot) again replaces it.
    async fn record_call(&self, call: &CallRecord) -> Result<(), StoreError>;
    async fn record_decision(&self, decision: &DecisionRecord) -> Result<(), StoreError>;
    async fn finish_run(
        &self,
        id: &str,
        status: RunStatus,
        answer: Option<&str>,
        at: &str,
    ) -> Result<(), StoreError>;
    async fn run(&self, id: &str) -> Result<RunRecord, StoreError>;
    async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError>;
    async fn decisions(&self, id: &str) -> Result<Vec<DecisionRecord>, StoreError>;
    /// Most recent first.
    async fn list_runs(&self, limit: u32) -> Result<Vec<RunRecord>, StoreError>;
    /// Records a new benchmark; a name already taken is refused ([`StoreError::BenchExists`]).
    async fn create_bench(&self, bench: &BenchRecord) -> Result<(), StoreError>;
    async fn bench(&self, name: &str) -> Result<BenchRecord, StoreError>;
    /// Links an item's debate to its benchmark; recording the same (bench, protocol, item)
    /// again replaces the link.
    async fn record_bench_item(&self, item: &BenchItemRecord) -> Result<(), StoreError>;
    /// The benchmark's items, by protocol (in the benchmark's order) then position.
    async fn bench_items(&self, name: &str) -> Result<Vec<BenchItemRecord>, StoreError>;
    /// A cached response by its request key.
    async fn cache_get(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError>;
    /// Stores a response under its request key (the first one stored stays).
    async fn cache_put(&self, key: &str, response: &serde_json::Value) -> Result<(), StoreError>;
    /// Finishes what is pending and closes the store; nothing can be done through it after.
    async fn close(&self) {}
}

/// Checks a store against the cache part of the [`Store`] contract.
#[cfg(test)]
pub(crate) async fn check_cache_contract(store: &dyn Store) {
    assert_eq!(store.cache_get("k").await.unwrap(), None);
    store
        .cache_put("k", &serde_json::json!({"text": "first"}))
        .await
        .unwrap();
    store
        .cache_put("k", &serde_json::json!({"text": "second"}))
        .await
        .unwrap();
    assert_eq!(
        store.cache_get("k").await.unwrap(),
        Some(serde_json::json!({"text": "first"}))
    );
    assert_eq!(store.cache_get("other").await.unwrap(), None);
}

/// Benchmark items in the benchmark's protocol order (unknown protocols last), then position.
pub(crate) fn sort_bench_items(items: &mut [BenchItemRecord], protocols: &[String]) {
    let rank = |p: &str| protocols.iter().position(|x| x == p).unwrap_or(usize::MAX);
    items.sort_by(|a, b| {
        (rank(&a.protocol), &a.protocol, a.position, &a.item_id).cmp(&(
            rank(&b.protocol),
            &b.protocol,
            b.position,
            &b.item_id,
        ))
    });
}

/// Checks a store against the benchmark part of the [`Store`] contract; both implementations run it.
#[cfg(test)]
pub(crate) async fn check_bench_contract(store: &dyn Store) {
    let run = RunRecord {
        id: "r1".into(),
        created_at: "t".into(),
        question: "q".into(),
        protocol: "som".into(),
        rule: "majority-last".into(),
        spec: serde_json::json!({}),
        config: serde_json::json!({}),
        status: RunStatus::Running,
        answer: None,
        finished_at: None,
    };
    store.create_run(&run).await.unwrap();
    let bench = BenchRecord {
        name: "b1".into(),
        created_at: "t".into(),
        dataset: "gsm8k".into(),
        protocols: vec!["som".into(), "cot".into()],
        limit: Some(2),
        seed: 7,
        config: serde_json::json!({"debate": {"rounds": 1}}),
    };
    assert!(matches!(
        store.bench("b1").await,
        Err(StoreError::BenchNotFound(_))
    ));
    store.create_bench(&bench).await.unwrap();
    assert!(matches!(
        store.create_bench(&bench).await,
        Err(StoreError::BenchExists(_))
    ));
    assert_eq!(store.bench("b1").await.unwrap(), bench);
    let item = |protocol: &str, id: &str, position: u32| BenchItemRecord {
        bench: "b1".into(),
        protocol: protocol.into(),
        item_id: id.into(),
        position,
        gold: "18".into(),
        run_id: "r1".into(),
    };
    for i in [
        item("cot", "gsm8k/9", 1),
        item("som", "gsm8k/9", 1),
        item("som", "gsm8k/3", 0),
        item("cot", "gsm8k/3", 0),
    ] {
        store.record_bench_item(&i).await.unwrap();
    }
    // Recording a link again replaces it.
    store
        .record_bench_item(&item("som", "gsm8k/3", 0))
        .await
        .unwrap();
    let items = store.bench_items("b1").await.unwrap();
    assert_eq!(
        items,
        vec![
            item("som", "gsm8k/3", 0),
            item("som", "gsm8k/9", 1),
            item("cot", "gsm8k/3", 0),
            item("cot", "gsm8k/9", 1),
        ],
        "by the benchmark's protocol order, then position"
    );
    assert!(store.bench_items("nope").await.unwrap().is_empty());
}

/// What a command does with its store; it decides whether a store may be created or changed.
///
/// Reading never creates: `moot show`, `report`, `decide` (and a server) use [`Access::Read`],
/// `moot resume` [`Access::Write`], and only the commands that record new runs (`moot ask`,
/// `bench`) [`Access::Create`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Only reads. The store must exist; it is opened read-only and is never created, migrated
    /// or written. A store from an older moot is read through an upgraded copy in memory (the
    /// file stays as it is); one from a newer moot is refused ([`StoreError::TooNew`]). Writes
    /// through the returned store fail with [`StoreError::ReadOnly`].
    Read,
    /// Reads and writes a store that must exist (finishing what it holds); a store from an older
    /// moot is migrated, one from a newer moot refused.
    Write,
    /// As [`Access::Write`], but a missing store file is created. Its folder must exist, except
    /// the default location's (the user data directory), which is created.
    Create,
}

/// Where a store lives, from `--store`, `MOOT_STORE`, or the default data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file; `default` when it is the default location (see
    /// [`StoreLocation::default_location`]), whose folder [`Access::Create`] may create.
    Sqlite {
        path: PathBuf,
        default: bool,
    },
    Postgres(String),
}

impl StoreLocation {
    /// `sqlite://PATH`, `postgres://…`, or a plain file path.
    pub fn parse(spec: &str) -> StoreLocation {
        let sqlite = |p: &str| StoreLocation::Sqlite {
            path: PathBuf::from(p),
            default: false,
        };
        if let Some(p) = spec.strip_prefix("sqlite://") {
            sqlite(p)
        } else if let Some(p) = spec.strip_prefix("sqlite:") {
            sqlite(p)
        } else if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            StoreLocation::Postgres(spec.to_string())
        } else {
            sqlite(spec)
        }
    }

    /// The default: `moot.db` in the user's data directory (`~/.local/share/moot` on Linux).
    pub fn default_location() -> Result<StoreLocation, StoreError> {
        dirs::data_dir()
            .map(|d| StoreLocation::Sqlite {
                path: d.join("moot").join("moot.db"),
                default: true,
            })
            .ok_or_else(|| {
                StoreError::Location("no data directory: pass --store or set MOOT_STORE".into())
            })
    }

    /// Opens the store for `access`: see [`Access`] for what each may create or change.
    pub async fn open(&self, access: Access) -> Result<Box<dyn Store>, StoreError> {
        match self {
            StoreLocation::Sqlite { path, default } => {
                if access == Access::Create && *default {
                    sqlite::create_default_folder(path)?;
                }
                match SqliteStore::open_with(path, access).await {
                    Ok(store) => Ok(Box::new(store)),
                    Err(StoreError::NotFound { path, .. }) => Err(StoreError::NotFound {
                        path,
                        default: *default,
                    }),
                    Err(e) => Err(e),
                }
            }
            StoreLocation::Postgres(url) => Err(StoreError::Location(format!(
                "{url}: the PostgreSQL store is not available yet; use a SQLite file path"
            ))),
        }
    }

    /// [`StoreLocation::open`] with [`Access::Read`]: for commands that only read.
    pub async fn open_read_only(&self) -> Result<Box<dyn Store>, StoreError> {
        self.open(Access::Read).await
    }
}
