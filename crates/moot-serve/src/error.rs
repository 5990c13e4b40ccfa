//! The server's own errors (not a request's).

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Refused(String),
    #[error("cannot listen on {0}")]
    Bind(String),
    #[error("serving: {0}")]
    Serve(String),
}
