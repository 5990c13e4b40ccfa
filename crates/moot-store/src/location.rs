//! [`StoreLocation`]: where a store lives, and opening it for an [`Access`].

use std::path::PathBuf;

use crate::access::Access;
use crate::error::StoreError;
use crate::memory::MemoryStore;
use crate::postgres::PostgresStore;
use crate::sqlite::{self, SqliteStore};
use crate::store::Store;

/// Where a store lives, from `--store`, `MOOT_STORE`, or the default data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file; `default` when it is the default location (see
    /// [`StoreLocation::default_location`]), whose folder [`Access::Create`] may create.
    Sqlite {
        path: PathBuf,
        default: bool,
    },
    Postgres(String),
    /// `memory:`: nothing leaves the process (benchmarks of the engine itself, throwaway runs).
    Memory,
}

impl StoreLocation {
    /// `sqlite://PATH`, `postgres://…`, `memory:`, or a plain file path.
    pub fn parse(spec: &str) -> StoreLocation {
        if spec == "memory:" {
            return StoreLocation::Memory;
        }
        let sqlite = |p: &str| StoreLocation::Sqlite {
            path: PathBuf::from(p),
            default: false,
        };
        if let Some(p) = spec.strip_prefix("sqlite://") {
            sqlite(p)
        } else if let Some(p) = spec.strip_prefix("sqlite:") {
            sqlite(p)
        } else if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            StoreLocation::Postgres(spec.to_string())
        } else {
            sqlite(spec)
        }
    }

    /// The default: `moot.db` in the user's data directory (`~/.local/share/moot` on Linux).
    pub fn default_location() -> Result<StoreLocation, StoreError> {
        dirs::data_dir()
            .map(|d| StoreLocation::Sqlite {
                path: d.join("moot").join("moot.db"),
                default: true,
            })
            .ok_or_else(|| {
                StoreError::Location("no data directory: pass --store or set MOOT_STORE".into())
            })
    }

    /// Opens the store for `access`: see [`Access`] for what each may create or change.
    pub async fn open(&self, access: Access) -> Result<Box<dyn Store>, StoreError> {
        match self {
            StoreLocation::Sqlite { path, default } => {
                if access == Access::Create && *default {
                    sqlite::create_default_folder(path)?;
                }
                match SqliteStore::open_with(path, access).await {
                    Ok(store) => Ok(Box::new(store)),
                    Err(StoreError::NotFound { path, .. }) => Err(StoreError::NotFound {
                        path,
                        default: *default,
                    }),
                    Err(e) => Err(e),
                }
            }
            StoreLocation::Postgres(url) => {
                Ok(Box::new(PostgresStore::open_with(url, access).await?))
            }
            StoreLocation::Memory if access == Access::Read => Err(StoreError::Location(
                "memory: keeps nothing between commands, so there is nothing to read".into(),
            )),
            StoreLocation::Memory => Ok(Box::new(MemoryStore::default())),
        }
    }

    /// [`StoreLocation::open`] with [`Access::Read`]: for commands that only read.
    pub async fn open_read_only(&self) -> Result<Box<dyn Store>, StoreError> {
        self.open(Access::Read).await
    }
}
