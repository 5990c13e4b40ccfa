//! The engine's errors: the store's, and configurations the engine cannot run.

use moot_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Config(String),
}
