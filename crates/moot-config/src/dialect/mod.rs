//! Configuration dialects: the file formats moot reads into one [`Config`](crate::config::Config).
//! Each dialect is a module that turns text into a `Config` and says which files it claims;
//! [`load`] picks by extension and, for YAML and JSON, by shape: moot's own keys
//! ([`native`]) or freemad's ([`freemad`], recognised by its sections and agent keys).

pub mod freemad;
pub mod native;

use std::path::Path;

use crate::config::Config;
use crate::error::ConfigError;

/// The largest configuration file read: 16 MiB, thousands of times a large team's, while a
/// FIFO, a device or a file past it is refused by name (see `moot_files`).
pub const MAX_CONFIG_BYTES: moot_files::Limit =
    moot_files::Limit::new(16 << 20, "moot reads from a configuration file");

/// Reads a configuration file: TOML (`.toml`), YAML (`.yaml`/`.yml`) or JSON (`.json`); other
/// extensions are tried as TOML then YAML. Errors name the file and, where the parser knows it,
/// the key and line; text that is not UTF-8 names the offset, line and column of the first bad
/// byte.
///
/// The settings are checked ([`Config::validate_settings`]: every value, as [`read`] checks
/// them, and that each `cli` agent can be run); the debate's size is not, as `--agents` and
/// `--rounds` may still change it: callers check it with [`Config::validate_size`].
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    load_with_dialect(path).map(|(config, _)| config)
}

/// Which dialect a file was written in; a freemad file comes with the places where moot reads
/// it differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dialect {
    Moot,
    Freemad(Vec<freemad::Note>),
}

/// [`load`], also saying which dialect the file was in.
pub fn load_with_dialect(path: &Path) -> Result<(Config, Dialect), ConfigError> {
    let (config, dialect) = read(path)?;
    let name = path.display().to_string();
    config
        .check_agents_can_run()
        .map_err(|e| e.in_file(&name))?;
    Ok((config, dialect))
}

/// Reads a configuration file in its dialect and checks every value
/// ([`Config::validate_values`]), as every command must before it uses any. Whether each `cli`
/// agent can be run is left to the caller: `moot health` reports it on the agent's own line.
pub fn read(path: &Path) -> Result<(Config, Dialect), ConfigError> {
    let name = path.display().to_string();
    let bytes = moot_files::read_bytes(path, MAX_CONFIG_BYTES).map_err(|e| {
        ConfigError::new(
            "",
            format!(
                "cannot read config {}: {}",
                moot_files::shown(path),
                e.problem
            ),
        )
    })?;
    let text = utf8_text(&format!("config {name}"), bytes).map_err(|m| ConfigError::new("", m))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_lowercase();
    let (config, dialect) = match ext.as_str() {
        "yaml" | "yml" => from_yaml(&text),
        "toml" => native::from_toml(&text).map(|c| (c, Dialect::Moot)),
        "json" => from_json(&text),
        _ => native::from_toml(&text)
            .map(|c| (c, Dialect::Moot))
            .or_else(|toml_err| from_yaml(&text).map_err(|_| toml_err)),
    }
    .map_err(|e| e.in_file(&name))?;
    config.validate_values().map_err(|e| e.in_file(&name))?;
    Ok((config, dialect))
}

/// A configuration given as text (pasted into `moot serve`'s checker), in any format and dialect
/// a file may have: TOML, else YAML or JSON (moot's or freemad's). Checked like a file read by
/// [`load`], its errors naming `name`.
pub fn from_text(text: &str, name: &str) -> Result<(Config, Dialect), ConfigError> {
    let (config, dialect) = native::from_toml(text)
        .map(|c| (c, Dialect::Moot))
        .or_else(|toml_err| from_yaml(text).map_err(|_| toml_err))
        .map_err(|e| e.in_file(name))?;
    config.validate_settings().map_err(|e| e.in_file(name))?;
    Ok((config, dialect))
}

/// YAML in either dialect.
pub fn from_yaml(text: &str) -> Result<(Config, Dialect), ConfigError> {
    match serde_saphyr::from_str::<serde_json::Value>(text) {
        Ok(doc) if freemad::recognises(&doc) => from_freemad(doc),
        _ => native::from_yaml(text).map(|c| (c, Dialect::Moot)),
    }
}

/// JSON in either dialect.
pub fn from_json(text: &str) -> Result<(Config, Dialect), ConfigError> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(doc) if freemad::recognises(&doc) => from_freemad(doc),
        _ => native::from_json(text).map(|c| (c, Dialect::Moot)),
    }
}

fn from_freemad(doc: serde_json::Value) -> Result<(Config, Dialect), ConfigError> {
    let (config, notes) = freemad::from_value(doc)?.to_moot()?;
    Ok((config, Dialect::Freemad(notes)))
}

/// `bytes` as text, or why not: the offset, line and column of the first byte that is not
/// UTF-8, said of `what`.
pub fn utf8_text(what: &str, bytes: Vec<u8>) -> Result<String, String> {
    moot_files::utf8(bytes).map_err(|e| format!("{what} is {e}"))
}
