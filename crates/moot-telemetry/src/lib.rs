//! `moot-telemetry`: what operators' tools read of moot (see docs/architecture.md,
//! Telemetry). The engine describes what it does as `tracing` spans named by
//! [`moot_core::semconv`]; this crate installs what listens to them, and nothing when nothing
//! is asked for (a span then costs one atomic load):
//! - [`traces`]: OpenTelemetry traces exported over OTLP/HTTP when the standard
//!   `OTEL_EXPORTER_OTLP_*` variables name an endpoint;
//! - [`metrics`] and [`MetricsLayer`]: Prometheus metrics read off the same spans, for
//!   `moot serve`'s `/metrics` and `moot work --metrics`.

mod error;
pub mod layer;
pub mod metrics;
pub mod traces;

use std::sync::Arc;

use tracing_subscriber::filter::{filter_fn, FilterFn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

pub use error::TelemetryError;
pub use layer::MetricsLayer;
pub use metrics::{Metrics, CONTENT_TYPE};

/// What to install.
#[derive(Debug, Clone, Copy, Default)]
pub struct TelemetryOptions {
    /// Keep Prometheus metrics (for a `/metrics` route).
    pub metrics: bool,
}

/// The longest a command waits at its end for its last spans to leave (README, Telemetry).
pub const SHUTDOWN_LIMIT: std::time::Duration = std::time::Duration::from_secs(3);

/// What was installed; [`Telemetry::shutdown`] sends what is still queued.
#[derive(Debug, Default)]
pub struct Telemetry {
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
    metrics: Option<Arc<Metrics>>,
}

/// Only moot's own spans: sqlx's and hyper's stay out of traces and metrics.
fn moot_spans() -> FilterFn {
    fn ours(meta: &tracing::Metadata<'_>) -> bool {
        meta.target() == moot_core::semconv::TARGET
    }
    filter_fn(ours as fn(&tracing::Metadata<'_>) -> bool)
}

impl Telemetry {
    /// Installs the trace exporter when the environment (`env`) asks for it and the metrics
    /// when `options` do, as the process's one subscriber; installs nothing, and costs
    /// nothing, when neither is wanted.
    pub fn install(
        options: TelemetryOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Telemetry, TelemetryError> {
        let provider = if traces::wanted(env) {
            Some(traces::provider(env)?)
        } else {
            None
        };
        let metrics = options.metrics.then(|| Arc::new(Metrics::new()));
        if provider.is_none() && metrics.is_none() {
            return Ok(Telemetry::default());
        }
        let otel = provider.as_ref().map(|p| {
            tracing_opentelemetry::layer()
                .with_tracer(traces::tracer(p))
                .with_location(false)
                .with_threads(false)
                .with_target(false)
                .with_tracked_inactivity(false)
                .with_filter(moot_spans())
        });
        let counting = metrics
            .as_ref()
            .map(|m| MetricsLayer::new(m.clone()).with_filter(moot_spans()));
        let subscriber = tracing_subscriber::registry().with(otel).with(counting);
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|_| TelemetryError::AlreadyInstalled)?;
        Ok(Telemetry { provider, metrics })
    }

    /// The metrics, when they are kept.
    pub fn metrics(&self) -> Option<Arc<Metrics>> {
        self.metrics.clone()
    }

    /// Whether traces are exported.
    pub fn exports_traces(&self) -> bool {
        self.provider.is_some()
    }

    /// Sends the spans still queued and stops the exporter: a short command would otherwise
    /// end before its spans leave. Waits at most [`SHUTDOWN_LIMIT`], whatever the collector
    /// does (one that takes connections and never answers would hold each export for its own
    /// timeout); what went wrong, once, for the caller to print.
    pub fn shutdown(self) -> Option<String> {
        let provider = self.provider?;
        let (sent, outcome) = std::sync::mpsc::channel();
        // The export runs on a thread of its own, left behind if it does not end in time: the
        // process is ending anyway.
        std::thread::spawn(move || {
            let _ = sent.send(provider.shutdown());
        });
        match outcome.recv_timeout(SHUTDOWN_LIMIT) {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(format!("traces: the last spans were not sent: {e}")),
            Err(_) => Some(format!(
                "traces: the collector took no spans within {} s; the last ones were dropped",
                SHUTDOWN_LIMIT.as_secs()
            )),
        }
    }
}

/// Whether the user opted in to prompt and response texts in spans
/// ([`moot_core::semconv::CAPTURE_CONTENT_VARIABLE`]).
pub fn captures_content(env: &dyn Fn(&str) -> Option<String>) -> bool {
    moot_core::semconv::capture_content(
        env(moot_core::semconv::CAPTURE_CONTENT_VARIABLE).as_deref(),
    )
}
