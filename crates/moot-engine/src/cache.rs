//! The request cache: the key a request is stored under, and reading and writing answers in the
//! store's cache. A cache failure only ever loses a saving, never a debate.

use moot_backends::{Completion, CompletionRequest};
use moot_core::redact::Redactor;
use moot_store::Store;

/// The request-cache key of a call: a hash of the backend, the sampling parameters, the mode,
/// the messages and the sample index (the agent), so identical requests are answered once and
/// different agents' samples stay distinct.
pub fn request_key(backend: &str, request: &CompletionRequest, sample: usize) -> String {
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

/// The answer stored under `key`, if there is one this version can read.
pub(crate) async fn cached(store: &dyn Store, key: &str) -> Option<Completion> {
    let stored = store.cache_get(key).await.ok().flatten()?;
    serde_json::from_value(stored).ok()
}

/// Stores `completion` under `key`, redacted like everything else the debate stores, then
/// trims the cache to `max_entries` when there is a limit.
pub(crate) async fn remember(
    store: &dyn Store,
    redactor: &Redactor,
    key: &str,
    completion: &Completion,
    max_entries: Option<u64>,
) {
    if let Ok(mut v) = serde_json::to_value(completion) {
        redactor.redact_json(&mut v);
        let _ = store.cache_put(key, &v).await;
        if let Some(keep) = max_entries {
            let _ = store.cache_trim(keep).await;
        }
    }
}
