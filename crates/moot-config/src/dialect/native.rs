//! moot's own configuration keys, written as TOML, YAML or JSON (one schema: the serde shape of
//! [`Config`]). Parser errors are made one line, and keep what names the key.

use crate::config::Config;
use crate::error::ConfigError;

fn syntax(message: String) -> ConfigError {
    ConfigError::new("", message.trim().replace('\n', " "))
}

pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
    toml::from_str(text).map_err(|e| syntax(e.to_string()))
}

pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
    serde_saphyr::from_str(text).map_err(|e| syntax(e.to_string()))
}

/// A configuration stored as JSON (a run's or a benchmark's `config_json`), read with the
/// schema a file is read with; an error names the key at fault (`debate.rounds: invalid
/// value: integer `-1`, expected usize`). Its values are checked as a file's are by the caller
/// ([`Config::validate_values`]).
pub fn from_value(value: serde_json::Value) -> Result<Config, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner().to_string();
        if key == "." || key.is_empty() {
            syntax(inner)
        } else if inner.contains(&key) {
            // An agent's own errors name `agents[i].key` already.
            ConfigError::new(key, inner.trim().replace('\n', " "))
        } else {
            ConfigError::new(
                key.clone(),
                format!("{key}: {}", inner.trim().replace('\n', " ")),
            )
        }
    })
}

/// Errors quote the line up to where the parser stopped, so that they show the key.
pub fn from_json(text: &str) -> Result<Config, ConfigError> {
    serde_json::from_str(text).map_err(|e| {
        let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
        let mut end = e.column().min(line.len());
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        let mut start = end.saturating_sub(60);
        while !line.is_char_boundary(start) {
            start += 1;
        }
        let near = line[start..end].trim();
        if near.is_empty() {
            syntax(e.to_string())
        } else {
            syntax(format!("{e}: `{near}`"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_configuration_that_does_not_read_names_the_key() {
        let e = from_value(serde_json::json!({"debate": {"rounds": -1}})).unwrap_err();
        assert_eq!(e.key, "debate.rounds");
        assert!(e.message.starts_with("debate.rounds: "), "{e}");
        let e = from_value(serde_json::json!({"validation": {"timeout_ms": "x"}})).unwrap_err();
        assert_eq!(e.key, "validation.timeout_ms");
        let e = from_value(serde_json::json!({"debate": {"colour": "red"}})).unwrap_err();
        assert!(e.message.contains("colour"), "{e}");
        let e =
            from_value(serde_json::json!({"agents": [{"id": "a", "backend": "gpt"}]})).unwrap_err();
        assert!(e.message.contains("agents[0].backend"), "{e}");
        let c = from_value(serde_json::to_value(Config::default()).unwrap()).unwrap();
        assert_eq!(c, Config::default());
    }
}
