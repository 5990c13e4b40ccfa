//! What a store holds: runs, calls, decisions, benchmarks and their items, as plain records
//! (specs, configurations and notes are JSON; the store knows nothing of the domain).

use serde::{Deserialize, Serialize};

/// What [`crate::Store::take_allowance`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowance {
    Taken,
    /// Nothing was taken; it could be after this long.
    Wait(std::time::Duration),
    /// The stored arrival time was further ahead of the store's clock than any take leaves
    /// one (a row written by hand, or the clock stepped back since it was written), and would
    /// have been waited on for that long: it was set to now plus the cost, which is taken.
    /// `ahead` is how far ahead it was, for the warning the caller owes the user.
    Reset {
        ahead: std::time::Duration,
    },
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
    /// How long ago, when the run was read, its owner last said it was alive (on the store's
    /// clock); `None` for a run never heard from (written before moot kept heartbeats). Set
    /// by the store on every run it reads; not part of the record's JSON (it changes from one
    /// read to the next: what is shown of it is [`RunRecord::shown_status`]).
    #[serde(skip)]
    pub silent_ms: Option<i64>,
    /// The process that last said it runs the debate (see `owner.rs`); set by the store, and
    /// not part of the record's JSON either.
    #[serde(skip)]
    pub owner: Option<String>,
    /// Where the run comes from when it is a fork of another (`moot fork`); `None` for a debate
    /// run from the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<ForkOrigin>,
}

/// Where a forked run or benchmark comes from (`moot fork`, `moot bench --fork-of`): its parent,
/// the round it was forked at and what it changed there. The parent is named, not linked: a
/// store may hold a fork without its parent (a partial copy), and the lineage still reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkOrigin {
    /// The parent run's id (a benchmark's name, for a forked benchmark).
    pub parent: String,
    pub round: u32,
    /// The intervention as JSON (`moot_core::fork::Intervention` for a run; for a benchmark,
    /// the request every item's fork was made from).
    pub intervention: serde_json::Value,
}

/// How often the process running a debate tells the store it is alive.
pub const RUN_HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a running debate may be silent before it counts as interrupted: several missed
/// heartbeats, so a busy database or a paused process is not taken for a dead one.
pub const RUN_SILENCE_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

impl RunRecord {
    /// Still marked running, but with no live owner: its process died or lost the store
    /// (`moot resume` continues it). On the owner's own machine the process table decides
    /// alone: a process that exists (even stopped, even silent) owns its run, one that is gone
    /// does not. Elsewhere, the heartbeat decides: an owner silent past [`RUN_SILENCE_LIMIT`]
    /// is gone, and so is one whose heartbeat is further in the future than that (see
    /// [`RunRecord::heartbeat_from_the_future`]), which would otherwise hold the run forever.
    pub fn interrupted(&self) -> bool {
        if self.status != RunStatus::Running {
            return false;
        }
        if let Some(alive) = self
            .owner
            .as_deref()
            .and_then(crate::owner::alive_on_this_machine)
        {
            return !alive;
        }
        self.heartbeat_from_the_future()
            || self
                .silent_ms
                .is_none_or(|ms| ms > RUN_SILENCE_LIMIT.as_millis() as i64)
    }

    /// Whether the run's last heartbeat lies further in the future than [`RUN_SILENCE_LIMIT`]
    /// (by the store's clock): a wrong clock, or a row written to keep the run from ever being
    /// resumed. Such a heartbeat is reported, and not trusted.
    pub fn heartbeat_from_the_future(&self) -> bool {
        self.silent_ms
            .is_some_and(|ms| ms < -(RUN_SILENCE_LIMIT.as_millis() as i64))
    }

    /// Its status as shown to people and API clients: `interrupted` for a run without a live
    /// owner, otherwise the stored status.
    pub fn shown_status(&self) -> &'static str {
        if self.interrupted() {
            "interrupted"
        } else {
            self.status.as_str()
        }
    }
}

/// Where a follower of a run's calls stands: just after the call written as `seq` at
/// (`round`, `agent`, `slot`). Calls are read back in this order, which is the order they were
/// written in; [`CallCursor::start`] is before every call.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CallCursor {
    pub seq: i64,
    pub round: u32,
    pub agent: u32,
    pub slot: String,
}

impl CallCursor {
    pub fn start() -> CallCursor {
        CallCursor {
            seq: -1,
            round: 0,
            agent: 0,
            slot: String::new(),
        }
    }
}

/// Writes that land together (in one transaction where the store has them): calls that
/// finished at the same time, such as a round's, and the responses they add to the request
/// cache.
#[derive(Debug, Clone, Default)]
pub struct CallBatch {
    pub calls: Vec<CallRecord>,
    /// (request key, response); the first response stored under a key stays.
    pub cache: Vec<(String, serde_json::Value)>,
}

impl CallBatch {
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.cache.is_empty()
    }
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
    /// Of `input_tokens`, those the backend processed (the rest it read from a prompt cache:
    /// [`CallRecord::cached_input_tokens`]), when it said.
    pub processed_input_tokens: Option<u64>,
    /// Of `input_tokens`, those the provider wrote to its prompt cache (Anthropic bills them
    /// at 1.25 times the input price), when it said. Unknown in rows stored before it was.
    #[serde(default)]
    pub cache_write_input_tokens: Option<u64>,
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
    /// What was asked (see `moot_engine::request_key`): a completed call recorded again with
    /// the same key is the same request, never a second one.
    #[serde(default)]
    pub request_key: Option<String>,
    /// The run this call was copied from, when a fork reused its parent's call instead of
    /// asking (its tokens, spent there, count 0 here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<String>,
}

/// The largest round a stored call may have: far past any debate moot runs (a budget raises
/// rounds to 1,000 at most), and small enough that what reads a run by rounds stays bounded.
pub const MAX_STORED_ROUND: u32 = 10_000;

/// The number of agents a stored call's positions must stay under (a budget raises agents to
/// 256 at most).
pub const MAX_STORED_AGENTS: u32 = 1_024;

impl CallRecord {
    /// The call got no response, and not because the protocol chose not to ask: an error, a
    /// deadline, a cancellation, after every retry.
    pub fn failed(&self) -> bool {
        self.response_text.is_none() && !self.skipped
    }

    /// How many times the call was sent: once, plus each failed attempt retried.
    pub fn tries(&self) -> usize {
        1 + self.retries.as_array().map_or(0, Vec::len)
    }

    /// The call at `round` and `agent` of `run_id` with nothing asked or answered yet: no
    /// prompt, response, answer, error, tokens, log-probabilities, time, notes or retries. The
    /// one place a call's empty fields are spelled: writers other than the engine's (a fork's
    /// injected response, `moot import`) fill in what they know
    /// (`CallRecord { answer, ..CallRecord::empty(…) }`).
    pub fn empty(run_id: &str, round: u32, agent: u32) -> CallRecord {
        CallRecord {
            run_id: run_id.to_string(),
            round,
            agent,
            slot: answer_slot(),
            agent_id: String::new(),
            backend: String::new(),
            mode: String::new(),
            template: String::new(),
            template_hash: String::new(),
            messages: empty_list(),
            peers: Vec::new(),
            response_text: None,
            answer: None,
            error: None,
            skipped: false,
            finish: None,
            input_tokens: 0,
            output_tokens: 0,
            processed_input_tokens: None,
            cache_write_input_tokens: None,
            logprob_tokens: None,
            logprob_mean: None,
            logprob_min: None,
            perplexity: None,
            latency_ms: 0,
            recorded_at: String::new(),
            notes: serde_json::Value::Object(serde_json::Map::new()),
            ncomm: 0,
            cached: false,
            retries: empty_list(),
            request_key: None,
            reused_from: None,
        }
    }

    /// Of `input_tokens`, those read from a prompt cache instead of processed (see
    /// `moot_core::chat::Usage`), when the backend said what it processed.
    pub fn cached_input_tokens(&self) -> Option<u64> {
        self.processed_input_tokens
            .map(|p| self.input_tokens.saturating_sub(p))
    }

    /// This call as it was asked (its place, agent, prompt and peers) with nothing that came
    /// back: what a fork's injected response starts from.
    pub fn asked_only(&self) -> CallRecord {
        CallRecord {
            slot: self.slot.clone(),
            agent_id: self.agent_id.clone(),
            backend: self.backend.clone(),
            mode: self.mode.clone(),
            template: self.template.clone(),
            template_hash: self.template_hash.clone(),
            messages: self.messages.clone(),
            peers: self.peers.clone(),
            ..CallRecord::empty(&self.run_id, self.round, self.agent)
        }
    }

    /// Whether the call's place is within the bounds any debate can have: its round, its agent
    /// and the peers it read. A row outside them (a store edited by hand, a hostile copy or
    /// import) is refused rather than read into grids sized by it.
    pub fn check_bounds(&self) -> Result<(), crate::error::StoreError> {
        let out = |message: String| {
            Err(crate::error::StoreError::OutOfBounds {
                run: self.run_id.clone(),
                message,
            })
        };
        if self.round > MAX_STORED_ROUND {
            return out(format!(
                "a call in round {} (at most {MAX_STORED_ROUND})",
                self.round
            ));
        }
        if self.agent >= MAX_STORED_AGENTS {
            return out(format!(
                "a call of agent {} (fewer than {MAX_STORED_AGENTS} agents)",
                self.agent
            ));
        }
        if self.peers.len() > MAX_STORED_AGENTS as usize
            || self.peers.iter().any(|&p| p >= MAX_STORED_AGENTS)
        {
            return out(format!(
                "a call in round {} of agent {} read peers outside {MAX_STORED_AGENTS} agents",
                self.round, self.agent
            ));
        }
        Ok(())
    }
}

fn empty_list() -> serde_json::Value {
    serde_json::Value::Array(Vec::new())
}

fn answer_slot() -> String {
    "answer".into()
}

/// How a debate ended: every rule's decision, and the run's status and chosen answer, recorded
/// together by [`Store::record_outcome`](crate::Store::record_outcome).
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub run_id: String,
    pub status: RunStatus,
    pub answer: Option<String>,
    pub finished_at: String,
    /// Each for `run_id`.
    pub decisions: Vec<DecisionRecord>,
}

/// A run with everything recorded about it, written at once by
/// [`Store::record_whole_run`](crate::Store::record_whole_run): what `moot import` makes of a
/// transcript file and `moot store copy` of a stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct WholeRun {
    /// As it is to be stored: its status, answer and end included.
    pub run: RunRecord,
    /// Each for `run.id`, as are the decisions and validations.
    pub calls: Vec<CallRecord>,
    pub decisions: Vec<DecisionRecord>,
    pub validations: Vec<ValidationRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    pub run_id: String,
    pub rule: String,
    pub answer: Option<String>,
    /// The full decision output (scores, tie, explanation).
    pub decision: DecisionJson,
    pub decided_at: String,
}

/// A decision's JSON, kept as the text it is written and stored as. A debate records one per
/// rule; as a `serde_json::Value` each of them cost a map per explanation event to build, keep
/// and drop, which was a tenth of a simulated call's time. Serialised as the JSON itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DecisionJson(Box<serde_json::value::RawValue>);

impl DecisionJson {
    /// `text`, once it is checked to be one JSON value.
    pub fn from_text(text: String) -> Result<DecisionJson, serde_json::Error> {
        serde_json::value::RawValue::from_string(text).map(DecisionJson)
    }

    /// `value`'s JSON.
    pub fn from_value(value: &serde_json::Value) -> DecisionJson {
        // A `Value` always serialises.
        DecisionJson(serde_json::value::to_raw_value(value).unwrap_or_else(|_| {
            serde_json::value::RawValue::from_string("null".into()).expect("null is JSON")
        }))
    }

    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The decision as a JSON value, for reading its fields.
    pub fn value(&self) -> serde_json::Value {
        // The text was checked to be JSON when it was made.
        serde_json::from_str(self.0.get()).unwrap_or_default()
    }
}

/// Two decisions are equal when their JSON texts are.
impl PartialEq for DecisionJson {
    fn eq(&self, other: &DecisionJson) -> bool {
        self.text() == other.text()
    }
}

/// Which runs [`Store::list_runs`](crate::Store::list_runs) returns: newest first, those
/// matching every filter given, `limit` of them after skipping `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFilter {
    /// The protocol's name, exactly.
    pub protocol: Option<String>,
    /// Text the run's answer contains (case-insensitive for ASCII).
    pub answer: Option<String>,
    /// Runs created at or after this time (an RFC 3339 prefix such as `2026-11-23`).
    pub from: Option<String>,
    /// Runs created before the end of this time (`2026-11-23` includes that whole day).
    pub to: Option<String>,
    /// Only the runs no benchmark links (asks, forks, imports): a benchmark's debates are
    /// listed as the benchmark (`moot list`).
    pub outside_benches: bool,
    pub offset: u32,
    pub limit: u32,
}

impl RunFilter {
    /// The newest `limit` runs.
    pub fn newest(limit: u32) -> RunFilter {
        RunFilter {
            protocol: None,
            answer: None,
            from: None,
            to: None,
            outside_benches: false,
            offset: 0,
            limit,
        }
    }

    /// Whether `run` passes the filters (not the paging), but for
    /// [`RunFilter::outside_benches`], which the run alone does not tell; the in-memory
    /// store's reading, and the meaning the SQL follows.
    pub fn matches(&self, run: &RunRecord) -> bool {
        let protocol = self.protocol.as_ref().is_none_or(|p| &run.protocol == p);
        let answer = self.answer.as_ref().is_none_or(|needle| {
            run.answer.as_ref().is_some_and(|a| {
                a.to_ascii_lowercase()
                    .contains(&needle.to_ascii_lowercase())
            })
        });
        let from = self
            .from
            .as_ref()
            .is_none_or(|f| run.created_at.as_str() >= f.as_str());
        // A prefix bound: everything that starts with `to` is before its end.
        let to = self.to.as_ref().is_none_or(|t| {
            run.created_at.as_str() < t.as_str() || run.created_at.starts_with(t.as_str())
        });
        protocol && answer && from && to
    }
}

/// One check of one code answer of a run (see `moot_core::validation`; the store keeps the
/// names as text so it does not depend on the core's types).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationRecord {
    pub run_id: String,
    /// The answer's canonical text (the program).
    pub answer: String,
    /// `syntax` or `tests`.
    pub check: String,
    /// `passed`, `failed`, `syntax-error`, `timed-out`, `killed`, `output-limit`, `memory-limit`,
    /// `exited-early`, `unsupported`, `no-tests`.
    pub verdict: String,
    pub detail: String,
    pub elapsed_ms: u64,
    pub checked_at: String,
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
    /// Where the benchmark comes from when every debate of it is a fork of another
    /// benchmark's (`moot bench --fork-of`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<ForkOrigin>,
    /// The dataset's items that `--skip-invalid` left out because they cannot be scored;
    /// `None` when none were (or the flag was not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<LeftOut>,
}

/// The items of a dataset that were left out because they cannot be scored (`moot bench
/// --skip-invalid`), out of how many its file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    /// Records in the dataset's file (or files), those left out included.
    pub of: u64,
    pub items: Vec<LeftOutItem>,
}

/// One item left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOutItem {
    /// Its id: the mapped id field when it could be read, else `<file stem>/<index>`.
    pub id: String,
    /// Where it is: `data.jsonl line 8`.
    pub place: String,
    /// Why, as a class shared by like items: `gold does not parse as numeric`.
    pub problem: String,
    /// The whole error, with the value at fault.
    pub message: String,
}

impl LeftOut {
    /// Each problem with how many items it left out, the commonest first (ties by name).
    pub fn by_problem(&self) -> Vec<(&str, usize)> {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for item in &self.items {
            match counts.iter_mut().find(|(p, _)| *p == item.problem) {
                Some((_, n)) => *n += 1,
                None => counts.push((&item.problem, 1)),
            }
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        counts
    }
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

/// Where a job of a worked benchmark stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Pending,
    Running,
    Done,
    Failed,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<JobState> {
        [
            JobState::Pending,
            JobState::Running,
            JobState::Done,
            JobState::Failed,
        ]
        .into_iter()
        .find(|state| state.as_str() == s)
    }
}

/// One debate of a benchmark worked by many processes (`moot bench --detach`, `moot work`):
/// an item under a protocol, with the item itself so any worker can run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchJobRecord {
    pub bench: String,
    pub protocol: String,
    pub item_id: String,
    /// The item's place in the benchmark's item order.
    pub position: u32,
    /// The job's place in the plan: jobs are claimed in this order.
    pub seq: u64,
    /// The item (question, options, gold, kind, tests) as `moot-eval` writes it.
    pub item: serde_json::Value,
    pub state: JobState,
    /// The worker holding (or that last held) the job.
    pub worker: Option<String>,
    /// The worker that held it before the last claim: set when a job was taken over.
    pub previous_worker: Option<String>,
    /// When the lease ends, in ms since the epoch on the store's clock.
    pub lease_until: Option<i64>,
    /// How many times the job was claimed.
    pub attempts: u32,
    pub error: Option<String>,
}

impl BenchJobRecord {
    /// A job not yet claimed.
    pub fn pending(
        bench: &str,
        protocol: &str,
        item_id: &str,
        position: u32,
        seq: u64,
        item: serde_json::Value,
    ) -> BenchJobRecord {
        BenchJobRecord {
            bench: bench.into(),
            protocol: protocol.into(),
            item_id: item_id.into(),
            position,
            seq,
            item,
            state: JobState::Pending,
            worker: None,
            previous_worker: None,
            lease_until: None,
            attempts: 0,
            error: None,
        }
    }
}

/// How many jobs of a benchmark are in each state, as the store sees them now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCounts {
    pub pending: u64,
    /// Claimed, with a lease that has not run out.
    pub running: u64,
    /// Claimed, but the lease ran out (the worker died or lost the store): claimable again.
    pub expired: u64,
    pub done: u64,
    pub failed: u64,
    /// The store's clock, in ms since the epoch.
    pub now_ms: i64,
}

impl JobCounts {
    pub fn total(&self) -> u64 {
        self.pending + self.running + self.expired + self.done + self.failed
    }

    /// Nothing is left for anyone to do: every job is done or failed.
    pub fn settled(&self) -> bool {
        self.pending + self.running + self.expired == 0
    }
}

/// A worker of a benchmark and its totals so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRecord {
    pub bench: String,
    pub worker: String,
    /// ms since the epoch, on the store's clock.
    pub started_at: i64,
    pub last_seen: i64,
    pub debates: u64,
    pub calls: u64,
    pub output_tokens: u64,
    /// The worker exited cleanly (a killed worker stays `false` and stops being seen).
    pub exited: bool,
    /// The worker's process (see `owner.rs`); set by the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

impl WorkerRecord {
    /// Its process ended without exiting cleanly (killed, crashed), as far as this machine can
    /// tell: only a worker of this machine is ever known to be gone, others fall silent.
    pub fn gone(&self) -> bool {
        !self.exited
            && self
                .owner
                .as_deref()
                .is_some_and(crate::owner::gone_from_this_machine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_run_is_interrupted_once_silent_past_the_limit_or_never_heard_from() {
        let limit = RUN_SILENCE_LIMIT.as_millis() as i64;
        let run = |status, silent_ms| RunRecord {
            status,
            silent_ms,
            ..crate::conformance::running_run("r")
        };
        for (status, silent, interrupted, shown) in [
            (RunStatus::Running, Some(0), false, "running"),
            (RunStatus::Running, Some(limit), false, "running"),
            (RunStatus::Running, Some(limit + 1), true, "interrupted"),
            (RunStatus::Running, None, true, "interrupted"),
            (RunStatus::Done, Some(limit * 10), false, "done"),
            (RunStatus::Failed, None, false, "failed"),
        ] {
            let r = run(status, silent);
            assert_eq!(r.interrupted(), interrupted, "{status:?} silent {silent:?}");
            assert_eq!(r.shown_status(), shown);
        }
        // A process of this machine that is gone has interrupted its run at once; this one
        // has not.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        let here = crate::owner::this_process();
        let (machine, _) = here.rsplit_once('/').unwrap();
        let owned_by = |owner: String| RunRecord {
            silent_ms: Some(0),
            owner: Some(owner),
            ..crate::conformance::running_run("r")
        };
        assert!(owned_by(format!("{machine}/{}", child.id())).interrupted());
        assert!(!owned_by(here.to_string()).interrupted());
    }

    #[test]
    fn a_live_owner_on_this_machine_is_never_resumed_over_whatever_its_heartbeat_says() {
        let limit = RUN_SILENCE_LIMIT.as_millis() as i64;
        let here = crate::owner::this_process();
        let (machine, _) = here.rsplit_once('/').unwrap();
        let owned_by = |owner: String, silent_ms| RunRecord {
            silent_ms,
            owner: Some(owner),
            ..crate::conformance::running_run("r")
        };
        // Silent ten times past the limit (a busy store, a lost connection), but alive.
        assert!(!owned_by(here.to_string(), Some(limit * 10)).interrupted());
        assert!(!owned_by(here.to_string(), None).interrupted());
        // A stopped process (`kill -STOP`) still exists: it may go on at any moment.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let stopped = std::process::Command::new("kill")
            .args(["-STOP", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(stopped.success());
        let r = owned_by(format!("{machine}/{}", child.id()), Some(limit * 10));
        assert!(!r.interrupted());
        assert_eq!(r.shown_status(), "running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_heartbeat_from_the_future_is_suspect_and_not_waited_on() {
        let limit = RUN_SILENCE_LIMIT.as_millis() as i64;
        let elsewhere = |silent_ms| RunRecord {
            silent_ms: Some(silent_ms),
            owner: Some("elsewhere/0000/1".into()),
            ..crate::conformance::running_run("r")
        };
        // Clocks differ a little between machines: a heartbeat a moment ahead is fine.
        assert!(!elsewhere(-1_000).interrupted());
        assert!(!elsewhere(-1_000).heartbeat_from_the_future());
        // An hour ahead (a wrong clock, or a row written to hold the run forever) is not waited on.
        let r = elsewhere(-3_600_000);
        assert!(r.heartbeat_from_the_future());
        assert!(r.interrupted());
        assert!(!elsewhere(-limit).heartbeat_from_the_future());
    }
}

/// One agent's failed calls in a debate: how many, in which rounds, and each distinct error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentFailures {
    /// The agent's position in the debate, from 1 (as `moot show` and `moot fork --agent`
    /// number agents).
    pub agent: u32,
    pub agent_id: String,
    pub calls: usize,
    /// The rounds of the failed calls, ascending, each once.
    pub rounds: Vec<u32>,
    /// Each distinct error once, in the order first met (a retried call's error says how many
    /// tries it made).
    pub errors: Vec<String>,
}

impl AgentFailures {
    /// `agent gammadown failed in rounds 0 and 1 (2 calls): connection refused (3 tries, each
    /// failing so)`: stored text, to be escaped where it is shown.
    pub fn describe(&self) -> String {
        let rounds: Vec<String> = self.rounds.iter().map(u32::to_string).collect();
        let rounds = match rounds.as_slice() {
            [one] => format!("round {one}"),
            [init @ .., last] => format!("rounds {} and {last}", init.join(", ")),
            [] => "no round".to_string(),
        };
        format!(
            "agent {} failed in {rounds} ({}): {}",
            self.agent_id,
            match self.calls {
                1 => "1 call".to_string(),
                n => format!("{n} calls"),
            },
            self.errors.join("; ")
        )
    }
}

/// The agents of a debate with failed calls ([`CallRecord::failed`]), in agent order.
pub fn agent_failures(calls: &[CallRecord]) -> Vec<AgentFailures> {
    let mut out: Vec<AgentFailures> = Vec::new();
    for c in calls.iter().filter(|c| c.failed()) {
        let position = c.agent.saturating_add(1);
        let at = match out.iter().position(|f| f.agent == position) {
            Some(at) => at,
            None => {
                out.push(AgentFailures {
                    agent: position,
                    agent_id: c.agent_id.clone(),
                    calls: 0,
                    rounds: Vec::new(),
                    errors: Vec::new(),
                });
                out.len() - 1
            }
        };
        let f = &mut out[at];
        f.calls += 1;
        if !f.rounds.contains(&c.round) {
            f.rounds.push(c.round);
        }
        let error = c.error.clone().unwrap_or_else(|| "no response".to_string());
        if !f.errors.contains(&error) {
            f.errors.push(error);
        }
    }
    for f in &mut out {
        f.rounds.sort_unstable();
    }
    out.sort_by_key(|f| f.agent);
    out
}

#[cfg(test)]
mod failure_tests {
    use super::*;

    fn call(agent: u32, round: u32, error: Option<&str>, skipped: bool) -> CallRecord {
        CallRecord {
            agent_id: format!("a{agent}"),
            response_text: error.is_none().then(|| "Final answer: 1".to_string()),
            error: error.map(str::to_string),
            skipped,
            ..CallRecord::empty("r", round, agent)
        }
    }

    #[test]
    fn failures_are_grouped_per_agent_with_each_error_once() {
        let calls = vec![
            call(2, 1, Some("refused"), false),
            call(0, 0, None, false),
            call(2, 0, Some("refused"), false),
            call(1, 1, Some("every peer agrees"), true),
            call(2, 2, Some("timed out"), false),
        ];
        let found = agent_failures(&calls);
        assert_eq!(found.len(), 1, "a skipped call is no failure: {found:?}");
        assert_eq!(found[0].agent_id, "a2");
        assert_eq!(found[0].calls, 3);
        assert_eq!(found[0].rounds, vec![0, 1, 2]);
        assert_eq!(found[0].errors, vec!["refused", "timed out"]);
    }
}
