//! The log file of `[logging]` (freemad's `logging` block): one line per event of a debate,
//! appended, redacted like everything moot stores.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use moot_config::{LogLevel, LoggingSection};
use moot_core::debate::{CallKey, Outcome, Slot, Transcript};
use moot_core::redact::Redactor;
use serde_json::json;

/// An open log file: a line per event at or above its level. One is opened per runner and
/// shared by its debates (a benchmark's run at once), each line written whole.
pub struct LogFile {
    file: Mutex<std::fs::File>,
    level: LogLevel,
    structured: bool,
    redactor: Arc<Redactor>,
}

impl LogFile {
    /// The configured log, opened for appending; `None` without `logging.file`.
    pub fn open(section: &LoggingSection, redactor: Arc<Redactor>) -> Result<Option<LogFile>> {
        let Some(path) = &section.file else {
            return Ok(None);
        };
        let path = Path::new(path);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("logging.file: creating {}", dir.display()))?;
        }
        // Only a regular file: a FIFO there would block the debate until something read it.
        let file =
            moot_files::open_output(path, moot_files::Output::Append).context("logging.file")?;
        Ok(Some(LogFile {
            file: Mutex::new(file),
            level: section.level,
            structured: section.structured,
            redactor,
        }))
    }

    /// Writes `[event] k=v …` (or its JSON form) when `level` is at or above the log's. A log
    /// that cannot be written does not stop the debate; the store holds everything anyway.
    pub fn event(&self, level: LogLevel, event: &str, fields: &[(&str, String)]) {
        if level < self.level {
            return;
        }
        let now = moot_engine::timestamp();
        let mut line = if self.structured {
            let mut message = serde_json::Map::new();
            message.insert("event".into(), json!(event));
            for (k, v) in fields {
                message.insert((*k).into(), json!(self.redactor.redact(v)));
            }
            let message = serde_json::Value::Object(message).to_string();
            json!({"timestamp": now, "level": level.name(), "message": message}).to_string()
        } else {
            let mut line = format!("{now} {} [{event}]", level.name());
            for (k, v) in fields {
                line.push_str(&format!(" {k}={}", quoted(&self.redactor.redact(v))));
            }
            line
        };
        line.push('\n');
        // One write per line: debates writing at once (and other processes appending to the
        // same file) never split one another's lines.
        if let Ok(mut f) = self.file.lock() {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// One debate's view of a log: every line names its run, and call lines name their agent.
pub struct RunLog<'a> {
    file: &'a LogFile,
    run: String,
    /// Agent ids by index, to name agents in call lines.
    agents: Vec<String>,
}

impl<'a> RunLog<'a> {
    pub fn new(file: &'a LogFile, run: &str, agents: Vec<String>) -> RunLog<'a> {
        RunLog {
            file,
            run: run.to_string(),
            agents,
        }
    }

    /// An event of this run: `run=ID` first, then `fields`.
    pub fn event(&self, level: LogLevel, event: &str, fields: &[(&str, String)]) {
        let mut all = Vec::with_capacity(fields.len() + 1);
        all.push(("run", self.run.clone()));
        all.extend(fields.iter().filter(|(k, _)| *k != "run").cloned());
        self.file.event(level, event, &all);
    }

    fn agent(&self, index: usize) -> String {
        self.agents
            .get(index)
            .cloned()
            .unwrap_or_else(|| format!("#{}", index + 1))
    }
}

/// A value as it can be read back: bare when it is one plain word, quoted (Rust/JSON-style
/// escapes) when it holds spaces, quotes, `=` or line breaks.
fn quoted(v: &str) -> String {
    let plain = !v.is_empty()
        && !v
            .chars()
            .any(|c| c.is_whitespace() || c == '"' || c == '=' || c == '\\');
    if plain {
        v.to_string()
    } else {
        format!("{v:?}")
    }
}

impl moot_engine::Observer for RunLog<'_> {
    fn round_started(&self, round: usize, calls: usize) {
        self.event(
            LogLevel::Info,
            "round_start",
            &[("round", round.to_string()), ("calls", calls.to_string())],
        );
    }

    fn call_finished(&self, call: CallKey, outcome: Option<&Outcome>) {
        let mut fields = vec![
            ("round", call.round.to_string()),
            ("agent", self.agent(call.agent)),
        ];
        if call.slot != Slot::Answer {
            fields.push(("slot", call.slot.label()));
        }
        let level = match outcome {
            Some(Outcome::Responded { answer, .. }) => {
                fields.push(("status", "responded".into()));
                let answer = answer
                    .as_ref()
                    .map_or("(no answer)".to_string(), |a| a.canonical().to_string());
                fields.push(("answer", answer));
                LogLevel::Info
            }
            Some(Outcome::Missing { reason }) => {
                fields.push(("status", "missing".into()));
                fields.push(("reason", reason.clone()));
                LogLevel::Error
            }
            Some(Outcome::Skipped { reason }) => {
                fields.push(("status", "skipped".into()));
                fields.push(("reason", reason.clone()));
                LogLevel::Info
            }
            None => LogLevel::Warning,
        };
        self.event(level, "call", &fields);
        if let Some(text) = outcome.and_then(Outcome::text) {
            self.event(
                LogLevel::Debug,
                "call_output",
                &[
                    ("round", call.round.to_string()),
                    ("agent", self.agent(call.agent)),
                    ("text", text.to_string()),
                ],
            );
        }
    }

    fn round_finished(&self, round: usize, _transcript: &Transcript) {
        self.event(LogLevel::Info, "round_end", &[("round", round.to_string())]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_bare_or_quoted() {
        assert_eq!(quoted("408"), "408");
        assert_eq!(quoted("a b"), "\"a b\"");
        assert_eq!(quoted("x=1"), "\"x=1\"");
        assert_eq!(quoted("line\nbreak"), "\"line\\nbreak\"");
        assert_eq!(quoted(""), "\"\"");
    }
}
