//! [`Access`]: what a command may do to its store.

/// What a command does with its store; it decides whether a store may be created or changed.
///
/// Reading never creates: `moot show`, `report`, `decide` and `bench status` use
/// [`Access::Read`], `moot resume`, `work` and `regrade` [`Access::Write`], and only what records
/// new runs (`moot ask`, `bench`, `import`, and the server, which records the debates it
/// starts) [`Access::Create`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Only reads. The store must exist; it is opened read-only and is never created, migrated
    /// or written. A store from an older moot is read through an upgraded copy in memory (the
    /// file stays as it is); one from a newer moot is refused ([`StoreError::TooNew`]). Writes
    /// through the returned store fail with [`StoreError::ReadOnly`].
    Read,
    /// Reads and writes a store that must exist (finishing what it holds); a store from an older
    /// moot is migrated, one from a newer moot refused.
    Write,
    /// As [`Access::Write`], but a missing store file is created. Its folder must exist, except
    /// the default location's (the user data directory), which is created.
    Create,
}
