//! The sandbox's one error type: it could not be found, started or read (a program's own failure is
//! a verdict, not an error).

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("{program} was not found: {hint}")]
    Missing { program: String, hint: String },
    #[error("the sandbox could not start: {0}")]
    Start(String),
    #[error("the sandbox failed: {0}")]
    Io(String),
}
