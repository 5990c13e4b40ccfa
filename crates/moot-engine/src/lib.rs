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
use moot_backends::{Completion, CompletionRequest, LanguageModel};
use moot_core::chat::{SamplingParams, Usage};
use moot_core::debate::{DebateSpec, Outcome, Transcript};
use moot_core::decision::{build_rule, Decision, DecisionConfig, RULES};
use moot_core::protocol::{PlannedCall, Protocol, Step};
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
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            soft_timeout: Duration::from_secs(15),
            hard_timeout: Duration::from_secs(30),
            min_agents: 2,
            max_concurrent_calls: 8,
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
    records: BTreeMap<(u32, u32), CallRecord>,
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

impl DebateResult {
    pub fn decision(&self) -> Option<&Decision> {
        self.decisions.iter().find(|d| d.rule == self.chosen)
    }

    pub fn usage(&self) -> Usage {
        let mut u = Usage::default();
        for r in &self.records {
            u += Usage {
                input_tokens: r.input_tokens,
                output_tokens: r.output_tokens,
                processed_input_tokens: r.processed_input_tokens,
            };
        }
        u
    }
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
        })
    }

    /// Folds stored calls back into the transcript (resume). Calls for positions outside the
    /// debate's shape are ignored.
    pub fn restore(&mut self, calls: Vec<CallRecord>) {
        for call in calls {
            if fold_call(&self.spec, &mut self.transcript, &call) {
                self.records.insert((call.round, call.agent), call);
            }
        }
    }

    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Writes the run row (new debates only).
    pub async fn create(&self, rule: &str, config: serde_json::Value) -> Result<(), EngineError> {
        let run = RunRecord {
            id: self.run_id.clone(),
            created_at: timestamp(),
            question: self.spec.question.clone(),
            protocol: self.protocol.name().to_string(),
            rule: rule.to_string(),
            spec: serde_json::to_value(&self.spec).unwrap_or_default(),
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
        loop {
            match self.protocol.next(&self.spec, &self.transcript) {
                Step::Done => break,
                Step::Round { round, calls } => {
                    observer.round_started(round, calls.len());
                    self.run_round(round, calls, observer).await?;
                    observer.round_finished(round, &self.transcript);
                }
            }
        }
        let decisions = decide_all(&self.transcript, decision_config);
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

    async fn run_round(
        &mut self,
        round: usize,
        calls: Vec<PlannedCall>,
        observer: &dyn Observer,
    ) -> Result<(), EngineError> {
        let start = Instant::now();
        let agents_in_round = self.transcript.agents();
        let quorum = self.config.min_agents.clamp(1, agents_in_round.max(1));
        let mut responded = (0..agents_in_round)
            .filter(|&a| {
                matches!(
                    self.transcript.get(round, a),
                    Some(Outcome::Responded { .. })
                )
            })
            .count();
        let semaphore = Arc::new(Semaphore::new(self.config.max_concurrent_calls.max(1)));
        let mut waiting: BTreeMap<usize, PlannedCall> = BTreeMap::new();
        let mut pending = FuturesUnordered::new();
        for call in calls {
            let agent = &self.agents[call.agent];
            let request = CompletionRequest {
                messages: call.messages.clone(),
                params: agent.params.clone(),
                mode: call.mode,
                session: Some(self.spec.agents[call.agent].id.clone()),
            };
            let model = agent.model.clone();
            let semaphore = semaphore.clone();
            let index = call.agent;
            pending.push(async move {
                let _permit = semaphore.acquire_owned().await;
                let began = Instant::now();
                let result = model.complete(request).await;
                (index, result, began.elapsed())
            });
            waiting.insert(call.agent, call);
        }
        let soft = tokio::time::sleep_until(start + self.config.soft_timeout);
        let hard = tokio::time::sleep_until(start + self.config.hard_timeout);
        tokio::pin!(soft, hard);
        let mut soft_passed = false;
        let mut hard_passed = false;
        while !pending.is_empty() {
            if soft_passed && responded >= quorum {
                break;
            }
            tokio::select! {
                Some((agent, result, latency)) = pending.next() => {
                    let Some(call) = waiting.remove(&agent) else { continue };
                    let ok = result.is_ok();
                    let reason = result.as_ref().err().map(|e| format!("error: {e}"));
                    self.record(&call, result.ok(), reason, latency).await?;
                    if ok {
                        responded += 1;
                    }
                    observer.call_finished(round, agent, self.transcript.get(round, agent));
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
        let reason = if hard_passed {
            format!(
                "hard deadline ({} ms) reached: cancelled",
                self.config.hard_timeout.as_millis()
            )
        } else {
            format!(
                "soft deadline ({} ms) passed with {responded} of {agents_in_round} responses: cancelled",
                self.config.soft_timeout.as_millis()
            )
        };
        let elapsed = start.elapsed();
        for (agent, call) in std::mem::take(&mut waiting) {
            self.record(&call, None, Some(reason.clone()), elapsed)
                .await?;
            observer.call_finished(round, agent, self.transcript.get(round, agent));
        }
        Ok(())
    }

    /// Store first, then the in-memory transcript.
    async fn record(
        &mut self,
        call: &PlannedCall,
        completion: Option<Completion>,
        error: Option<String>,
        latency: Duration,
    ) -> Result<(), EngineError> {
        let agent = &self.agents[call.agent];
        let summary = completion.as_ref().and_then(Completion::logprob_summary);
        let answer = completion.as_ref().and_then(|c| self.spec.extract(&c.text));
        let record = CallRecord {
            run_id: self.run_id.clone(),
            round: call.round as u32,
            agent: call.agent as u32,
            agent_id: self.spec.agents[call.agent].id.clone(),
            backend: agent.model.name(),
            mode: call.mode.as_str().to_string(),
            template: call.template.to_string(),
            template_hash: call.template_hash.clone(),
            messages: serde_json::to_value(&call.messages).unwrap_or_default(),
            peers: call.peers.iter().map(|&p| p as u32).collect(),
            response_text: completion.as_ref().map(|c| c.text.clone()),
            answer: answer.as_ref().map(|a| a.canonical().to_string()),
            error,
            finish: completion
                .as_ref()
                .map(|c| format!("{:?}", c.finish).to_lowercase()),
            input_tokens: completion.as_ref().map_or(0, |c| c.usage.input_tokens),
            output_tokens: completion.as_ref().map_or(0, |c| c.usage.output_tokens),
            processed_input_tokens: completion
                .as_ref()
                .and_then(|c| c.usage.processed_input_tokens),
            logprob_tokens: summary.map(|s| s.tokens as u64),
            logprob_mean: summary.map(|s| s.mean),
            logprob_min: summary.map(|s| s.min),
            perplexity: summary.map(|s| s.perplexity),
            latency_ms: latency.as_millis() as u64,
            recorded_at: timestamp(),
        };
        self.store.record_call(&record).await?;
        let outcome = outcome_of(&self.spec, &record);
        self.transcript.set(call.round, call.agent, outcome);
        self.records.insert((record.round, record.agent), record);
        Ok(())
    }
}

/// The transcript outcome a stored call stands for; the answer is re-extracted from the text so
/// stored runs follow the current extractor.
pub fn outcome_of(spec: &DebateSpec, call: &CallRecord) -> Outcome {
    match &call.response_text {
        Some(text) => Outcome::Responded {
            text: text.clone(),
            answer: spec.extract(text),
        },
        None => Outcome::Missing {
            reason: call.error.clone().unwrap_or_else(|| "no response".into()),
        },
    }
}

/// Places a stored call's outcome in a transcript; `false` when the call lies outside the
/// debate's shape.
pub fn fold_call(spec: &DebateSpec, transcript: &mut Transcript, call: &CallRecord) -> bool {
    transcript.set(
        call.round as usize,
        call.agent as usize,
        outcome_of(spec, call),
    )
}

/// The transcript a stored run's calls stand for.
pub fn transcript_of(spec: &DebateSpec, calls: &[CallRecord]) -> Transcript {
    let mut transcript = Transcript::new(spec.agents.len(), spec.rounds);
    for call in calls {
        fold_call(spec, &mut transcript, call);
    }
    transcript
}

/// Every registered rule's decision on a transcript.
pub fn decide_all(transcript: &Transcript, config: &DecisionConfig) -> Vec<Decision> {
    let Some(trajectory) = transcript.trajectory() else {
        return Vec::new();
    };
    RULES
        .iter()
        .filter_map(|r| build_rule(r.name, config).ok())
        .map(|rule| rule.decide(&trajectory))
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
