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
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::Semaphore;

use crate::{BackendError, Capabilities, Completion, CompletionRequest, LanguageModel};
use moot_core::semconv as sc;

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

/// A rate allowance shared beyond this process: by every moot process working one store, so
/// that N workers together keep an agent's `requests_per_minute` and `tokens_per_minute`
/// instead of N times them. moot-backends does not know the store; the application layer
/// (moot-app's `StoreArg`) hands one in with [`share_across_processes`]. `max_in_flight` stays
/// per process (a cap on this process's open connections, not an account's budget).
#[async_trait]
pub trait SharedAllowance: Send + Sync {
    /// Takes `cost` from allowance `key`, which refills at one second a second and whose debt
    /// may run at most `tolerance` ahead (the burst): `Ok(None)` when taken, `Ok(Some(wait))`
    /// when nothing was taken and it could be after `wait`.
    async fn take(
        &self,
        key: &str,
        cost: Duration,
        tolerance: Duration,
    ) -> Result<Option<Duration>, String>;
}

static ACROSS_PROCESSES: LazyLock<RwLock<Option<Arc<dyn SharedAllowance>>>> =
    LazyLock::new(|| RwLock::new(None));

/// Makes every rate limit of this process draw on `allowance` (the store's), or, with `None`,
/// on this process's own limiters again.
pub fn share_across_processes(allowance: Option<Arc<dyn SharedAllowance>>) {
    if let Ok(mut across) = ACROSS_PROCESSES.write() {
        *across = allowance;
    }
}

fn across_processes() -> Option<Arc<dyn SharedAllowance>> {
    ACROSS_PROCESSES.read().ok().and_then(|a| a.clone())
}

/// How long a take that has to wait sleeps at most before asking again: other processes may
/// take meanwhile, and the answer was only an estimate.
const LONGEST_WAIT: Duration = Duration::from_secs(2);

/// Waits until `units` of a `per_minute` limit with bursts of `burst` are taken from the
/// allowance `key` shared across processes. `false`: the shared allowance failed (the store is
/// unreachable), and the caller falls back to this process's own limiter.
async fn take_across(
    across: &dyn SharedAllowance,
    key: &str,
    units: u32,
    per_minute: NonZeroU32,
    burst: NonZeroU32,
) -> bool {
    let unit = Duration::from_secs(60) / per_minute.get();
    let cost = unit * units;
    let tolerance = unit * burst.get();
    loop {
        match across.take(key, cost, tolerance).await {
            Ok(None) => return true,
            Ok(Some(wait)) => tokio::time::sleep(wait.min(LONGEST_WAIT)).await,
            Err(_) => return false,
        }
    }
}

/// The limiters of one (provider, model).
#[derive(Debug)]
pub struct SharedLimits {
    /// The (provider, model) these are for (a model's [`LanguageModel::name`]).
    key: String,
    limits: Limits,
    requests: Option<DefaultDirectRateLimiter>,
    /// The limiter and its burst.
    tokens: Option<(DefaultDirectRateLimiter, NonZeroU32)>,
    in_flight: Option<Semaphore>,
}

impl SharedLimits {
    fn new(key: &str, limits: Limits) -> SharedLimits {
        SharedLimits {
            key: key.to_string(),
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
    let burst = per_minute_burst(n);
    (Quota::per_minute(n).allow_burst(burst), burst)
}

/// One second's share of `n` a minute (at least one).
fn per_minute_burst(n: NonZeroU32) -> NonZeroU32 {
    NonZeroU32::new(n.get().div_ceil(60)).unwrap_or(NonZeroU32::MIN)
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
            let entry = Arc::new(SharedLimits::new(key, limits));
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
        use tracing::Instrument;
        // What the wait took, as a span (for traces, and for the rate-limit metrics).
        let span = if tracing::enabled!(target: sc::TARGET, tracing::Level::INFO) {
            // The model without its server: a label on `/metrics`.
            let limit = self.shared.key.split('@').next().unwrap_or_default();
            tracing::info_span!(
                target: sc::TARGET,
                sc::SPAN_RATE_LIMIT_WAIT,
                otel.kind = "internal",
                { sc::MOOT_RATE_LIMIT_KEY } = limit,
            )
        } else {
            tracing::Span::none()
        };
        // Held until the call ends (or is dropped with it).
        let _slot = self.wait_for_turn(&request).instrument(span).await?;
        self.inner.complete(request).await
    }
}

impl LimitedModel {
    /// Waits until `request` may be sent under every limit; the slot it returns is held while
    /// the call runs.
    async fn wait_for_turn(
        &self,
        request: &CompletionRequest,
    ) -> Result<Option<tokio::sync::SemaphorePermit<'_>>, BackendError> {
        let slot = match &self.shared.in_flight {
            Some(s) => Some(s.acquire().await.map_err(|_| BackendError::Cancelled)?),
            None => None,
        };
        let across = across_processes();
        let shared = &self.shared;
        if let (Some(r), Some(per_minute)) = (&shared.requests, shared.limits.requests_per_minute) {
            let burst = per_minute_burst(per_minute);
            let key = format!("{}#requests", shared.key);
            let taken = match &across {
                Some(a) => take_across(a.as_ref(), &key, 1, per_minute, burst).await,
                None => false,
            };
            if !taken {
                r.until_ready().await;
            }
        }
        if let (Some((limiter, burst)), Some(per_minute)) =
            (&shared.tokens, shared.limits.tokens_per_minute)
        {
            let key = format!("{}#tokens", shared.key);
            let mut owed = estimated_tokens(request);
            while owed > 0 {
                let part = owed.min(burst.get());
                if let Some(a) = &across {
                    if take_across(a.as_ref(), &key, part, per_minute, *burst).await {
                        owed -= part;
                        continue;
                    }
                }
                let n = NonZeroU32::new(part).unwrap_or(NonZeroU32::MIN);
                // A part never exceeds the burst, so the limiter always has the capacity.
                limiter
                    .until_n_ready(n)
                    .await
                    .map_err(|e| BackendError::Config(format!("tokens per minute: {e}")))?;
                owed -= part;
            }
        }
        Ok(slot)
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

    /// A shared allowance that answers for one key only: other tests' limiters, running in
    /// this process at the same time, get an error and keep their own.
    struct Across {
        key_prefix: String,
        takes: Mutex<Vec<(String, Duration, Duration)>>,
        /// How many takes succeed before it says wait.
        budget: Mutex<u32>,
        failing: bool,
    }

    #[async_trait]
    impl SharedAllowance for Across {
        async fn take(
            &self,
            key: &str,
            cost: Duration,
            tolerance: Duration,
        ) -> Result<Option<Duration>, String> {
            if self.failing || !key.starts_with(&self.key_prefix) {
                return Err("not mine".into());
            }
            self.takes
                .lock()
                .unwrap()
                .push((key.to_string(), cost, tolerance));
            let mut budget = self.budget.lock().unwrap();
            if *budget == 0 {
                *budget = 1;
                return Ok(Some(Duration::from_millis(5)));
            }
            *budget -= 1;
            Ok(None)
        }
    }

    #[tokio::test]
    async fn limits_draw_on_the_allowance_shared_across_processes_and_fall_back_without_it() {
        let key = "limits-test:across";
        let across = Arc::new(Across {
            key_prefix: key.to_string(),
            takes: Mutex::new(Vec::new()),
            budget: Mutex::new(2),
            failing: false,
        });
        share_across_processes(Some(across.clone()));
        let limits = Limits {
            requests_per_minute: NonZeroU32::new(120),
            tokens_per_minute: NonZeroU32::new(6000),
            ..Limits::default()
        };
        let (inner, model) = limited(key, limits);
        // 400 characters and 50 tokens of completion: 150 tokens, in parts of the 100-token
        // burst.
        model.complete(request(400, 50)).await.unwrap();
        share_across_processes(None);
        assert_eq!(inner.requests().len(), 1);
        let takes = across.takes.lock().unwrap().clone();
        let ms = Duration::from_millis;
        assert_eq!(
            takes,
            vec![
                (format!("{key}#requests"), ms(500), ms(1000)),
                (format!("{key}#tokens"), ms(1000), ms(1000)),
                // The allowance said wait: asked again.
                (format!("{key}#tokens"), ms(500), ms(1000)),
                (format!("{key}#tokens"), ms(500), ms(1000)),
            ]
        );
        // An allowance that fails (the store is gone) leaves the process's own limits.
        let failing = Arc::new(Across {
            key_prefix: key.to_string(),
            takes: Mutex::new(Vec::new()),
            budget: Mutex::new(0),
            failing: true,
        });
        share_across_processes(Some(failing));
        let (inner, model) = limited("limits-test:across-failing", limits);
        model.complete(request(4, 0)).await.unwrap();
        share_across_processes(None);
        assert_eq!(inner.requests().len(), 1);
    }
}
