//! `-o KEY=VALUE` (`options=` in Python, `"options"` over HTTP): one protocol option set by a
//! request, as the `[protocol]` table would set it.

use crate::config::Config;
use crate::error::ConfigError;
use crate::field::{Field, Via};

impl Config {
    /// Applies `key=value` to the `[protocol]` table (`faults.x` reaches its faults table). The
    /// value is read as TOML (numbers, booleans) and otherwise taken as a string. Errors name
    /// the option as `via`'s user set it.
    pub fn set_protocol_option(&mut self, assignment: &str, via: Via) -> Result<(), ConfigError> {
        let fail =
            |key: &str, message: String| ConfigError::new(format!("protocol.{key}"), message);
        let (key, value) = assignment.split_once('=').ok_or_else(|| {
            ConfigError::new(
                "",
                format!(
                    "{} {assignment:?}: expected KEY=VALUE",
                    via.name(Field::ProtocolOption)
                ),
            )
        })?;
        let named = via.protocol_option(key.trim());
        let (key, value) = (key.trim(), value.trim());
        let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        let mut table = toml::Table::try_from(&self.protocol)
            .map_err(|e| fail(key, format!("{named}: {e}")))?;
        match key.split_once('.') {
            Some(("faults", field)) => {
                let faults = table
                    .entry("faults")
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if let toml::Value::Table(f) = faults {
                    f.insert(field.to_string(), value);
                }
            }
            Some(_) => return Err(fail(key, format!("{named}: no such protocol option"))),
            None => {
                table.insert(key.to_string(), value);
            }
        }
        self.protocol = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| {
                fail(
                    key,
                    format!("{named}: {}", e.to_string().trim().replace('\n', " ")),
                )
            })?;
        Ok(())
    }
}
