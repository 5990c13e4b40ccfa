//! Errors the user can fix. Everything the application layer does returns `anyhow::Error`
//! chains whose links are typed: an [`InputError`] (a flag, a file, a question, a request),
//! `moot_config::ConfigError`, `moot_store::StoreError`, `moot_engine::EngineError`. Front ends
//! look for these links to decide how to report (the CLI exits 2 on an input error, the server
//! answers 400, Python raises the matching exception); [`kind_of`] does the looking once.

use std::fmt;

/// An error in what the user gave (arguments, files, a request, stdin): theirs to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError(pub String);

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// A configuration that cannot be used is the user's to fix, with the file and key.
impl From<moot_config::ConfigError> for InputError {
    fn from(e: moot_config::ConfigError) -> InputError {
        InputError(e.to_string())
    }
}

/// Shorthand for returning an [`InputError`].
pub fn bad_input<T>(message: impl Into<String>) -> anyhow::Result<T> {
    Err(InputError(message.into()).into())
}

/// What kind of failure an error is, for front ends that report kinds differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Something the user gave is wrong (a flag, a request, a question, a configuration).
    Input,
    /// The store cannot be used as it is (missing, damaged, not moot's, from a newer moot).
    UnusableStore,
    /// The store failed while in use.
    Store,
    /// Anything else: a backend, the sandbox, a bug.
    Other,
}

/// The kind of `e`, from the first typed link of its chain that says.
pub fn kind_of(e: &anyhow::Error) -> ErrorKind {
    for link in e.chain() {
        if link.downcast_ref::<InputError>().is_some()
            || link.downcast_ref::<moot_config::ConfigError>().is_some()
            || link.downcast_ref::<crate::not_found::NotFound>().is_some()
        {
            return ErrorKind::Input;
        }
        if let Some(s) = link.downcast_ref::<moot_store::StoreError>() {
            return if s.is_unusable_store() {
                ErrorKind::UnusableStore
            } else {
                ErrorKind::Store
            };
        }
    }
    ErrorKind::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_typed_link_gives_the_kind() {
        let input = anyhow::Error::new(InputError("bad".into())).context("reading");
        assert_eq!(kind_of(&input), ErrorKind::Input);
        let store = anyhow::Error::new(moot_store::StoreError::RunNotFound("r".into()));
        assert_eq!(kind_of(&store), ErrorKind::Store);
        assert_eq!(kind_of(&anyhow::anyhow!("plain")), ErrorKind::Other);
    }
}
