//! One round: its calls run concurrently (at most `max_concurrent_calls` at once), the round
//! proceeds once its quorum answered and the soft deadline passed, and whatever still runs at
//! the hard stop is cancelled by dropping it (which drops its HTTP request or kills its process
//! group) and recorded as missing, never as a kept answer.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;
use moot_backends::{BackendError, Completion, ErrorClass, PromptCache};
use moot_core::chat::ChatMessage;
use moot_core::debate::{CallKey, Outcome, Slot, Transcript};
use moot_core::protocol::PlannedCall;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tracing::{Instrument, Span};

use crate::budget::{fit_prompt, hard_stop, HardStop};
use crate::cache::{cache_entry, cached, read_entry, request_key, trim};
use crate::call::{prompt_cache_key, request_for, shared_messages, Ask, Asked};
use crate::engine_config::EngineConfig;
use crate::error::EngineError;
use crate::flight::{self, Flight, Lead};
use crate::fork::{reused, Fork};
use crate::observer::Observer;
use crate::reask::{self, Reask};
use crate::recording::{CallEnd, CallLog};
use crate::spans;

/// What one round's calls came to, for deciding whether later rounds are worth asking.
#[derive(Debug, Default)]
pub(crate) struct RoundTally {
    asked: usize,
    /// Calls that failed with an error retrying cannot fix (every other call answered, was
    /// cancelled at a deadline, or failed in a way worth another try).
    failed_permanently: usize,
}

impl RoundTally {
    /// No call of the round is worth repeating: every one failed in a way retrying cannot fix.
    pub(crate) fn nothing_worth_repeating(&self) -> bool {
        self.asked > 0 && self.failed_permanently == self.asked
    }
}

/// What a round runs with, lent by its debate.
pub(crate) struct RoundContext<'d> {
    pub log: CallLog<'d>,
    pub config: &'d EngineConfig,
    /// When the debate's run started (for its time budget).
    pub debate_started: Instant,
    pub observer: &'d dyn Observer,
    /// The fork this debate is, if it is one: what it reuses and resamples.
    pub fork: Option<&'d Fork>,
    /// The protocol's name and why it reads token logprobs, when it does
    /// (`Protocol::needs_logprobs`): an answer that comes back without them is a failed call.
    pub needs_logprobs: Option<(&'d str, &'static str)>,
}

/// Runs `calls` (none of them skipped) as round `round`, recording every one.
pub(crate) async fn run_round(
    context: RoundContext<'_>,
    round: usize,
    calls: Vec<PlannedCall>,
) -> Result<RoundTally, EngineError> {
    let mut run = RoundRun::new(context, round, &calls);
    let turns = Arc::new(Semaphore::new(run.config.max_concurrent_calls.max(1)));
    let mut pending = FuturesUnordered::new();
    // The time every call of the round must end by: a backend that waits on a person tells
    // them so.
    let hard = crate::budget::hard_stop(run.config, run.debate_started.elapsed());
    let deadline = (run.start + hard.after).into_std();
    for ask in run.start(calls).await {
        let span = run.turn_span(&ask.key);
        let call = moot_backends::deadline::scope(deadline, ask.run(turns.clone()));
        pending.push(call.instrument(span).boxed());
    }
    // Calls answered from the cache or refused before asking, written together.
    run.flush().await?;
    let stop = run.collect(&mut pending).await?;
    // Whatever still runs is cancelled by dropping it.
    drop(pending);
    run.cancel_waiting(stop).await?;
    Ok(run.tally)
}

/// Why a round stopped waiting for its calls.
enum Stop {
    /// Every call ended, or the quorum answered after the soft deadline.
    Settled,
    Hard(HardStop),
}

/// A round while it runs.
struct RoundRun<'d> {
    log: CallLog<'d>,
    config: &'d EngineConfig,
    debate_started: Instant,
    observer: &'d dyn Observer,
    fork: Option<&'d Fork>,
    needs_logprobs: Option<(&'d str, &'static str)>,
    start: Instant,
    tally: RoundTally,
    /// Responses that count toward the quorum so far.
    responded: usize,
    quorum: usize,
    /// Calls asked and not yet back.
    waiting: BTreeMap<CallKey, PlannedCall>,
    /// Calls that ended and are not written yet, and the responses they add to the cache
    /// (written together by [`RoundRun::flush`]).
    ended: Vec<(PlannedCall, CallEnd)>,
    to_cache: Vec<(String, serde_json::Value)>,
    /// The flights whose leaders answered, with the answer each hands over once `to_cache` is
    /// written (see [`crate::flight`]).
    handing: Vec<(Lead, Completion)>,
    /// The request key of each call asked (see [`request_key`]): recorded with the call, and
    /// the cache's key when the cache is on.
    request_keys: BTreeMap<CallKey, String>,
    /// Each call's span (an agent's turn) until it ends: empty when nothing listens.
    turn_spans: BTreeMap<CallKey, Span>,
}

type Pending = FuturesUnordered<BoxFuture<'static, Asked>>;

impl<'d> RoundRun<'d> {
    fn new(context: RoundContext<'d>, round: usize, calls: &[PlannedCall]) -> RoundRun<'d> {
        let (responded, quorum) = quorum(
            context.log.transcript,
            context.config.min_agents,
            round,
            calls,
        );
        RoundRun {
            log: context.log,
            config: context.config,
            debate_started: context.debate_started,
            observer: context.observer,
            fork: context.fork,
            needs_logprobs: context.needs_logprobs,
            start: Instant::now(),
            tally: RoundTally {
                asked: calls.len(),
                failed_permanently: 0,
            },
            responded,
            quorum,
            waiting: BTreeMap::new(),
            request_keys: BTreeMap::new(),
            ended: Vec::new(),
            to_cache: Vec::new(),
            handing: Vec::new(),
            turn_spans: BTreeMap::new(),
        }
    }

    /// The span of call `key`'s turn (a disabled one when nothing listens).
    fn turn_span(&self, key: &CallKey) -> Span {
        self.turn_spans.get(key).cloned().unwrap_or_else(Span::none)
    }

    /// What asking each of `calls` takes; calls settled without asking (a prompt over budget,
    /// a request a fork's parent made already, a request answered from the cache) are noted as
    /// ended instead.
    async fn start(&mut self, calls: Vec<PlannedCall>) -> Vec<Ask> {
        if spans::listening() {
            for call in &calls {
                let span = spans::agent_turn(
                    self.log.run_id,
                    &self.log.spec.agents[call.agent].id,
                    &*self.log.agents[call.agent].model,
                    call.round,
                    &call.slot.label(),
                );
                self.turn_spans.insert(call.key(), span);
            }
        }
        let mut fitted = Vec::with_capacity(calls.len());
        for mut call in calls {
            if let Err(reason) = fit_prompt(&self.config.budget, &mut call) {
                self.tally.failed_permanently += 1;
                self.finish(call, CallEnd::refused(reason));
                continue;
            }
            fitted.push(call);
        }
        // What the providers' prompt caches are told: the debate, and the part of each prompt
        // that other calls of the round to the same model send too. Worked out only for the
        // models that read it (hashing every message of a round is a tenth of a simulated
        // call's cost).
        let names: Vec<Option<String>> = fitted
            .iter()
            .map(|c| {
                let model = &self.log.agents[c.agent].model;
                model.capabilities().prompt_cache.then(|| model.name())
            })
            .collect();
        let prompts: Vec<(&str, &[ChatMessage])> = names
            .iter()
            .zip(&fitted)
            .filter_map(|(name, c)| Some((name.as_deref()?, c.messages.as_slice())))
            .collect();
        let mut shared = shared_messages(&prompts).into_iter();
        let cache_key = (!prompts.is_empty()).then(|| prompt_cache_key(self.log.run_id));
        let mut requests = Vec::with_capacity(fitted.len());
        for (call, name) in fitted.into_iter().zip(&names) {
            let agent = &self.log.agents[call.agent];
            let prompt_cache = match name {
                Some(_) => PromptCache {
                    key: cache_key.clone(),
                    shared_messages: shared.next().unwrap_or(0),
                },
                None => PromptCache::default(),
            };
            let mut request = request_for(self.log.spec, agent, &call, prompt_cache);
            if let Some(fork) = self.fork {
                request.params = fork.sampling(call.round, request.params);
            }
            let key = request_key(&agent.model.name(), &request, call.agent);
            self.request_keys.insert(call.key(), key.clone());
            // The parent asked exactly this here: its answer is the fork's, at no cost.
            if let Some(parent) = self.fork.and_then(|f| {
                f.reusable(&call.key(), &key)
                    .map(|c| reused(c, self.log.run_id, f.parent()))
            }) {
                self.responded += 1;
                self.finish(call, CallEnd::reused(parent));
                continue;
            }
            requests.push((call, request, key));
        }
        // With the cache on, each request joins its flight before the cache is read: a
        // flight leaves the registry only once its answer is in the cache, so a request finds
        // the answer in one or the other (see `crate::flight`).
        let flights: Vec<Option<Flight>> = requests
            .iter()
            .map(|(call, _, key)| {
                self.cacheable(call.agent)
                    .then(|| flight::join(self.log.store, key))
            })
            .collect();
        // The cache is read and written here and in `answered`, never inside the call
        // futures: a future holding a database connection while it is not being polled would
        // starve the store writes this task awaits.
        let hits = if self.config.cache {
            let keys: Vec<&str> = requests.iter().map(|(_, _, key)| key.as_str()).collect();
            cached(self.log.store, &keys).await
        } else {
            Vec::new()
        };
        let mut hits = hits.into_iter();
        let mut asks = Vec::with_capacity(requests.len());
        for ((call, request, _), flight) in requests.into_iter().zip(flights) {
            let hit = hits.next().flatten();
            if let Some(c) = hit.filter(|_| self.cacheable(call.agent)) {
                // A leader's followers get the hit too; a follower stops following.
                if let Some(Flight::Lead(lead)) = flight {
                    lead.answer(c.clone());
                }
                self.responded += 1;
                self.finish(call, CallEnd::cached(c));
                continue;
            }
            let key = call.key();
            asks.push(Ask {
                key,
                model: self.log.agents[call.agent].model.clone(),
                request,
                reask: Reask::for_call(
                    self.config.reask,
                    self.log.spec,
                    &call,
                    crate::reask::previous_answer(self.log.transcript, call.round, call.agent),
                ),
                time_limit: self.config.budget.max_call_time,
                flight,
            });
            self.waiting.insert(key, call);
        }
        asks
    }

    /// Whether `agent`'s answers go through the request cache (and its flights): when the
    /// cache is on, unless a person answers for the agent (a person is asked every time).
    fn cacheable(&self, agent: usize) -> bool {
        self.config.cache
            && !self
                .log
                .agents
                .get(agent)
                .is_some_and(|a| a.model.capabilities().person)
    }

    /// `result`, or the failure it is for a protocol that reads token logprobs when an answer
    /// came back without them: a backend that can give them (`openai`) may be served by a
    /// model server that does not, and the protocol would go on reading nothing (`sid-et`
    /// never stopping early) while the run says it ran. Failed, the call is neither cached nor
    /// read, and says why.
    fn with_logprobs(
        &self,
        key: &CallKey,
        result: Result<Completion, BackendError>,
    ) -> Result<Completion, BackendError> {
        match (self.needs_logprobs, result) {
            (Some((protocol, why)), Ok(c))
                if key.slot == Slot::Answer && c.logprob_summary().is_none() =>
            {
                // Permanent: the server will not start giving them, so later rounds, which
                // would fail the same way, are skipped.
                Err(BackendError::Config(format!(
                    "the model returned no token logprobs, which {protocol} needs ({why}); use a model server that returns them"
                )))
            }
            (_, result) => result,
        }
    }

    /// Records calls as they come back until the round may proceed or must stop.
    async fn collect(&mut self, pending: &mut Pending) -> Result<Stop, EngineError> {
        let stop = hard_stop(self.config, self.debate_started.elapsed());
        let soft = tokio::time::sleep_until(self.start + self.config.soft_timeout.min(stop.after));
        let hard = tokio::time::sleep_until(self.start + stop.after);
        tokio::pin!(soft, hard);
        let mut soft_passed = false;
        while !pending.is_empty() {
            if soft_passed && self.responded >= self.quorum {
                break;
            }
            tokio::select! {
                Some(asked) = pending.next() => {
                    self.answered(asked);
                    // Calls that ended meanwhile are written with it, in one batch.
                    while let Some(Some(asked)) = pending.next().now_or_never() {
                        self.answered(asked);
                    }
                    self.flush().await?;
                }
                _ = &mut soft, if !soft_passed => soft_passed = true,
                _ = &mut hard => return Ok(Stop::Hard(stop)),
            }
        }
        Ok(Stop::Settled)
    }

    fn answered(&mut self, asked: Asked) {
        let Some(mut call) = self.waiting.remove(&asked.key) else {
            return;
        };
        let Asked {
            key,
            result,
            reasked,
            latency,
            shared,
            lead,
        } = asked;
        let result = self.with_logprobs(&key, result);
        // The answer of the flight this call followed: recorded as the cache hit it stands
        // for (a leader hands over only what it stored in the cache).
        let result = match (shared, result) {
            (true, Ok(c)) => {
                self.responded += 1;
                self.finish(call, CallEnd::cached(c));
                return;
            }
            (_, result) => result,
        };
        if let Some(again) = &reasked {
            call.notes.reask = Some(reask::note(again, self.log.redactor));
        }
        match &result {
            Ok(c) => {
                self.responded += 1;
                let cacheable = self.cacheable(call.agent);
                if let Some(k) = self.request_keys.get(&key).filter(|_| cacheable) {
                    if let Some(entry) = cache_entry(self.log.redactor, k, c) {
                        // What a lookup of the entry would give, handed to the followers
                        // once it is written. A leader with nothing to hand over leaves its
                        // flight now (dropped below), to one of its followers.
                        if let Some((lead, c)) = lead.zip(read_entry(&entry.1)) {
                            self.handing.push((lead, c));
                        }
                        self.to_cache.push(entry);
                    }
                }
            }
            Err(e) => {
                if matches!(e.class(), ErrorClass::Permanent | ErrorClass::ContextLength) {
                    self.tally.failed_permanently += 1;
                }
            }
        }
        self.finish(call, CallEnd::asked(result, latency));
    }

    /// Records every call still waiting as missing, cancelled for the reason `stop` gives.
    async fn cancel_waiting(&mut self, stop: Stop) -> Result<(), EngineError> {
        let reason = match stop {
            Stop::Hard(HardStop {
                after,
                set_by_budget: true,
            }) => format!(
                "budget: round or debate time ({} ms) reached: cancelled",
                after.as_millis()
            ),
            Stop::Hard(_) => format!(
                "hard deadline ({} ms) reached: cancelled",
                self.config.hard_timeout.as_millis()
            ),
            Stop::Settled => format!(
                "soft deadline ({} ms) passed with {} of {} responses: cancelled",
                self.config.soft_timeout.as_millis(),
                self.responded,
                self.tally.asked
            ),
        };
        let elapsed = self.start.elapsed();
        for (_, call) in std::mem::take(&mut self.waiting) {
            self.finish(call, CallEnd::cancelled(reason.clone(), elapsed));
        }
        self.flush().await
    }

    /// Notes how `call` ended, to be written by the next [`RoundRun::flush`].
    fn finish(&mut self, call: PlannedCall, end: CallEnd) {
        if let Some(span) = self.turn_spans.remove(&call.key()) {
            let (outcome, text) = end.outcome();
            let error = match outcome {
                "cancelled" => Some("timeout"),
                "error" | "refused" => Some(outcome),
                _ => None,
            };
            spans::turn_ended(&span, outcome, error);
            if spans::capturing() {
                spans::turn_content(&span, self.log.redactor, &call.messages, text);
            }
        }
        let end = end.with_request_key(self.request_keys.get(&call.key()).cloned());
        self.ended.push((call, end));
    }

    /// Writes the calls that ended since the last flush (and their cache entries) in one batch,
    /// then tells the observer about each; trims the cache when it has a limit.
    async fn flush(&mut self) -> Result<(), EngineError> {
        if self.ended.is_empty() && self.to_cache.is_empty() {
            return Ok(());
        }
        let cached_any = !self.to_cache.is_empty();
        let ended = std::mem::take(&mut self.ended);
        let to_cache = std::mem::take(&mut self.to_cache);
        // Dropped unanswered if the write fails: their flights pass to followers.
        let handing = std::mem::take(&mut self.handing);
        let written = self
            .log
            .write_all(ended, to_cache)
            .instrument(spans::store_write("calls"))
            .await?;
        for (lead, completion) in handing {
            lead.answer(completion);
        }
        for key in written {
            self.observer
                .call_finished(key, self.log.transcript.get_call(&key));
        }
        if let (true, Some(keep)) = (cached_any, self.config.cache_max_entries) {
            trim(self.log.store, keep).await;
        }
        Ok(())
    }
}

/// Responses already counted toward the round's quorum, and the quorum. Answers proceed once
/// `min_agents` of the round answered (counting answers recorded before a resume); extra calls
/// (judgements, challenges) once as many of them are back.
fn quorum(
    transcript: &Transcript,
    min_agents: usize,
    round: usize,
    calls: &[PlannedCall],
) -> (usize, usize) {
    if !calls.iter().all(|c| c.slot == Slot::Answer) {
        return (0, min_agents.clamp(1, calls.len().max(1)));
    }
    let agents = transcript.agents();
    let already = (0..agents)
        // An agent the protocol let skip the round has settled its answer too.
        .filter(|&a| {
            matches!(
                transcript.get(round, a),
                Some(Outcome::Responded { .. } | Outcome::Skipped { .. })
            )
        })
        .count();
    (already, min_agents.clamp(1, agents.max(1)))
}
