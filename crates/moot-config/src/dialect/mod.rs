//! Configuration dialects: the file formats moot reads into one [`Config`](crate::config::Config).
//! Each dialect is a module that turns text into a `Config` and says which files it claims;
//! [`load`] picks by extension. Today: moot's own keys in TOML, YAML or JSON ([`native`]).

pub mod native;

use std::path::Path;

use crate::config::Config;
use crate::error::ConfigError;

/// Reads a configuration file: TOML (`.toml`), YAML (`.yaml`/`.yml`) or JSON (`.json`); other
/// extensions are tried as TOML then YAML. Errors name the file and, where the parser knows it,
/// the key and line; text that is not UTF-8 names the offset, line and column of the first bad
/// byte.
///
/// The settings are checked ([`Config::validate_settings`]); the debate's size is not, as
/// `--agents` and `--rounds` may still change it: callers check it with
/// [`Config::validate_size`].
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| ConfigError::new("", format!("cannot read config {name}: {e}")))?;
    let text = utf8_text(&format!("config {name}"), bytes).map_err(|m| ConfigError::new("", m))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_lowercase();
    let config = match ext.as_str() {
        "yaml" | "yml" => native::from_yaml(&text),
        "toml" => native::from_toml(&text),
        "json" => native::from_json(&text),
        _ => native::from_toml(&text)
            .or_else(|toml_err| native::from_yaml(&text).map_err(|_| toml_err)),
    }
    .map_err(|e| e.in_file(&name))?;
    config.validate_settings().map_err(|e| e.in_file(&name))?;
    Ok(config)
}

/// `bytes` as text, or why not: the offset, line and column of the first byte that is not
/// UTF-8, said of `what`.
pub fn utf8_text(what: &str, bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        // Everything before `at` is valid UTF-8.
        let before = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit_once('\n')
            .map_or(before, |(_, last)| last)
            .chars()
            .count()
            + 1;
        format!(
            "{what} is not valid UTF-8: byte 0x{:02X} at byte offset {at} (line {line}, column {column})",
            bytes[at]
        )
    })
}
