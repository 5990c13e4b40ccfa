//! moot's Prometheus metrics: one registry per process (no global), updated from the engine's
//! spans by [`crate::MetricsLayer`], and encoded as OpenMetrics text by whoever serves
//! `/metrics` (`moot serve`, `moot work --metrics`).

use std::sync::atomic::{AtomicI64, AtomicU64};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A model call's latency, in seconds: the GenAI conventions' buckets for
/// `gen_ai.client.operation.duration`, with three more for a CPU-bound local model.
const CALL_SECONDS: [f64; 17] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84,
    327.68, 655.36,
];
/// A debate's duration, in seconds: the conventions' `gen_ai.workflow.duration` buckets.
const DEBATE_SECONDS: [f64; 11] = [
    1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0,
];
/// A store write, in seconds: 0.5 ms to about 4 s, doubling.
const STORE_SECONDS: [f64; 14] = [
    0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048,
    4.096,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    pub backend: String,
    pub model: String,
    /// `ok`, `error`, `timeout`, `cached`, `skipped`.
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TokenLabels {
    pub backend: String,
    pub model: String,
    /// `input` (all of it, cached included), `cached` (the part a cache served), `output`.
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModelLabels {
    pub backend: String,
    pub model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DebateLabels {
    pub protocol: String,
    /// `done`, `failed`, `interrupted`.
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LimitLabels {
    /// The limit waited on: a backend's configured rate limit.
    pub limit: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerdictLabels {
    pub verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StoreLabels {
    /// What was written: `calls`, `outcome`, `run`.
    pub operation: String,
}

type Seconds = Histogram;
type SecondsFamily<L> = Family<L, Seconds, fn() -> Seconds>;

/// Every metric moot exports, registered under the `moot_` prefix.
pub struct Metrics {
    registry: Registry,
    pub calls: Family<CallLabels, Counter>,
    pub call_duration: SecondsFamily<CallLabels>,
    pub tokens: Family<TokenLabels, Counter>,
    pub retries: Family<ModelLabels, Counter>,
    pub debates: Family<DebateLabels, Counter>,
    pub debate_duration: SecondsFamily<DebateLabels>,
    pub debates_in_flight: Gauge<i64, AtomicI64>,
    pub rate_limit_waits: Family<LimitLabels, Counter>,
    pub rate_limit_wait_seconds: Family<LimitLabels, Counter<f64, AtomicU64>>,
    pub sandbox_checks: Family<VerdictLabels, Counter>,
    pub store_write_duration: SecondsFamily<StoreLabels>,
    /// The label values seen so far, per label: past [`MAX_LABEL_VALUES`] a new value is
    /// counted as [`OTHER`], so no stream of requests naming new models grows `/metrics`.
    seen: std::sync::Mutex<
        std::collections::HashMap<&'static str, std::collections::HashSet<String>>,
    >,
}

/// How many values one label (a model, a backend, a protocol, a rate limit) takes before new
/// ones are counted together as [`OTHER`].
pub const MAX_LABEL_VALUES: usize = 64;

/// The label value every value past [`MAX_LABEL_VALUES`] is counted as.
pub const OTHER: &str = "other";

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

fn call_seconds() -> Seconds {
    Histogram::new(CALL_SECONDS.iter().copied())
}
fn debate_seconds() -> Seconds {
    Histogram::new(DEBATE_SECONDS.iter().copied())
}
fn store_seconds() -> Seconds {
    Histogram::new(STORE_SECONDS.iter().copied())
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("moot");
        let m = Metrics {
            calls: Family::default(),
            call_duration: Family::new_with_constructor(call_seconds as fn() -> Seconds),
            tokens: Family::default(),
            retries: Family::default(),
            debates: Family::default(),
            debate_duration: Family::new_with_constructor(debate_seconds as fn() -> Seconds),
            debates_in_flight: Gauge::default(),
            rate_limit_waits: Family::default(),
            rate_limit_wait_seconds: Family::default(),
            sandbox_checks: Family::default(),
            store_write_duration: Family::new_with_constructor(store_seconds as fn() -> Seconds),
            registry: Registry::default(),
            seen: std::sync::Mutex::default(),
        };
        // Counters are registered without `_total`: the encoder adds it.
        registry.register(
            "calls",
            "Model calls by backend, model and outcome (cached: answered by the request cache)",
            m.calls.clone(),
        );
        registry.register_with_unit(
            "call_duration",
            "A model call's latency, its retries included",
            Unit::Seconds,
            m.call_duration.clone(),
        );
        registry.register(
            "tokens",
            "Tokens by backend, model and kind (input: all of it; cached: the part a cache served; output)",
            m.tokens.clone(),
        );
        registry.register(
            "retries",
            "Retries a backend made before a call's answer (429, 5xx, transport errors)",
            m.retries.clone(),
        );
        registry.register(
            "debates",
            "Debates ended, by protocol and outcome",
            m.debates.clone(),
        );
        registry.register_with_unit(
            "debate_duration",
            "A debate's duration, by protocol and outcome",
            Unit::Seconds,
            m.debate_duration.clone(),
        );
        registry.register(
            "debates_in_flight",
            "Debates running now",
            m.debates_in_flight.clone(),
        );
        registry.register(
            "rate_limit_waits",
            "Calls that waited for a rate limit",
            m.rate_limit_waits.clone(),
        );
        registry.register_with_unit(
            "rate_limit_wait",
            "Time calls spent waiting for a rate limit",
            Unit::Seconds,
            m.rate_limit_wait_seconds.clone(),
        );
        registry.register(
            "sandbox_checks",
            "Sandbox checks of code answers, by verdict",
            m.sandbox_checks.clone(),
        );
        registry.register_with_unit(
            "store_write_duration",
            "A store write's latency, by what it wrote",
            Unit::Seconds,
            m.store_write_duration.clone(),
        );
        Metrics { registry, ..m }
    }

    /// `value` as the `label` label shows it: itself while the label has taken fewer than
    /// [`MAX_LABEL_VALUES`] values (or this one already), [`OTHER`] after.
    pub fn bounded(&self, label: &'static str, value: String) -> String {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let values = seen.entry(label).or_default();
        if values.contains(&value) {
            return value;
        }
        if values.len() >= MAX_LABEL_VALUES {
            return OTHER.to_string();
        }
        values.insert(value.clone());
        value
    }

    /// The metrics as OpenMetrics text ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_takes_a_bounded_number_of_values_and_counts_the_rest_as_other() {
        let m = Metrics::new();
        for i in 0..10_000 {
            let model = m.bounded("model", format!("m{i}"));
            let expected = if i < MAX_LABEL_VALUES {
                format!("m{i}")
            } else {
                OTHER.to_string()
            };
            assert_eq!(model, expected);
            m.calls
                .get_or_create(&CallLabels {
                    backend: "b".into(),
                    model,
                    outcome: "ok".into(),
                })
                .inc();
        }
        // A value seen before the bound keeps its own series; other labels have their own bound.
        assert_eq!(m.bounded("model", "m3".into()), "m3");
        assert_eq!(m.bounded("backend", "b".into()), "b");
        let text = m.encode();
        assert_eq!(
            text.matches("moot_calls_total{").count(),
            MAX_LABEL_VALUES + 1
        );
        assert!(
            text.contains("model=\"other\",outcome=\"ok\"} 9936"),
            "{text}"
        );
    }

    #[test]
    fn the_text_names_each_metric_with_its_labels_and_unit() {
        let m = Metrics::new();
        let call = CallLabels {
            backend: "openai".into(),
            model: "qwen".into(),
            outcome: "ok".into(),
        };
        m.calls.get_or_create(&call).inc();
        m.call_duration.get_or_create(&call).observe(0.3);
        m.debates_in_flight.inc();
        let text = m.encode();
        assert!(
            text.contains(r#"moot_calls_total{backend="openai",model="qwen",outcome="ok"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"moot_call_duration_seconds_bucket{le="0.32",backend="openai",model="qwen",outcome="ok"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains("moot_debates_in_flight 1"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
