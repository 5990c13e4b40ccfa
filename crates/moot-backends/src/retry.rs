//! Retries around any backend: capped exponential backoff with jitter (`backon`) for the
//! retryable error classes only (rate-limited, transient), honouring a server's `Retry-After`.
//! Every failed attempt is kept: a completion carries the attempts before it
//! ([`Completion::retries`]) and a final error carries them in [`BackendError::Retried`], so the
//! engine records them with the call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use backon::{ExponentialBuilder, Retryable};

use crate::{
    BackendError, Capabilities, Completion, CompletionRequest, FailedAttempt, LanguageModel,
};

/// How a call is retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: never retry).
    pub max_retries: usize,
    /// The first backoff; each next one doubles, up to `max_delay`.
    pub min_delay: Duration,
    pub max_delay: Duration,
    /// Adds a random part to each backoff so that agents hitting the same limit spread out.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            min_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            jitter: true,
        }
    }
}

/// A backend whose retryable failures are retried under a [`RetryPolicy`].
#[derive(Debug)]
pub struct RetryingModel {
    inner: Arc<dyn LanguageModel>,
    policy: RetryPolicy,
}

impl RetryingModel {
    pub fn new(inner: Arc<dyn LanguageModel>, policy: RetryPolicy) -> RetryingModel {
        RetryingModel { inner, policy }
    }
}

#[async_trait]
impl LanguageModel for RetryingModel {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        let mut backoff = ExponentialBuilder::default()
            .with_min_delay(self.policy.min_delay)
            .with_max_delay(self.policy.max_delay)
            .with_max_times(self.policy.max_retries);
        if self.policy.jitter {
            backoff = backoff.with_jitter();
        }
        let failures: Mutex<Vec<FailedAttempt>> = Mutex::new(Vec::new());
        let inner = &self.inner;
        let result = (|| inner.complete(request.clone()))
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(|e: &BackendError| e.class().retryable())
            // The server's own wait wins over the backoff, but only while retries remain.
            .adjust(|e: &BackendError, next: Option<Duration>| {
                next.map(|backoff| e.retry_after().unwrap_or(backoff))
            })
            .notify(|e: &BackendError, wait: Duration| {
                if let Ok(mut f) = failures.lock() {
                    f.push(FailedAttempt {
                        error: e.to_string(),
                        class: e.class().as_str().to_string(),
                        wait_ms: wait.as_millis() as u64,
                    });
                }
            })
            .await;
        let attempts = failures.into_inner().unwrap_or_default();
        match result {
            Ok(mut completion) => {
                completion.retries = attempts;
                Ok(completion)
            }
            Err(last) if attempts.is_empty() => Err(last),
            Err(last) => Err(BackendError::Retried {
                attempts,
                last: Box::new(last),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripted::{Scripted, ScriptedModel};
    use crate::ChatMessage;

    fn fail(error: BackendError) -> Scripted {
        Scripted::Fail {
            error,
            delay: Duration::ZERO,
        }
    }

    fn retrying(script: Vec<Scripted>, max_retries: usize) -> (Arc<ScriptedModel>, RetryingModel) {
        let inner = Arc::new(ScriptedModel::new("flaky", script));
        let policy = RetryPolicy {
            max_retries,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(8),
            jitter: false,
        };
        (inner.clone(), RetryingModel::new(inner, policy))
    }

    fn request() -> CompletionRequest {
        CompletionRequest::new(vec![ChatMessage::user("2+2?")])
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_with_growing_backoff_and_recorded() {
        let (inner, model) = retrying(
            vec![
                fail(BackendError::Http {
                    status: 503,
                    body: "busy".into(),
                }),
                fail(BackendError::Transport("connection reset".into())),
                Scripted::reply("4"),
            ],
            3,
        );
        let started = tokio::time::Instant::now();
        let c = model.complete(request()).await.unwrap();
        assert_eq!(c.text, "4");
        assert_eq!(inner.requests().len(), 3);
        let waits: Vec<u64> = c.retries.iter().map(|a| a.wait_ms).collect();
        assert_eq!(waits, [1000, 2000]);
        assert_eq!(c.retries[0].class, "transient");
        assert!(c.retries[0].error.contains("503"));
        assert!(c.retries[1].error.contains("connection reset"));
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_servers_retry_after_replaces_the_backoff() {
        let (_, model) = retrying(
            vec![
                fail(BackendError::RateLimited {
                    retry_after: Some(Duration::from_secs(7)),
                    body: "slow down".into(),
                }),
                Scripted::reply("4"),
            ],
            3,
        );
        let started = tokio::time::Instant::now();
        let c = model.complete(request()).await.unwrap();
        assert_eq!(started.elapsed(), Duration::from_secs(7));
        assert_eq!(c.retries.len(), 1);
        assert_eq!(
            (c.retries[0].class.as_str(), c.retries[0].wait_ms),
            ("rate-limited", 7000)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn permanent_and_context_length_errors_are_not_retried() {
        for error in [
            BackendError::Http {
                status: 401,
                body: "invalid api key".into(),
            },
            BackendError::Http {
                status: 400,
                body: "maximum context length is 4096 tokens".into(),
            },
            BackendError::Cancelled,
        ] {
            let (inner, model) = retrying(vec![fail(error.clone())], 3);
            assert_eq!(model.complete(request()).await.unwrap_err(), error);
            assert_eq!(inner.requests().len(), 1);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retries_end_and_the_last_error_carries_the_attempts() {
        let (inner, model) = retrying(
            vec![fail(BackendError::Http {
                status: 500,
                body: "boom".into(),
            })],
            2,
        );
        let err = model.complete(request()).await.unwrap_err();
        assert_eq!(
            inner.requests().len(),
            3,
            "the first attempt and two retries"
        );
        assert_eq!(err.attempts().len(), 2);
        assert_eq!(err.class(), crate::ErrorClass::Transient);
        let text = err.to_string();
        assert!(
            text.contains("HTTP 500: boom") && text.contains("(3 tries, each failing so)"),
            "{text}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn no_retries_means_one_attempt() {
        let (inner, model) = retrying(vec![fail(BackendError::Timeout), Scripted::reply("4")], 0);
        assert_eq!(
            model.complete(request()).await.unwrap_err(),
            BackendError::Timeout
        );
        assert_eq!(inner.requests().len(), 1);
    }
}
