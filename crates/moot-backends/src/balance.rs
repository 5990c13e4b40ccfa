//! Several endpoints serving one model (`base_urls = [...]`), used in turn. An endpoint that
//! fails with a retryable error (rate-limited, transient) is taken out for a cooldown (or as long
//! as its `Retry-After` asks) and the call fails over to the next one; when its cooldown is over
//! it is tried again. Permanent errors are the request's fault, not the endpoint's: they are
//! returned at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::{BackendError, Capabilities, Completion, CompletionRequest, LanguageModel};

/// How long a failing endpoint sits out by default.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct Endpoint {
    model: Arc<dyn LanguageModel>,
    /// Out of rotation until then.
    down_until: Mutex<Option<Instant>>,
}

impl Endpoint {
    fn available(&self, now: Instant) -> bool {
        self.down_until
            .lock()
            .map(|d| d.is_none_or(|until| until <= now))
            .unwrap_or(true)
    }

    fn take_out(&self, until: Instant) {
        if let Ok(mut d) = self.down_until.lock() {
            *d = Some(until);
        }
    }

    fn put_back(&self) {
        if let Ok(mut d) = self.down_until.lock() {
            *d = None;
        }
    }

    fn back_at(&self) -> Option<Instant> {
        self.down_until.lock().ok().and_then(|d| *d)
    }
}

/// One model behind several endpoints.
#[derive(Debug)]
pub struct BalancedModel {
    name: String,
    endpoints: Vec<Endpoint>,
    next: AtomicUsize,
    cooldown: Duration,
}

impl BalancedModel {
    /// `name` identifies the model as a whole (rate limits and the request cache key on it).
    pub fn new(
        name: impl Into<String>,
        endpoints: Vec<Arc<dyn LanguageModel>>,
        cooldown: Duration,
    ) -> Result<BalancedModel, BackendError> {
        if endpoints.is_empty() {
            return Err(BackendError::Config("base_urls is empty".into()));
        }
        Ok(BalancedModel {
            name: name.into(),
            endpoints: endpoints
                .into_iter()
                .map(|model| Endpoint {
                    model,
                    down_until: Mutex::new(None),
                })
                .collect(),
            next: AtomicUsize::new(0),
            cooldown,
        })
    }

    /// The order to try endpoints in for one call: the available ones in turn from the next in
    /// rotation, then those out of rotation, soonest back first.
    fn order(&self) -> Vec<usize> {
        let n = self.endpoints.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let now = Instant::now();
        let (mut up, mut down): (Vec<usize>, Vec<usize>) = (0..n)
            .map(|i| (start + i) % n)
            .partition(|&i| self.endpoints[i].available(now));
        down.sort_by_key(|&i| self.endpoints[i].back_at());
        up.extend(down);
        up
    }
}

#[async_trait]
impl LanguageModel for BalancedModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn capabilities(&self) -> Capabilities {
        let all: Vec<Capabilities> = self
            .endpoints
            .iter()
            .map(|e| e.model.capabilities())
            .collect();
        Capabilities {
            logprobs: all.iter().all(|c| c.logprobs),
            seed: all.iter().all(|c| c.seed),
            conversations: false,
            prompt_cache: all.iter().any(|c| c.prompt_cache),
            person: all.iter().any(|c| c.person),
        }
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        let mut last = None;
        for i in self.order() {
            let endpoint = &self.endpoints[i];
            match endpoint.model.complete(request.clone()).await {
                Ok(c) => {
                    endpoint.put_back();
                    return Ok(c);
                }
                Err(e) if e.class().retryable() => {
                    let wait = e.retry_after().unwrap_or(self.cooldown);
                    endpoint.take_out(Instant::now() + wait);
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| BackendError::Config("no endpoint".into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripted::{Scripted, ScriptedModel};
    use crate::ChatMessage;

    fn fail() -> Scripted {
        Scripted::Fail {
            error: BackendError::Http {
                status: 503,
                body: "down".into(),
            },
            delay: Duration::ZERO,
        }
    }

    fn request() -> CompletionRequest {
        CompletionRequest::new(vec![ChatMessage::user("2+2?")])
    }

    #[tokio::test]
    async fn calls_rotate_and_a_failing_endpoint_sits_out_then_returns() {
        let bad = Arc::new(ScriptedModel::new("bad", [fail()]));
        let good = Arc::new(ScriptedModel::new("good", [Scripted::reply("4")]));
        let balanced = BalancedModel::new(
            "m",
            vec![bad.clone(), good.clone()],
            Duration::from_millis(200),
        )
        .unwrap();
        for _ in 0..6 {
            assert_eq!(balanced.complete(request()).await.unwrap().text, "4");
        }
        assert_eq!(bad.requests().len(), 1, "out of rotation after its failure");
        assert_eq!(good.requests().len(), 6);
        tokio::time::sleep(Duration::from_millis(250)).await;
        for _ in 0..2 {
            balanced.complete(request()).await.unwrap();
        }
        assert_eq!(bad.requests().len(), 2, "tried again after the cooldown");
    }

    #[tokio::test]
    async fn healthy_endpoints_share_the_calls() {
        let a = Arc::new(ScriptedModel::new("a", [Scripted::reply("4")]));
        let b = Arc::new(ScriptedModel::new("b", [Scripted::reply("4")]));
        let balanced =
            BalancedModel::new("m", vec![a.clone(), b.clone()], DEFAULT_COOLDOWN).unwrap();
        for _ in 0..6 {
            balanced.complete(request()).await.unwrap();
        }
        assert_eq!((a.requests().len(), b.requests().len()), (3, 3));
    }

    #[tokio::test]
    async fn permanent_errors_do_not_fail_over_and_all_down_returns_the_last_error() {
        let auth = Arc::new(ScriptedModel::new(
            "auth",
            [Scripted::Fail {
                error: BackendError::Http {
                    status: 401,
                    body: "bad key".into(),
                },
                delay: Duration::ZERO,
            }],
        ));
        let other = Arc::new(ScriptedModel::new("other", [Scripted::reply("4")]));
        let balanced =
            BalancedModel::new("m", vec![auth.clone(), other.clone()], DEFAULT_COOLDOWN).unwrap();
        let err = balanced.complete(request()).await.unwrap_err();
        assert_eq!(err.class(), crate::ErrorClass::Permanent);
        assert_eq!(other.requests().len(), 0);

        let x = Arc::new(ScriptedModel::new("x", [fail()]));
        let y = Arc::new(ScriptedModel::new("y", [fail()]));
        let balanced = BalancedModel::new("m", vec![x, y], DEFAULT_COOLDOWN).unwrap();
        let err = balanced.complete(request()).await.unwrap_err();
        assert_eq!(err.class(), crate::ErrorClass::Transient);
        // Both out of rotation: the next call still tries them, soonest back first.
        assert!(balanced.complete(request()).await.is_err());
        assert!(BalancedModel::new("m", Vec::new(), DEFAULT_COOLDOWN).is_err());
    }
}
