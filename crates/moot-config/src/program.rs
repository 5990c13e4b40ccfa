//! Whether a `cli` agent's program can be started, found the way the spawn finds it.

use std::path::Path;

/// Why `command` cannot be started the way the `cli` backend starts it, if it cannot: a path
/// (with a `/`; a relative one from `working_dir`, where the agent runs) that does not exist or
/// is not an executable file, or a bare name that no directory of `PATH` holds as an executable
/// file.
pub fn program_problem(command: &str, working_dir: Option<&Path>) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    enum Found {
        Missing,
        NotExecutable(String),
        Executable,
    }
    let look = |path: &Path| -> Found {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Found::Missing,
            Err(e) => Found::NotExecutable(format!("cannot be read ({e})")),
            Ok(m) if !m.is_file() => Found::NotExecutable("is not a file".into()),
            Ok(m) if m.permissions().mode() & 0o111 == 0 => {
                Found::NotExecutable("is not executable".into())
            }
            Ok(_) => Found::Executable,
        }
    };
    if command.trim().is_empty() {
        return Some("command is empty".into());
    }
    if command.contains('/') {
        let path = match working_dir {
            Some(dir) if Path::new(command).is_relative() => dir.join(command),
            _ => Path::new(command).to_path_buf(),
        };
        return match look(&path) {
            Found::Executable => None,
            Found::Missing => Some(format!("command {} does not exist", path.display())),
            Found::NotExecutable(why) => Some(format!("command {} {why}", path.display())),
        };
    }
    // As the spawn searches PATH: the first executable file of that name wins; files that are
    // not executable are passed over.
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let mut unusable = None;
    for dir in std::env::split_paths(&path_var) {
        let candidate = dir.join(command);
        match look(&candidate) {
            Found::Executable => return None,
            Found::NotExecutable(why) if unusable.is_none() => {
                unusable = Some(format!("command {} {why}", candidate.display()));
            }
            _ => {}
        }
    }
    Some(unusable.unwrap_or_else(|| format!("command {command:?} is not found on PATH")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_as_the_spawn_finds_them() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let plain = dir.join("plain");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let p = plain.to_str().unwrap();
        assert!(program_problem(p, None)
            .unwrap()
            .ends_with("is not executable"));
        assert!(program_problem("plain", None).is_some());
        // Relative paths are taken from the agent's working directory.
        assert!(program_problem("./plain", Some(dir))
            .unwrap()
            .ends_with("is not executable"));
        let d = dir.to_str().unwrap();
        assert!(program_problem(d, None).unwrap().ends_with("is not a file"));
        let gone = dir.join("gone");
        assert!(program_problem(gone.to_str().unwrap(), None)
            .unwrap()
            .ends_with("does not exist"));
        assert_eq!(program_problem("sh", None), None);
        assert_eq!(program_problem("/bin/sh", None), None);
        assert!(program_problem("", None).is_some());
    }
}
