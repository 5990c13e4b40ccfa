//! The engine (DESIGN §7): runs a protocol's planned rounds against the agents' backends.
//!
//! Per round it runs the planned calls concurrently (bounded by `max_concurrent_calls`), proceeds
//! once `min_agents` responded and the soft deadline passed, and cancels whatever still runs at
//! the hard deadline (dropping a call's future drops its HTTP request or kills its process group).
//! Every call's outcome is written to the store before it enters the in-memory transcript; a call
//! without a response is recorded as missing, never as a kept answer. Resuming folds the stored
//! calls back into a transcript and asks the protocol again, so no completed call is repeated.

mod observer;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::stream::{FuturesUnordered, StreamExt};
use moot_backends::{BackendError, Completion, CompletionRequest, ErrorClass, LanguageModel};
use moot_core::chat::LogprobSummary;
use moot_core::chat::{FailedAttempt, SamplingParams, Usage};
use moot_core::debate::{CallKey, DebateSpec, Outcome, Slot, Transcript};
use moot_core::decision::{build_rule, Decision, DecisionConfig, RULES};
use moot_core::protocol::{PlannedCall, Protocol, Step};
use moot_core::redact::Redactor;
use moot_store::{CallRecord, DecisionRecord, RunRecord, RunStatus, Store, StoreError};
use tokio::sync::Semaphore;
use tokio::time::Instant;

pub use observer::{NoObserver, Observer};

/// One agent as the engine runs it.
#[derive(Debug, Clone)]
pub struct EngineAgent {
    pub model: Arc<dyn LanguageModel>,
    pub params: SamplingParams,
}

/// Round timing and parallelism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineConfig {
    /// Proceed once `min_agents` responded and this much time has passed in the round.
    pub soft_timeout: Duration,
    /// Cancel whatever still runs at this point in the round.
    pub hard_timeout: Duration,
    pub min_agents: usize,
    pub max_concurrent_calls: usize,
    /// Answer a request from the store's request cache when the same request (backend,
    /// sampling parameters, mode, messages, agent) was answered before, and store new answers.
    pub cache: bool,
    pub budget: Budget,
    /// Ask an agent once more, for its final line only, when its answer cannot be read
    /// (recorded on the call); off, such a response simply has no answer.
    pub reask: bool,
}

/// Limits on one debate (freemad's `budget` block); `None` is unlimited. A debate that runs out
/// of time or tokens asks nothing more: the calls of its remaining rounds are recorded as
/// skipped with the reason, and the decision uses the answers that exist.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// Wall time of the whole debate (counted from the start of this run, a resume included).
    pub max_total_time: Option<Duration>,
    /// Wall time of one round: a hard deadline for its calls, below `hard_timeout`.
    pub max_round_time: Option<Duration>,
    /// Wall time of one call, retries included.
    pub max_call_time: Option<Duration>,
    /// Input plus output tokens of every call of the debate.
    pub max_total_tokens: Option<u64>,
    /// A call's prompt, in estimated tokens (characters / 4).
    pub max_prompt_tokens: Option<u64>,
    /// Cut a prompt over `max_prompt_tokens` to fit (recorded on the call) instead of refusing
    /// to send it (recorded as a missing response).
    pub truncate_prompts: bool,
}

/// The estimate prompts are budgeted with: characters / 4, rounded up.
pub fn estimated_prompt_tokens(messages: &[moot_core::chat::ChatMessage]) -> u64 {
    messages
        .iter()
        .map(|m| m.content.chars().count() as u64)
        .sum::<u64>()
        .div_ceil(4)
}

/// `messages` cut to at most `max_tokens` estimated tokens: the middle of the longest message
/// goes (a prompt's instructions open it and its question closes it), replaced by a marker
/// saying so. `None` when even removing that whole message's middle cannot fit.
pub fn cut_prompt(
    messages: &[moot_core::chat::ChatMessage],
    max_tokens: u64,
) -> Option<Vec<moot_core::chat::ChatMessage>> {
    let total: u64 = messages
        .iter()
        .map(|m| m.content.chars().count() as u64)
        .sum();
    let allowed = max_tokens.saturating_mul(4);
    if total <= allowed {
        return Some(messages.to_vec());
    }
    let (longest, _) = messages
        .iter()
        .enumerate()
        .max_by_key(|(_, m)| m.content.chars().count())?;
    let len = messages[longest].content.chars().count();
    let marker_room = 80u64;
    let excess = total - allowed + marker_room;
    if excess >= len as u64 {
        return None;
    }
    let keep = len - excess as usize;
    let text = moot_core::prompts::keep_ends(
        &messages[longest].content,
        keep / 2,
        keep - keep / 2,
        "cut to fit the prompt budget",
    );
    let mut out = messages.to_vec();
    out[longest].content = text;
    Some(out)
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            soft_timeout: Duration::from_secs(15),
            hard_timeout: Duration::from_secs(30),
            min_agents: 2,
            max_concurrent_calls: 8,
            cache: false,
            budget: Budget::default(),
            reask: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Config(String),
}

/// A debate bound to its run id, agents and store.
pub struct Debate<'a> {
    pub run_id: String,
    pub spec: DebateSpec,
    protocol: Box<dyn Protocol>,
    agents: Vec<EngineAgent>,
    config: EngineConfig,
    store: &'a dyn Store,
    transcript: Transcript,
    records: BTreeMap<CallKey, CallRecord>,
    /// Applied to everything this debate stores (prompts, responses, errors, the question).
    redactor: Arc<Redactor>,
    /// When this run started (for the time budget).
    started: Instant,
    /// Why the debate's budget is spent, once it is.
    exhausted: Option<String>,
}

/// The result of a finished debate.
#[derive(Debug, Clone)]
pub struct DebateResult {
    pub run_id: String,
    pub transcript: Transcript,
    pub records: Vec<CallRecord>,
    /// Every rule's decision; `chosen` names the one that gives the final answer.
    pub decisions: Vec<Decision>,
    pub chosen: &'static str,
}

/// What one round's calls came to, for deciding whether later rounds are worth asking.
#[derive(Debug, Default)]
struct RoundTally {
    asked: usize,
    /// Calls that failed with an error retrying cannot fix (every other call answered, was
    /// cancelled at a deadline, or failed in a way worth another try).
    failed_permanently: usize,
}

impl DebateResult {
    pub fn decision(&self) -> Option<&Decision> {
        self.decisions.iter().find(|d| d.rule == self.chosen)
    }

    /// When no call of the debate got a response: each agent's first error (one line per
    /// agent, in agent order), so a caller can fail with the reason instead of "no answer".
    pub fn every_call_failed(&self) -> Option<Vec<String>> {
        if self.records.iter().any(|r| r.response_text.is_some()) {
            return None;
        }
        let mut first: BTreeMap<u32, String> = BTreeMap::new();
        for r in &self.records {
            if let Some(e) = &r.error {
                first
                    .entry(r.agent)
                    .or_insert_with(|| format!("{}: {e}", r.agent_id));
            }
        }
        (!first.is_empty()).then(|| first.into_values().collect())
    }

    /// Pairwise context transfers over the whole debate (NComm).
    pub fn ncomm(&self) -> u64 {
        self.records.iter().map(|r| u64::from(r.ncomm)).sum()
    }

    /// Calls made to a model (skipped calls excluded), per round, in round order.
    pub fn calls_per_round(&self) -> Vec<(u32, usize)> {
        let mut per: BTreeMap<u32, usize> = BTreeMap::new();
        for r in self.records.iter().filter(|r| !r.skipped) {
            *per.entry(r.round).or_default() += 1;
        }
        per.into_iter().collect()
    }

    /// Calls answered from the request cache.
    pub fn cache_hits(&self) -> usize {
        self.records.iter().filter(|r| r.cached).count()
    }

    /// Tokens of the calls a model actually answered (cache hits excluded).
    pub fn spent_usage(&self) -> Usage {
        usage_of(self.records.iter().filter(|r| !r.cached))
    }

    /// Tokens of every call, cache hits included (what the debate would cost without a cache).
    pub fn usage(&self) -> Usage {
        usage_of(self.records.iter())
    }
}

fn usage_of<'a>(records: impl Iterator<Item = &'a CallRecord>) -> Usage {
    let mut u = Usage::default();
    for r in records {
        u += Usage {
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            processed_input_tokens: r.processed_input_tokens,
        };
    }
    u
}

/// Now, as RFC 3339 with milliseconds.
pub fn timestamp() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A new run id: time-ordered and unique enough for one user's store.
pub fn new_run_id() -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let suffix: u16 = rand::random();
    format!("r{}{:04x}", now.as_millis(), suffix)
}

impl<'a> Debate<'a> {
    /// A new debate; `spec.agents` and `agents` must have the same length (after the protocol's
    /// shape is applied by the caller).
    pub fn new(
        run_id: String,
        spec: DebateSpec,
        protocol: Box<dyn Protocol>,
        agents: Vec<EngineAgent>,
        config: EngineConfig,
        store: &'a dyn Store,
    ) -> Result<Debate<'a>, EngineError> {
        if agents.len() != spec.agents.len() || agents.is_empty() {
            return Err(EngineError::Config(format!(
                "{} agents configured for {} agent slots",
                agents.len(),
                spec.agents.len()
            )));
        }
        if config.hard_timeout < config.soft_timeout {
            return Err(EngineError::Config(
                "hard_timeout_ms must be >= soft_timeout_ms".into(),
            ));
        }
        protocol
            .validate(&spec)
            .map_err(|e| EngineError::Config(format!("{}: {e}", protocol.name())))?;
        let mut agents = agents;
        if let Some(why) = protocol.needs_logprobs() {
            for (i, agent) in agents.iter_mut().enumerate() {
                if !agent.model.capabilities().logprobs {
                    return Err(EngineError::Config(format!(
                        "{} needs token logprobs ({why}), but agent {} ({}) runs on {}, which returns none",
                        protocol.name(),
                        i + 1,
                        spec.agents[i].id,
                        agent.model.name()
                    )));
                }
                agent.params.logprobs = true;
            }
        }
        let transcript = Transcript::new(spec.agents.len(), spec.rounds);
        Ok(Debate {
            run_id,
            spec,
            protocol,
            agents,
            config,
            store,
            transcript,
            records: BTreeMap::new(),
            redactor: Arc::new(Redactor::default()),
            started: Instant::now(),
            exhausted: None,
        })
    }

    /// Redacts with `redactor` instead of the default patterns (configured patterns, the
    /// configuration's API keys).
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> Debate<'a> {
        self.redactor = redactor;
        self
    }

    /// Folds stored calls back into the transcript (resume). Calls for positions outside the
    /// debate's shape are ignored.
    pub fn restore(&mut self, calls: Vec<CallRecord>) {
        for call in calls {
            if let Some(key) = fold_call(&self.spec, &mut self.transcript, &call) {
                self.records.insert(key, call);
            }
        }
    }

    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Writes the run row (new debates only).
    pub async fn create(&self, rule: &str, config: serde_json::Value) -> Result<(), EngineError> {
        let mut spec = serde_json::to_value(&self.spec).unwrap_or_default();
        self.redactor.redact_json(&mut spec);
        let mut config = config;
        self.redactor.redact_json(&mut config);
        let run = RunRecord {
            id: self.run_id.clone(),
            created_at: timestamp(),
            question: self.redactor.redact(&self.spec.question).into_owned(),
            protocol: self.protocol.name().to_string(),
            rule: rule.to_string(),
            spec,
            config,
            status: RunStatus::Running,
            answer: None,
            finished_at: None,
        };
        self.store.create_run(&run).await?;
        Ok(())
    }

    /// Runs rounds until the protocol is done, then decides under every rule and records it.
    pub async fn run(
        &mut self,
        rule: &'static str,
        decision_config: &DecisionConfig,
        observer: &dyn Observer,
    ) -> Result<DebateResult, EngineError> {
        self.started = Instant::now();
        loop {
            match self.protocol.next(&self.spec, &self.transcript) {
                Step::Done => break,
                Step::Round { round, mut calls } => {
                    if calls.is_empty() {
                        return Err(EngineError::Config(format!(
                            "{} planned an empty round {round}",
                            self.protocol.name()
                        )));
                    }
                    if self.exhausted.is_none() {
                        self.exhausted = self.budget_spent();
                    }
                    if let Some(reason) = &self.exhausted {
                        for call in &mut calls {
                            call.notes.skipped.get_or_insert_with(|| reason.clone());
                        }
                    }
                    observer.round_started(round, calls.len());
                    let (skipped, asked): (Vec<_>, Vec<_>) =
                        calls.into_iter().partition(|c| c.skipped().is_some());
                    for call in skipped {
                        self.record(&call, None, None, &[], Duration::ZERO, false)
                            .await?;
                        observer.call_finished(call.key(), self.transcript.get_call(&call.key()));
                    }
                    if !asked.is_empty() {
                        let tally = self.run_round(round, asked, observer).await?;
                        // No call of the round is worth repeating (every agent exited
                        // unsuccessfully, was refused, or its server rejected the request):
                        // later rounds would fail the same way, so they are skipped.
                        if tally.asked > 0
                            && tally.failed_permanently == tally.asked
                            && self.exhausted.is_none()
                        {
                            self.exhausted = Some(format!(
                                "every call of round {round} failed and retrying cannot help"
                            ));
                        }
                    }
                    observer.round_finished(round, &self.transcript);
                }
            }
        }
        let decisions = decide_all(
            &*self.protocol,
            &self.spec,
            &self.transcript,
            decision_config,
        );
        let at = timestamp();
        for d in &decisions {
            self.store
                .record_decision(&DecisionRecord {
                    run_id: self.run_id.clone(),
                    rule: d.rule.to_string(),
                    answer: d.answer.as_ref().map(|a| a.canonical().to_string()),
                    decision: decision_json(d),
                    decided_at: at.clone(),
                })
                .await?;
        }
        let chosen = decisions.iter().find(|d| d.rule == rule);
        let answer = chosen
            .and_then(|d| d.answer.as_ref())
            .map(|a| a.canonical().to_string());
        self.store
            .finish_run(&self.run_id, RunStatus::Done, answer.as_deref(), &at)
            .await?;
        Ok(DebateResult {
            run_id: self.run_id.clone(),
            transcript: self.transcript.clone(),
            records: self.records.values().cloned().collect(),
            decisions,
            chosen: rule,
        })
    }

    /// Why the debate may ask nothing more, if its time or tokens are spent.
    fn budget_spent(&self) -> Option<String> {
        let b = &self.config.budget;
        if let Some(max) = b.max_total_time {
            if self.started.elapsed() >= max {
                return Some(format!(
                    "budget: max_total_time_sec ({} s) spent",
                    max.as_secs_f64()
                ));
            }
        }
        if let Some(max) = b.max_total_tokens {
            let used: u64 = self
                .records
                .values()
                .map(|r| r.input_tokens + r.output_tokens)
                .sum();
            if used >= max {
                return Some(format!(
                    "budget: max_total_tokens ({max}) spent ({used} used)"
                ));
            }
        }
        None
    }

    async fn run_round(
        &mut self,
        round: usize,
        calls: Vec<PlannedCall>,
        observer: &dyn Observer,
    ) -> Result<RoundTally, EngineError> {
        let start = Instant::now();
        let mut tally = RoundTally {
            asked: calls.len(),
            ..RoundTally::default()
        };
        // Answers proceed once `min_agents` of the round answered (counting answers recorded
        // before a resume); extra calls (judgements, challenges) once as many of them are back.
        let answers = calls.iter().all(|c| c.slot == Slot::Answer);
        let (mut responded, quorum) = if answers {
            let agents_in_round = self.transcript.agents();
            let already = (0..agents_in_round)
                // An agent the protocol let skip the round has settled its answer too.
                .filter(|&a| {
                    matches!(
                        self.transcript.get(round, a),
                        Some(Outcome::Responded { .. } | Outcome::Skipped { .. })
                    )
                })
                .count();
            (
                already,
                self.config.min_agents.clamp(1, agents_in_round.max(1)),
            )
        } else {
            (0, self.config.min_agents.clamp(1, calls.len().max(1)))
        };
        let total = calls.len();
        let semaphore = Arc::new(Semaphore::new(self.config.max_concurrent_calls.max(1)));
        let mut waiting: BTreeMap<CallKey, PlannedCall> = BTreeMap::new();
        let mut cache_keys: BTreeMap<CallKey, String> = BTreeMap::new();
        let mut pending = FuturesUnordered::new();
        for mut call in calls {
            if let Some(max) = self.config.budget.max_prompt_tokens {
                let estimate = estimated_prompt_tokens(&call.messages);
                if estimate > max {
                    let cut = if self.config.budget.truncate_prompts {
                        cut_prompt(&call.messages, max)
                    } else {
                        None
                    };
                    match cut {
                        Some(messages) => {
                            call.notes.prompt_cut = Some(moot_core::protocol::PromptCut {
                                from_tokens: estimate,
                                to_tokens: estimated_prompt_tokens(&messages),
                            });
                            call.messages = messages;
                        }
                        None => {
                            let reason = format!(
                                "budget: prompt of {estimate} estimated tokens is over max_tokens_per_agent_per_round ({max}){}",
                                if self.config.budget.truncate_prompts { " and cannot be cut to fit" } else { "; not sent (enable_token_truncation cuts it)" }
                            );
                            let key = call.key();
                            self.record(&call, None, Some(reason), &[], Duration::ZERO, false)
                                .await?;
                            tally.failed_permanently += 1;
                            observer.call_finished(key, self.transcript.get_call(&key));
                            continue;
                        }
                    }
                }
            }
            let agent = &self.agents[call.agent];
            // Judgements have nothing in common with the agent's conversation: running them
            // outside its session keeps the agent's cached prefix for its next answer.
            let session = match call.slot {
                Slot::Judge(_) => None,
                _ => Some(self.spec.agents[call.agent].id.clone()),
            };
            let request = CompletionRequest {
                messages: call.messages.clone(),
                params: agent.params.clone(),
                mode: call.mode,
                session,
            };
            let model = agent.model.clone();
            let semaphore = semaphore.clone();
            let key = call.key();
            // The cache is read and written here and in the loop below, never inside the call
            // futures: a future holding a database connection while it is not being polled
            // would starve the store writes this task awaits.
            if self.config.cache {
                let cache_key = request_key(&model.name(), &request, call.agent);
                let hit = self
                    .store
                    .cache_get(&cache_key)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|v| serde_json::from_value::<Completion>(v).ok());
                if let Some(c) = hit {
                    self.record(&call, Some(c), None, &[], Duration::ZERO, true)
                        .await?;
                    responded += 1;
                    observer.call_finished(key, self.transcript.get_call(&key));
                    continue;
                }
                cache_keys.insert(key, cache_key);
            }
            let call_budget = self.config.budget.max_call_time;
            // Only answers are re-asked: judgements and challenges are read differently.
            let reask = (self.config.reask && call.slot == Slot::Answer).then(|| {
                let spec = self.spec.clone();
                let reminder = moot_core::prompts::render(
                    moot_core::prompts::REASK,
                    &[("format", moot_core::prompts::format_instruction(spec.kind))],
                );
                (spec, reminder)
            });
            pending.push(async move {
                let _permit = semaphore.acquire_owned().await;
                let began = Instant::now();
                let call = async {
                    let first = plausible(model.complete(request.clone()).await);
                    let Some((spec, reminder)) = reask else {
                        return (first, None);
                    };
                    match &first {
                        Ok(c) if spec.extract(&c.text).is_none() => {
                            let mut messages = request.messages.clone();
                            messages.push(moot_core::chat::ChatMessage::assistant(c.text.clone()));
                            messages.push(moot_core::chat::ChatMessage::user(reminder));
                            let again = plausible(
                                model
                                    .complete(CompletionRequest { messages, ..request })
                                    .await,
                            );
                            (first, Some(again))
                        }
                        _ => (first, None),
                    }
                };
                let (result, reasked) = match call_budget {
                    Some(max) => tokio::time::timeout(max, call).await.unwrap_or_else(|_| {
                        (
                            Err(BackendError::Model(format!(
                                "budget: the call ran over max_agent_time_sec ({} s) and was cancelled",
                                max.as_secs_f64()
                            ))),
                            None,
                        )
                    }),
                    None => call.await,
                };
                (key, result, reasked, began.elapsed())
            });
            waiting.insert(key, call);
        }
        // The round's hard stop: its deadline, or earlier when the round or debate budget says.
        let budget = &self.config.budget;
        let remaining = budget
            .max_total_time
            .map(|t| t.saturating_sub(self.started.elapsed()));
        let (hard_after, budget_binds) = [budget.max_round_time, remaining]
            .into_iter()
            .flatten()
            .filter(|b| *b < self.config.hard_timeout)
            .min()
            .map_or((self.config.hard_timeout, false), |b| (b, true));
        let soft = tokio::time::sleep_until(start + self.config.soft_timeout.min(hard_after));
        let hard = tokio::time::sleep_until(start + hard_after);
        tokio::pin!(soft, hard);
        let mut soft_passed = false;
        let mut hard_passed = false;
        while !pending.is_empty() {
            if soft_passed && responded >= quorum {
                break;
            }
            tokio::select! {
                Some((key, result, reasked, latency)) = pending.next() => {
                    let Some(mut call) = waiting.remove(&key) else { continue };
                    if let Some(again) = reasked {
                        call.notes.reask = Some(match again {
                            Ok(c) => moot_core::protocol::ReaskNote {
                                reply: Some(self.redactor.redact(&c.text).into_owned()),
                                error: None,
                                input_tokens: c.usage.input_tokens,
                                output_tokens: c.usage.output_tokens,
                                processed_input_tokens: c.usage.processed_input_tokens,
                            },
                            Err(e) => moot_core::protocol::ReaskNote {
                                reply: None,
                                error: Some(self.redactor.redact(&e.to_string()).into_owned()),
                                input_tokens: 0,
                                output_tokens: 0,
                                processed_input_tokens: None,
                            },
                        });
                    }
                    let ok = result.is_ok();
                    if let Err(e) = &result {
                        if matches!(e.class(), ErrorClass::Permanent | ErrorClass::ContextLength) {
                            tally.failed_permanently += 1;
                        }
                    }
                    let reason = result.as_ref().err().map(|e| format!("error: {e}"));
                    // A failed cache write only loses a future saving.
                    if let (Some(k), Ok(c)) = (cache_keys.get(&key), &result) {
                        if let Ok(mut v) = serde_json::to_value(c) {
                            self.redactor.redact_json(&mut v);
                            let _ = self.store.cache_put(k, &v).await;
                        }
                    }
                    let retries = match &result {
                        Ok(c) => c.retries.clone(),
                        Err(e) => e.attempts().to_vec(),
                    };
                    self.record(&call, result.ok(), reason, &retries, latency, false)
                        .await?;
                    if ok {
                        responded += 1;
                    }
                    observer.call_finished(key, self.transcript.get_call(&key));
                }
                _ = &mut soft, if !soft_passed => soft_passed = true,
                _ = &mut hard => {
                    hard_passed = true;
                    break;
                }
            }
        }
        // Whatever still runs is cancelled by dropping it, and recorded as missing.
        drop(pending);
        let reason = if hard_passed && budget_binds {
            format!(
                "budget: round or debate time ({} ms) reached: cancelled",
                hard_after.as_millis()
            )
        } else if hard_passed {
            format!(
                "hard deadline ({} ms) reached: cancelled",
                self.config.hard_timeout.as_millis()
            )
        } else {
            format!(
                "soft deadline ({} ms) passed with {responded} of {total} responses: cancelled",
                self.config.soft_timeout.as_millis()
            )
        };
        let elapsed = start.elapsed();
        for (key, call) in std::mem::take(&mut waiting) {
            self.record(&call, None, Some(reason.clone()), &[], elapsed, false)
                .await?;
            observer.call_finished(key, self.transcript.get_call(&key));
        }
        Ok(tally)
    }

    /// Store first, then the in-memory transcript.
    async fn record(
        &mut self,
        call: &PlannedCall,
        completion: Option<Completion>,
        error: Option<String>,
        retries: &[FailedAttempt],
        latency: Duration,
        cached: bool,
    ) -> Result<(), EngineError> {
        let agent = &self.agents[call.agent];
        let summary = completion.as_ref().and_then(Completion::logprob_summary);
        // After a re-ask, the answer is the one in the reply to it (or none).
        let reask = call.notes.reask.as_ref();
        let answer = completion.as_ref().and_then(|c| {
            answer_after_reask(&self.spec, &c.text, reask.map(|r| r.reply.as_deref()))
        });
        let (reask_in, reask_out) = reask.map_or((0, 0), |r| (r.input_tokens, r.output_tokens));
        let skipped = call.skipped().map(str::to_string);
        let record = CallRecord {
            run_id: self.run_id.clone(),
            round: call.round as u32,
            agent: call.agent as u32,
            slot: call.slot.label(),
            agent_id: self.spec.agents[call.agent].id.clone(),
            backend: agent.model.name(),
            mode: call.mode.as_str().to_string(),
            template: call.template.to_string(),
            template_hash: call.template_hash.clone(),
            messages: {
                let mut m = serde_json::to_value(&call.messages).unwrap_or_default();
                self.redactor.redact_json(&mut m);
                m
            },
            peers: call.peers.iter().map(|&p| p as u32).collect(),
            response_text: completion
                .as_ref()
                .map(|c| self.redactor.redact(&c.text).into_owned()),
            answer: answer
                .as_ref()
                .map(|a| self.redactor.redact(a.canonical()).into_owned()),
            error: skipped
                .clone()
                .or(error)
                .map(|e| self.redactor.redact(&e).into_owned()),
            skipped: skipped.is_some(),
            finish: completion
                .as_ref()
                .map(|c| format!("{:?}", c.finish).to_lowercase()),
            input_tokens: completion.as_ref().map_or(0, |c| c.usage.input_tokens) + reask_in,
            output_tokens: completion.as_ref().map_or(0, |c| c.usage.output_tokens) + reask_out,
            // A re-ask's prompt counts in both totals: one that reused no cache is processed
            // whole, so reuse is never claimed for tokens nobody reported.
            processed_input_tokens: completion
                .as_ref()
                .and_then(|c| c.usage.processed_input_tokens)
                .map(|p| {
                    p.saturating_add(
                        reask.map_or(0, |r| r.processed_input_tokens.unwrap_or(r.input_tokens)),
                    )
                }),
            logprob_tokens: summary.map(|s| s.tokens as u64),
            logprob_mean: summary.map(|s| s.mean),
            logprob_min: summary.map(|s| s.min),
            perplexity: summary.map(|s| s.perplexity),
            latency_ms: latency.as_millis() as u64,
            recorded_at: timestamp(),
            notes: serde_json::to_value(&call.notes).unwrap_or_default(),
            ncomm: call.notes.ncomm as u32,
            cached,
            retries: {
                let mut r = serde_json::to_value(retries).unwrap_or_default();
                self.redactor.redact_json(&mut r);
                r
            },
        };
        self.store.record_call(&record).await?;
        let outcome = outcome_of(&self.spec, &record);
        self.transcript.set_call(call.key(), outcome);
        self.records.insert(call.key(), record);
        Ok(())
    }
}

/// The request-cache key of a call: a hash of the backend, the sampling parameters, the mode,
/// the messages and the sample index (the agent), so identical requests are answered once and
/// different agents' samples stay distinct.
pub fn request_key(backend: &str, request: &CompletionRequest, sample: usize) -> String {
    use sha2::{Digest, Sha256};
    let material = serde_json::json!({
        "backend": backend,
        "params": request.params,
        "mode": request.mode,
        "messages": request.messages,
        "sample": sample,
    });
    let digest = Sha256::digest(material.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A completion whose token counts no model could produce is a broken response. Refused here,
/// where every backend's answers enter the engine, so no sum downstream overflows and no
/// stored count is garbage.
fn plausible(result: Result<Completion, BackendError>) -> Result<Completion, BackendError> {
    match result {
        Ok(c) if !c.usage.is_plausible() => Err(BackendError::InvalidResponse(format!(
            "implausible token counts for one call: {} in ({} processed), {} out",
            c.usage.input_tokens,
            c.usage
                .processed_input_tokens
                .map_or("?".to_string(), |p| p.to_string()),
            c.usage.output_tokens
        ))),
        other => other,
    }
}

/// A response's answer; after a re-ask (`Some(reply)`), the one in the reply to it, or none.
fn answer_after_reask(
    spec: &DebateSpec,
    text: &str,
    reask_reply: Option<Option<&str>>,
) -> Option<moot_core::Answer> {
    match reask_reply {
        Some(reply) => reply.and_then(|r| spec.extract(r)),
        None => spec.extract(text),
    }
}

/// The transcript outcome a stored call stands for; the answer is re-extracted from the text so
/// stored runs follow the current extractor.
pub fn outcome_of(spec: &DebateSpec, call: &CallRecord) -> Outcome {
    if call.skipped {
        return Outcome::Skipped {
            reason: call.error.clone().unwrap_or_else(|| "skipped".into()),
        };
    }
    match &call.response_text {
        Some(text) => Outcome::Responded {
            text: text.clone(),
            answer: answer_after_reask(
                spec,
                text,
                call.notes.get("reask").map(|r| r["reply"].as_str()),
            ),
            logprobs: logprobs_of(call),
        },
        None => Outcome::Missing {
            reason: call.error.clone().unwrap_or_else(|| "no response".into()),
        },
    }
}

/// The logprob summary stored with a call, if its backend returned logprobs.
fn logprobs_of(call: &CallRecord) -> Option<LogprobSummary> {
    Some(LogprobSummary {
        tokens: call.logprob_tokens? as usize,
        mean: call.logprob_mean?,
        min: call.logprob_min?,
        perplexity: call.perplexity?,
    })
}

/// The key of a stored call, or `None` when its slot is not one this version knows.
pub fn key_of(call: &CallRecord) -> Option<CallKey> {
    Some(CallKey {
        round: call.round as usize,
        agent: call.agent as usize,
        slot: Slot::parse(&call.slot)?,
    })
}

/// Places a stored call's outcome in a transcript; `None` when the call lies outside the
/// debate's shape.
pub fn fold_call(
    spec: &DebateSpec,
    transcript: &mut Transcript,
    call: &CallRecord,
) -> Option<CallKey> {
    let key = key_of(call)?;
    transcript
        .set_call(key, outcome_of(spec, call))
        .then_some(key)
}

/// The transcript a stored run's calls stand for.
pub fn transcript_of(spec: &DebateSpec, calls: &[CallRecord]) -> Transcript {
    let mut transcript = Transcript::new(spec.agents.len(), spec.rounds);
    for call in calls {
        fold_call(spec, &mut transcript, call);
    }
    transcript
}

/// Every registered rule's decision on a transcript, with the evidence its protocol derives.
pub fn decide_all(
    protocol: &dyn Protocol,
    spec: &DebateSpec,
    transcript: &Transcript,
    config: &DecisionConfig,
) -> Vec<Decision> {
    let decided = transcript.decided_part();
    decide_all_with(&decided, &protocol.evidence(spec, &decided), config)
}

/// Every registered rule's decision on a transcript, with the given evidence (for runs whose
/// protocol cannot be rebuilt: [`Evidence::from_transcript`](moot_core::decision::Evidence)).
pub fn decide_all_with(
    transcript: &Transcript,
    evidence: &moot_core::decision::Evidence,
    config: &DecisionConfig,
) -> Vec<Decision> {
    let transcript = transcript.decided_part();
    let Some(trajectory) = transcript.trajectory() else {
        return Vec::new();
    };
    RULES
        .iter()
        .filter_map(|r| build_rule(r.name, config).ok())
        .map(|rule| rule.decide_with(&trajectory, evidence))
        .collect()
}

/// `{"rule", "answer", "scores", "no_answer_score", "tie", "explanation"}` — the same shape
/// `moot decide` prints.
pub fn decision_json(d: &Decision) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    // Scores are short sums of fractions like 20/3; 9 decimals hide float noise
    // (80.00000000000001) without hiding any real difference.
    fn tidy(x: f64) -> f64 {
        if x.is_finite() {
            (x * 1e9).round() / 1e9
        } else {
            x
        }
    }
    let mut scores = Map::new();
    let mut no_answer = None;
    for (key, score) in &d.scores {
        match key {
            Some(a) => {
                scores.insert(a.canonical().to_string(), json!(tidy(*score)));
            }
            None => no_answer = Some(tidy(*score)),
        }
    }
    let explanation: Vec<Value> = d
        .events
        .iter()
        .map(|e| {
            let mut v = json!(e);
            v["delta"] = json!(tidy(e.delta));
            v
        })
        .collect();
    json!({
        "rule": d.rule,
        "answer": d.answer.as_ref().map(|a| a.canonical()),
        "scores": scores,
        "no_answer_score": no_answer,
        "tie": d.tie,
        "explanation": explanation,
    })
}
