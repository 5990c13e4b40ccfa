//! Where built-in datasets are read from: the `MOOT_DATA_DIR` variable and its default.

use std::path::{Path, PathBuf};

/// The environment variable naming the data directory.
pub const DATA_DIR_VAR: &str = "MOOT_DATA_DIR";

/// `MOOT_DATA_DIR` when set (and not empty), else `../shared/data` from the current directory.
pub fn default_data_dir() -> PathBuf {
    match std::env::var_os(DATA_DIR_VAR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let relative = Path::new("..").join("shared").join("data");
            match std::env::current_dir() {
                Ok(cwd) => cwd.join(relative),
                Err(_) => relative,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_data_dir_follows_the_variable() {
        let saved = std::env::var_os(DATA_DIR_VAR);
        std::env::set_var(DATA_DIR_VAR, "/some/where");
        assert_eq!(default_data_dir(), PathBuf::from("/some/where"));
        std::env::remove_var(DATA_DIR_VAR);
        let d = default_data_dir();
        assert!(d.ends_with("../shared/data"), "{}", d.display());
        if let Some(v) = saved {
            std::env::set_var(DATA_DIR_VAR, v);
        }
    }
}
