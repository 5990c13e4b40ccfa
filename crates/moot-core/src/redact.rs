//! Redaction of secrets from text before it is stored or printed (see docs/architecture.md,
//! Storage).
//!
//! A [`Redactor`] replaces every match of its patterns, and every trace of the secrets it was
//! given (the API keys a configuration names), with `[REDACTED]`. A secret is caught
//! - whole, as it is;
//! - in part: any run of [`FRAGMENT_CHARS`] or more of its characters, as an upstream shows a key
//!   cut short (`Zq9T-OPSECRETabcdefghij****`) or a log wraps it;
//! - URL-encoded (`%2B`, `%2b`, every byte or only the reserved ones), whole or in part, as a
//!   key travels in a query string;
//! - base64-encoded (standard and URL-safe alphabets, at each of the three alignments a secret
//!   can have inside a longer encoded text, so `Bearer KEY` or `user:pass` encoded is caught
//!   too), and hex-encoded (either case), whole or in part: what an agent asked to smuggle a
//!   key out would write.
//!
//! The default patterns catch common key formats: OpenAI-style `sk-…` (and Anthropic's
//! `sk-ant-…`), `Bearer …` and `Basic …` credentials, `x-api-key: …` / `api_key=…`
//! assignments, AWS access key ids, GitHub tokens, Google API keys and Slack tokens.
//! Configured patterns add to the defaults.

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use regex::Regex;

/// What a redacted span becomes.
pub const REDACTED: &str = "[REDACTED]";

/// The default patterns (see the module docs).
pub const DEFAULT_PATTERNS: &[&str] = &[
    r"sk-[A-Za-z0-9_\-]{16,}",
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{12,}=*",
    r"(?i)\bbasic\s+[A-Za-z0-9+/]{12,}=*",
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

/// A run of this many characters of a secret (or of its URL-encoded form) is redacted wherever
/// it appears: long enough that ordinary text never holds one by chance, short enough that a key
/// shown cut short to its first dozen characters is still caught.
pub const FRAGMENT_CHARS: usize = 12;

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
    /// Every form of every secret to find: each secret and its encodings whole when they are
    /// shorter than [`FRAGMENT_CHARS`], else each of their runs of that many characters
    /// (overlapping matches of consecutive runs cover a longer fragment whole). `None` without
    /// secrets.
    secrets: Option<AhoCorasick>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor {
            patterns: DEFAULT_REGEXES.clone(),
            secrets: None,
        }
    }
}

/// The forms a secret travels in: as it is, and URL-encoded (reserved bytes only, or every
/// byte; hex digits in either case). Forms equal to another are left out.
fn forms(secret: &str) -> Vec<String> {
    fn encode(secret: &str, every_byte: bool, upper: bool) -> String {
        let mut out = String::with_capacity(secret.len() * 3);
        for b in secret.bytes() {
            let unreserved = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
            if unreserved && !every_byte {
                out.push(b as char);
            } else if upper {
                out.push_str(&format!("%{b:02X}"));
            } else {
                out.push_str(&format!("%{b:02x}"));
            }
        }
        out
    }
    let mut forms = vec![secret.to_string()];
    let mut add = |form: String| {
        if !form.is_empty() && !forms.contains(&form) {
            forms.push(form);
        }
    };
    for (every_byte, upper) in [(false, true), (false, false), (true, true), (true, false)] {
        add(encode(secret, every_byte, upper));
    }
    for form in base64_forms(secret.as_bytes()) {
        add(form);
    }
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    add(hex.to_ascii_uppercase());
    add(hex);
    forms
}

/// The base64 characters that `secret`'s bytes alone decide, when it starts 0, 1 or 2 bytes
/// into an encoded text (every place it can sit: the pattern repeats every 3 bytes), in the
/// standard and URL-safe alphabets. A character that mixes in a neighbour's bits is left out,
/// so these appear in any encoding of a text holding the secret.
fn base64_forms(secret: &[u8]) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    use base64::Engine;
    let mut out = Vec::new();
    for offset in 0..3usize {
        let mut bytes = vec![0u8; offset];
        bytes.extend_from_slice(secret);
        // Character i holds bits 6i..6i+6; the secret's are 8·offset..8·(offset+len).
        let start = (8 * offset).div_ceil(6);
        let end = 8 * bytes.len() / 6;
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&bytes);
            if let Some(inner) = encoded.get(start..end) {
                out.push(inner.to_string());
            }
        }
    }
    out
}

/// What the automaton looks for in `form`: the form whole when it is short, else each of its
/// runs of [`FRAGMENT_CHARS`] characters (runs start and end at character boundaries, so every
/// match does too).
fn needles(form: &str, out: &mut Vec<String>) {
    let bounds: Vec<usize> = form
        .char_indices()
        .map(|(i, _)| i)
        .chain([form.len()])
        .collect();
    let chars = bounds.len() - 1;
    if chars <= FRAGMENT_CHARS {
        out.push(form.to_string());
        return;
    }
    for start in 0..=chars - FRAGMENT_CHARS {
        out.push(form[bounds[start]..bounds[start + FRAGMENT_CHARS]].to_string());
    }
}

impl Redactor {
    /// The default patterns plus `extra` ones, and `secrets` to remove in every form the module
    /// docs list (those shorter than [`MIN_SECRET_LEN`] are left alone). A pattern that
    /// does not compile is an error naming it.
    pub fn new(extra: &[String], secrets: Vec<String>) -> Result<Redactor, String> {
        let mut patterns = DEFAULT_REGEXES.clone();
        for p in extra {
            patterns.push(Regex::new(p).map_err(|e| format!("redaction pattern {p:?}: {e}"))?);
        }
        let mut needles = Vec::new();
        for secret in secrets.iter().map(|s| s.trim()) {
            if secret.len() >= MIN_SECRET_LEN {
                for form in forms(secret) {
                    self::needles(&form, &mut needles);
                }
            }
        }
        needles.sort();
        needles.dedup();
        let secrets = if needles.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::new(&needles)
                    .map_err(|e| format!("the configured secrets could not be indexed: {e}"))?,
            )
        };
        Ok(Redactor { patterns, secrets })
    }

    /// `text` with every secret replaced; borrowed when there was nothing to replace.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        if let Some(secrets) = &self.secrets {
            if let Some(spans) = secret_spans(secrets, text) {
                let mut redacted = String::with_capacity(text.len());
                let mut at = 0;
                for (start, end) in spans {
                    redacted.push_str(&text[at..start]);
                    redacted.push_str(REDACTED);
                    at = end;
                }
                redacted.push_str(&text[at..]);
                out = Cow::Owned(redacted);
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

/// Where secrets (whole, in part, encoded) lie in `text`, in order, overlapping and touching
/// matches joined into one span; `None` when there is none.
fn secret_spans(secrets: &AhoCorasick, text: &str) -> Option<Vec<(usize, usize)>> {
    let mut matches: Vec<(usize, usize)> = secrets
        .find_overlapping_iter(text)
        .map(|m| (m.start(), m.end()))
        .collect();
    if matches.is_empty() {
        return None;
    }
    matches.sort_unstable();
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(matches.len());
    for (start, end) in matches {
        match spans.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => spans.push((start, end)),
        }
    }
    Some(spans)
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

    /// The key the tester's upstream echoed, and the forms it came back in.
    const KEY: &str = "Zq9T-OPSECRETabcdefghijklmnopqrstuvwxyz0123/+=";

    #[test]
    fn a_key_cut_short_is_redacted() {
        let r = Redactor::new(&[], vec![KEY.into()]).unwrap();
        assert_eq!(
            r.redact("Incorrect API key provided: Zq9T-OPSECRETabcdefghijklmnop****. See docs."),
            "Incorrect API key provided: [REDACTED]****. See docs."
        );
        // The end of a key, as "…uvwxyz0123/+=" shows it.
        assert_eq!(
            r.redact("key ending …uvwxyz0123/+="),
            "key ending …[REDACTED]"
        );
        // Runs shorter than FRAGMENT_CHARS are ordinary text.
        assert_eq!(r.redact("Zq9T-OPSECR"), "Zq9T-OPSECR");
    }

    #[test]
    fn a_url_encoded_key_is_redacted() {
        let r = Redactor::new(&[], vec![KEY.into()]).unwrap();
        for encoded in [
            "Zq9T-OPSECRETabcdefghijklmnopqrstuvwxyz0123%2F%2B%3D",
            "Zq9T-OPSECRETabcdefghijklmnopqrstuvwxyz0123%2f%2b%3d",
            // Every byte encoded, cut short.
            "%5A%71%39%54%2D%4F%50%53%45%43%52%45%54%61%62%63",
            "%5a%71%39%54%2d%4f%50%53%45%43%52%45%54%61%62%63",
        ] {
            let text = format!("GET /v1/models?key={encoded} HTTP/1.1");
            assert_eq!(
                r.redact(&text),
                "GET /v1/models?key=[REDACTED] HTTP/1.1",
                "{encoded}"
            );
        }
    }

    #[test]
    fn basic_credentials_are_redacted() {
        let r = Redactor::default();
        assert_eq!(
            r.redact("Authorization: Basic dXNlcjpodW50ZXIyaHVudGVyMg=="),
            "Authorization: [REDACTED]"
        );
    }

    #[test]
    fn a_key_sent_as_a_bearer_or_basic_credential_in_base64_is_redacted() {
        use base64::Engine;
        let key = "HunterPassw0rd4242";
        let r = Redactor::new(&[], vec![key.into()]).unwrap();
        for plain in [
            key.to_string(),
            format!("Bearer {key}"),
            format!("alice:{key}"),
        ] {
            for engine in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ] {
                let encoded = engine.encode(&plain);
                let text = format!("token {encoded} end");
                let out = r.redact(&text);
                assert!(out.contains(REDACTED), "{plain}: {out}");
                assert!(!out.contains(&encoded), "{plain}: {out}");
            }
        }
        let hex: String = key.bytes().map(|b| format!("{b:02X}")).collect();
        assert_eq!(r.redact(&hex), REDACTED);
    }

    #[test]
    fn secrets_with_wide_characters_are_cut_at_character_boundaries() {
        let r = Redactor::new(&[], vec!["ключ-секрет-очень-длинный".into()]).unwrap();
        assert_eq!(r.redact("x секрет-очень-длин y"), "x [REDACTED] y");
    }

    proptest! {
        #[test]
        fn a_long_fragment_of_a_secret_never_survives_redaction(
            before in "[ -~]{0,40}",
            after in "[ -~]{0,40}",
            secret in "[A-Za-z0-9_/+=-]{12,48}",
            cut in any::<(prop::sample::Index, prop::sample::Index)>(),
        ) {
            prop_assume!(!REDACTED.contains(secret.as_str()));
            let r = Redactor::new(&[], vec![secret.clone()]).unwrap();
            let start = cut.0.index(secret.len() - FRAGMENT_CHARS + 1);
            let end = start + FRAGMENT_CHARS + cut.1.index(secret.len() - start - FRAGMENT_CHARS + 1);
            let fragment = &secret[start..end];
            let text = format!("{before}{fragment}{after}");
            prop_assert!(!r.redact(&text).contains(fragment));
        }

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

        /// Whatever surrounds it, a secret encoded in base64 (either alphabet, padded or not,
        /// as `Bearer KEY` or `user:KEY` are sent) or hex keeps none of the characters its
        /// bytes alone decide.
        #[test]
        fn an_encoded_secret_never_survives_redaction(
            before in proptest::collection::vec(any::<u8>(), 0..12),
            after in proptest::collection::vec(any::<u8>(), 0..12),
            secret in "[ -~]{8,32}",
            url_safe in any::<bool>(),
        ) {
            use base64::Engine;
            prop_assume!(secret.trim().len() == secret.len());
            let r = Redactor::new(&[], vec![secret.clone()]).unwrap();
            let mut bytes = before.clone();
            bytes.extend_from_slice(secret.as_bytes());
            bytes.extend_from_slice(&after);
            let encoded = if url_safe {
                base64::engine::general_purpose::URL_SAFE.encode(&bytes)
            } else {
                base64::engine::general_purpose::STANDARD.encode(&bytes)
            };
            let offset = before.len() % 3;
            let start = (before.len() * 8).div_ceil(6);
            let end = (before.len() + secret.len()) * 8 / 6;
            let inner = &encoded[start..end];
            let redacted = r.redact(&encoded);
            prop_assert!(!redacted.contains(inner), "offset {offset}: {encoded} -> {redacted}");
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let secret_hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
            prop_assert!(!r.redact(&hex).contains(&secret_hex));
            let upper = hex.to_ascii_uppercase();
            prop_assert!(!r.redact(&upper).contains(&secret_hex.to_ascii_uppercase()));
        }

        #[test]
        fn redaction_is_idempotent(text in "[ -~]{0,80}") {
            let r = Redactor::default();
            let once = r.redact(&text).into_owned();
            prop_assert_eq!(r.redact(&once).into_owned(), once);
        }
    }
}
