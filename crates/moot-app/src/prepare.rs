//! What every front end that touches the store does first: open the store (sharing rate limits
//! with every process that records to it) and the runtime, and find what a name stands for.
//! What a request sets over the configuration is `crate::request`'s.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use moot_config::Config;
use moot_store::{Access, Allowance, BenchRecord, RunRecord, Store, StoreError, StoreLocation};

use crate::error::InputError;

/// What a name given to `resume` or `regrade` stands for in the store.
pub enum Named {
    Run(RunRecord),
    Bench(BenchRecord),
}

/// The run named `name`, else the benchmark of that name; neither is a
/// [`NotFound`](crate::not_found::NotFound).
pub async fn run_or_bench(store: &dyn Store, name: &str) -> Result<Named> {
    match store.run(name).await {
        Ok(run) => Ok(Named::Run(run)),
        Err(StoreError::RunNotFound(_)) => match store.bench(name).await {
            Ok(bench) => Ok(Named::Bench(bench)),
            Err(StoreError::BenchNotFound(_)) => {
                Err(crate::not_found::NotFound::run_or_bench(name).into())
            }
            Err(e) => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    }
}

/// The async runtime every command that touches the store or a backend runs on.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// The store as the user gave it: `--store`, `MOOT_STORE`, or neither (the default location).
pub struct StoreArg {
    pub spec: Option<String>,
    /// The value came from `MOOT_STORE`, which an error about the store then names.
    pub from_env: bool,
    /// Where warnings about what the store holds go (a rate allowance it had to reset).
    pub warn: Warn,
}

impl StoreArg {
    /// Opens the store for what the command does with it: reading commands never create or
    /// change a store (see [`Access`]).
    fn open(&self, access: Access, rt: &tokio::runtime::Runtime) -> Result<Box<dyn Store>> {
        let location = self.location()?;
        rt.block_on(location.open(access))
            .map_err(|e| self.error(e))
    }

    /// Where the store is: `--store`, `MOOT_STORE`, or the default location.
    pub fn location(&self) -> Result<StoreLocation> {
        Ok(match self.spec.as_deref() {
            Some(s) if !s.trim().is_empty() => StoreLocation::parse(s),
            _ => StoreLocation::default_location().map_err(|e| self.error(e))?,
        })
    }

    /// Where the value came from: `--store`, `MOOT_STORE`, or neither (the default location).
    pub fn source(&self) -> StoreSource {
        match self.spec.as_deref() {
            Some(s) if !s.trim().is_empty() && self.from_env => StoreSource::Env,
            Some(s) if !s.trim().is_empty() => StoreSource::Flag,
            _ => StoreSource::Default,
        }
    }

    /// The store opened for `access`, to share across a long-running server's tasks.
    pub fn open_shared(
        &self,
        access: Access,
        rt: &tokio::runtime::Runtime,
    ) -> Result<Arc<dyn Store>> {
        let store: Arc<dyn Store> = Arc::from(self.open(access, rt)?);
        self.share_rate_limits(access, &store);
        Ok(store)
    }

    /// The store for a server, which records the debates it starts in a store that exists
    /// ([`Access::Write`]: a server never creates one, so a mistyped path is refused as a
    /// reading command refuses it, not served empty); one that cannot be written (a read-only
    /// filesystem) is opened to read instead, as `on_notice` is told: the server shows what it
    /// holds and refuses new debates.
    pub fn open_for_serving(
        &self,
        rt: &tokio::runtime::Runtime,
        on_notice: &mut dyn FnMut(&str),
    ) -> Result<Arc<dyn Store>> {
        let location = self.location()?;
        match rt.block_on(location.open(Access::Write)) {
            Ok(store) => {
                let store: Arc<dyn Store> = Arc::from(store);
                self.share_rate_limits(Access::Write, &store);
                Ok(store)
            }
            Err(e @ StoreError::NotWritable { .. }) => {
                on_notice(&format!(
                    "{e}: serving what it holds; new debates are refused"
                ));
                self.open_shared(Access::Read, rt)
            }
            // The way on, where a user meets the refusal first.
            Err(e @ StoreError::NotFound { .. }) => Err(InputError(format!(
                "{:#}; a server serves an existing store: moot store init (with the same --store) makes an empty one",
                self.error(e)
            ))
            .into()),
            Err(e) => Err(self.error(e)),
        }
    }

    /// Makes this process's rate limits draw on the store's allowances, shared with every other
    /// process recording to the same store (workers of one benchmark above all), when the
    /// command records and the store outlives the process; an in-memory store has no one to
    /// share with.
    fn share_rate_limits(&self, access: Access, store: &Arc<dyn Store>) {
        let lasting = !matches!(self.location(), Ok(StoreLocation::Memory));
        if access != Access::Read && lasting {
            moot_backends::limits::share_across_processes(Some(Arc::new(StoreAllowance::new(
                store.clone(),
                self.warn.clone(),
            ))));
        }
    }

    /// Runs `command` on the store opened for `access` and a runtime, then closes the store (so
    /// that the file alone holds what the command wrote).
    pub fn with<T>(
        &self,
        access: Access,
        command: impl FnOnce(&dyn Store, &tokio::runtime::Runtime) -> Result<T>,
    ) -> Result<T> {
        let rt = runtime()?;
        let store: Arc<dyn Store> = Arc::from(self.open(access, &rt)?);
        self.share_rate_limits(access, &store);
        let result = command(store.as_ref(), &rt).map_err(|e| self.placed(e, store.as_ref(), &rt));
        moot_backends::limits::share_across_processes(None);
        rt.block_on(store.close());
        result
    }

    /// The store as a message shows it: a file's path, a URL without its password, `memory:`.
    pub fn shown(&self) -> String {
        match self.location() {
            Ok(StoreLocation::Sqlite { path, .. }) => path.display().to_string(),
            Ok(StoreLocation::Postgres(url)) => moot_store::redact_url(&url),
            Ok(StoreLocation::Memory) => "memory:".into(),
            Ok(StoreLocation::Refused(_)) | Err(_) => "given".into(),
        }
    }

    /// A name the store does not hold ([`NotFound`](crate::not_found::NotFound)), said with
    /// the store looked in and the names close to it there; any other error as it is.
    fn placed(
        &self,
        e: anyhow::Error,
        store: &dyn Store,
        rt: &tokio::runtime::Runtime,
    ) -> anyhow::Error {
        let Some(not_found) = e
            .chain()
            .find_map(|link| link.downcast_ref::<crate::not_found::NotFound>())
        else {
            return e;
        };
        let said = rt.block_on(crate::not_found::described(store, &self.shown(), not_found));
        InputError(said).into()
    }

    /// A store that cannot be used stays a `StoreError` (the front ends classify it with
    /// `crate::error::kind_of`), but one `MOOT_STORE` named says so.
    fn error(&self, e: StoreError) -> anyhow::Error {
        if e.is_unusable_store() && self.from_env {
            return anyhow::Error::new(InputError(format!("{e} (MOOT_STORE)")));
        }
        e.into()
    }
}

/// Where the store in use was named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreSource {
    /// `--store`.
    Flag,
    /// `MOOT_STORE`.
    Env,
    /// Neither: the default location in the user's data directory.
    Default,
}

/// The configuration file at `path`, checked, or the defaults without one.
pub fn load_config(path: Option<&Path>) -> Result<Config, InputError> {
    match path {
        Some(path) => Ok(moot_config::load(path)?),
        None => Ok(Config::default()),
    }
}

/// Where a warning goes: a front end's way of telling its user (the CLI's standard error).
pub type Warn = Arc<dyn Fn(&str) + Send + Sync>;

/// A store's rate allowances as the backends' [`moot_backends::limits::SharedAllowance`]. An
/// allowance the store reset ([`Allowance::Reset`]: its time was further ahead than any limit
/// leaves one) is reported through `warn`, once per allowance in this process.
struct StoreAllowance {
    store: Arc<dyn Store>,
    warn: Warn,
    warned: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl StoreAllowance {
    fn new(store: Arc<dyn Store>, warn: Warn) -> StoreAllowance {
        StoreAllowance {
            store,
            warn,
            warned: Default::default(),
        }
    }

    fn reset(&self, key: &str, ahead: std::time::Duration) {
        let first = self
            .warned
            .lock()
            .map(|mut w| w.insert(key.to_string()))
            .unwrap_or(true);
        if first {
            (self.warn)(&format!(
                "the rate allowance {key} in the store was {} s ahead of the store's clock, further than any rate limit leaves one (a row written by hand, or a clock stepped back): it was reset, and the limit counts from now",
                ahead.as_secs()
            ));
        }
    }
}

#[async_trait::async_trait]
impl moot_backends::limits::SharedAllowance for StoreAllowance {
    async fn take(
        &self,
        key: &str,
        cost: std::time::Duration,
        tolerance: std::time::Duration,
    ) -> Result<Option<std::time::Duration>, String> {
        let micros = |d: std::time::Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        let taken = self
            .store
            .take_allowance(key, micros(cost), micros(tolerance))
            .await
            .map_err(|e| e.to_string())?;
        Ok(match taken {
            Allowance::Taken => None,
            Allowance::Wait(wait) => Some(wait),
            Allowance::Reset { ahead } => {
                self.reset(key, ahead);
                None
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use moot_backends::limits::SharedAllowance;

    use super::*;

    /// Issue 42, LOW 9: an allowance whose time is far ahead (a clock stepped back, a row
    /// written by hand) stalled its model's calls silently. On a real SQLite store the take goes
    /// ahead at once and the user is warned, once.
    #[tokio::test]
    async fn an_allowance_far_ahead_is_taken_at_once_with_one_warning() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(
            moot_store::SqliteStore::open(&dir.path().join("s.db"))
                .await
                .unwrap(),
        );
        store
            .take_allowance("openai:gpt#requests", 8_000_000_000_000_000_000, i64::MAX)
            .await
            .unwrap();
        let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
        let heard = warnings.clone();
        let allowance = StoreAllowance::new(
            store.clone(),
            Arc::new(move |w: &str| heard.lock().unwrap().push(w.to_string())),
        );
        let (cost, burst) = (Duration::from_millis(100), Duration::from_secs(1));
        for _ in 0..3 {
            assert_eq!(
                allowance
                    .take("openai:gpt#requests", cost, burst)
                    .await
                    .unwrap(),
                None
            );
        }
        store.close().await;
        let warnings = warnings.lock().unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("the rate allowance openai:gpt#requests in the store was "),
            "{}",
            warnings[0]
        );
    }
}
