//! What is made once for a benchmark as it stands and shared by every request: its report
//! (`reports`) and its standing (`standings`). A benchmark's value is kept under the key of the
//! state it was made for; requests for that state share it, and those that come while it is
//! being made wait for that making. A value for another state replaces it, and the benchmarks
//! whose values are kept are the [`KEPT`] most recent.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt, Shared};
use tokio::time::Instant;

/// Benchmarks whose values are kept (the most recently made).
const KEPT: usize = 16;

/// A value being made or made, shared.
pub type Sharing<T> = Shared<BoxFuture<'static, T>>;

struct Kept<K, T> {
    name: String,
    key: K,
    made_at: Instant,
    value: Sharing<T>,
}

/// The values kept.
pub struct Shelf<K, T> {
    kept: Mutex<Vec<Kept<K, T>>>,
}

impl<K: PartialEq, T: Clone> Shelf<K, T> {
    pub fn new() -> Shelf<K, T> {
        Shelf {
            kept: Mutex::new(Vec::new()),
        }
    }

    /// Benchmark `name`'s value for `key`, made less than `fresh` ago (or being made); else the
    /// one `make` starts now (it may refuse to, with its error).
    pub fn share<E>(
        &self,
        name: &str,
        key: K,
        fresh: Duration,
        make: impl FnOnce() -> Result<BoxFuture<'static, T>, E>,
    ) -> Result<Sharing<T>, E> {
        // Nothing below panics halfway through a change of the list.
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(k) = kept
            .iter()
            .find(|k| k.name == name && k.key == key && k.made_at.elapsed() < fresh)
        {
            return Ok(k.value.clone());
        }
        let value = make()?.shared();
        kept.retain(|k| k.name != name);
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push(Kept {
            name: name.to_string(),
            key,
            made_at: Instant::now(),
            value: value.clone(),
        });
        Ok(value)
    }

    /// Takes benchmark `name`'s value for `key` off the shelf: a failure is not kept, and the
    /// next request makes it again.
    pub fn forget(&self, name: &str, key: &K) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|k| !(k.name == name && k.key == *key));
    }
}
