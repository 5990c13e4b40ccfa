//! The queries behind [`Store`](crate::Store), written once for both databases.
//!
//! SQLite and PostgreSQL share almost all of moot's SQL: `$N` parameters (SQLite reads `$1` as
//! the first argument, as PostgreSQL does), `ON CONFLICT` upserts, the same columns and types.
//! What differs is passed in as a [`Dialect`]'s fragments: the database's clock in milliseconds,
//! case-insensitive containment, the cache's insertion order, and claiming a job (PostgreSQL
//! skips rows other workers hold locked; SQLite has one writer at a time). sqlx's query
//! builders are typed by database, so the shared text is expanded once per pool type by
//! [`store_queries!`] rather than written twice.

use crate::records::{CallBatch, CallRecord, RunOutcome};

/// The SQL fragments in which the two databases differ.
pub(crate) struct Dialect {
    /// Milliseconds since the epoch on the database's clock.
    pub now_ms: &'static str,
    /// Claims the next job: `$1` bench, `$2` worker, `$3` lease in ms; returns the job's row.
    pub claim: &'static str,
    /// Removes all but the `$1` newest cached responses.
    pub cache_trim: &'static str,
    /// Cached responses with their keys, oldest first.
    pub cache_entries: &'static str,
    /// `$1 IS NULL OR` the run's answer contains `$1`, ignoring ASCII case.
    pub answer_contains_2: &'static str,
    /// Microseconds since the epoch on the database's clock.
    pub now_us: &'static str,
    /// The larger of two values (`MAX(a, b)` in SQLite, `GREATEST(a, b)` in PostgreSQL).
    pub greater: &'static str,
}

/// The columns of a call's row, in the order [`bind_call!`] binds them.
macro_rules! call_columns {
    () => {
        "run_id, round, agent, slot, agent_id, backend, mode, template, template_hash,
         messages_json, peers_json, status, response_text, answer, error, finish, input_tokens, output_tokens,
         processed_input_tokens, logprob_tokens, logprob_mean, logprob_min, perplexity, latency_ms, recorded_at,
         notes_json, ncomm, cached, retries_json, request_key, reused_from, cache_write_input_tokens, seq"
    };
}

/// A call's `seq` (see migrations/sqlite/20261127000008_follow.sql): the run's highest plus one,
/// with the run id bound where this ends.
macro_rules! next_seq {
    () => {
        "(SELECT COALESCE(MAX(s.seq), 0) + 1 FROM calls s WHERE s.run_id = "
    };
}

/// What recording a call that is already there does: a call with a response is kept as first
/// recorded (`WHERE calls.status <> 'ok'`), so two workers that both finished a call record it
/// once; anything else is replaced.
macro_rules! call_upsert {
    () => {
        " ON CONFLICT (run_id, round, agent, slot) DO UPDATE SET
           agent_id = excluded.agent_id, backend = excluded.backend, mode = excluded.mode,
           template = excluded.template, template_hash = excluded.template_hash,
           messages_json = excluded.messages_json, peers_json = excluded.peers_json,
           status = excluded.status, response_text = excluded.response_text,
           answer = excluded.answer, error = excluded.error, finish = excluded.finish,
           input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
           processed_input_tokens = excluded.processed_input_tokens,
           logprob_tokens = excluded.logprob_tokens, logprob_mean = excluded.logprob_mean,
           logprob_min = excluded.logprob_min, perplexity = excluded.perplexity,
           latency_ms = excluded.latency_ms, recorded_at = excluded.recorded_at,
           notes_json = excluded.notes_json, ncomm = excluded.ncomm, cached = excluded.cached,
           retries_json = excluded.retries_json, request_key = excluded.request_key,
           reused_from = excluded.reused_from,
           cache_write_input_tokens = excluded.cache_write_input_tokens, seq = excluded.seq
         WHERE calls.status <> 'ok'"
    };
}

/// Binds call `$c`'s values, in [`call_columns!`]' order, with `$bind`: `bind` on a query,
/// `push_bind` on a row of a multi-row insert.
macro_rules! bind_call {
    ($target:expr, $c:expr, $bind:ident) => {{
        let c: &CallRecord = $c;
        $target
            .$bind(&c.run_id)
            .$bind(i64::from(c.round))
            .$bind(i64::from(c.agent))
            .$bind(&c.slot)
            .$bind(&c.agent_id)
            .$bind(&c.backend)
            .$bind(&c.mode)
            .$bind(&c.template)
            .$bind(&c.template_hash)
            .$bind(json_text(&c.messages))
            .$bind(serde_json::to_string(&c.peers).unwrap_or_else(|_| "[]".into()))
            .$bind(call_status(c))
            .$bind(&c.response_text)
            .$bind(&c.answer)
            .$bind(&c.error)
            .$bind(&c.finish)
            .$bind(crate::queries::stored_count(c.input_tokens))
            .$bind(crate::queries::stored_count(c.output_tokens))
            .$bind(c.processed_input_tokens.map(crate::queries::stored_count))
            .$bind(c.logprob_tokens.map(crate::queries::stored_count))
            .$bind(c.logprob_mean)
            .$bind(c.logprob_min)
            .$bind(c.perplexity)
            .$bind(crate::queries::stored_count(c.latency_ms))
            .$bind(&c.recorded_at)
            .$bind(json_text(&c.notes))
            .$bind(i64::from(c.ncomm))
            .$bind(i64::from(c.cached))
            .$bind(json_text(&c.retries))
            .$bind(&c.request_key)
            .$bind(&c.reused_from)
            .$bind(c.cache_write_input_tokens.map(crate::queries::stored_count))
    }};
}

/// The statement that records call `$c` (a `&CallRecord`), for any pool or transaction.
macro_rules! insert_call {
    ($c:expr) => {
        crate::queries::bind_call!(
            sqlx::query(concat!(
                "INSERT INTO calls (",
                crate::queries::call_columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                   $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, ",
                crate::queries::next_seq!(),
                "$1))",
                crate::queries::call_upsert!()
            )),
            $c,
            bind
        )
    };
}

/// Writes calls `$calls` (a `Vec<&CallRecord>`) in transaction `$tx`, in multi-row statements
/// (one by one when a call is there twice: each recording applies in order).
macro_rules! insert_call_rows {
    ($tx:ident, $calls:expr) => {{
        use crate::queries::{distinct, ROWS_PER_INSERT};
        let calls: &[&CallRecord] = &$calls;
        if distinct(calls.iter().map(|c| (&c.run_id, c.round, c.agent, &c.slot))) {
            for chunk in calls.chunks(ROWS_PER_INSERT) {
                let mut q = sqlx::QueryBuilder::new(concat!(
                    "INSERT INTO calls (",
                    crate::queries::call_columns!(),
                    ") "
                ));
                q.push_values(chunk, |mut row, c| {
                    crate::queries::bind_call!(row, c, push_bind);
                    row.push(crate::queries::next_seq!())
                        .push_bind_unseparated(&c.run_id)
                        .push_unseparated(")");
                });
                q.push(crate::queries::call_upsert!());
                q.build().execute(&mut *$tx).await?;
            }
        } else {
            for c in calls {
                crate::queries::insert_call!(c).execute(&mut *$tx).await?;
            }
        }
    }};
}

/// Writes decisions `$decisions` (a `Vec<&DecisionRecord>`) in transaction `$tx`, as
/// [`insert_call_rows!`] writes calls.
macro_rules! insert_decision_rows {
    ($tx:ident, $decisions:expr) => {{
        use crate::queries::{distinct, ROWS_PER_INSERT};
        let decisions: &[&DecisionRecord] = &$decisions;
        let groups: Vec<&[&DecisionRecord]> =
            if distinct(decisions.iter().map(|d| (&d.run_id, &d.rule))) {
                decisions.chunks(ROWS_PER_INSERT).collect()
            } else {
                decisions.chunks(1).collect()
            };
        for chunk in groups {
            let mut q = sqlx::QueryBuilder::new(crate::queries::decision_insert!());
            q.push_values(chunk, |mut row, d| {
                crate::queries::bind_decision!(row, d, push_bind);
            });
            q.push(crate::queries::decision_upsert!());
            q.build().execute(&mut *$tx).await?;
        }
    }};
}

/// The statement that records check `$v` (a `&ValidationRecord`); the same run, answer and
/// check again replaces it.
macro_rules! insert_validation {
    ($v:expr) => {{
        let v: &ValidationRecord = $v;
        sqlx::query(
            "INSERT INTO validations (run_id, answer, check_kind, verdict, detail, elapsed_ms, checked_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (run_id, answer, check_kind) DO UPDATE SET verdict = excluded.verdict,
               detail = excluded.detail, elapsed_ms = excluded.elapsed_ms, checked_at = excluded.checked_at",
        )
        .bind(&v.run_id)
        .bind(&v.answer)
        .bind(&v.check)
        .bind(&v.verdict)
        .bind(&v.detail)
        .bind(crate::queries::stored_count(v.elapsed_ms))
        .bind(&v.checked_at)
    }};
}

/// Records run `$run` (a `&RunRecord`) through `$executor` as its owner's, alive now (`$now_ms`:
/// the dialect's clock), with the conflict clause `$conflict` (`""`: a run already there is an
/// error); evaluates to the statement's result.
macro_rules! insert_run {
    ($executor:expr, $run:expr, $now_ms:expr, $conflict:expr) => {{
        let run: &RunRecord = $run;
        let sql = format!(
            "INSERT INTO runs (id, created_at, question, protocol, rule, spec_json, config_json, status, answer, finished_at, heartbeat_ms, owner, fork_parent, fork_round, fork_json)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, {}, $11, $12, $13, $14){}",
            $now_ms, $conflict
        );
        sqlx::query(&sql)
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
            .bind(crate::owner::this_process())
            .bind(run.fork.as_ref().map(|f| &f.parent))
            .bind(run.fork.as_ref().map(|f| i64::from(f.round)))
            .bind(run.fork.as_ref().map(|f| json_text(&f.intervention)))
            .execute($executor)
            .await?
    }};
}

/// The start of an insert into the cache, and what it does with a key that is taken (the
/// first response stored stays).
macro_rules! cache_insert {
    () => {
        "INSERT INTO cache (key, response_json, created_at) "
    };
}
macro_rules! cache_keep_first {
    () => {
        " ON CONFLICT (key) DO NOTHING"
    };
}

/// The statement that caches `$response` under `$key` unless the key is taken.
macro_rules! insert_cached {
    ($key:expr, $response:expr) => {{
        let (key, response): (&str, &serde_json::Value) = ($key, $response);
        sqlx::query(concat!(
            crate::queries::cache_insert!(),
            "VALUES ($1, $2, $3)",
            crate::queries::cache_keep_first!()
        ))
        .bind(key)
        .bind(json_text(response))
        .bind(humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string())
    }};
}

/// The start of an insert of decisions, and what it does with a (run, rule) already decided:
/// a resumed debate decides again, and the new decision replaces the old.
macro_rules! decision_insert {
    () => {
        "INSERT INTO decisions (run_id, rule, answer, decision_json, decided_at) "
    };
}
macro_rules! decision_upsert {
    () => {
        " ON CONFLICT (run_id, rule) DO UPDATE SET answer = excluded.answer,
           decision_json = excluded.decision_json, decided_at = excluded.decided_at"
    };
}

/// Binds decision `$d`'s values, in [`decision_insert!`]'s order, with `$bind` (as
/// [`bind_call!`] does).
macro_rules! bind_decision {
    ($target:expr, $d:expr, $bind:ident) => {{
        let d: &DecisionRecord = $d;
        $target
            .$bind(&d.run_id)
            .$bind(&d.rule)
            .$bind(&d.answer)
            .$bind(d.decision.text())
            .$bind(&d.decided_at)
    }};
}

/// The statement that finishes run `$id` with `$status`, `$answer` and `$at`; it changes no
/// row when the run does not exist.
macro_rules! finish_run {
    ($id:expr, $status:expr, $answer:expr, $at:expr) => {{
        let (id, status, answer, at): (&str, RunStatus, Option<&str>, &str) =
            ($id, $status, $answer, $at);
        sqlx::query("UPDATE runs SET status = $1, answer = $2, finished_at = $3 WHERE id = $4")
            .bind(status.as_str())
            .bind(answer)
            .bind(at)
            .bind(id)
    }};
}

/// A count as the databases' signed 64-bit integers hold it: one past `i64::MAX` (which no real
/// count reaches) is stored as `i64::MAX`, not wrapped to a negative number that reads back as 0.
pub(crate) fn stored_count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// How far past its tolerance and cost an allowance's arrival time may be ahead of now before
/// it is taken for a clock stepped back or a row written by hand, and reset (see
/// [`crate::records::Allowance::Reset`]). A minute: a process whose limit for the same model is
/// stricter (another configuration) leaves arrival times as far ahead as its own burst, which
/// is at most a minute for any per-minute limit, and those must not read as suspect here.
pub(crate) const ALLOWANCE_SLACK_US: i64 = 60_000_000;

/// How far ahead of now an arrival time may be before a take of `cost_us` within
/// `tolerance_us` takes it for suspect.
pub(crate) fn allowance_suspect_after(cost_us: i64, tolerance_us: i64) -> i64 {
    tolerance_us
        .saturating_add(cost_us)
        .saturating_add(ALLOWANCE_SLACK_US)
}

/// A duration of `us` microseconds (none for a negative count).
pub(crate) fn micros(us: i64) -> std::time::Duration {
    std::time::Duration::from_micros(u64::try_from(us).unwrap_or(0))
}

/// How long until an allowance whose arrival time is `ahead_us` ahead of now can pay
/// `cost_us` within `tolerance_us` (at least a millisecond: the clock the store reads has no
/// finer steps).
pub(crate) fn allowance_wait(
    ahead_us: i64,
    cost_us: i64,
    tolerance_us: i64,
) -> std::time::Duration {
    let wait_us = ahead_us
        .saturating_add(cost_us)
        .saturating_sub(tolerance_us);
    std::time::Duration::from_micros(wait_us.max(1_000) as u64)
}

/// A run's columns as runs are read: every stored one, and `silent_ms`, how long ago (on the
/// database's clock `now_ms`) its owner last said it was alive.
pub(crate) fn run_columns(now_ms: &str) -> String {
    format!("*, {now_ms} - heartbeat_ms AS silent_ms")
}

/// Rows per multi-row `INSERT`: a call binds 33 parameters, and SQLite allows 32,766 a
/// statement (PostgreSQL 65,535).
pub(crate) const ROWS_PER_INSERT: usize = 500;

/// Whether no two of `keys` are equal. PostgreSQL refuses an `INSERT … ON CONFLICT DO UPDATE`
/// that would update one row twice, so rows with a repeated key go one statement each.
pub(crate) fn distinct<K: std::hash::Hash + Eq>(keys: impl IntoIterator<Item = K>) -> bool {
    let mut seen = std::collections::HashSet::new();
    keys.into_iter().all(|k| seen.insert(k))
}

/// The writes a transaction makes together: calls, cached responses and finished runs.
#[derive(Default)]
pub(crate) struct Rows<'a> {
    pub calls: Vec<&'a CallRecord>,
    pub cache: Vec<(&'a str, &'a serde_json::Value)>,
    pub outcomes: Vec<&'a RunOutcome>,
}

impl<'a> Rows<'a> {
    pub(crate) fn add_batch(&mut self, batch: &'a CallBatch) {
        self.calls.extend(&batch.calls);
        self.cache
            .extend(batch.cache.iter().map(|(k, v)| (k.as_str(), v)));
    }
}

/// Expands to `impl $queries { … }`: every query of the store, writes on the pool in
/// `$queries.pool` and reads on `$queries.read`, with the dialect `$dialect` (a `Dialect`
/// constant).
macro_rules! store_queries {
    ($queries:ty, $dialect:expr) => {
        impl $queries {
            async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
                // A new run's owner is alive: it is writing it.
                crate::queries::insert_run!(&self.pool, run, $dialect.now_ms, "");
                Ok(())
            }

            /// The run, its calls, decisions and checks in one transaction; a run already
            /// there is left as it is (`ON CONFLICT DO NOTHING`: of two writers of one new run,
            /// the second waits for the first and then writes nothing).
            async fn record_whole_run(&self, whole: &WholeRun) -> Result<bool, StoreError> {
                let mut tx = self.pool.begin().await?;
                let created = crate::queries::insert_run!(
                    &mut *tx,
                    &whole.run,
                    $dialect.now_ms,
                    " ON CONFLICT (id) DO NOTHING"
                );
                if created.rows_affected() == 0 {
                    tx.rollback().await?;
                    return Ok(false);
                }
                crate::queries::insert_call_rows!(tx, whole.calls.iter().collect::<Vec<_>>());
                crate::queries::insert_decision_rows!(
                    tx,
                    whole.decisions.iter().collect::<Vec<_>>()
                );
                for v in &whole.validations {
                    crate::queries::insert_validation!(v).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(true)
            }

            /// A call with a response is kept as first recorded (`WHERE calls.status <> 'ok'`):
            /// two workers that both finished a call record it once.
            async fn record_call(&self, c: &CallRecord) -> Result<(), StoreError> {
                crate::queries::insert_call!(c).execute(&self.pool).await?;
                Ok(())
            }

            /// Every row of `rows` in one transaction: all or nothing, and one commit however
            /// many rows. Rows of a kind go in multi-row statements.
            async fn write_rows(&self, rows: &crate::queries::Rows<'_>) -> Result<(), StoreError> {
                use crate::queries::ROWS_PER_INSERT;
                let mut tx = self.pool.begin().await?;
                crate::queries::insert_call_rows!(tx, rows.calls);
                let created_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
                for chunk in rows.cache.chunks(ROWS_PER_INSERT) {
                    let mut q = sqlx::QueryBuilder::new(crate::queries::cache_insert!());
                    q.push_values(chunk, |mut row, (key, response)| {
                        row.push_bind(*key)
                            .push_bind(json_text(response))
                            .push_bind(&created_at);
                    });
                    q.push(crate::queries::cache_keep_first!());
                    q.build().execute(&mut *tx).await?;
                }
                // Runs first: an unknown run is then refused as one, not as a decision whose
                // run is missing.
                for o in &rows.outcomes {
                    let done = crate::queries::finish_run!(
                        &o.run_id,
                        o.status,
                        o.answer.as_deref(),
                        &o.finished_at
                    )
                    .execute(&mut *tx)
                    .await?;
                    if done.rows_affected() == 0 {
                        return Err(StoreError::RunNotFound(o.run_id.clone()));
                    }
                }
                let decisions: Vec<&DecisionRecord> =
                    rows.outcomes.iter().flat_map(|o| &o.decisions).collect();
                crate::queries::insert_decision_rows!(tx, decisions);
                tx.commit().await?;
                Ok(())
            }

            async fn record_decision(&self, d: &DecisionRecord) -> Result<(), StoreError> {
                crate::queries::bind_decision!(
                    sqlx::query(concat!(
                        crate::queries::decision_insert!(),
                        "VALUES ($1, $2, $3, $4, $5)",
                        crate::queries::decision_upsert!()
                    )),
                    d,
                    bind
                )
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
                let done = crate::queries::finish_run!(id, status, answer, at)
                    .execute(&self.pool)
                    .await?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::RunNotFound(id.to_string()));
                }
                Ok(())
            }

            async fn run(&self, id: &str) -> Result<RunRecord, StoreError> {
                let sql = format!("SELECT {} FROM runs WHERE id = $1", run_columns($dialect.now_ms));
                let row = sqlx::query(&sql)
                    .bind(id)
                    .fetch_optional(&self.read)
                    .await?
                    .ok_or_else(|| StoreError::RunNotFound(id.to_string()))?;
                run_from_row(&row)
            }

            async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError> {
                let rows = sqlx::query(
                    "SELECT * FROM calls WHERE run_id = $1 ORDER BY round, agent, slot",
                )
                .bind(id)
                .fetch_all(&self.read)
                .await?;
                all(&rows, call_from_row)
            }

            async fn calls_after(
                &self,
                id: &str,
                after: &CallCursor,
                limit: u32,
            ) -> Result<Vec<(CallCursor, CallRecord)>, StoreError> {
                let rows = sqlx::query(
                    "SELECT * FROM calls WHERE run_id = $1 AND (seq, round, agent, slot) > ($2, $3, $4, $5)
                     ORDER BY seq, round, agent, slot LIMIT $6",
                )
                .bind(id)
                .bind(after.seq)
                .bind(i64::from(after.round))
                .bind(i64::from(after.agent))
                .bind(&after.slot)
                .bind(i64::from(limit))
                .fetch_all(&self.read)
                .await?;
                rows.iter()
                    .map(|row| {
                        let call = call_from_row(row)?;
                        let cursor = CallCursor {
                            seq: row.opt_int("seq")?.unwrap_or(0),
                            round: call.round,
                            agent: call.agent,
                            slot: call.slot.clone(),
                        };
                        Ok((cursor, call))
                    })
                    .collect()
            }

            async fn take_allowance(
                &self,
                key: &str,
                cost_us: i64,
                tolerance_us: i64,
            ) -> Result<crate::records::Allowance, StoreError> {
                use crate::records::Allowance;
                // How far the stored arrival time is ahead of now: never negative, and no
                // stored value, however large or small, overflows it.
                let ahead_sql = format!(
                    "{greater}(rate_allowances.tat_us, {now}) - {now}",
                    now = $dialect.now_us,
                    greater = $dialect.greater
                );
                // GCRA in one statement: the allowance's arrival time moves on by the cost,
                // unless that would put it more than the tolerance ahead of now.
                let sql = format!(
                    "INSERT INTO rate_allowances (key, tat_us) VALUES ($1, {now} + $2)
                     ON CONFLICT (key) DO UPDATE SET tat_us = {greater}(rate_allowances.tat_us, {now}) + $2
                     WHERE {ahead_sql} <= $3 - $2",
                    now = $dialect.now_us,
                    greater = $dialect.greater
                );
                let taken = sqlx::query(&sql)
                    .bind(key)
                    .bind(cost_us)
                    .bind(tolerance_us)
                    .execute(&self.pool)
                    .await?;
                if taken.rows_affected() == 1 {
                    return Ok(Allowance::Taken);
                }
                let sql = format!(
                    "SELECT CAST({ahead_sql} AS BIGINT) AS ahead_us FROM rate_allowances WHERE key = $1"
                );
                let ahead = sqlx::query(&sql)
                    .bind(key)
                    .fetch_optional(&self.pool)
                    .await?
                    .map(|row| row.opt_int("ahead_us"))
                    .transpose()?
                    .flatten()
                    .unwrap_or(0);
                let suspect = crate::queries::allowance_suspect_after(cost_us, tolerance_us);
                if ahead <= suspect {
                    return Ok(Allowance::Wait(crate::queries::allowance_wait(
                        ahead,
                        cost_us,
                        tolerance_us,
                    )));
                }
                // Further ahead than any take leaves it: reset to now plus the cost (taken),
                // unless another process changed it meanwhile (then asked again shortly).
                let sql = format!(
                    "UPDATE rate_allowances SET tat_us = {now} + $2 WHERE key = $1 AND {ahead_sql} > $3",
                    now = $dialect.now_us
                );
                let reset = sqlx::query(&sql)
                    .bind(key)
                    .bind(cost_us)
                    .bind(suspect)
                    .execute(&self.pool)
                    .await?;
                Ok(if reset.rows_affected() == 1 {
                    Allowance::Reset {
                        ahead: crate::queries::micros(ahead),
                    }
                } else {
                    Allowance::Wait(std::time::Duration::from_millis(1))
                })
            }

            async fn beat_run(&self, id: &str) -> Result<(), StoreError> {
                let sql = format!(
                    "UPDATE runs SET heartbeat_ms = {}, owner = $2 WHERE id = $1 AND status = 'running'",
                    $dialect.now_ms
                );
                sqlx::query(&sql)
                    .bind(id)
                    .bind(crate::owner::this_process())
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn decisions(&self, id: &str) -> Result<Vec<DecisionRecord>, StoreError> {
                let rows = sqlx::query("SELECT * FROM decisions WHERE run_id = $1 ORDER BY rule")
                    .bind(id)
                    .fetch_all(&self.read)
                    .await?;
                all(&rows, decision_from_row)
            }

            async fn record_validation(&self, v: &ValidationRecord) -> Result<(), StoreError> {
                crate::queries::insert_validation!(v).execute(&self.pool).await?;
                Ok(())
            }

            async fn validations(&self, id: &str) -> Result<Vec<ValidationRecord>, StoreError> {
                let rows = sqlx::query(
                    "SELECT * FROM validations WHERE run_id = $1 ORDER BY answer, check_kind",
                )
                .bind(id)
                .fetch_all(&self.read)
                .await?;
                all(&rows, validation_from_row)
            }

            async fn list_runs(&self, f: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
                // Each filter is bound, never spliced in; an absent one matches everything.
                // `to` is a prefix bound: `2026-11-23` keeps the whole day (RunFilter::matches).
                let sql = format!(
                    "SELECT {} FROM runs
                     WHERE ($1 IS NULL OR protocol = $1)
                       AND ({})
                       AND ($3 IS NULL OR created_at >= $3)
                       AND ($4 IS NULL OR created_at < $4 OR substr(created_at, 1, length($4)) = $4)
                       AND (NOT $7 OR id NOT IN (SELECT run_id FROM bench_items))
                     ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6",
                    run_columns($dialect.now_ms),
                    $dialect.answer_contains_2
                );
                let rows = sqlx::query(&sql)
                    .bind(&f.protocol)
                    .bind(&f.answer)
                    .bind(&f.from)
                    .bind(&f.to)
                    .bind(i64::from(f.limit))
                    .bind(i64::from(f.offset))
                    .bind(f.outside_benches)
                    .fetch_all(&self.read)
                    .await?;
                all(&rows, run_from_row)
            }

            async fn forks_of(&self, parent: &str, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
                let sql = format!(
                    "SELECT {} FROM runs WHERE fork_parent = $1 ORDER BY created_at, id LIMIT $2",
                    run_columns($dialect.now_ms)
                );
                let rows = sqlx::query(&sql)
                    .bind(parent)
                    .bind(i64::from(limit))
                    .fetch_all(&self.read)
                    .await?;
                all(&rows, run_from_row)
            }

            async fn create_bench(&self, b: &BenchRecord) -> Result<(), StoreError> {
                let result = sqlx::query(
                    "INSERT INTO benches (name, created_at, dataset, protocols_json, item_limit, seed, config_json, fork_parent, fork_round, fork_json, left_out_json)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                )
                .bind(&b.name)
                .bind(&b.created_at)
                .bind(&b.dataset)
                .bind(serde_json::to_string(&b.protocols).unwrap_or_else(|_| "[]".into()))
                .bind(b.limit.map(|l| l as i64))
                .bind(b.seed as i64)
                .bind(json_text(&b.config))
                .bind(b.fork.as_ref().map(|f| &f.parent))
                .bind(b.fork.as_ref().map(|f| i64::from(f.round)))
                .bind(b.fork.as_ref().map(|f| json_text(&f.intervention)))
                .bind(
                    b.left_out
                        .as_ref()
                        .map(|l| serde_json::to_string(l).unwrap_or_else(|_| "null".into())),
                )
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
                let row = sqlx::query("SELECT * FROM benches WHERE name = $1")
                    .bind(name)
                    .fetch_optional(&self.read)
                    .await?
                    .ok_or_else(|| StoreError::BenchNotFound(name.to_string()))?;
                bench_from_row(&row)
            }

            async fn list_benches(&self) -> Result<Vec<BenchRecord>, StoreError> {
                let rows = sqlx::query("SELECT * FROM benches ORDER BY created_at DESC, name")
                    .fetch_all(&self.read)
                    .await?;
                all(&rows, bench_from_row)
            }

            async fn record_bench_item(&self, i: &BenchItemRecord) -> Result<(), StoreError> {
                sqlx::query(
                    "INSERT INTO bench_items (bench, protocol, item_id, position, gold, run_id)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (bench, protocol, item_id) DO UPDATE SET position = excluded.position,
                       gold = excluded.gold, run_id = excluded.run_id",
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

            async fn bench_items(&self, name: &str) -> Result<Vec<BenchItemRecord>, StoreError> {
                let order = match self.bench(name).await {
                    Ok(b) => b.protocols,
                    Err(StoreError::BenchNotFound(_)) => return Ok(vec![]),
                    Err(e) => return Err(e),
                };
                let rows = sqlx::query("SELECT * FROM bench_items WHERE bench = $1 ORDER BY position")
                    .bind(name)
                    .fetch_all(&self.read)
                    .await?;
                let mut items = all(&rows, bench_item_from_row)?;
                sort_bench_items(&mut items, &order);
                Ok(items)
            }

            async fn cache_get(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError> {
                let text: Option<String> =
                    sqlx::query_scalar("SELECT response_json FROM cache WHERE key = $1")
                        .bind(key)
                        .fetch_optional(&self.read)
                        .await?;
                text.map(|t| parse_json(key, "cached response", &t)).transpose()
            }

            async fn cache_get_many(
                &self,
                keys: &[&str],
            ) -> Result<Vec<Option<serde_json::Value>>, StoreError> {
                let mut found = std::collections::HashMap::new();
                for chunk in keys.chunks(crate::queries::ROWS_PER_INSERT) {
                    let mut q =
                        sqlx::QueryBuilder::new("SELECT key, response_json FROM cache WHERE key IN (");
                    let mut list = q.separated(", ");
                    for key in chunk {
                        list.push_bind(*key);
                    }
                    q.push(")");
                    let rows: Vec<(String, String)> =
                        q.build_query_as().fetch_all(&self.read).await?;
                    found.extend(rows);
                }
                keys.iter()
                    .map(|key| {
                        found
                            .get(*key)
                            .map(|text| parse_json(key, "cached response", text))
                            .transpose()
                    })
                    .collect()
            }

            async fn cache_put(
                &self,
                key: &str,
                response: &serde_json::Value,
            ) -> Result<(), StoreError> {
                crate::queries::insert_cached!(key, response).execute(&self.pool).await?;
                Ok(())
            }

            async fn cache_trim(&self, keep: u64) -> Result<u64, StoreError> {
                let removed = sqlx::query($dialect.cache_trim)
                    .bind(i64::try_from(keep).unwrap_or(i64::MAX))
                    .execute(&self.pool)
                    .await?;
                Ok(removed.rows_affected())
            }

            async fn cache_entries(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
                let rows: Vec<(String, String)> = sqlx::query_as($dialect.cache_entries)
                    .fetch_all(&self.read)
                    .await?;
                rows.into_iter()
                    .map(|(key, text)| {
                        let value = parse_json(&key, "cached response", &text)?;
                        Ok((key, value))
                    })
                    .collect()
            }

            /// In one transaction, so a plan is recorded whole or not at all.
            /// Each job is stored as given (a plan's are pending; a copied store's keep their state).
            async fn plan_jobs(&self, jobs: &[BenchJobRecord]) -> Result<u64, StoreError> {
                let mut tx = self.pool.begin().await?;
                let mut added = 0;
                for j in jobs {
                    let done = sqlx::query(
                        "INSERT INTO bench_jobs (bench, protocol, item_id, position, seq, item_json, state,
                           worker, previous_worker, lease_until, attempts, error)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                         ON CONFLICT (bench, protocol, item_id) DO NOTHING",
                    )
                    .bind(&j.bench)
                    .bind(&j.protocol)
                    .bind(&j.item_id)
                    .bind(i64::from(j.position))
                    .bind(j.seq as i64)
                    .bind(json_text(&j.item))
                    .bind(j.state.as_str())
                    .bind(&j.worker)
                    .bind(&j.previous_worker)
                    .bind(j.lease_until)
                    .bind(i64::from(j.attempts))
                    .bind(&j.error)
                    .execute(&mut *tx)
                    .await?;
                    added += done.rows_affected();
                }
                tx.commit().await?;
                Ok(added)
            }

            async fn claim_job(
                &self,
                bench: &str,
                worker: &str,
                lease: std::time::Duration,
            ) -> Result<Option<BenchJobRecord>, StoreError> {
                let row = sqlx::query($dialect.claim)
                    .bind(bench)
                    .bind(worker)
                    .bind(lease_ms(lease))
                    .fetch_optional(&self.pool)
                    .await?;
                row.as_ref().map(job_from_row).transpose()
            }

            async fn renew_job(
                &self,
                job: &BenchJobRecord,
                worker: &str,
                lease: std::time::Duration,
            ) -> Result<bool, StoreError> {
                let sql = format!(
                    "UPDATE bench_jobs SET lease_until = {} + $5
                     WHERE bench = $1 AND protocol = $2 AND item_id = $3 AND worker = $4
                       AND state = 'running'",
                    $dialect.now_ms
                );
                let done = sqlx::query(&sql)
                    .bind(&job.bench)
                    .bind(&job.protocol)
                    .bind(&job.item_id)
                    .bind(worker)
                    .bind(lease_ms(lease))
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn finish_job(
                &self,
                job: &BenchJobRecord,
                worker: &str,
                state: JobState,
                error: Option<&str>,
            ) -> Result<bool, StoreError> {
                let sql = format!(
                    "UPDATE bench_jobs SET state = $5, error = $6, finished_at = {}, lease_until = NULL
                     WHERE bench = $1 AND protocol = $2 AND item_id = $3 AND worker = $4
                       AND state = 'running'",
                    $dialect.now_ms
                );
                let done = sqlx::query(&sql)
                    .bind(&job.bench)
                    .bind(&job.protocol)
                    .bind(&job.item_id)
                    .bind(worker)
                    .bind(state.as_str())
                    .bind(error)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn bench_jobs(&self, bench: &str) -> Result<Vec<BenchJobRecord>, StoreError> {
                let rows = sqlx::query("SELECT * FROM bench_jobs WHERE bench = $1 ORDER BY seq")
                    .bind(bench)
                    .fetch_all(&self.read)
                    .await?;
                all(&rows, job_from_row)
            }

            async fn bench_version(&self, name: &str) -> Result<String, StoreError> {
                let row = sqlx::query(
                    "SELECT COUNT(*) AS debates,
                       COALESCE(SUM(CASE WHEN r.status = 'running' THEN 1 ELSE 0 END), 0) AS running,
                       COALESCE(SUM(CASE WHEN r.status = 'failed' THEN 1 ELSE 0 END), 0) AS failed,
                       COALESCE(MAX(r.finished_at), '') AS last_finished,
                       COALESCE(SUM(LENGTH(COALESCE(r.answer, ''))), 0) AS answer_length
                     FROM bench_items b JOIN runs r ON r.id = b.run_id WHERE b.bench = $1",
                )
                .bind(name)
                .fetch_one(&self.read)
                .await?;
                Ok(crate::store::BenchVersion {
                    debates: row.opt_int("debates")?.unwrap_or(0),
                    running: row.opt_int("running")?.unwrap_or(0),
                    failed: row.opt_int("failed")?.unwrap_or(0),
                    last_finished: row.opt_text("last_finished")?.unwrap_or_default(),
                    answer_length: row.opt_int("answer_length")?.unwrap_or(0),
                }
                .token())
            }

            async fn job_counts(&self, bench: &str) -> Result<JobCounts, StoreError> {
                let sql = format!(
                    "SELECT
                       COALESCE(SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END), 0) AS pending,
                       COALESCE(SUM(CASE WHEN state = 'running' AND lease_until >= t.clock THEN 1 ELSE 0 END), 0) AS running,
                       COALESCE(SUM(CASE WHEN state = 'running' AND lease_until < t.clock THEN 1 ELSE 0 END), 0) AS expired,
                       COALESCE(SUM(CASE WHEN state = 'done' THEN 1 ELSE 0 END), 0) AS done,
                       COALESCE(SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0) AS failed,
                       MAX(t.clock) AS now_ms
                     FROM (SELECT {} AS clock) AS t LEFT JOIN bench_jobs ON bench = $1",
                    $dialect.now_ms
                );
                let row = sqlx::query(&sql).bind(bench).fetch_one(&self.read).await?;
                let count = |col: &str| -> Result<u64, StoreError> {
                    Ok(row.opt_int(col)?.unwrap_or(0).max(0) as u64)
                };
                Ok(JobCounts {
                    pending: count("pending")?,
                    running: count("running")?,
                    expired: count("expired")?,
                    done: count("done")?,
                    failed: count("failed")?,
                    now_ms: row.opt_int("now_ms")?.unwrap_or(0),
                })
            }

            async fn record_worker(&self, w: &WorkerRecord) -> Result<(), StoreError> {
                let sql = format!(
                    "INSERT INTO bench_workers (bench, worker, started_at, last_seen, debates, calls, output_tokens, state, owner)
                     VALUES ($1, $2, {now}, {now}, $3, $4, $5, $6, $7)
                     ON CONFLICT (bench, worker) DO UPDATE SET last_seen = excluded.last_seen,
                       debates = excluded.debates, calls = excluded.calls,
                       output_tokens = excluded.output_tokens, state = excluded.state,
                       owner = excluded.owner",
                    now = $dialect.now_ms
                );
                sqlx::query(&sql)
                    .bind(&w.bench)
                    .bind(&w.worker)
                    .bind(crate::queries::stored_count(w.debates))
                    .bind(crate::queries::stored_count(w.calls))
                    .bind(crate::queries::stored_count(w.output_tokens))
                    .bind(if w.exited { "exited" } else { "working" })
                    .bind(crate::owner::this_process())
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn claim_worker(
                &self,
                bench: &str,
                worker: &str,
                lease_ms: i64,
            ) -> Result<bool, StoreError> {
                // One upsert whose update only happens when the holder is gone: the database
                // serialises two claims, and the second sees the first's row.
                let sql = format!(
                    "INSERT INTO bench_workers (bench, worker, started_at, last_seen, debates, calls, output_tokens, state, owner)
                     VALUES ($1, $2, {now}, {now}, 0, 0, 0, 'working', $4)
                     ON CONFLICT (bench, worker) DO UPDATE SET started_at = excluded.started_at,
                       last_seen = excluded.last_seen, debates = 0, calls = 0, output_tokens = 0,
                       state = 'working', owner = excluded.owner
                     WHERE bench_workers.state = 'exited' OR bench_workers.last_seen < {now} - $3",
                    now = $dialect.now_ms
                );
                let done = sqlx::query(&sql)
                    .bind(bench)
                    .bind(worker)
                    .bind(lease_ms)
                    .bind(crate::owner::this_process())
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn bench_workers(&self, bench: &str) -> Result<Vec<WorkerRecord>, StoreError> {
                let rows = sqlx::query(
                    "SELECT * FROM bench_workers WHERE bench = $1 ORDER BY started_at, worker",
                )
                .bind(bench)
                .fetch_all(&self.read)
                .await?;
                all(&rows, worker_from_row)
            }
        }
    };
}

pub(crate) use {
    bind_call, bind_decision, cache_insert, cache_keep_first, call_columns, call_upsert,
    decision_insert, decision_upsert, finish_run, insert_cached, insert_call, insert_call_rows,
    insert_decision_rows, insert_run, insert_validation, next_seq, store_queries,
};

/// Expands to `impl Store for $store`: each method checks that a write is allowed
/// (`self.writable()`), runs the query of `self.queries` and names the store in errors about it
/// (`self.located(…)`); `close` is `self.close_store()`.
macro_rules! delegate_store {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl crate::store::Store for $store {
            async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
                self.writable()?;
                self.located(self.queries.create_run(run).await)
            }

            async fn record_call(&self, call: &CallRecord) -> Result<(), StoreError> {
                self.writable()?;
                call.check_bounds()?;
                self.located(self.queries.record_call(call).await)
            }

            async fn record_batch(&self, batch: &CallBatch) -> Result<(), StoreError> {
                self.writable()?;
                // Checked before the batch joins others in a commit: one bad call fails its
                // own batch only.
                for call in &batch.calls {
                    call.check_bounds()?;
                }
                let written = self.write_batch(batch).await;
                self.located(written)
            }

            async fn record_decision(&self, decision: &DecisionRecord) -> Result<(), StoreError> {
                self.writable()?;
                self.located(self.queries.record_decision(decision).await)
            }

            async fn finish_run(
                &self,
                id: &str,
                status: RunStatus,
                answer: Option<&str>,
                at: &str,
            ) -> Result<(), StoreError> {
                self.writable()?;
                self.located(self.queries.finish_run(id, status, answer, at).await)
            }

            async fn record_outcome(&self, outcome: RunOutcome) -> Result<(), StoreError> {
                self.writable()?;
                let written = self.write_outcome(outcome).await;
                self.located(written)
            }

            async fn record_whole_run(&self, whole: &WholeRun) -> Result<bool, StoreError> {
                self.writable()?;
                for call in &whole.calls {
                    call.check_bounds()?;
                }
                self.located(self.queries.record_whole_run(whole).await)
            }

            async fn run(&self, id: &str) -> Result<RunRecord, StoreError> {
                self.located(self.queries.run(id).await)
            }

            async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError> {
                self.located(self.queries.calls(id).await)
            }

            async fn calls_after(
                &self,
                id: &str,
                after: &CallCursor,
                limit: u32,
            ) -> Result<Vec<(CallCursor, CallRecord)>, StoreError> {
                self.located(self.queries.calls_after(id, after, limit).await)
            }

            async fn take_allowance(
                &self,
                key: &str,
                cost_us: i64,
                tolerance_us: i64,
            ) -> Result<crate::records::Allowance, StoreError> {
                self.writable()?;
                self.located(
                    self.queries
                        .take_allowance(key, cost_us, tolerance_us)
                        .await,
                )
            }

            async fn beat_run(&self, id: &str) -> Result<(), StoreError> {
                self.writable()?;
                self.located(self.queries.beat_run(id).await)
            }

            async fn decisions(&self, id: &str) -> Result<Vec<DecisionRecord>, StoreError> {
                self.located(self.queries.decisions(id).await)
            }

            async fn record_validation(&self, v: &ValidationRecord) -> Result<(), StoreError> {
                self.writable()?;
                self.located(self.queries.record_validation(v).await)
            }

            async fn validations(&self, id: &str) -> Result<Vec<ValidationRecord>, StoreError> {
                self.located(self.queries.validations(id).await)
            }

            async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
                self.located(self.queries.list_runs(filter).await)
            }

            async fn forks_of(
                &self,
                parent: &str,
                limit: u32,
            ) -> Result<Vec<RunRecord>, StoreError> {
                self.located(self.queries.forks_of(parent, limit).await)
            }

            async fn create_bench(&self, bench: &BenchRecord) -> Result<(), StoreError> {
                self.writable()?;
                self.located(self.queries.create_bench(bench).await)
            }

            async fn bench(&self, name: &str) -> Result<BenchRecord, StoreError> {
                self.located(self.queries.bench(name).await)
            }

            async fn list_benches(&self) -> Result<Vec<BenchRecord>, StoreError> {
                self.located(self.queries.list_benches().await)
            }

            async fn record_bench_item(&self, item: &BenchItemRecord) -> Result<(), StoreError> {
                self.writable()?;
                self.located(self.queries.record_bench_item(item).await)
            }

            async fn bench_items(&self, name: &str) -> Result<Vec<BenchItemRecord>, StoreError> {
                self.located(self.queries.bench_items(name).await)
            }

            async fn bench_version(&self, name: &str) -> Result<String, StoreError> {
                self.located(self.queries.bench_version(name).await)
            }

            async fn cache_get(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError> {
                self.located(self.queries.cache_get(key).await)
            }

            async fn cache_get_many(
                &self,
                keys: &[&str],
            ) -> Result<Vec<Option<serde_json::Value>>, StoreError> {
                self.located(self.queries.cache_get_many(keys).await)
            }

            async fn cache_put(
                &self,
                key: &str,
                response: &serde_json::Value,
            ) -> Result<(), StoreError> {
                self.writable()?;
                self.located(self.queries.cache_put(key, response).await)
            }

            async fn cache_trim(&self, keep: u64) -> Result<u64, StoreError> {
                self.writable()?;
                self.located(self.queries.cache_trim(keep).await)
            }

            async fn cache_entries(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
                self.located(self.queries.cache_entries().await)
            }

            async fn plan_jobs(&self, jobs: &[BenchJobRecord]) -> Result<u64, StoreError> {
                self.writable()?;
                self.located(self.queries.plan_jobs(jobs).await)
            }

            async fn claim_job(
                &self,
                bench: &str,
                worker: &str,
                lease: std::time::Duration,
            ) -> Result<Option<BenchJobRecord>, StoreError> {
                self.writable()?;
                self.located(self.queries.claim_job(bench, worker, lease).await)
            }

            async fn renew_job(
                &self,
                job: &BenchJobRecord,
                worker: &str,
                lease: std::time::Duration,
            ) -> Result<bool, StoreError> {
                self.writable()?;
                self.located(self.queries.renew_job(job, worker, lease).await)
            }

            async fn finish_job(
                &self,
                job: &BenchJobRecord,
                worker: &str,
                state: JobState,
                error: Option<&str>,
            ) -> Result<bool, StoreError> {
                self.writable()?;
                self.located(self.queries.finish_job(job, worker, state, error).await)
            }

            async fn bench_jobs(&self, bench: &str) -> Result<Vec<BenchJobRecord>, StoreError> {
                self.located(self.queries.bench_jobs(bench).await)
            }

            async fn job_counts(&self, bench: &str) -> Result<JobCounts, StoreError> {
                self.located(self.queries.job_counts(bench).await)
            }

            async fn record_worker(&self, worker: &WorkerRecord) -> Result<(), StoreError> {
                self.writable()?;
                self.located(self.queries.record_worker(worker).await)
            }

            async fn claim_worker(
                &self,
                bench: &str,
                worker: &str,
                lease_ms: i64,
            ) -> Result<bool, StoreError> {
                self.writable()?;
                self.located(self.queries.claim_worker(bench, worker, lease_ms).await)
            }

            async fn bench_workers(&self, bench: &str) -> Result<Vec<WorkerRecord>, StoreError> {
                self.located(self.queries.bench_workers(bench).await)
            }

            async fn close(&self) {
                self.close_store().await
            }
        }
    };
}

pub(crate) use delegate_store;

/// A lease as the milliseconds the database adds to its clock.
pub(crate) fn lease_ms(lease: std::time::Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 2)
}
