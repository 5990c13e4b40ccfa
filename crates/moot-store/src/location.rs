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
    /// A spec moot will not open, and why (said without the spec, which may hold a password).
    Refused(String),
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
        // URL schemes are case-insensitive (RFC 3986 §3.1): `POSTGRES://` is PostgreSQL, not a
        // file of that name.
        let scheme = |prefix: &str| {
            spec.get(..prefix.len())
                .filter(|head| head.eq_ignore_ascii_case(prefix))
                .map(|_| &spec[prefix.len()..])
        };
        if let Some(p) = scheme("sqlite://") {
            sqlite(p)
        } else if let Some(p) = scheme("sqlite:") {
            sqlite(p)
        } else if scheme("postgres://").is_some() || scheme("postgresql://").is_some() {
            StoreLocation::Postgres(spec.to_string())
        } else if is_keyword_connection_string(spec) {
            StoreLocation::Refused(
                "a key=value connection string (host=… dbname=…) is not a store moot opens: give a postgres://USER:PASSWORD@HOST:PORT/DBNAME URL (percent-encode special characters in the password), or a SQLite file path".into(),
            )
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
            StoreLocation::Refused(why) => Err(StoreError::Location(why.clone())),
        }
    }

    /// [`StoreLocation::open`] with [`Access::Read`]: for commands that only read.
    pub async fn open_read_only(&self) -> Result<Box<dyn Store>, StoreError> {
        self.open(Access::Read).await
    }
}

/// Whether `spec` reads as libpq's `key=value …` connection string (`host=db dbname=moot
/// password=…`) rather than a file name: a known keyword followed by `=`, at the start or after
/// a space. Taken for a file, it would put its password in a file's name.
fn is_keyword_connection_string(spec: &str) -> bool {
    const KEYWORDS: [&str; 9] = [
        "host", "hostaddr", "port", "dbname", "user", "password", "sslmode", "passfile", "options",
    ];
    spec.split_whitespace().any(|word| {
        word.split_once('=')
            .is_some_and(|(k, _)| KEYWORDS.iter().any(|kw| k.eq_ignore_ascii_case(kw)))
    })
}
