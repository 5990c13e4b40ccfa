//! The debate's lifecycle: checking that a configuration can run, writing the run row,
//! restoring stored calls on resume, asking the protocol for round after round (skipping what
//! the budget no longer allows), and deciding and recording the result at the end.

use std::collections::BTreeMap;
use std::sync::Arc;

use moot_core::debate::{AgentRole, CallKey, DebateSpec, Transcript};
use moot_core::decision::{Decision, DecisionConfig};
use moot_core::protocol::{PlannedCall, Protocol, Step};
use moot_core::redact::Redactor;
use moot_sandbox::Sandbox;
use moot_store::{
    CallRecord, DecisionRecord, ForkOrigin, RunOutcome, RunRecord, RunStatus, Store, WholeRun,
    RUN_HEARTBEAT,
};
use tokio::time::Instant;
use tracing::Instrument;

use crate::budget::debate_spent;
use crate::code_checks::check_code_answers;
use crate::decision::{decide_all, decision_json};
use crate::engine_config::{EngineAgent, EngineConfig};
use crate::error::EngineError;
use crate::fork::{Fork, ForkSource};
use crate::ids::timestamp;
use crate::lineup::Lineup;
use crate::observer::Observer;
use crate::recording::{CallEnd, CallLog};
use crate::replay::fold_call;
use crate::result::DebateResult;
use crate::scheduler::{run_round, RoundContext};
use crate::spans;

/// A debate bound to its run id, agents, decision rule and store.
pub struct Debate<'a> {
    pub run_id: String,
    pub spec: DebateSpec,
    protocol: Box<dyn Protocol>,
    agents: Vec<EngineAgent>,
    config: EngineConfig,
    store: &'a dyn Store,
    /// The rule whose decision is the run's answer (stored with the run).
    rule: &'static str,
    transcript: Transcript,
    records: BTreeMap<CallKey, CallRecord>,
    /// Applied to everything this debate stores (prompts, responses, errors, the question).
    redactor: Arc<Redactor>,
    /// When this run started (for the time budget).
    started: Instant,
    /// Why the debate's budget is spent, once it is.
    exhausted: Option<String>,
    /// Checks code answers (syntax, and the spec's tests) when the answer kind is `code`.
    sandbox: Option<Arc<Sandbox>>,
    /// The fork this debate is of a stored parent, if it is one.
    fork: Option<Fork>,
    /// The debate's span (`invoke_workflow`), from its build to its end: its run's creation,
    /// rounds and decision are written inside it.
    span: tracing::Span,
}

/// What a debate is built from: the whole team and the requested rounds, before the protocol's
/// shape is applied. [`DebateSetup::build`] is the one way to make a [`Debate`].
pub struct DebateSetup<'a> {
    pub run_id: String,
    /// The question, the whole team (`agents`, in team order) and the requested debate rounds.
    pub spec: DebateSpec,
    pub protocol: Box<dyn Protocol>,
    /// The team's engine agents, one per agent of `spec.agents`, in the same order.
    pub agents: Vec<EngineAgent>,
    pub config: EngineConfig,
    /// The configured decision rule; `None` is the protocol's default.
    pub rule: Option<&'static str>,
    pub store: &'a dyn Store,
}

impl<'a> DebateSetup<'a> {
    /// The debate: the team fitted to the protocol (see [`Lineup::fit`]: its debaters cut to
    /// the protocol's shape, the roles it uses kept in place or cast, others sitting out),
    /// `spec.agents` and the
    /// engine agents trimmed together, the spec's rounds set to the shape's, and the rule
    /// resolved. Refuses a team whose two lists differ in length, and what the protocol or the
    /// backends cannot run.
    pub fn build(self) -> Result<Debate<'a>, EngineError> {
        let DebateSetup {
            run_id,
            mut spec,
            protocol,
            agents,
            config,
            rule,
            store,
        } = self;
        // Checked before fitting: trimming two lists of different lengths by the same positions
        // would pair agents with the wrong specs.
        check_team(&spec, &agents)?;
        let roles: Vec<AgentRole> = spec.agents.iter().map(|a| a.role).collect();
        let lineup = Lineup::fit(&*protocol, &roles, spec.rounds);
        if let Some((i, role)) = lineup.cast {
            if let Some(agent) = spec.agents.get_mut(i) {
                agent.role = role;
            }
        }
        spec.agents = lineup.keep(spec.agents);
        spec.rounds = lineup.rounds;
        let agents = lineup.keep(agents);
        let rule = rule.unwrap_or_else(|| protocol.default_rule());
        Debate::new(run_id, spec, protocol, agents, config, rule, store)
    }
}

impl<'a> Debate<'a> {
    /// A debate of exactly `spec.agents` (one engine agent each) for `spec.rounds` rounds, the
    /// protocol's shape already applied (by [`DebateSetup::build`]).
    fn new(
        run_id: String,
        spec: DebateSpec,
        protocol: Box<dyn Protocol>,
        agents: Vec<EngineAgent>,
        config: EngineConfig,
        rule: &'static str,
        store: &'a dyn Store,
    ) -> Result<Debate<'a>, EngineError> {
        check_config(&spec, &*protocol, &agents, &config)?;
        let mut agents = agents;
        if let Some(why) = protocol.needs_logprobs() {
            check_logprobs(&spec, &*protocol, &agents, why)?;
            for agent in &mut agents {
                agent.params.logprobs = true;
            }
        }
        let transcript = Transcript::new(spec.agents.len(), spec.rounds);
        let span = spans::debate(&run_id, protocol.name(), spec.rounds, rule);
        Ok(Debate {
            span,
            run_id,
            spec,
            protocol,
            agents,
            config,
            store,
            rule,
            transcript,
            records: BTreeMap::new(),
            redactor: Arc::new(Redactor::default()),
            started: Instant::now(),
            exhausted: None,
            sandbox: None,
            fork: None,
        })
    }

    /// The rule whose decision is the run's answer: the configured one, else the protocol's
    /// default.
    pub fn rule(&self) -> &'static str {
        self.rule
    }

    /// Redacts with `redactor` instead of the default patterns (configured patterns, the
    /// configuration's API keys).
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> Debate<'a> {
        self.redactor = redactor;
        self
    }

    /// Checks the debate's code answers in `sandbox` before deciding (code debates only).
    pub fn with_sandbox(mut self, sandbox: Option<Arc<Sandbox>>) -> Debate<'a> {
        self.sandbox = sandbox;
        self
    }

    /// Makes this debate a fork of `source` (see `moot_core::fork`): [`Debate::create`] then
    /// writes the run with the parent's calls before the fork's round (and the injected
    /// response under `say`), and every later call the parent made with the same request is
    /// reused from it. Give the same source to a resumed fork (its calls restored), so that it
    /// reuses and resamples as it did. Refused, with the reason, when the protocol does not
    /// allow the intervention at that round (see `moot_core::protocol::check_fork`).
    pub fn with_fork(mut self, source: ForkSource) -> Result<Debate<'a>, EngineError> {
        self.fork = Some(Fork::new(
            source,
            &self.run_id,
            &*self.protocol,
            &self.spec,
        )?);
        Ok(self)
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

    /// Writes the run row (new debates only). A fork's run is written whole with the calls it
    /// starts with, which are then folded into its transcript.
    pub async fn create(&mut self, config: serde_json::Value) -> Result<(), EngineError> {
        let mut spec = serde_json::to_value(&self.spec).unwrap_or_default();
        self.redactor.redact_json(&mut spec);
        let mut config = config;
        self.redactor.redact_json(&mut config);
        let run = RunRecord {
            id: self.run_id.clone(),
            created_at: timestamp(),
            question: self.redactor.redact(&self.spec.question).into_owned(),
            protocol: self.protocol.name().to_string(),
            rule: self.rule.to_string(),
            spec,
            config,
            status: RunStatus::Running,
            answer: None,
            finished_at: None,
            silent_ms: None,
            owner: None,
            fork: self.fork.as_ref().map(|f| {
                let mut intervention = serde_json::to_value(f.intervention()).unwrap_or_default();
                self.redactor.redact_json(&mut intervention);
                ForkOrigin {
                    parent: f.parent().to_string(),
                    round: f.round() as u32,
                    intervention,
                }
            }),
        };
        // The write's span is the debate's child, as everything the debate does.
        let write = {
            let _in_debate = self.span.enter();
            spans::store_write("run")
        };
        let Some(fork) = &self.fork else {
            self.store.create_run(&run).instrument(write).await?;
            return Ok(());
        };
        let calls = fork.opening(&self.run_id, &self.spec, &self.redactor)?;
        let whole = WholeRun {
            run,
            calls,
            decisions: Vec::new(),
            validations: Vec::new(),
        };
        if !self
            .store
            .record_whole_run(&whole)
            .instrument(write)
            .await?
        {
            return Err(EngineError::Config(format!(
                "a run with id {} is in the store already: choose another id",
                self.run_id
            )));
        }
        self.restore(whole.calls);
        Ok(())
    }

    /// Runs rounds until the protocol is done, then decides under every rule and records it.
    /// Meanwhile the store hears every [`RUN_HEARTBEAT`] that the debate's process is alive, so
    /// a run whose process died shows as interrupted rather than running forever.
    pub async fn run(
        &mut self,
        decision_config: &DecisionConfig,
        observer: &dyn Observer,
    ) -> Result<DebateResult, EngineError> {
        let store = self.store;
        let run_id = self.run_id.clone();
        let span = self.span.clone();
        let result = tokio::select! {
            biased;
            result = self.run_to_decision(decision_config, observer).instrument(span.clone()) => result,
            never = keep_alive(store, &run_id) => match never {},
        };
        spans::debate_ended(&span, result.as_ref().err().map(EngineError::kind));
        result
    }

    async fn run_to_decision(
        &mut self,
        decision_config: &DecisionConfig,
        observer: &dyn Observer,
    ) -> Result<DebateResult, EngineError> {
        self.started = Instant::now();
        while let Step::Round { round, calls } = self.protocol.next(&self.spec, &self.transcript) {
            self.check_plan(round, &calls)?;
            self.play_round(round, calls, observer).await?;
        }
        let validations = match &self.sandbox {
            Some(sandbox) => {
                check_code_answers(
                    sandbox,
                    &self.spec,
                    &self.transcript,
                    &self.run_id,
                    self.store,
                )
                .await?
            }
            None => Default::default(),
        };
        let decisions = decide_all(
            &*self.protocol,
            &self.spec,
            &self.transcript,
            &validations,
            decision_config,
        );
        self.finish(&decisions).await?;
        Ok(DebateResult {
            run_id: self.run_id.clone(),
            transcript: self.transcript.clone(),
            records: self.records.values().cloned().collect(),
            decisions,
            chosen: self.rule,
            validations,
        })
    }

    /// A round no debate can run is the protocol's bug, reported as one instead of a panic or
    /// a debate that never ends.
    fn check_plan(&self, round: usize, calls: &[PlannedCall]) -> Result<(), EngineError> {
        let bug = |problem: String| EngineError::Protocol {
            protocol: self.protocol.name().to_string(),
            problem,
        };
        if calls.is_empty() {
            return Err(bug(format!("planned an empty round {round}")));
        }
        match calls.iter().find(|c| c.agent >= self.agents.len()) {
            Some(c) => Err(bug(format!(
                "planned a call in round {round} for agent {} of a debate with {} agents",
                c.agent + 1,
                self.agents.len()
            ))),
            None => Ok(()),
        }
    }

    /// Records the round's skipped calls, runs the rest, and notes when the budget or the
    /// round's failures leave later rounds nothing worth asking.
    async fn play_round(
        &mut self,
        round: usize,
        calls: Vec<PlannedCall>,
        observer: &dyn Observer,
    ) -> Result<(), EngineError> {
        let span = spans::round(round, calls.len());
        self.play_round_in_span(round, calls, observer)
            .instrument(span)
            .await
    }

    async fn play_round_in_span(
        &mut self,
        round: usize,
        mut calls: Vec<PlannedCall>,
        observer: &dyn Observer,
    ) -> Result<(), EngineError> {
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
        let mut context = self.round_context(observer);
        if !skipped.is_empty() {
            let unasked = skipped
                .into_iter()
                .map(|c| (c, CallEnd::unasked()))
                .collect();
            for key in context.log.write_all(unasked, Vec::new()).await? {
                observer.call_finished(key, context.log.transcript.get_call(&key));
            }
        }
        if !asked.is_empty() {
            let tally = run_round(context, round, asked).await?;
            // Every agent exited unsuccessfully, was refused, or its server rejected the
            // request: later rounds would fail the same way, so they are skipped.
            if tally.nothing_worth_repeating() && self.exhausted.is_none() {
                self.exhausted = Some(format!(
                    "every call of round {round} failed and retrying cannot help"
                ));
            }
        }
        observer.round_finished(round, &self.transcript);
        Ok(())
    }

    /// Why the debate may ask nothing more, if its time or tokens are spent.
    fn budget_spent(&self) -> Option<String> {
        // Saturating: a resumed debate's calls are read back from the store.
        let used = moot_core::chat::total_tokens(
            self.records
                .values()
                .map(|r| r.input_tokens.saturating_add(r.output_tokens)),
        );
        debate_spent(&self.config.budget, self.started.elapsed(), used)
    }

    /// Records every rule's decision and the chosen rule's answer, and marks the run done, in
    /// one write.
    async fn finish(&self, decisions: &[Decision]) -> Result<(), EngineError> {
        let at = timestamp();
        let answer = decisions
            .iter()
            .find(|d| d.rule == self.rule)
            .and_then(|d| d.answer.as_ref())
            .map(|a| a.canonical().to_string());
        // An answer is content (a code answer is a program): on the debate's span (the current
        // one here, see `Debate::run`) only when the user opted in, and redacted.
        if let Some(a) = answer.as_deref().filter(|_| spans::capturing()) {
            tracing::Span::current().record(
                moot_core::semconv::MOOT_DECISION_ANSWER,
                self.redactor.redact(a).as_ref(),
            );
        }
        let decisions = decisions
            .iter()
            .map(|d| DecisionRecord {
                run_id: self.run_id.clone(),
                rule: d.rule.to_string(),
                answer: d.answer.as_ref().map(|a| a.canonical().to_string()),
                decision: decision_json(d),
                decided_at: at.clone(),
            })
            .collect();
        self.store
            .record_outcome(RunOutcome {
                run_id: self.run_id.clone(),
                status: RunStatus::Done,
                answer,
                finished_at: at,
                decisions,
            })
            .instrument(spans::store_write("outcome"))
            .await?;
        Ok(())
    }

    fn round_context<'s>(&'s mut self, observer: &'s dyn Observer) -> RoundContext<'s> {
        RoundContext {
            config: &self.config,
            debate_started: self.started,
            observer,
            fork: self.fork.as_ref(),
            needs_logprobs: self
                .protocol
                .needs_logprobs()
                .map(|why| (self.protocol.name(), why)),
            log: CallLog {
                run_id: &self.run_id,
                spec: &self.spec,
                agents: &self.agents,
                store: self.store,
                redactor: &self.redactor,
                transcript: &mut self.transcript,
                records: &mut self.records,
            },
        }
    }
}

/// A team whose specs and engine agents do not pair up one to one.
fn check_team(spec: &DebateSpec, agents: &[EngineAgent]) -> Result<(), EngineError> {
    if agents.len() != spec.agents.len() {
        return Err(EngineError::Config(format!(
            "{} agents configured for {} agent slots",
            agents.len(),
            spec.agents.len()
        )));
    }
    Ok(())
}

/// A configuration the debate cannot run with, said so in the configuration's terms.
fn check_config(
    spec: &DebateSpec,
    protocol: &dyn Protocol,
    agents: &[EngineAgent],
    config: &EngineConfig,
) -> Result<(), EngineError> {
    // The team was paired with its specs before fitting (`check_team`); fitted, it may still
    // be empty.
    if agents.is_empty() {
        return Err(EngineError::Config(
            "0 agents configured for 0 agent slots".into(),
        ));
    }
    if config.hard_timeout < config.soft_timeout {
        return Err(EngineError::Config(
            "hard_timeout_ms must be >= soft_timeout_ms".into(),
        ));
    }
    protocol
        .validate(spec)
        .map_err(|e| EngineError::Config(format!("{}: {e}", protocol.name())))
}

/// Every agent's backend returns the token logprobs the protocol reads (`why` says what for).
fn check_logprobs(
    spec: &DebateSpec,
    protocol: &dyn Protocol,
    agents: &[EngineAgent],
    why: &str,
) -> Result<(), EngineError> {
    match agents.iter().position(|a| !a.model.capabilities().logprobs) {
        Some(i) => Err(EngineError::Config(format!(
            "{} needs token logprobs ({why}), but agent {} ({}) runs on {}, which returns none",
            protocol.name(),
            i + 1,
            spec.agents[i].id,
            agents[i].model.name()
        ))),
        None => Ok(()),
    }
}

/// Tells `store` every [`RUN_HEARTBEAT`] that run `run_id`'s process is alive, until dropped. A
/// beat that fails is not the debate's failure (its own writes report a lost store); the next
/// one tries again.
async fn keep_alive(store: &dyn Store, run_id: &str) -> std::convert::Infallible {
    loop {
        let _ = store.beat_run(run_id).await;
        tokio::time::sleep(RUN_HEARTBEAT).await;
    }
}
