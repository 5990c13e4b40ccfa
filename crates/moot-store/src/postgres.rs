//! The PostgreSQL store: for teams, and the coordinator of benchmarks worked by many processes
//! on many machines (`moot work`).
//!
//! It keeps the same records with the same meaning as the SQLite store: the queries are shared
//! ([`crate::queries`]), the tables are the same ([`MIGRATOR`], `migrations/postgres`). As with
//! SQLite, a database is inspected before anything is written to it: one holding another
//! program's tables, or migrated by a newer moot, is refused, and reading never creates or
//! migrates anything (a reading connection is also read-only on the server's side).
//!
//! Errors name the store by its URL with the password hidden; a server that cannot be reached,
//! at open or mid-run, is [`StoreError::Unreachable`].

use std::collections::HashSet;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

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

/// The schema, one migration per file in `migrations/postgres/`.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// Connections each process keeps at most: a worker runs a few debates at once, each writing one
/// call at a time, so a handful suffices, and many workers stay under the server's
/// `max_connections`.
const POOL_SIZE: u32 = 5;

/// How long a query waits for a connection before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

const POSTGRES_NOW_MS: &str = "(extract(epoch from now()) * 1000)::bigint";

/// PostgreSQL's side of the shared queries (see [`crate::queries`]).
const POSTGRES: Dialect = Dialect {
    now_ms: POSTGRES_NOW_MS,
    // The row is locked by the claiming transaction; `SKIP LOCKED` lets workers claiming at the
    // same moment take the next rows instead of waiting for (and then missing) this one.
    // The row is locked by the claiming statement; `SKIP LOCKED` lets workers claiming at the
    // same moment take the next rows instead of waiting for (and then missing) this one. The
    // choice is a materialised CTE: as a subquery joined in `FROM`, a nested loop may rescan it
    // and, seeing the first row already running, claim a second one in the same statement.
    claim: "WITH next AS MATERIALIZED (
              SELECT protocol, item_id FROM bench_jobs
              WHERE bench = $1 AND (state = 'pending' OR (state = 'running'
                AND lease_until < (extract(epoch from now()) * 1000)::bigint))
              ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
            UPDATE bench_jobs AS j SET state = 'running', previous_worker = j.worker, worker = $2,
              lease_until = (extract(epoch from now()) * 1000)::bigint + $3,
              claimed_at = (extract(epoch from now()) * 1000)::bigint,
              attempts = j.attempts + 1, error = NULL
            FROM next
            WHERE j.bench = $1 AND j.protocol = next.protocol AND j.item_id = next.item_id
            RETURNING j.*",
    cache_trim: "DELETE FROM cache WHERE stored IN \
                 (SELECT stored FROM cache ORDER BY created_at DESC, stored DESC OFFSET $1)",
    cache_entries: "SELECT key, response_json FROM cache ORDER BY created_at, stored",
    answer_contains_2: "$2::text IS NULL OR strpos(lower(answer), lower($2::text)) > 0",
    // The statement's clock, not the transaction's: a take is its own statement either way.
    now_us: "(extract(epoch from clock_timestamp()) * 1000000)::bigint",
    greater: "GREATEST",
};

#[derive(Debug, Clone)]
pub struct PostgresStore {
    queries: Queries,
    /// The URL with its password hidden: how errors name the store.
    shown: String,
    read_only: bool,
}

#[derive(Debug, Clone)]
struct Queries {
    pool: PgPool,
    /// The same pool: PostgreSQL runs reads and writes side by side.
    read: PgPool,
}

store_queries!(Queries, POSTGRES);

/// What a database holds, as seen before anything is written to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Schema {
    /// No tables: a store nothing was recorded in yet.
    Empty,
    Current,
    /// Written by an older moot: some migrations are not applied yet.
    Older,
}

/// `url` with any password replaced by `***` (in the user part and in a `password=` parameter).
pub fn redact_url(url: &str) -> String {
    let mut shown = url.to_string();
    if let Some(scheme_end) = shown.find("://") {
        let rest = scheme_end + 3;
        // The user part ends at the last `@`: a password may hold `/`, `?` or `#` unescaped,
        // so the authority's end cannot be found first. Hiding too much is the safe mistake.
        if let Some(at) = shown[rest..].rfind('@') {
            let userinfo = &shown[rest..rest + at];
            if let Some(colon) = userinfo.find(':') {
                shown.replace_range(rest + colon + 1..rest + at, "***");
            }
        }
    }
    if let Some(q) = shown.find('?') {
        let (head, query) = shown.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        shown = format!("{head}{}", query.join("&"));
    }
    shown
}

/// A connection-level failure as [`StoreError::Unreachable`], a full disk as
/// [`StoreError::DiskFull`]; anything else stays as it is.
fn classify(shown: &str, e: StoreError) -> StoreError {
    let StoreError::Database(db) = &e else {
        return e;
    };
    let unreachable = |reason: String| StoreError::Unreachable {
        store: shown.to_string(),
        reason,
    };
    match db {
        sqlx::Error::PoolTimedOut => unreachable(format!(
            "no connection within {} s (is the server running and reachable?)",
            CONNECT_TIMEOUT.as_secs()
        )),
        sqlx::Error::Io(io) => unreachable(io.to_string()),
        sqlx::Error::Tls(tls) => unreachable(format!("TLS: {tls}")),
        sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => {
            unreachable("the connection was closed".into())
        }
        sqlx::Error::Database(d) => {
            let code = d.code().map(|c| c.to_string()).unwrap_or_default();
            // 08: connection exceptions; 57P01-03: the server shut down or is starting;
            // 28: authentication; 3D000: no such database.
            if code.starts_with("08")
                || code.starts_with("57P0")
                || code.starts_with("28")
                || code == "3D000"
            {
                unreachable(database_message(db))
            } else if code == "53100" {
                // disk_full: the server's disk, named as a full SQLite disk is.
                StoreError::DiskFull {
                    path: PathBuf::from(shown),
                }
            } else {
                e
            }
        }
        _ => e,
    }
}

fn migrate_error(shown: &str, e: MigrateError) -> StoreError {
    match e {
        MigrateError::Execute(db) | MigrateError::ExecuteMigration(db, _) => {
            match classify(shown, StoreError::Database(db)) {
                StoreError::Database(db) => StoreError::Migrate {
                    path: PathBuf::from(shown),
                    message: database_message(&db),
                },
                other => other,
            }
        }
        other => StoreError::Migrate {
            path: PathBuf::from(shown),
            message: other.to_string(),
        },
    }
}

/// What the database holds, refusing what moot must not write to or read: another program's
/// tables, a failed migration, or a newer moot's store.
async fn inspect(pool: &PgPool, shown: &str) -> Result<Schema, StoreError> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()",
    )
    .fetch_all(pool)
    .await
    .map_err(|e| classify(shown, e.into()))?;
    if tables.is_empty() {
        return Ok(Schema::Empty);
    }
    if !tables.iter().any(|t| t == "_sqlx_migrations") {
        return Err(StoreError::NotAStore {
            path: PathBuf::from(shown),
            reason: format!(
                "the database has tables but not moot's ({}); use an empty database, or a schema of moot's own (options=-csearch_path%3Dmoot in the URL)",
                tables.join(", ")
            ),
        });
    }
    let applied: Vec<(i64, bool)> =
        sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
            .fetch_all(pool)
            .await
            .map_err(|e| classify(shown, e.into()))?;
    let known: HashSet<i64> = MIGRATOR.iter().map(|m| m.version).collect();
    let newest_known = known.iter().copied().max().unwrap_or(0);
    if let Some(found) = applied
        .iter()
        .map(|(v, _)| *v)
        .filter(|v| !known.contains(v))
        .max()
    {
        return Err(StoreError::TooNew {
            path: PathBuf::from(shown),
            found,
            known: newest_known,
        });
    }
    if let Some((version, _)) = applied.iter().find(|(_, success)| !success) {
        return Err(StoreError::NotAStore {
            path: PathBuf::from(shown),
            reason: format!("migration {version} did not complete"),
        });
    }
    Ok(if applied.len() == known.len() {
        Schema::Current
    } else {
        Schema::Older
    })
}

impl PostgresStore {
    /// A batch in one transaction; concurrent debates' batches commit side by side (PostgreSQL
    /// runs many transactions at once, so there is nothing to gain by grouping them).
    async fn write_batch(&self, batch: &CallBatch) -> Result<(), StoreError> {
        let mut rows = Rows::default();
        rows.add_batch(batch);
        self.queries.write_rows(&rows).await
    }

    /// An outcome in one transaction, as a batch is.
    async fn write_outcome(&self, outcome: RunOutcome) -> Result<(), StoreError> {
        self.queries
            .write_rows(&Rows {
                outcomes: vec![&outcome],
                ..Rows::default()
            })
            .await
    }

    /// Opens the store at `url` for `access` (see [`Access`]): reading needs a store there and
    /// never writes; writing migrates an older one; creating also starts one in an empty
    /// database (the database itself must exist).
    pub async fn open_with(url: &str, access: Access) -> Result<PostgresStore, StoreError> {
        let shown = redact_url(url);
        let mut options = PgConnectOptions::from_str(url).map_err(|e| {
            // The parser's own words may quote the URL: said only when they hold no secret.
            let why = e.to_string();
            let why = if redact_url(&why) == why && !why.contains(url) {
                format!(": {why}")
            } else {
                String::new()
            };
            StoreError::Location(format!("{shown}: not a usable PostgreSQL URL{why}"))
        })?;
        options = options.application_name("moot");
        if access == Access::Read {
            // The server refuses writes too, whatever a bug in moot might try.
            options = options.options([("default_transaction_read_only", "on")]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| classify(&shown, e.into()))?;
        let schema = inspect(&pool, &shown).await?;
        let no_store = || {
            StoreError::Location(format!(
                "{shown}: no moot store in this database yet (a command that records runs, such as moot ask or moot bench, starts one)"
            ))
        };
        match (access, schema) {
            (Access::Read, Schema::Empty) | (Access::Write, Schema::Empty) => {
                pool.close().await;
                return Err(no_store());
            }
            (Access::Read, Schema::Older) => {
                pool.close().await;
                return Err(StoreError::Migrate {
                    path: PathBuf::from(&shown),
                    message: "written by an older moot; a writing command (moot resume, moot work, moot bench) upgrades it, reading does not".into(),
                });
            }
            (_, Schema::Current) => {}
            (_, Schema::Empty | Schema::Older) => {
                // The migrator holds an advisory lock while it works: workers starting at once
                // migrate once.
                MIGRATOR
                    .run(&pool)
                    .await
                    .map_err(|e| migrate_error(&shown, e))?;
            }
        }
        Ok(PostgresStore {
            queries: Queries {
                read: pool.clone(),
                pool,
            },
            shown,
            read_only: access == Access::Read,
        })
    }

    /// The store's URL with its password hidden.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn writable(&self) -> Result<(), StoreError> {
        if self.read_only {
            Err(StoreError::ReadOnly(PathBuf::from(&self.shown)))
        } else {
            Ok(())
        }
    }

    fn located<T>(&self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        r.map_err(|e| classify(&self.shown, e))
    }

    async fn close_store(&self) {
        self.queries.pool.close().await;
    }
}

delegate_store!(PostgresStore);

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use moot_pgtest::PgServer;

    use super::*;
    use crate::store::Store;

    async fn fresh_store() -> Arc<dyn Store> {
        let url = PgServer::shared().fresh_database();
        Arc::new(
            PostgresStore::open_with(&url, Access::Create)
                .await
                .unwrap(),
        )
    }

    /// A pool of one connection to `url`, for building and inspecting test databases.
    async fn one_connection(url: &str) -> PgPool {
        PgPoolOptions::new()
            .max_connections(1)
            .connect(url)
            .await
            .unwrap()
    }

    /// Runs `sql` on the database at `url` through a connection of its own.
    async fn raw(url: &str, sql: &str) {
        let pool = one_connection(url).await;
        sqlx::raw_sql(sql).execute(&pool).await.unwrap();
        pool.close().await;
    }

    /// The tables of the database at `url`, sorted.
    async fn tables(url: &str) -> Vec<String> {
        let pool = one_connection(url).await;
        let mut t: Vec<String> = sqlx::query_scalar(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        pool.close().await;
        t.sort();
        t
    }

    fn one_line(e: &StoreError, expected: &str) {
        let text = e.to_string();
        assert!(text.contains(expected), "{text:?} lacks {expected:?}");
        assert!(!text.contains('\n'), "{text:?}");
    }

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact_url("postgres://moot:s3cret@db:5432/moot"),
            "postgres://moot:***@db:5432/moot"
        );
        assert_eq!(
            redact_url("postgresql://moot@db/moot?sslmode=require&password=s3cret"),
            "postgresql://moot@db/moot?sslmode=require&password=***"
        );
        assert_eq!(
            redact_url("postgres://a:b:c@db/x?options=-c%20x"),
            "postgres://a:***@db/x?options=-c%20x"
        );
        assert_eq!(redact_url("postgres://db/x"), "postgres://db/x");
        // Unescaped `/`, `?` and `@` in a password.
        assert_eq!(
            redact_url("postgres://moot:hun/ter?2@db/x"),
            "postgres://moot:***@db/x"
        );
        assert_eq!(redact_url("POSTGRES://u:p@w@db/x"), "POSTGRES://u:***@db/x");
    }

    #[tokio::test]
    async fn a_bad_url_is_refused_in_one_line() {
        let e = PostgresStore::open_with("postgres://moot:pw@127.0.0.1:notaport/db", Access::Read)
            .await
            .unwrap_err();
        one_line(
            &e,
            "postgres://moot:***@127.0.0.1:notaport/db: not a usable PostgreSQL URL",
        );
        assert!(e.is_unusable_store());
        assert!(!e.to_string().contains("pw@"));
    }

    #[tokio::test]
    async fn a_server_that_is_not_there_is_unreachable() {
        // Bound, never listening: it refuses, and nothing else can take it meanwhile.
        let refusing = tokio::net::TcpSocket::new_v4().unwrap();
        refusing
            .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .unwrap();
        let port = refusing.local_addr().unwrap().port();
        let url = format!("postgres://moot:pw@127.0.0.1:{port}/moot");
        let e = PostgresStore::open_with(&url, Access::Create)
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::Unreachable { .. }), "{e:?}");
        one_line(
            &e,
            &format!("the store postgres://moot:***@127.0.0.1:{port}/moot cannot be reached"),
        );
        assert!(
            !e.is_unusable_store(),
            "a server may come back: not the user's input"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs PostgreSQL; scripts/test runs it"]
    async fn passes_every_store_conformance_check() {
        crate::conformance::check_whole_conformance(fresh_store).await;
    }

    #[tokio::test]
    #[ignore = "needs PostgreSQL; scripts/test runs it"]
    async fn a_missing_database_is_named() {
        let url = PgServer::shared().url("no_such_database");
        let e = PostgresStore::open_with(&url, Access::Create)
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::Unreachable { .. }), "{e:?}");
        one_line(&e, "\"no_such_database\" does not exist");
    }

    #[tokio::test]
    #[ignore = "needs PostgreSQL; scripts/test runs it"]
    async fn reading_never_creates_and_refuses_writes() {
        let url = PgServer::shared().fresh_database();
        for access in [Access::Read, Access::Write] {
            let e = PostgresStore::open_with(&url, access).await.unwrap_err();
            one_line(&e, "no moot store in this database yet");
            assert!(e.is_unusable_store());
        }
        assert!(tables(&url).await.is_empty(), "nothing was created");
        let store = PostgresStore::open_with(&url, Access::Create)
            .await
            .unwrap();
        crate::conformance::check_bench_conformance(&store).await;
        store.close().await;
        let reader = PostgresStore::open_with(&url, Access::Read).await.unwrap();
        // The conformance check's two benchmarks (`b1`, and `bv` for its version).
        assert_eq!(reader.list_benches().await.unwrap().len(), 2);
        let e = reader
            .cache_put("k", &serde_json::json!(1))
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::ReadOnly(_)), "{e:?}");
        // The server itself refuses a write on a reading connection.
        let e = reader
            .queries
            .cache_put("k", &serde_json::json!(1))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("read-only transaction"), "{e}");
    }

    /// Issue 42, LOW 8 on PostgreSQL: processes starting on one empty database at once all
    /// open it, and it is migrated once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    #[ignore = "needs PostgreSQL; scripts/test runs it"]
    async fn openers_of_one_empty_database_at_once_all_succeed_and_it_is_migrated_once() {
        for attempt in 0..3 {
            let url = PgServer::shared().fresh_database();
            let openers: Vec<_> = (0..8)
                .map(|_| {
                    let url = url.clone();
                    tokio::spawn(
                        async move { PostgresStore::open_with(&url, Access::Create).await },
                    )
                })
                .collect();
            for (i, opener) in openers.into_iter().enumerate() {
                let store = opener
                    .await
                    .unwrap()
                    .unwrap_or_else(|e| panic!("attempt {attempt}: {e}"));
                store
                    .create_run(&crate::conformance::running_run(&format!("r{i}")))
                    .await
                    .unwrap();
                store.close().await;
            }
            let pool = one_connection(&url).await;
            let versions: Vec<i64> =
                sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
                    .fetch_all(&pool)
                    .await
                    .unwrap();
            pool.close().await;
            assert_eq!(
                versions,
                MIGRATOR.iter().map(|m| m.version).collect::<Vec<_>>()
            );
        }
    }

    #[tokio::test]
    #[ignore = "needs PostgreSQL; scripts/test runs it"]
    async fn another_programs_database_is_not_written_to() {
        let url = PgServer::shared().fresh_database();
        raw(
            &url,
            "CREATE TABLE invoices (id BIGINT PRIMARY KEY); INSERT INTO invoices VALUES (1);",
        )
        .await;
        for access in [Access::Read, Access::Write, Access::Create] {
            let e = PostgresStore::open_with(&url, access).await.unwrap_err();
            assert!(matches!(e, StoreError::NotAStore { .. }), "{e:?}");
            one_line(&e, "the database has tables but not moot's (invoices)");
        }
        assert_eq!(tables(&url).await, ["invoices"]);
    }

    #[tokio::test]
    #[ignore = "needs PostgreSQL; scripts/test runs it"]
    async fn a_store_from_a_newer_moot_is_refused_and_left_as_it_was() {
        let url = PgServer::shared().fresh_database();
        let store = PostgresStore::open_with(&url, Access::Create)
            .await
            .unwrap();
        crate::conformance::check_bench_conformance(&store).await;
        store.close().await;
        raw(&url, "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (20991231000001, 'from the future', TRUE, '\\x00', 0)").await;
        for access in [Access::Read, Access::Write, Access::Create] {
            let e = PostgresStore::open_with(&url, access).await.unwrap_err();
            assert!(
                matches!(
                    e,
                    StoreError::TooNew {
                        found: 20991231000001,
                        ..
                    }
                ),
                "{e:?}"
            );
            one_line(
                &e,
                "was written by a newer moot (schema version 20991231000001",
            );
        }
        // Still there, as it was.
        raw(
            &url,
            "DELETE FROM _sqlx_migrations WHERE version = 20991231000001",
        )
        .await;
        let store = PostgresStore::open_with(&url, Access::Read).await.unwrap();
        assert_eq!(store.bench_items("b1").await.unwrap().len(), 4);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs PostgreSQL; scripts/test runs it"]
    async fn a_server_that_goes_away_mid_run_is_named_and_nothing_is_lost() {
        let server = PgServer::start();
        let url = server.fresh_database();
        let store = PostgresStore::open_with(&url, Access::Create)
            .await
            .unwrap();
        store
            .create_run(&crate::conformance::running_run("r1"))
            .await
            .unwrap();
        store
            .record_call(&crate::conformance::full_call(
                "r1",
                0,
                0,
                Some("Final answer: 7"),
            ))
            .await
            .unwrap();
        server.stop();
        let started = std::time::Instant::now();
        let e = store
            .record_call(&crate::conformance::full_call(
                "r1",
                0,
                1,
                Some("Final answer: 7"),
            ))
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::Unreachable { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with(&format!("the store {} cannot be reached", redact_url(&url))),
            "{e}"
        );
        assert!(started.elapsed() < CONNECT_TIMEOUT + std::time::Duration::from_secs(5));
        server.restart();
        // The pool reconnects; what was recorded before is all there.
        store
            .record_call(&crate::conformance::full_call(
                "r1",
                0,
                1,
                Some("Final answer: 7"),
            ))
            .await
            .unwrap();
        assert_eq!(store.calls("r1").await.unwrap().len(), 2);
    }
}
