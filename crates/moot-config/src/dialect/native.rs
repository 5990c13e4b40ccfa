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
