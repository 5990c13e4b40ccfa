//! The commented example configuration `moot config example` prints. Its values are the
//! defaults, and its lists of names are the registries': tests below hold it to both.

/// The example, as printed.
pub const EXAMPLE: &str = include_str!("example.toml");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{backend_names, AnswerSetting, Config};
    use moot_backends::openai::ServerKind;

    /// `key = value` lines of `section` in the example, commented out or not, with the value's
    /// text and the line's trailing comment.
    fn lines_of(section: &str) -> Vec<(String, String, String)> {
        let mut current = String::new();
        let mut out = Vec::new();
        for line in EXAMPLE.lines() {
            let t = line.trim_start_matches('#').trim();
            if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
                if !line.starts_with('#') || !current.is_empty() && name.starts_with('[') {
                    current = name.trim_matches('[').to_string();
                }
                continue;
            }
            if current != section {
                continue;
            }
            let Some((key, rest)) = t.split_once('=') else {
                continue;
            };
            let key = key.trim();
            if key.is_empty() || key.contains(' ') {
                continue;
            }
            let (value, comment) = match rest.find(" #") {
                Some(at) => (rest[..at].trim(), rest[at + 2..].trim()),
                None => (rest.trim(), ""),
            };
            out.push((key.to_string(), value.to_string(), comment.to_string()));
        }
        out
    }

    #[test]
    fn the_example_reads_and_validates() {
        let c = crate::dialect::native::from_toml(EXAMPLE).unwrap();
        c.validate().unwrap();
        assert_eq!(c.agents.len(), 3);
    }

    #[test]
    fn the_example_shows_the_defaults() {
        let defaults = toml::Table::try_from(Config::default()).unwrap();
        let engine = moot_engine::EngineConfig::default();
        let mut compared = 0;
        for section in ["debate", "retry", "budget", "security", "cache", "output"] {
            let table = defaults[section].as_table().unwrap();
            for (key, value, comment) in lines_of(section) {
                // A line that shows how to change a setting says what the default is instead.
                let value = match comment.split_once("(default ") {
                    Some((_, rest)) => rest.split(')').next().unwrap_or(rest).to_string(),
                    None => value,
                };
                let shown: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
                    .unwrap_or_else(|e| panic!("{section}.{key} = {value}: {e}"))
                    .remove("v")
                    .unwrap();
                if shown.is_array() || shown.is_table() {
                    continue; // lists are examples of what to put there, not defaults
                }
                let default = match (section, key.as_str()) {
                    ("debate", "min_agents") => {
                        Some(toml::Value::Integer(engine.min_agents as i64))
                    }
                    _ => table.get(&key).cloned(),
                };
                if let Some(default) = default {
                    assert_eq!(
                        shown, default,
                        "{section}.{key} in the example is not the default"
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared >= 12, "only {compared} values compared");
    }

    /// The `a | b | c` list in the comment of `key`'s line in `section`.
    fn listed(section: &str, key: &str) -> Vec<String> {
        let (_, _, comment) = lines_of(section)
            .into_iter()
            .find(|(k, _, _)| k == key)
            .unwrap_or_else(|| panic!("{section}.{key} is not in the example"));
        let list = comment.split('(').next().unwrap_or(&comment);
        let list = list.split(':').next_back().unwrap_or(list);
        list.split('|')
            .map(|s| s.trim().trim_end_matches(',').to_string())
            .collect()
    }

    #[test]
    fn the_example_lists_what_the_registries_hold() {
        let protocols: Vec<String> = moot_core::protocol::protocol_names()
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(listed("debate", "protocol"), protocols);
        let rules: Vec<String> = moot_core::decision::rule_names()
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(listed("debate", "decision"), rules);
        let answers: Vec<String> = AnswerSetting::names()
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(listed("debate", "answer"), answers);
        assert_eq!(
            listed("debate", "layout"),
            moot_core::layout::Layout::names()
        );
        let dialects: Vec<String> = ServerKind::NAMES.iter().map(|s| s.to_string()).collect();
        assert_eq!(listed("agents", "dialect"), dialects);
        let backends_line = EXAMPLE
            .lines()
            .find(|l| l.contains("Each agent has a backend:"))
            .unwrap();
        let names: Vec<&str> = backends_line
            .split(':')
            .nth(1)
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(names, backend_names());
    }
}
