//! One call to a model: the request a planned call becomes, and asking it — with its one
//! re-ask, under the call's own time budget — refusing completions no model could produce; or,
//! when the same request is in flight already, waiting for that call's answer (see
//! [`crate::flight`]).

use std::sync::Arc;
use std::time::Duration;

use std::collections::HashMap;

use moot_backends::{BackendError, Completion, CompletionRequest, LanguageModel, PromptCache};
use moot_core::chat::ChatMessage;
use moot_core::debate::{CallKey, DebateSpec, Slot};
use moot_core::protocol::PlannedCall;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::budget::call_over_time;
use crate::engine_config::EngineAgent;
use crate::flight::{Flight, Lead};
use crate::reask::Reask;
use crate::spans;
use tracing::Instrument;

/// The request `call` sends to its agent's model, with what the provider's prompt cache is
/// told of it.
pub(crate) fn request_for(
    spec: &DebateSpec,
    agent: &EngineAgent,
    call: &PlannedCall,
    prompt_cache: PromptCache,
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
        prompt_cache,
    }
}

/// The prompt-cache key of run `run_id`'s calls: a hash of the run id, so that it names the
/// debate to a provider and says nothing of it (the id may carry a name its user gave).
pub(crate) fn prompt_cache_key(run_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(b"moot prompt cache\0")
        .chain_update(run_id.as_bytes())
        .finalize();
    let mut key = String::from("moot-");
    for b in &digest[..16] {
        use std::fmt::Write;
        let _ = write!(key, "{b:02x}");
    }
    key
}

/// For each call (its model's name and its messages), how many of its leading messages another
/// call to the same model sends too: the part of the prompt a provider's cache can hold for
/// all of them. Each distinct message gets a number and each distinct prefix one (its shorter
/// prefix's and its last message's), so the work is one hash of each message and a few map
/// lookups per message, however long the conversations grow.
pub(crate) fn shared_messages(calls: &[(&str, &[ChatMessage])]) -> Vec<usize> {
    let mut messages: HashMap<&ChatMessage, usize> = HashMap::new();
    // Prefix 0 is the empty one.
    let mut prefixes: HashMap<(usize, usize), usize> = HashMap::new();
    let chains: Vec<Vec<usize>> = calls
        .iter()
        .map(|(_, call)| {
            let mut prefix = 0;
            call.iter()
                .map(|m| {
                    let next = messages.len();
                    let message = *messages.entry(m).or_insert(next);
                    let next = prefixes.len() + 1;
                    prefix = *prefixes.entry((prefix, message)).or_insert(next);
                    prefix
                })
                .collect()
        })
        .collect();
    let mut senders: HashMap<(&str, usize), usize> = HashMap::new();
    for ((model, _), chain) in calls.iter().zip(&chains) {
        for &prefix in chain {
            *senders.entry((*model, prefix)).or_default() += 1;
        }
    }
    calls
        .iter()
        .zip(&chains)
        .map(|((model, _), chain)| {
            chain
                .iter()
                .rposition(|&p| senders.get(&(*model, p)).is_some_and(|&n| n > 1))
                .map_or(0, |i| i + 1)
        })
        .collect()
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
        // A follower's wait is bounded as its own call would be: a leader in another debate
        // (with another budget, or none) cannot hold it past its `max_agent_time_sec`.
        let began_following = Instant::now();
        let lead = match self.flight {
            Some(Flight::Follow(follow)) => match within(self.time_limit, follow.answer()).await {
                Err(over_time) => {
                    return Asked {
                        key,
                        result: Err(over_time),
                        reasked: None,
                        latency: began_following.elapsed(),
                        shared: false,
                        lead: None,
                    };
                }
                Ok(Ok(completion)) => {
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
                Ok(Err(lead)) => Some(lead),
            },
            Some(Flight::Lead(lead)) => Some(lead),
            None => None,
        };
        let _turn = turns.acquire_owned().await;
        let began = Instant::now();
        let asking = ask_with_reask(self.model, self.request, self.reask);
        let (result, reasked) = within(self.time_limit, asking)
            .await
            .unwrap_or_else(|over_time| (Err(over_time), None));
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

/// `future`'s output, or the call's over-time error when `limit` (its `max_agent_time_sec`)
/// passes first.
async fn within<T>(
    limit: Option<Duration>,
    future: impl std::future::Future<Output = T>,
) -> Result<T, BackendError> {
    match limit {
        Some(max) => tokio::time::timeout(max, future)
            .await
            .map_err(|_| call_over_time(max)),
        None => Ok(future.await),
    }
}

type Reply = Result<Completion, BackendError>;

async fn ask_with_reask(
    model: Arc<dyn LanguageModel>,
    request: CompletionRequest,
    reask: Option<Reask>,
) -> (Reply, Option<Reply>) {
    let first = complete(&*model, request.clone()).await;
    let reask = match (&first, reask) {
        (Ok(c), Some(reask)) if reask.needed(c) => reask.request(request, &c.text),
        _ => return (first, None),
    };
    let again = complete(&*model, reask).await;
    (first, Some(again))
}

/// One request to `model`, in its `chat` span.
async fn complete(model: &dyn LanguageModel, request: CompletionRequest) -> Reply {
    let span = spans::chat(model, &request);
    let reply = plausible(model.complete(request).instrument(span.clone()).await);
    spans::chat_ended(&span, &reply);
    reply
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_share_the_prefix_another_call_to_their_model_sends() {
        let (sys, q) = (ChatMessage::system("s"), ChatMessage::user("q"));
        let own = |a: &str| ChatMessage::assistant(a);
        let peers = |p: &str| ChatMessage::user(p);
        let a = vec![sys.clone(), q.clone(), own("1"), peers("2 and 3")];
        let b = vec![sys.clone(), q.clone(), own("2"), peers("1 and 3")];
        let c = vec![sys.clone(), q.clone(), own("1"), peers("2 and 3"), own("x")];
        let lone = vec![ChatMessage::system("judge"), q.clone()];
        let calls: Vec<(&str, &[ChatMessage])> = vec![
            ("m", &a),
            ("m", &b),
            ("m", &c),
            ("m", &lone),
            // The same prompt to another model shares nothing with the first model's.
            ("other", &b),
        ];
        assert_eq!(shared_messages(&calls), vec![4, 2, 4, 0, 0]);
        // A first round: every prompt the same, shared whole.
        let first = vec![sys, q];
        let calls: Vec<(&str, &[ChatMessage])> = vec![("m", &first), ("m", &first)];
        assert_eq!(shared_messages(&calls), vec![2, 2]);
        assert_eq!(shared_messages(&[("m", &first[..])]), vec![0]);
        assert_eq!(shared_messages(&[]), Vec::<usize>::new());
    }

    #[tokio::test(start_paused = true)]
    async fn a_followers_wait_is_bounded_by_its_own_call_time() {
        let store = moot_store::MemoryStore::default();
        // A leader that never answers (its call is in another debate, with no bound).
        let _leader = crate::flight::join(&store, "k");
        let follow = crate::flight::join(&store, "k");
        assert!(matches!(follow, Flight::Follow(_)));
        let model: Arc<dyn LanguageModel> = Arc::new(moot_backends::scripted::ScriptedModel::new(
            "m",
            [moot_backends::scripted::Scripted::reply("unused")],
        ));
        let asked = Ask {
            key: CallKey::answer(0, 0),
            model,
            request: CompletionRequest::new(vec![ChatMessage::user("q")]),
            reask: None,
            time_limit: Some(Duration::from_secs(30)),
            flight: Some(follow),
        }
        .run(Arc::new(Semaphore::new(1)))
        .await;
        assert!(
            matches!(asked.result, Err(BackendError::TimeLimit(_))),
            "{:?}",
            asked.result
        );
        assert!(!asked.shared);
        assert_eq!(asked.latency, Duration::from_secs(30));
    }

    #[test]
    fn the_prompt_cache_key_is_a_hash_of_the_run_id() {
        let key = prompt_cache_key("r1795948789113f438-my-secret-name");
        assert_eq!(key.len(), "moot-".len() + 32);
        assert!(key.starts_with("moot-") && !key.contains("secret"), "{key}");
        assert_eq!(key, prompt_cache_key("r1795948789113f438-my-secret-name"));
        assert_ne!(key, prompt_cache_key("r1795948789113f439-my-secret-name"));
    }
}
