//! The SQLite store: one file, WAL journal, foreign keys on.

use std::path::Path;
use std::str::FromStr;

use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, SqlitePool};

use crate::{
    sort_bench_items, BenchItemRecord, BenchRecord, CallRecord, DecisionRecord, RunRecord,
    RunStatus, Store, StoreError,
};

#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Location(format!("creating {}: {e}", dir.display())))?;
        }
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(std::time::Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations").run(&pool).await?;
        Ok(SqliteStore { pool })
    }
}

fn json_text(v: &serde_json::Value) -> String {
    v.to_string()
}

fn parse_json(run: &str, what: &'static str, text: &str) -> Result<serde_json::Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        run: run.to_string(),
        what,
        message: e.to_string(),
    })
}

fn run_from_row(row: &SqliteRow) -> Result<RunRecord, StoreError> {
    let id: String = row.try_get("id")?;
    let spec: String = row.try_get("spec_json")?;
    let config: String = row.try_get("config_json")?;
    let status: String = row.try_get("status")?;
    Ok(RunRecord {
        spec: parse_json(&id, "spec", &spec)?,
        config: parse_json(&id, "config", &config)?,
        created_at: row.try_get("created_at")?,
        question: row.try_get("question")?,
        protocol: row.try_get("protocol")?,
        rule: row.try_get("rule")?,
        status: RunStatus::parse(&status),
        answer: row.try_get("answer")?,
        finished_at: row.try_get("finished_at")?,
        id,
    })
}

fn opt_u64(row: &SqliteRow, col: &str) -> Result<Option<u64>, sqlx::Error> {
    Ok(row.try_get::<Option<i64>, _>(col)?.map(|v| v.max(0) as u64))
}

fn call_from_row(row: &SqliteRow) -> Result<CallRecord, StoreError> {
    let run_id: String = row.try_get("run_id")?;
    let messages: String = row.try_get("messages_json")?;
    let peers: String = row.try_get("peers_json")?;
    let peers = serde_json::from_str(&peers).map_err(|e| StoreError::Corrupt {
        run: run_id.clone(),
        what: "peers",
        message: e.to_string(),
    })?;
    Ok(CallRecord {
        messages: parse_json(&run_id, "messages", &messages)?,
        peers,
        round: row.try_get::<i64, _>("round")? as u32,
        agent: row.try_get::<i64, _>("agent")? as u32,
        slot: row.try_get("slot")?,
        skipped: row.try_get::<String, _>("status")? == "skipped",
        notes: parse_json(&run_id, "notes", &row.try_get::<String, _>("notes_json")?)?,
        ncomm: opt_u64(row, "ncomm")?.unwrap_or(0) as u32,
        cached: opt_u64(row, "cached")?.unwrap_or(0) != 0,
        retries: parse_json(
            &run_id,
            "retries",
            &row.try_get::<String, _>("retries_json")?,
        )?,
        agent_id: row.try_get("agent_id")?,
        backend: row.try_get("backend")?,
        mode: row.try_get("mode")?,
        template: row.try_get("template")?,
        template_hash: row.try_get("template_hash")?,
        response_text: row.try_get("response_text")?,
        answer: row.try_get("answer")?,
        error: row.try_get("error")?,
        finish: row.try_get("finish")?,
        input_tokens: opt_u64(row, "input_tokens")?.unwrap_or(0),
        output_tokens: opt_u64(row, "output_tokens")?.unwrap_or(0),
        processed_input_tokens: opt_u64(row, "processed_input_tokens")?,
        logprob_tokens: opt_u64(row, "logprob_tokens")?,
        logprob_mean: row.try_get("logprob_mean")?,
        logprob_min: row.try_get("logprob_min")?,
        perplexity: row.try_get("perplexity")?,
        latency_ms: opt_u64(row, "latency_ms")?.unwrap_or(0),
        recorded_at: row.try_get("recorded_at")?,
        run_id,
    })
}

#[async_trait]
impl Store for SqliteStore {
    async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO runs (id, created_at, question, protocol, rule, spec_json, config_json, status, answer, finished_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&run.id)
        .bind(&run.created_at)
        .bind(&run.question)
        .bind(&run.protocol)
        .bind(&run.rule)
        .bind(json_text(&run.spec))
        .bind(json_text(&run.config))
        .bind(run.status.as_str())
        .bind(&run.answer)
        .bind(&run.finished_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn record_call(&self, c: &CallRecord) -> Result<(), StoreError> {
        let status = if c.skipped {
            "skipped"
        } else if c.response_text.is_some() {
            "ok"
        } else {
            "missing"
        };
        sqlx::query(
            "INSERT OR REPLACE INTO calls (run_id, round, agent, slot, agent_id, backend, mode, template, template_hash,
               messages_json, peers_json, status, response_text, answer, error, finish, input_tokens, output_tokens,
               processed_input_tokens, logprob_tokens, logprob_mean, logprob_min, perplexity, latency_ms, recorded_at,
               notes_json, ncomm, cached, retries_json)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&c.run_id)
        .bind(i64::from(c.round))
        .bind(i64::from(c.agent))
        .bind(&c.slot)
        .bind(&c.agent_id)
        .bind(&c.backend)
        .bind(&c.mode)
        .bind(&c.template)
        .bind(&c.template_hash)
        .bind(json_text(&c.messages))
        .bind(serde_json::to_string(&c.peers).unwrap_or_else(|_| "[]".into()))
        .bind(status)
        .bind(&c.response_text)
        .bind(&c.answer)
        .bind(&c.error)
        .bind(&c.finish)
        .bind(c.input_tokens as i64)
        .bind(c.output_tokens as i64)
        .bind(c.processed_input_tokens.map(|v| v as i64))
        .bind(c.logprob_tokens.map(|v| v as i64))
        .bind(c.logprob_mean)
        .bind(c.logprob_min)
        .bind(c.perplexity)
        .bind(c.latency_ms as i64)
        .bind(&c.recorded_at)
        .bind(json_text(&c.notes))
        .bind(i64::from(c.ncomm))
        .bind(i64::from(c.cached))
        .bind(json_text(&c.retries))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn record_decision(&self, d: &DecisionRecord) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT OR REPLACE INTO decisions (run_id, rule, answer, decision_json, decided_at) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(&d.run_id)
        .bind(&d.rule)
        .bind(&d.answer)
        .bind(json_text(&d.decision))
        .bind(&d.decided_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn finish_run(
        &self,
        id: &str,
        status: RunStatus,
        answer: Option<&str>,
        at: &str,
    ) -> Result<(), StoreError> {
        let done =
            sqlx::query("UPDATE runs SET status = ?, answer = ?, finished_at = ? WHERE id = ?")
                .bind(status.as_str())
                .bind(answer)
                .bind(at)
                .bind(id)
                .execute(&self.pool)
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::RunNotFound(id.to_string()));
        }
        Ok(())
    }

    async fn run(&self, id: &str) -> Result<RunRecord, StoreError> {
        let row = sqlx::query("SELECT * FROM runs WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::RunNotFound(id.to_string()))?;
        run_from_row(&row)
    }

    async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError> {
        let rows = sqlx::query("SELECT * FROM calls WHERE run_id = ? ORDER BY round, agent, slot")
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(call_from_row).collect()
    }

    async fn decisions(&self, id: &str) -> Result<Vec<DecisionRecord>, StoreError> {
        let rows = sqlx::query("SELECT * FROM decisions WHERE run_id = ? ORDER BY rule")
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| {
                let run_id: String = row.try_get("run_id")?;
                let decision: String = row.try_get("decision_json")?;
                Ok(DecisionRecord {
                    decision: parse_json(&run_id, "decision", &decision)?,
                    rule: row.try_get("rule")?,
                    answer: row.try_get("answer")?,
                    decided_at: row.try_get("decided_at")?,
                    run_id,
                })
            })
            .collect()
    }

    async fn list_runs(&self, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let rows = sqlx::query("SELECT * FROM runs ORDER BY created_at DESC, id DESC LIMIT ?")
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(run_from_row).collect()
    }

    async fn create_bench(&self, b: &BenchRecord) -> Result<(), StoreError> {
        let result = sqlx::query(
            "INSERT INTO benches (name, created_at, dataset, protocols_json, item_limit, seed, config_json)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&b.name)
        .bind(&b.created_at)
        .bind(&b.dataset)
        .bind(serde_json::to_string(&b.protocols).unwrap_or_else(|_| "[]".into()))
        .bind(b.limit.map(|l| l as i64))
        .bind(b.seed as i64)
        .bind(json_text(&b.config))
        .execute(&self.pool)
        .await;
        match result {
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                Err(StoreError::BenchExists(b.name.clone()))
            }
            other => other.map(|_| ()).map_err(StoreError::from),
        }
    }

    async fn bench(&self, name: &str) -> Result<BenchRecord, StoreError> {
        let row = sqlx::query("SELECT * FROM benches WHERE name = ?")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::BenchNotFound(name.to_string()))?;
        let protocols: String = row.try_get("protocols_json")?;
        let config: String = row.try_get("config_json")?;
        Ok(BenchRecord {
            name: row.try_get("name")?,
            created_at: row.try_get("created_at")?,
            dataset: row.try_get("dataset")?,
            protocols: serde_json::from_str(&protocols).map_err(|e| StoreError::Corrupt {
                run: name.to_string(),
                what: "benchmark protocols",
                message: e.to_string(),
            })?,
            limit: opt_u64(&row, "item_limit")?,
            seed: opt_u64(&row, "seed")?.unwrap_or(0),
            config: parse_json(name, "benchmark config", &config)?,
        })
    }

    async fn record_bench_item(&self, i: &BenchItemRecord) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT OR REPLACE INTO bench_items (bench, protocol, item_id, position, gold, run_id)
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&i.bench)
        .bind(&i.protocol)
        .bind(&i.item_id)
        .bind(i64::from(i.position))
        .bind(&i.gold)
        .bind(&i.run_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn cache_get(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError> {
        let row = sqlx::query("SELECT response_json FROM cache WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            None => Ok(None),
            Some(row) => {
                let text: String = row.try_get("response_json")?;
                parse_json(key, "cached response", &text).map(Some)
            }
        }
    }

    async fn cache_put(&self, key: &str, response: &serde_json::Value) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT OR IGNORE INTO cache (key, response_json, created_at) VALUES (?, ?, ?)",
        )
        .bind(key)
        .bind(json_text(response))
        .bind(humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn bench_items(&self, name: &str) -> Result<Vec<BenchItemRecord>, StoreError> {
        let order = match self.bench(name).await {
            Ok(b) => b.protocols,
            Err(StoreError::BenchNotFound(_)) => return Ok(vec![]),
            Err(e) => return Err(e),
        };
        let rows = sqlx::query("SELECT * FROM bench_items WHERE bench = ? ORDER BY position")
            .bind(name)
            .fetch_all(&self.pool)
            .await?;
        let mut items = rows
            .iter()
            .map(|row| {
                Ok(BenchItemRecord {
                    bench: row.try_get("bench")?,
                    protocol: row.try_get("protocol")?,
                    item_id: row.try_get("item_id")?,
                    position: opt_u64(row, "position")?.unwrap_or(0) as u32,
                    gold: row.try_get("gold")?,
                    run_id: row.try_get("run_id")?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()?;
        sort_bench_items(&mut items, &order);
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        }
    }

    fn call(round: u32, agent: u32, text: Option<&str>) -> CallRecord {
        CallRecord {
            run_id: "r1".into(),
            round,
            agent,
            slot: "answer".into(),
            agent_id: format!("a{agent}"),
            backend: "scripted:x".into(),
            mode: "generate".into(),
            template: "initial".into(),
            template_hash: "abc".into(),
            messages: json!([{"role": "user", "content": "q"}]),
            peers: vec![1, 2],
            response_text: text.map(String::from),
            answer: text.map(|_| "7".into()),
            error: text.is_none().then(|| "timeout".into()),
            finish: None,
            input_tokens: 10,
            output_tokens: 5,
            processed_input_tokens: Some(3),
            logprob_tokens: None,
            logprob_mean: Some(-0.5),
            logprob_min: None,
            perplexity: None,
            latency_ms: 12,
            recorded_at: "2026-11-21T10:00:01Z".into(),
            skipped: false,
            notes: json!({"ncomm": 2}),
            ncomm: 2,
            cached: false,
            retries: json!([{"error": "HTTP 503: busy", "class": "transient", "wait_ms": 500}]),
        }
    }

    #[tokio::test]
    async fn extra_slots_and_skips_are_separate_rows() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("m.db")).await.unwrap();
        store.create_run(&run("r1")).await.unwrap();
        let answer = call(0, 1, Some("Final answer: 7"));
        let judge = CallRecord {
            slot: "judge:0".into(),
            ..call(0, 1, Some("<label>YES</label>"))
        };
        let skipped = CallRecord {
            round: 1,
            skipped: true,
            response_text: None,
            answer: None,
            error: Some("s2-mad: every peer agrees".into()),
            notes: json!({"skipped": "s2-mad: every peer agrees", "ncomm": 0}),
            ncomm: 0,
            ..call(1, 1, None)
        };
        for c in [&answer, &judge, &skipped] {
            store.record_call(c).await.unwrap();
        }
        let calls = store.calls("r1").await.unwrap();
        assert_eq!(calls, vec![answer, judge, skipped]);
    }

    #[tokio::test]
    async fn the_slot_migration_keeps_every_existing_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        // A database as the first migration left it, with one call.
        {
            use sqlx::sqlite::SqliteConnectOptions;
            use sqlx::{ConnectOptions, Connection};
            let mut conn = SqliteConnectOptions::new()
                .filename(&path)
                .create_if_missing(true)
                .connect()
                .await
                .unwrap();
            let init = include_str!("../migrations/20261121000001_init.sql");
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
            let migrator = sqlx::migrate!("./migrations");
            let first = migrator.iter().next().unwrap();
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
            conn.close().await.unwrap();
        }
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
        let path = dir.path().join("nested").join("moot.db");
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
                decision: json!({"scores": {"7": 20.0}}),
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
            store.decisions("r1").await.unwrap()[0].decision,
            json!({"scores": {"7": 20.0}})
        );
        assert_eq!(store.list_runs(10).await.unwrap().len(), 1);
        assert!(matches!(
            store.run("nope").await,
            Err(StoreError::RunNotFound(_))
        ));
        assert!(matches!(
            store.finish_run("nope", RunStatus::Done, None, "t").await,
            Err(StoreError::RunNotFound(_))
        ));
    }

    #[tokio::test]
    async fn benches_follow_the_store_contract() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("b.db")).await.unwrap();
        crate::check_bench_contract(&store).await;
        crate::check_cache_contract(&store).await;
    }

    #[tokio::test]
    async fn a_call_for_an_unknown_run_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("m.db")).await.unwrap();
        assert!(store.record_call(&call(0, 0, Some("x"))).await.is_err());
    }

    #[test]
    fn locations() {
        use crate::StoreLocation;
        assert_eq!(
            StoreLocation::parse("x.db"),
            StoreLocation::Sqlite("x.db".into())
        );
        assert_eq!(
            StoreLocation::parse("sqlite:///tmp/a.db"),
            StoreLocation::Sqlite("/tmp/a.db".into())
        );
        assert!(matches!(
            StoreLocation::parse("postgres://u@h/db"),
            StoreLocation::Postgres(_)
        ));
    }
}
