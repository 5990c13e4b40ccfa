//! `[telemetry]`: where traces go, for operators who configure moot by file rather than by
//! OpenTelemetry's environment variables. Each key stands for one variable, and a variable
//! that is set wins over the key (as the variables are what operators' platforms set).

use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySection {
    /// The OTLP/HTTP collector's base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`): traces are sent to
    /// it with `/v1/traces` added. Unset (and no variable): no traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    /// The resource's `service.name` (`OTEL_SERVICE_NAME`; `moot` unless set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// More resource attributes, `key=value,…` (`OTEL_RESOURCE_ATTRIBUTES`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_attributes: Option<String>,
    /// Prompts and answers in spans, redacted
    /// (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`); off unless set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_content: Option<bool>,
}

impl TelemetrySection {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(u) = &self.otlp_endpoint {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                return invalid(
                    "telemetry.otlp_endpoint",
                    format!("telemetry.otlp_endpoint = {u:?} must be an http:// or https:// URL"),
                );
            }
        }
        if let Some(attrs) = &self.resource_attributes {
            // A pair is a key (not blank), `=` and a value.
            let pair = |kv: &str| {
                kv.split_once('=')
                    .is_some_and(|(k, _)| !k.trim().is_empty())
            };
            if let Some(bad) = attrs
                .split(',')
                .map(str::trim)
                .find(|kv| !kv.is_empty() && !pair(kv))
            {
                return invalid(
                    "telemetry.resource_attributes",
                    format!("telemetry.resource_attributes: {bad:?} is not key=value"),
                );
            }
        }
        Ok(())
    }

    /// The value this section gives OpenTelemetry's variable `name`, if it gives one.
    pub fn variable(&self, name: &str) -> Option<String> {
        match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => self.otlp_endpoint.clone(),
            "OTEL_SERVICE_NAME" => self.service_name.clone(),
            "OTEL_RESOURCE_ATTRIBUTES" => self.resource_attributes.clone(),
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" => {
                self.capture_content.map(|on| on.to_string())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_stands_for_its_variable() {
        let t = TelemetrySection {
            otlp_endpoint: Some("http://collector:4318".into()),
            service_name: Some("debates".into()),
            resource_attributes: Some("deployment.environment=lab".into()),
            capture_content: Some(true),
        };
        t.validate().unwrap();
        assert_eq!(
            t.variable("OTEL_EXPORTER_OTLP_ENDPOINT").as_deref(),
            Some("http://collector:4318")
        );
        assert_eq!(t.variable("OTEL_SERVICE_NAME").as_deref(), Some("debates"));
        assert_eq!(
            t.variable("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                .as_deref(),
            Some("true")
        );
        assert_eq!(t.variable("OTEL_EXPORTER_OTLP_HEADERS"), None);
    }

    #[test]
    fn a_bad_endpoint_or_attribute_is_named() {
        let t = TelemetrySection {
            otlp_endpoint: Some("collector:4318".into()),
            ..TelemetrySection::default()
        };
        assert!(t
            .validate()
            .unwrap_err()
            .to_string()
            .contains("telemetry.otlp_endpoint"));
        let t = TelemetrySection {
            resource_attributes: Some("a=b,just-a-word".into()),
            ..TelemetrySection::default()
        };
        let e = t.validate().unwrap_err().to_string();
        assert!(e.contains("\"just-a-word\" is not key=value"), "{e}");
    }
}
