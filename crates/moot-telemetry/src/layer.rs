//! [`MetricsLayer`]: Prometheus metrics read off the spans the engine makes for traces, so that
//! the engine has one way to say what happened and nothing to do when nobody listens.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use moot_core::semconv as sc;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::metrics::{
    CallLabels, DebateLabels, LimitLabels, Metrics, ModelLabels, StoreLabels, TokenLabels,
    VerdictLabels,
};

/// Passing the rate limits in less than this (seconds) is not a wait.
const WAITED: f64 = 0.001;

/// Updates [`Metrics`] as moot's spans (target [`sc::TARGET`]) end.
pub struct MetricsLayer {
    metrics: Arc<Metrics>,
}

impl MetricsLayer {
    pub fn new(metrics: Arc<Metrics>) -> MetricsLayer {
        MetricsLayer { metrics }
    }
}

/// A span's fields as recorded so far, and when it started.
struct Fields {
    started: Instant,
    values: HashMap<&'static str, Value>,
}

#[derive(Debug, Clone)]
enum Value {
    Int(i64),
    Text(String),
    Bool(bool),
}

impl Fields {
    fn text(&self, name: &str) -> String {
        match self.values.get(name) {
            Some(Value::Text(s)) => s.clone(),
            Some(Value::Int(n)) => n.to_string(),
            Some(Value::Bool(b)) => b.to_string(),
            None => String::new(),
        }
    }

    fn int(&self, name: &str) -> u64 {
        match self.values.get(name) {
            Some(Value::Int(n)) => (*n).max(0) as u64,
            _ => 0,
        }
    }

    fn flag(&self, name: &str) -> bool {
        matches!(self.values.get(name), Some(Value::Bool(true)))
    }
}

impl Visit for Fields {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.values.insert(field.name(), Value::Int(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.values
            .insert(field.name(), Value::Int(value.min(i64::MAX as u64) as i64));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.values.insert(field.name(), Value::Bool(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.values
            .insert(field.name(), Value::Text(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `%value` fields arrive here, their Debug being their Display.
        self.values
            .insert(field.name(), Value::Text(format!("{value:?}")));
    }
}

fn ours(meta: &tracing::Metadata<'_>) -> bool {
    meta.target() == sc::TARGET
}

impl<S> Layer<S> for MetricsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !ours(attrs.metadata()) {
            return;
        }
        let mut fields = Fields {
            started: Instant::now(),
            values: HashMap::new(),
        };
        attrs.record(&mut fields);
        if attrs.metadata().name() == sc::OP_INVOKE_WORKFLOW {
            self.metrics.debates_in_flight.inc();
        }
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if !ours(span.metadata()) {
            return;
        }
        let mut extensions = span.extensions_mut();
        if let Some(fields) = extensions.get_mut::<Fields>() {
            values.record(fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let meta = span.metadata();
        if !ours(meta) {
            return;
        }
        let removed = span.extensions_mut().remove::<Fields>();
        let Some(fields) = removed else {
            return;
        };
        let seconds = fields.started.elapsed().as_secs_f64();
        let m = &self.metrics;
        match meta.name() {
            sc::OP_CHAT => {
                let backend = m.bounded("backend", fields.text(sc::MOOT_BACKEND));
                let model = m.bounded("model", fields.text(sc::GEN_AI_REQUEST_MODEL));
                // A call dropped at a deadline ends its span with no outcome recorded.
                let mut outcome = fields.text(sc::MOOT_OUTCOME);
                if outcome.is_empty() {
                    outcome = "cancelled".into();
                }
                let call = CallLabels {
                    backend: backend.clone(),
                    model: model.clone(),
                    outcome,
                };
                m.calls.get_or_create(&call).inc();
                m.call_duration.get_or_create(&call).observe(seconds);
                for (kind, field) in [
                    ("input", sc::GEN_AI_USAGE_INPUT_TOKENS),
                    ("cached", sc::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS),
                    ("output", sc::GEN_AI_USAGE_OUTPUT_TOKENS),
                ] {
                    let n = fields.int(field);
                    if n > 0 {
                        m.tokens
                            .get_or_create(&TokenLabels {
                                backend: backend.clone(),
                                model: model.clone(),
                                kind: kind.into(),
                            })
                            .inc_by(n);
                    }
                }
                let retries = fields.int(sc::MOOT_RETRIES);
                if retries > 0 {
                    m.retries
                        .get_or_create(&ModelLabels { backend, model })
                        .inc_by(retries);
                }
            }
            // An agent's turn the request cache answered: counted as a call, no request made.
            sc::OP_INVOKE_AGENT if fields.flag(sc::MOOT_CACHED) => {
                m.calls
                    .get_or_create(&CallLabels {
                        backend: m.bounded("backend", fields.text(sc::MOOT_BACKEND)),
                        model: m.bounded("model", fields.text(sc::GEN_AI_REQUEST_MODEL)),
                        outcome: "cached".into(),
                    })
                    .inc();
            }
            sc::OP_INVOKE_WORKFLOW => {
                m.debates_in_flight.dec();
                let debate = DebateLabels {
                    protocol: m.bounded("protocol", fields.text(sc::GEN_AI_WORKFLOW_NAME)),
                    outcome: m.bounded("outcome", fields.text(sc::MOOT_OUTCOME)),
                };
                m.debates.get_or_create(&debate).inc();
                m.debate_duration.get_or_create(&debate).observe(seconds);
            }
            sc::SPAN_RATE_LIMIT_WAIT => {
                let limit = LimitLabels {
                    limit: m.bounded("limit", fields.text(sc::MOOT_RATE_LIMIT_KEY)),
                };
                // Every limited call passes the limits; it waited when that took a while.
                if seconds >= WAITED {
                    m.rate_limit_waits.get_or_create(&limit).inc();
                }
                m.rate_limit_wait_seconds
                    .get_or_create(&limit)
                    .inc_by(seconds);
            }
            sc::SPAN_SANDBOX_CHECK => {
                m.sandbox_checks
                    .get_or_create(&VerdictLabels {
                        verdict: m.bounded("verdict", fields.text(sc::MOOT_SANDBOX_VERDICT)),
                    })
                    .inc();
            }
            sc::SPAN_STORE_WRITE => {
                m.store_write_duration
                    .get_or_create(&StoreLabels {
                        operation: fields.text(sc::MOOT_STORE_OPERATION),
                    })
                    .observe(seconds);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn a_finished_call_span_counts_its_call_tokens_and_retries() {
        let metrics = Arc::new(Metrics::new());
        let subscriber = tracing_subscriber::registry().with(MetricsLayer::new(metrics.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let debate = tracing::info_span!(
                target: sc::TARGET,
                "invoke_workflow",
                { sc::GEN_AI_WORKFLOW_NAME } = "som",
                { sc::MOOT_OUTCOME } = tracing::field::Empty,
            );
            {
                let _in = debate.enter();
                let chat = tracing::info_span!(
                    target: sc::TARGET,
                    "chat",
                    { sc::MOOT_BACKEND } = "openai",
                    { sc::GEN_AI_REQUEST_MODEL } = "qwen",
                    { sc::MOOT_OUTCOME } = tracing::field::Empty,
                    { sc::GEN_AI_USAGE_INPUT_TOKENS } = tracing::field::Empty,
                    { sc::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS } = tracing::field::Empty,
                    { sc::GEN_AI_USAGE_OUTPUT_TOKENS } = tracing::field::Empty,
                    { sc::MOOT_RETRIES } = tracing::field::Empty,
                );
                chat.record(sc::GEN_AI_USAGE_INPUT_TOKENS, 120_i64);
                chat.record(sc::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, 100_i64);
                chat.record(sc::GEN_AI_USAGE_OUTPUT_TOKENS, 7_i64);
                chat.record(sc::MOOT_RETRIES, 2_i64);
                chat.record(sc::MOOT_OUTCOME, "ok");
                assert!(metrics.encode().contains("moot_debates_in_flight 1"));
            }
            debate.record(sc::MOOT_OUTCOME, "done");
        });
        let text = metrics.encode();
        for line in [
            r#"moot_calls_total{backend="openai",model="qwen",outcome="ok"} 1"#,
            r#"moot_tokens_total{backend="openai",model="qwen",kind="input"} 120"#,
            r#"moot_tokens_total{backend="openai",model="qwen",kind="cached"} 100"#,
            r#"moot_tokens_total{backend="openai",model="qwen",kind="output"} 7"#,
            r#"moot_retries_total{backend="openai",model="qwen"} 2"#,
            r#"moot_debates_total{protocol="som",outcome="done"} 1"#,
            "moot_debates_in_flight 0",
        ] {
            assert!(text.contains(line), "{line} not in:\n{text}");
        }
    }

    #[test]
    fn spans_of_other_targets_are_not_counted() {
        let metrics = Arc::new(Metrics::new());
        let subscriber = tracing_subscriber::registry().with(MetricsLayer::new(metrics.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let _ =
                tracing::info_span!(target: "sqlx::query", "chat", moot_backend = "x").entered();
        });
        assert!(!metrics.encode().contains("moot_calls_total{"));
    }
}
