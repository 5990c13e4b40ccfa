//! The server's own errors (not a request's).

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Refused(String),
    #[error("cannot listen on {0}")]
    Bind(String),
    /// The listening socket itself failed (not a client, not a passing lack of descriptors).
    #[error("accepting connections: {0}")]
    Accept(#[source] std::io::Error),
}
