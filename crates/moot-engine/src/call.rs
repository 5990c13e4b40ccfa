//! One call to a model: the request a planned call becomes, and asking it — with its one
//! re-ask, under the call's own time budget — refusing completions no model could produce; or,
//! when the same request is in flight already, waiting for that call's answer (see
//! [`crate::flight`]).

use std::sync::Arc;
use std::time::Duration;

use moot_backends::{BackendError, Completion, CompletionRequest, LanguageModel};
use moot_core::debate::{CallKey, DebateSpec, Slot};
use moot_core::protocol::PlannedCall;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::budget::call_over_time;
use crate::engine_config::EngineAgent;
use crate::flight::{Flight, Lead};
use crate::reask::Reask;

/// The request `call` sends to its agent's model.
pub(crate) fn request_for(
    spec: &DebateSpec,
    agent: &EngineAgent,
    call: &PlannedCall,
) -> CompletionRequest {
    // Judgements have nothing in common with the agent's conversation: running them outside
    // its session keeps the agent's cached prefix for its next answer.
    let conversation = match call.slot {
        Slot::Judge(_) => None,
        _ => Some(spec.agents[call.agent].id.clone()),
    };
    CompletionRequest {
        messages: call.messages.clone(),
        params: agent.params.clone(),
        mode: call.mode,
        conversation,
    }
}

/// What asking a call came to.
pub(crate) struct Asked {
    pub key: CallKey,
    pub result: Result<Completion, BackendError>,
    /// The re-ask's result, when the first response had no readable answer.
    pub reasked: Option<Result<Completion, BackendError>>,
    /// From when the call got its turn (not from when it started waiting for one).
    pub latency: Duration,
    /// Answered by the flight this call followed, not by a call of its own: recorded as a
    /// cache hit.
    pub shared: bool,
    /// The flight this call led, to hand its answer over once it is stored.
    pub lead: Option<Lead>,
}

/// Everything one call needs to be asked on its own, away from the debate.
pub(crate) struct Ask {
    pub key: CallKey,
    pub model: Arc<dyn LanguageModel>,
    pub request: CompletionRequest,
    pub reask: Option<Reask>,
    /// The call's own time budget, re-ask included.
    pub time_limit: Option<Duration>,
    /// The request's flight, when the cache is on.
    pub flight: Option<Flight>,
}

impl Ask {
    /// Waits for a turn among the round's calls, then asks. A follower of a flight waits for
    /// its leader's answer instead, without a turn, and asks only if it comes to lead.
    pub(crate) async fn run(self, turns: Arc<Semaphore>) -> Asked {
        let key = self.key;
        let lead = match self.flight {
            Some(Flight::Follow(follow)) => match follow.answer().await {
                Ok(completion) => {
                    return Asked {
                        key,
                        result: Ok(completion),
                        reasked: None,
                        latency: Duration::ZERO,
                        shared: true,
                        lead: None,
                    }
                }
                // The leader left without an answer, and this call leads now.
                Err(lead) => Some(lead),
            },
            Some(Flight::Lead(lead)) => Some(lead),
            None => None,
        };
        let _turn = turns.acquire_owned().await;
        let began = Instant::now();
        let asking = ask_with_reask(self.model, self.request, self.reask);
        let (result, reasked) = match self.time_limit {
            Some(max) => tokio::time::timeout(max, asking)
                .await
                .unwrap_or_else(|_| (Err(call_over_time(max)), None)),
            None => asking.await,
        };
        Asked {
            key,
            result,
            reasked,
            latency: began.elapsed(),
            shared: false,
            lead,
        }
    }
}

type Reply = Result<Completion, BackendError>;

async fn ask_with_reask(
    model: Arc<dyn LanguageModel>,
    request: CompletionRequest,
    reask: Option<Reask>,
) -> (Reply, Option<Reply>) {
    let first = plausible(model.complete(request.clone()).await);
    let reask = match (&first, reask) {
        (Ok(c), Some(reask)) if reask.needed(c) => reask.request(request, &c.text),
        _ => return (first, None),
    };
    let again = plausible(model.complete(reask).await);
    (first, Some(again))
}

/// A completion whose token counts no model could produce is a broken response. Refused here,
/// where every backend's answers enter the engine, so no sum downstream overflows and no
/// stored count is garbage.
fn plausible(result: Reply) -> Reply {
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
