//! Redaction of secrets from text before it is stored or printed (see docs/architecture.md,
//! Storage).
//!
//! A [`Redactor`] replaces every match of its patterns, and every occurrence of the secrets it
//! was given verbatim (the API keys a configuration names), with `[REDACTED]`. The default
//! patterns catch common key formats: OpenAI-style `sk-…` (and Anthropic's `sk-ant-…`),
//! `Bearer …` tokens, `x-api-key: …` / `api_key=…` assignments, AWS access key ids, GitHub
//! tokens, Google API keys and Slack tokens. Configured patterns add to the defaults.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// What a redacted span becomes.
pub const REDACTED: &str = "[REDACTED]";

/// The default patterns (see the module docs).
pub const DEFAULT_PATTERNS: &[&str] = &[
    r"sk-[A-Za-z0-9_\-]{16,}",
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{12,}=*",
    r#"(?i)\b(x-api-key|api[_-]?key|access[_-]?token|secret[_-]?key)\b["']?\s*[:=]\s*["']?[A-Za-z0-9._\-]{12,}"#,
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",
    r"\bAIza[0-9A-Za-z_\-]{35}\b",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}\b",
];

/// The default patterns, compiled once per process: a configuration is loaded (and a redactor
/// built) for every command, and compiling them is most of the cost. A compiled `Regex` clones
/// cheaply (it shares its program).
static DEFAULT_REGEXES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    DEFAULT_PATTERNS
        .iter()
        .map(|p| Regex::new(p).expect("the default redaction patterns compile"))
        .collect()
});

/// Secrets shorter than this are not redacted verbatim: replacing every `"abc"` in a transcript
/// would destroy it, and a key that short protects nothing.
pub const MIN_SECRET_LEN: usize = 8;

/// Whether an environment variable named `name` holds a secret by its name: `*_KEY`,
/// `*_TOKEN`, `*_SECRET` or anything with `PASSWORD` (any case), e.g. `OPENAI_API_KEY`,
/// `GH_TOKEN`, `PGPASSWORD`.
pub fn names_a_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["_KEY", "_TOKEN", "_SECRET"]
        .iter()
        .any(|end| upper.ends_with(end))
        || upper.contains("PASSWORD")
}

#[derive(Debug, Clone)]
pub struct Redactor {
    patterns: Vec<Regex>,
    secrets: Vec<String>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor {
            patterns: DEFAULT_REGEXES.clone(),
            secrets: Vec::new(),
        }
    }
}

impl Redactor {
    /// The default patterns plus `extra` ones, and `secrets` to remove verbatim. A pattern that
    /// does not compile is an error naming it.
    pub fn new(extra: &[String], secrets: Vec<String>) -> Result<Redactor, String> {
        let mut patterns = DEFAULT_REGEXES.clone();
        for p in extra {
            patterns.push(Regex::new(p).map_err(|e| format!("redaction pattern {p:?}: {e}"))?);
        }
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        // Longest first, so a secret containing another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Ok(Redactor { patterns, secrets })
    }

    /// `text` with every secret replaced; borrowed when there was nothing to replace.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), REDACTED));
            }
        }
        for p in &self.patterns {
            if p.is_match(&out) {
                out = Cow::Owned(p.replace_all(&out, REDACTED).into_owned());
            }
        }
        out
    }

    /// Redacts every string (and object key) inside a JSON value, in place.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                map.values_mut().for_each(|v| self.redact_json(v));
                // Keys rarely hold a secret: the map is rebuilt (keeping its order) only when one
                // does, not for every object of every stored call.
                if map.keys().any(|k| matches!(self.redact(k), Cow::Owned(_))) {
                    let entries = std::mem::take(map);
                    for (k, v) in entries {
                        map.insert(self.redact(&k).into_owned(), v);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn variables_named_as_secrets_are_told_apart_from_others() {
        for name in [
            "OPENAI_API_KEY",
            "gh_token",
            "AWS_SECRET",
            "PGPASSWORD",
            "db_password_file",
        ] {
            assert!(names_a_secret(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM",
            "SECRETARY",
        ] {
            assert!(!names_a_secret(name), "{name}");
        }
    }

    #[test]
    fn common_key_formats_are_redacted() {
        let r = Redactor::default();
        for (text, expected) in [
            (
                "my key is sk-proj-AbCdEf0123456789xyz, use it",
                "my key is [REDACTED], use it",
            ),
            (
                "sk-ant-api03-aaaaaaaaaaaaaaaaaaaa leaked",
                "[REDACTED] leaked",
            ),
            (
                "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
                "Authorization: [REDACTED]",
            ),
            ("x-api-key: abcdef0123456789abcd", "[REDACTED]"),
            (
                r#"{"api_key": "abcdef0123456789abcd"}"#,
                r#"{"[REDACTED]"}"#,
            ),
            ("AKIAIOSFODNN7EXAMPLE in env", "[REDACTED] in env"),
            (
                "token ghp_0123456789abcdefghijABCDEFGHIJ0123",
                "token [REDACTED]",
            ),
        ] {
            assert_eq!(r.redact(text), expected, "{text}");
        }
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        let r = Redactor::default();
        for text in [
            "The answer is 408. SOLUTION: 17 * 24 = 408",
            "Ask the skeptic: sk-8 is not a key",
            "The bearer of bad news",
            "api_key_env names OPENAI_API_KEY, which is not set",
        ] {
            assert!(matches!(r.redact(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn configured_secrets_and_patterns_are_redacted() {
        let r = Redactor::new(
            &[r"internal-[0-9]{4}".to_string()],
            vec!["hunter2hunter2".into(), "short".into()],
        )
        .unwrap();
        assert_eq!(
            r.redact("pw hunter2hunter2 id internal-1234 short"),
            "pw [REDACTED] id [REDACTED] short"
        );
        let err = Redactor::new(&["(".to_string()], Vec::new()).unwrap_err();
        assert!(err.contains("\"(\""), "{err}");
    }

    #[test]
    fn json_is_redacted_everywhere() {
        let r = Redactor::new(&[], vec!["s3cr3t-value-42".into()]).unwrap();
        let mut v = serde_json::json!({
            "messages": [{"role": "user", "content": "key s3cr3t-value-42"}],
            "s3cr3t-value-42": 1,
            "n": 3
        });
        r.redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "messages": [{"role": "user", "content": "key [REDACTED]"}],
                "[REDACTED]": 1,
                "n": 3
            })
        );
    }

    proptest! {
        #[test]
        fn a_secret_never_survives_redaction(
            before in "[ -~]{0,40}",
            after in "[ -~]{0,40}",
            secret in "[A-Za-z0-9]{8,24}",
        ) {
            // The marker itself spells one such "secret".
            prop_assume!(!REDACTED.contains(secret.as_str()));
            let r = Redactor::new(&[], vec![secret.clone()]).unwrap();
            let text = format!("{before}{secret}{after}");
            prop_assert!(!r.redact(&text).contains(&secret));
        }

        #[test]
        fn redaction_is_idempotent(text in "[ -~]{0,80}") {
            let r = Redactor::default();
            let once = r.redact(&text).into_owned();
            prop_assert_eq!(r.redact(&once).into_owned(), once);
        }
    }
}
