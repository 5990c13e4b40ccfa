//! Traces over OTLP/HTTP (protobuf), configured by OpenTelemetry's standard variables and off
//! unless an endpoint is set: the exporter would otherwise send to localhost:4318 by default.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

use crate::error::TelemetryError;

/// The variables that turn the exporter on (either one): the exporter reads them, and the
/// rest of its `OTEL_EXPORTER_OTLP_*` variables (headers, timeout, compression), itself.
const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/// How long one export may take before it is given up (the exporter retries within it).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether traces are to be exported, read from the environment (`env` answers a variable's
/// value): an endpoint is set, the SDK is not disabled, and the traces exporter is not `none`.
pub fn wanted(env: &dyn Fn(&str) -> Option<String>) -> bool {
    let set = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
    let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let none = env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    ENDPOINT_VARIABLES.iter().any(|k| set(k)) && !disabled && !none
}

/// The exporter's HTTP client: the workspace's reqwest, blocking, because the batch span
/// processor exports from a thread of its own, outside any async runtime.
#[derive(Debug)]
struct BlockingHttp(reqwest::blocking::Client);

/// A collector's answer is read up to this size (it is a short protobuf message).
const MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for BlockingHttp {
    async fn send_bytes(
        &self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> Result<
        opentelemetry_http::Response<opentelemetry_http::Bytes>,
        opentelemetry_http::HttpError,
    > {
        use std::io::Read;
        let request = reqwest::blocking::Request::try_from(request)?;
        let response = self.0.execute(request)?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        response.take(MAX_RESPONSE_BYTES).read_to_end(&mut body)?;
        let mut out = opentelemetry_http::Response::builder()
            .status(status)
            .body(opentelemetry_http::Bytes::from(body))?;
        *out.headers_mut() = headers;
        Ok(out)
    }
}

/// The tracer provider exporting moot's spans: built from the environment; `service.name`
/// is `moot` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names it.
pub fn provider(env: &dyn Fn(&str) -> Option<String>) -> Result<SdkTracerProvider, TelemetryError> {
    // reqwest's blocking client panics when it is built inside an async runtime: it is built
    // on a thread of its own.
    let client = std::thread::spawn(|| {
        reqwest::blocking::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            // A collector has no reason to send spans elsewhere: a redirect fails the export.
            .redirect(reqwest::redirect::Policy::none())
            .build()
    })
    .join()
    .map_err(|_| TelemetryError::Exporter("building its HTTP client panicked".into()))?
    .map_err(|e| TelemetryError::Exporter(format!("its HTTP client: {e}")))?;
    let mut exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(BlockingHttp(client))
        .with_timeout(EXPORT_TIMEOUT);
    // `env` may answer from the configuration's `[telemetry]` too, which the exporter does
    // not read: the endpoint is given to it, as it would have read it.
    if let Some(url) = traces_endpoint(env) {
        exporter = exporter.with_endpoint(url);
    }
    let exporter = exporter
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    // The SDK's detectors read the variables; what the configuration gives is added after.
    let mut resource = Resource::builder();
    let attributes: Vec<opentelemetry::KeyValue> = env("OTEL_RESOURCE_ATTRIBUTES")
        .unwrap_or_default()
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| !k.trim().is_empty())
        .map(|(k, v)| opentelemetry::KeyValue::new(k.trim().to_string(), v.trim().to_string()))
        .collect();
    let named_by_attributes = attributes
        .iter()
        .any(|kv| kv.key.as_str() == "service.name");
    resource = resource.with_attributes(attributes);
    match env("OTEL_SERVICE_NAME").filter(|v| !v.trim().is_empty()) {
        Some(name) => resource = resource.with_service_name(name),
        None if !named_by_attributes => resource = resource.with_service_name("moot"),
        None => {}
    }
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_resource(resource)
        .with_batch_exporter(exporter)
        .build())
}

/// Where traces are sent: the traces endpoint as given, or the base endpoint with
/// `/v1/traces` added (as OpenTelemetry specifies for OTLP/HTTP).
fn traces_endpoint(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let set = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| {
        set("OTEL_EXPORTER_OTLP_ENDPOINT")
            .map(|base| format!("{}/v1/traces", base.trim().trim_end_matches('/')))
    })
}

/// A tracer of `provider` for the OpenTelemetry layer.
pub fn tracer(provider: &SdkTracerProvider) -> opentelemetry_sdk::trace::Tracer {
    provider.tracer("moot")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_traces_url_is_the_signals_own_or_the_base_with_its_path() {
        assert_eq!(
            traces_endpoint(&env_of(&[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://c:4318/"
            )])),
            Some("http://c:4318/v1/traces".into())
        );
        assert_eq!(
            traces_endpoint(&env_of(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9/in")
            ])),
            Some("http://t:9/in".into())
        );
        assert_eq!(traces_endpoint(&env_of(&[])), None);
    }

    #[test]
    fn traces_are_exported_only_with_an_endpoint_and_not_when_disabled() {
        assert!(!wanted(&env_of(&[])));
        assert!(!wanted(&env_of(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")])));
        assert!(!wanted(&env_of(&[("OTEL_SERVICE_NAME", "moot")])));
        assert!(wanted(&env_of(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:4318"
        )])));
        assert!(wanted(&env_of(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:4318/v1/traces"
        )])));
        assert!(!wanted(&env_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ])));
        assert!(!wanted(&env_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ])));
    }
}
