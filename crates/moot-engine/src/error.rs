//! The engine's errors, split by whose they are to fix: the store's, the user's configuration,
//! or moot's own (a protocol that planned something no debate can run).

use moot_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store's own message names the store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The configuration cannot run as given (agents that do not fit the protocol, deadlines
    /// in the wrong order, a backend without what the protocol needs): the user's to fix.
    #[error("{0}")]
    Config(String),
    /// The sandbox that checks code answers could not run a check.
    #[error("checking code answers: {0}")]
    Sandbox(String),
    /// A protocol planned something no debate can run. That is a bug in moot, not in the
    /// configuration, and is reported as one.
    #[error("internal error (a bug in moot, please report it): protocol {protocol} {problem}")]
    Protocol { protocol: String, problem: String },
}

impl EngineError {
    /// The error's class for traces and metrics (`error.type`): low in cardinality, no message.
    pub fn kind(&self) -> &'static str {
        match self {
            EngineError::Store(_) => "store",
            EngineError::Config(_) => "config",
            EngineError::Sandbox(_) => "sandbox",
            EngineError::Protocol { .. } => "protocol",
        }
    }
}
