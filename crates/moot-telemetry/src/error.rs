//! What can keep telemetry from starting (moot then runs without it, and says why).

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("the OTLP trace exporter: {0}")]
    Exporter(String),
    #[error("another tracing subscriber is installed already")]
    AlreadyInstalled,
}
