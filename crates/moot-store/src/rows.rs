//! Reading stored rows back as records, for both databases. SQLite and PostgreSQL keep the same
//! columns (integers as 64-bit, JSON as text), so one decoder per record serves both through
//! [`Columns`].

use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use crate::error::StoreError;
use crate::records::{
    BenchItemRecord, BenchJobRecord, BenchRecord, CallRecord, DecisionJson, DecisionRecord,
    ForkOrigin, JobState, RunRecord, RunStatus, ValidationRecord, WorkerRecord,
};

/// The column reads the decoders need, over either database's rows.
pub(crate) trait Columns {
    fn text(&self, col: &str) -> Result<String, sqlx::Error>;
    fn opt_text(&self, col: &str) -> Result<Option<String>, sqlx::Error>;
    fn opt_int(&self, col: &str) -> Result<Option<i64>, sqlx::Error>;
    fn opt_real(&self, col: &str) -> Result<Option<f64>, sqlx::Error>;
}

macro_rules! columns_for {
    ($row:ty) => {
        impl Columns for $row {
            fn text(&self, col: &str) -> Result<String, sqlx::Error> {
                self.try_get(col)
            }
            fn opt_text(&self, col: &str) -> Result<Option<String>, sqlx::Error> {
                self.try_get(col)
            }
            fn opt_int(&self, col: &str) -> Result<Option<i64>, sqlx::Error> {
                self.try_get(col)
            }
            fn opt_real(&self, col: &str) -> Result<Option<f64>, sqlx::Error> {
                self.try_get(col)
            }
        }
    };
}

columns_for!(SqliteRow);
columns_for!(PgRow);

/// A non-negative integer column (a negative one, which moot never writes, reads as 0).
fn opt_u64(row: &impl Columns, col: &str) -> Result<Option<u64>, sqlx::Error> {
    Ok(row.opt_int(col)?.map(|v| v.max(0) as u64))
}

fn u64_or_zero(row: &impl Columns, col: &str) -> Result<u64, sqlx::Error> {
    Ok(opt_u64(row, col)?.unwrap_or(0))
}

pub(crate) fn json_text(v: &serde_json::Value) -> String {
    v.to_string()
}

pub(crate) fn parse_json(
    run: &str,
    what: &'static str,
    text: &str,
) -> Result<serde_json::Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        run: run.to_string(),
        what: what.to_string(),
        message: e.to_string(),
    })
}

/// How a call's row spells its status.
pub(crate) fn call_status(c: &CallRecord) -> &'static str {
    if c.skipped {
        "skipped"
    } else if c.response_text.is_some() {
        "ok"
    } else {
        "missing"
    }
}

pub(crate) fn run_from_row(row: &impl Columns) -> Result<RunRecord, StoreError> {
    let id = row.text("id")?;
    let status = row.text("status")?;
    let status = RunStatus::parse(&status).ok_or_else(|| StoreError::Corrupt {
        run: id.clone(),
        what: "status".into(),
        message: format!("unknown run status {status:?}"),
    })?;
    Ok(RunRecord {
        spec: parse_json(&id, "spec", &row.text("spec_json")?)?,
        config: parse_json(&id, "config", &row.text("config_json")?)?,
        created_at: row.text("created_at")?,
        question: row.text("question")?,
        protocol: row.text("protocol")?,
        rule: row.text("rule")?,
        status,
        answer: row.opt_text("answer")?,
        finished_at: row.opt_text("finished_at")?,
        silent_ms: row.opt_int("silent_ms")?,
        owner: row.opt_text("owner")?,
        fork: fork_from_row(row, &id)?,
        id,
    })
}

/// Where a run or benchmark (`owner`, named in errors) comes from, from its `fork_*` columns;
/// `None` for one that is no fork.
fn fork_from_row(row: &impl Columns, owner: &str) -> Result<Option<ForkOrigin>, StoreError> {
    let Some(parent) = row.opt_text("fork_parent")? else {
        return Ok(None);
    };
    let intervention = match row.opt_text("fork_json")? {
        Some(text) => parse_json(owner, "fork intervention", &text)?,
        None => serde_json::Value::Null,
    };
    Ok(Some(ForkOrigin {
        parent,
        // Saturating, as a call's round: a number past u32 is no round of any debate.
        round: u32::try_from(u64_or_zero(row, "fork_round")?).unwrap_or(u32::MAX),
        intervention,
    }))
}

/// A call's row, an unreadable column naming the call it belongs to.
pub(crate) fn call_from_row(row: &impl Columns) -> Result<CallRecord, StoreError> {
    decode_call(row).map_err(|e| match e {
        StoreError::Corrupt { run, what, message } => {
            let place = (|| -> Result<String, sqlx::Error> {
                Ok(format!(
                    "{what} of the call in round {}, agent {} ({})",
                    u64_or_zero(row, "round")?,
                    u64_or_zero(row, "agent")?,
                    row.text("slot")?
                ))
            })();
            StoreError::Corrupt {
                run,
                what: place.unwrap_or(what),
                message,
            }
        }
        other => other,
    })
}

fn decode_call(row: &impl Columns) -> Result<CallRecord, StoreError> {
    let run_id = row.text("run_id")?;
    let peers =
        serde_json::from_str(&row.text("peers_json")?).map_err(|e| StoreError::Corrupt {
            run: run_id.clone(),
            what: "peers".into(),
            message: e.to_string(),
        })?;
    let call = CallRecord {
        messages: parse_json(&run_id, "messages", &row.text("messages_json")?)?,
        peers,
        // Saturating, so a number past u32 is refused by the bounds below, not wrapped into them.
        round: u32::try_from(u64_or_zero(row, "round")?).unwrap_or(u32::MAX),
        agent: u32::try_from(u64_or_zero(row, "agent")?).unwrap_or(u32::MAX),
        slot: row.text("slot")?,
        skipped: row.text("status")? == "skipped",
        notes: parse_json(&run_id, "notes", &row.text("notes_json")?)?,
        ncomm: u64_or_zero(row, "ncomm")? as u32,
        cached: u64_or_zero(row, "cached")? != 0,
        retries: parse_json(&run_id, "retries", &row.text("retries_json")?)?,
        agent_id: row.text("agent_id")?,
        backend: row.text("backend")?,
        mode: row.text("mode")?,
        template: row.text("template")?,
        template_hash: row.text("template_hash")?,
        response_text: row.opt_text("response_text")?,
        answer: row.opt_text("answer")?,
        error: row.opt_text("error")?,
        finish: row.opt_text("finish")?,
        input_tokens: u64_or_zero(row, "input_tokens")?,
        output_tokens: u64_or_zero(row, "output_tokens")?,
        processed_input_tokens: opt_u64(row, "processed_input_tokens")?,
        cache_write_input_tokens: opt_u64(row, "cache_write_input_tokens")?,
        logprob_tokens: opt_u64(row, "logprob_tokens")?,
        logprob_mean: row.opt_real("logprob_mean")?,
        logprob_min: row.opt_real("logprob_min")?,
        perplexity: row.opt_real("perplexity")?,
        latency_ms: u64_or_zero(row, "latency_ms")?,
        recorded_at: row.text("recorded_at")?,
        request_key: row.opt_text("request_key")?,
        reused_from: row.opt_text("reused_from")?,
        run_id,
    };
    call.check_bounds()?;
    Ok(call)
}

pub(crate) fn decision_from_row(row: &impl Columns) -> Result<DecisionRecord, StoreError> {
    let run_id = row.text("run_id")?;
    Ok(DecisionRecord {
        decision: DecisionJson::from_text(row.text("decision_json")?).map_err(|e| {
            StoreError::Corrupt {
                run: run_id.clone(),
                what: "decision".into(),
                message: e.to_string(),
            }
        })?,
        rule: row.text("rule")?,
        answer: row.opt_text("answer")?,
        decided_at: row.text("decided_at")?,
        run_id,
    })
}

pub(crate) fn validation_from_row(row: &impl Columns) -> Result<ValidationRecord, StoreError> {
    Ok(ValidationRecord {
        run_id: row.text("run_id")?,
        answer: row.text("answer")?,
        check: row.text("check_kind")?,
        verdict: row.text("verdict")?,
        detail: row.text("detail")?,
        elapsed_ms: u64_or_zero(row, "elapsed_ms")?,
        checked_at: row.text("checked_at")?,
    })
}

pub(crate) fn bench_from_row(row: &impl Columns) -> Result<BenchRecord, StoreError> {
    let name = row.text("name")?;
    let protocols = row.text("protocols_json")?;
    Ok(BenchRecord {
        created_at: row.text("created_at")?,
        dataset: row.text("dataset")?,
        protocols: serde_json::from_str(&protocols).map_err(|e| StoreError::Corrupt {
            run: name.clone(),
            what: "benchmark protocols".into(),
            message: e.to_string(),
        })?,
        limit: opt_u64(row, "item_limit")?,
        seed: row.opt_int("seed")?.unwrap_or(0) as u64,
        config: parse_json(&name, "benchmark config", &row.text("config_json")?)?,
        fork: fork_from_row(row, &name)?,
        left_out: match row.opt_text("left_out_json")? {
            Some(text) => serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
                run: name.clone(),
                what: "benchmark's left-out items".into(),
                message: e.to_string(),
            })?,
            None => None,
        },
        name,
    })
}

pub(crate) fn bench_item_from_row(row: &impl Columns) -> Result<BenchItemRecord, StoreError> {
    Ok(BenchItemRecord {
        bench: row.text("bench")?,
        protocol: row.text("protocol")?,
        item_id: row.text("item_id")?,
        position: u64_or_zero(row, "position")? as u32,
        gold: row.text("gold")?,
        run_id: row.text("run_id")?,
    })
}

pub(crate) fn job_from_row(row: &impl Columns) -> Result<BenchJobRecord, StoreError> {
    let bench = row.text("bench")?;
    let state = row.text("state")?;
    let state = JobState::parse(&state).ok_or_else(|| StoreError::Corrupt {
        run: bench.clone(),
        what: "job state".into(),
        message: format!("unknown job state {state:?}"),
    })?;
    Ok(BenchJobRecord {
        protocol: row.text("protocol")?,
        item_id: row.text("item_id")?,
        position: u64_or_zero(row, "position")? as u32,
        seq: u64_or_zero(row, "seq")?,
        item: parse_json(&bench, "benchmark item", &row.text("item_json")?)?,
        state,
        worker: row.opt_text("worker")?,
        previous_worker: row.opt_text("previous_worker")?,
        lease_until: row.opt_int("lease_until")?,
        attempts: u64_or_zero(row, "attempts")? as u32,
        error: row.opt_text("error")?,
        bench,
    })
}

pub(crate) fn worker_from_row(row: &impl Columns) -> Result<WorkerRecord, StoreError> {
    Ok(WorkerRecord {
        bench: row.text("bench")?,
        worker: row.text("worker")?,
        started_at: row.opt_int("started_at")?.unwrap_or(0),
        last_seen: row.opt_int("last_seen")?.unwrap_or(0),
        debates: u64_or_zero(row, "debates")?,
        calls: u64_or_zero(row, "calls")?,
        output_tokens: u64_or_zero(row, "output_tokens")?,
        exited: row.text("state")? == "exited",
        owner: row.opt_text("owner")?,
    })
}

/// Decodes every row with `decode`.
pub(crate) fn all<R, T>(
    rows: &[R],
    decode: impl Fn(&R) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    rows.iter().map(decode).collect()
}
