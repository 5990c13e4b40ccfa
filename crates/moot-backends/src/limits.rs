//! Rate limits around any backend, per (provider, model) and shared by every debate in the
//! process: requests per minute and tokens per minute (`governor`), and a cap on calls in
//! flight. Agents naming the same model behind the same provider share one set of limits.
//!
//! Allowances refill continuously and a burst is one second's share (`ceil(n / 60)`), so calls
//! spread evenly over the minute instead of spending the minute's allowance at once and meeting
//! the provider's own limiter.
//!
//! Tokens are charged before a call, as an estimate: the prompt's characters / 4 plus the
//! call's `max_tokens` (a provider counts the completion's budget against the limit too),
//! in burst-sized parts, so a large call waits for its whole allowance.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, LazyLock, Mutex};

use async_trait::async_trait;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::Semaphore;

use crate::{BackendError, Capabilities, Completion, CompletionRequest, LanguageModel};

/// Limits of one (provider, model); `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub requests_per_minute: Option<NonZeroU32>,
    pub tokens_per_minute: Option<NonZeroU32>,
    pub max_in_flight: Option<usize>,
}

impl Limits {
    pub fn is_unlimited(&self) -> bool {
        *self == Limits::default()
    }
}

/// The limiters of one (provider, model).
#[derive(Debug)]
pub struct SharedLimits {
    limits: Limits,
    requests: Option<DefaultDirectRateLimiter>,
    /// The limiter and its burst.
    tokens: Option<(DefaultDirectRateLimiter, NonZeroU32)>,
    in_flight: Option<Semaphore>,
}

impl SharedLimits {
    fn new(limits: Limits) -> SharedLimits {
        SharedLimits {
            limits,
            requests: limits
                .requests_per_minute
                .map(|n| RateLimiter::direct(per_minute(n).0)),
            tokens: limits.tokens_per_minute.map(|n| {
                let (quota, burst) = per_minute(n);
                (RateLimiter::direct(quota), burst)
            }),
            in_flight: limits.max_in_flight.map(|n| Semaphore::new(n.max(1))),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }
}

/// `n` per minute, refilled continuously, with a burst of one second's share.
fn per_minute(n: NonZeroU32) -> (Quota, NonZeroU32) {
    let burst = NonZeroU32::new(n.get().div_ceil(60)).unwrap_or(NonZeroU32::MIN);
    (Quota::per_minute(n).allow_burst(burst), burst)
}

static REGISTRY: LazyLock<Mutex<HashMap<String, Arc<SharedLimits>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The process-wide limiters of `key` (a model's [`LanguageModel::name`]). The first caller's
/// limits hold for the key; a later caller asking for other limits gets an error naming both,
/// since two budgets for one account cannot both be right.
pub fn shared(key: &str, limits: Limits) -> Result<Arc<SharedLimits>, BackendError> {
    let mut registry = REGISTRY
        .lock()
        .map_err(|_| BackendError::Config("the rate-limit registry is poisoned".into()))?;
    match registry.get(key) {
        Some(existing) if existing.limits == limits => Ok(existing.clone()),
        Some(existing) => Err(BackendError::Config(format!(
            "{key} has rate limits {:?} already; it cannot also have {limits:?}",
            existing.limits
        ))),
        None => {
            let entry = Arc::new(SharedLimits::new(limits));
            registry.insert(key.to_string(), entry.clone());
            Ok(entry)
        }
    }
}

/// The tokens charged for a request before it is sent (see the module docs).
pub fn estimated_tokens(request: &CompletionRequest) -> u32 {
    let chars: usize = request.messages.iter().map(|m| m.content.len()).sum();
    let prompt = chars.div_ceil(4) as u64;
    let completion = u64::from(request.params.max_tokens.unwrap_or(0));
    (prompt + completion).clamp(1, u64::from(u32::MAX)) as u32
}

/// A backend whose calls wait for their (provider, model)'s limits.
#[derive(Debug)]
pub struct LimitedModel {
    inner: Arc<dyn LanguageModel>,
    shared: Arc<SharedLimits>,
}

impl LimitedModel {
    pub fn new(inner: Arc<dyn LanguageModel>, shared: Arc<SharedLimits>) -> LimitedModel {
        LimitedModel { inner, shared }
    }
}

#[async_trait]
impl LanguageModel for LimitedModel {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        // Held until the call ends (or is dropped with it).
        let _slot = match &self.shared.in_flight {
            Some(s) => Some(s.acquire().await.map_err(|_| BackendError::Cancelled)?),
            None => None,
        };
        if let Some(r) = &self.shared.requests {
            r.until_ready().await;
        }
        if let Some((limiter, burst)) = &self.shared.tokens {
            let mut owed = estimated_tokens(&request);
            while owed > 0 {
                let part = owed.min(burst.get());
                let n = NonZeroU32::new(part).unwrap_or(NonZeroU32::MIN);
                // A part never exceeds the burst, so the limiter always has the capacity.
                limiter
                    .until_n_ready(n)
                    .await
                    .map_err(|e| BackendError::Config(format!("tokens per minute: {e}")))?;
                owed -= part;
            }
        }
        self.inner.complete(request).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::scripted::{Scripted, ScriptedModel};
    use crate::ChatMessage;

    fn request(chars: usize, max_tokens: u32) -> CompletionRequest {
        let mut r = CompletionRequest::new(vec![ChatMessage::user("x".repeat(chars))]);
        r.params.max_tokens = Some(max_tokens);
        r
    }

    fn limited(key: &str, limits: Limits) -> (Arc<ScriptedModel>, LimitedModel) {
        let inner = Arc::new(ScriptedModel::new(key, [Scripted::reply("ok")]));
        let model = LimitedModel::new(inner.clone(), shared(key, limits).unwrap());
        (inner, model)
    }

    #[test]
    fn estimates_count_the_prompt_and_the_completion_budget() {
        assert_eq!(estimated_tokens(&request(400, 50)), 150);
        assert_eq!(estimated_tokens(&request(1, 0)), 1);
    }

    #[test]
    fn one_key_has_one_set_of_limits() {
        let limits = Limits {
            requests_per_minute: NonZeroU32::new(60),
            ..Limits::default()
        };
        let a = shared("limits-test:one-key", limits).unwrap();
        let b = shared("limits-test:one-key", limits).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "agents of one model share the limiter");
        let other = Limits {
            requests_per_minute: NonZeroU32::new(30),
            ..Limits::default()
        };
        let err = shared("limits-test:one-key", other).unwrap_err();
        assert!(err.to_string().contains("limits-test:one-key"), "{err}");
    }

    #[tokio::test]
    async fn requests_per_minute_spread_calls_out() {
        // 120 a minute: bursts of 2, then one every half second.
        let (inner, model) = limited(
            "limits-test:rpm",
            Limits {
                requests_per_minute: NonZeroU32::new(120),
                ..Limits::default()
            },
        );
        let started = Instant::now();
        for _ in 0..5 {
            model.complete(request(4, 1)).await.unwrap();
        }
        let took = started.elapsed();
        assert_eq!(inner.requests().len(), 5);
        assert!(took >= Duration::from_millis(1400), "{took:?}");
    }

    #[tokio::test]
    async fn tokens_per_minute_charge_large_calls_in_parts() {
        // 6000 a minute = 100 a second; three calls of 100 tokens each need 2 s after the burst.
        let (_, model) = limited(
            "limits-test:tpm",
            Limits {
                tokens_per_minute: NonZeroU32::new(6000),
                ..Limits::default()
            },
        );
        let started = Instant::now();
        model.complete(request(200, 50)).await.unwrap();
        let first = started.elapsed();
        // 250 tokens: more than a burst, so it is charged in parts and not refused.
        model.complete(request(800, 50)).await.unwrap();
        let took = started.elapsed();
        assert!(first < Duration::from_millis(500), "{first:?}");
        assert!(took >= Duration::from_millis(2400), "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn calls_in_flight_are_capped() {
        let inner = Arc::new(ScriptedModel::new(
            "limits-test:in-flight",
            [Scripted::delayed("ok", Duration::from_secs(1))],
        ));
        let shared = shared(
            "limits-test:in-flight",
            Limits {
                max_in_flight: Some(2),
                ..Limits::default()
            },
        )
        .unwrap();
        let model = Arc::new(LimitedModel::new(inner, shared));
        let started = tokio::time::Instant::now();
        let calls: Vec<_> = (0..4)
            .map(|_| {
                let m = model.clone();
                tokio::spawn(async move { m.complete(request(4, 1)).await })
            })
            .collect();
        for c in calls {
            c.await.unwrap().unwrap();
        }
        // Two at a time, a second each.
        assert_eq!(started.elapsed(), Duration::from_secs(2));
    }
}
