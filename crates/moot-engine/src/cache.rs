//! The request cache: the key a request is stored under, and reading and writing answers in the
//! store's cache. A failed lookup or trim only loses a saving, never a debate. New entries are
//! written in the same batch as their calls (see `RoundRun::flush`), so a store that cannot
//! write them cannot write those calls either, and the debate fails as it would for the calls.

use moot_backends::{Completion, CompletionRequest};
use moot_core::redact::Redactor;
use moot_store::Store;
use serde::Deserialize;

/// The request-cache key of a call: a hash of the backend, the sampling parameters, the mode,
/// the messages and the sample index (the agent), so identical requests are answered once and
/// different agents' samples stay distinct.
pub fn request_key(backend: &str, request: &CompletionRequest, sample: usize) -> String {
    use sha2::{Digest, Sha256};
    // The hashed material, serialised straight into the hash (no copy of the messages). Its
    // JSON text is exactly that of the `json!` object keys were first made from (same fields,
    // same order), so stored caches keep their keys.
    #[derive(serde::Serialize)]
    struct Material<'a> {
        backend: &'a str,
        /// As a `Value`: its `f32`s then print as the `f64`s the first keys hashed.
        params: serde_json::Value,
        mode: &'a moot_backends::CallMode,
        messages: &'a [moot_backends::ChatMessage],
        sample: usize,
    }
    // Feeds what is written into the hash.
    struct HashWriter(Sha256);
    impl std::io::Write for HashWriter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let material = Material {
        backend,
        params: serde_json::to_value(&request.params).unwrap_or_default(),
        mode: &request.mode,
        messages: &request.messages,
        sample,
    };
    let mut hash = HashWriter(Sha256::new());
    // Serialising these plain types into memory cannot fail.
    let _ = serde_json::to_writer(&mut hash, &material);
    let digest = hash.0.finalize();
    let mut hex = String::with_capacity(64);
    for b in digest {
        use std::fmt::Write;
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// The answers stored under `keys`, in their order: `None` where there is none this version
/// can read, and for every key when the lookup fails (which only loses a saving). One query
/// for a round's calls, not one each.
pub(crate) async fn cached(store: &dyn Store, keys: &[&str]) -> Vec<Option<Completion>> {
    match store.cache_get_many(keys).await {
        Ok(found) if found.len() == keys.len() => found
            .into_iter()
            .map(|stored| stored.and_then(|v| read_entry(&v)))
            .collect(),
        _ => keys.iter().map(|_| None).collect(),
    }
}

/// The completion a stored cache entry stands for (`None`: not one this version can read).
pub(crate) fn read_entry(entry: &serde_json::Value) -> Option<Completion> {
    Completion::deserialize(entry).ok()
}

/// The cache entry of `completion` under `key`, redacted like everything else the debate
/// stores (`None` if it cannot be serialised, which only loses a saving).
pub(crate) fn cache_entry(
    redactor: &Redactor,
    key: &str,
    completion: &Completion,
) -> Option<(String, serde_json::Value)> {
    let mut v = serde_json::to_value(completion).ok()?;
    redactor.redact_json(&mut v);
    Some((key.to_string(), v))
}

/// Keeps the `keep` newest cached responses (freemad's `cache.max_entries`); a failure only
/// leaves the cache larger.
pub(crate) async fn trim(store: &dyn Store, keep: u64) {
    let _ = store.cache_trim(keep).await;
}

#[cfg(test)]
mod tests {
    use moot_backends::{CallMode, ChatMessage, CompletionRequest};

    /// The key as it was first computed: a `json!` object of the same fields, as text, hashed.
    fn first_key(backend: &str, request: &CompletionRequest, sample: usize) -> String {
        use sha2::{Digest, Sha256};
        let material = serde_json::json!({
            "backend": backend,
            "params": request.params,
            "mode": request.mode,
            "messages": request.messages,
            "sample": sample,
        });
        let digest = Sha256::digest(material.to_string().as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn keys_stay_those_stored_caches_were_written_under() {
        let mut request = CompletionRequest::new(vec![
            ChatMessage::system("You are agent 2. \"Quote\" and ü."),
            ChatMessage::user("What is 17 * 24?\n\nPeer: 408"),
        ]);
        request.params.temperature = Some(0.7);
        request.params.max_tokens = Some(512);
        request.params.seed = Some(42);
        request.mode = CallMode::Critique;
        for sample in [0, 3] {
            let key = super::request_key("openai:gpt", &request, sample);
            assert_eq!(key, first_key("openai:gpt", &request, sample));
            assert_eq!(key.len(), 64);
        }
        assert_ne!(
            super::request_key("openai:gpt", &request, 0),
            super::request_key("openai:gpt", &request, 1)
        );
    }
}
