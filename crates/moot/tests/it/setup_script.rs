//! `scripts/setup.sh` decides what to install from what the build really loads. These tests run
//! its detection against fake directory trees and fake commands, so they hold on any machine
//! whatever it has installed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn setup_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/setup.sh")
}

/// A fake machine: a root for library directories and a `bin` holding only the commands given.
struct FakeMachine {
    dir: tempfile::TempDir,
}

impl FakeMachine {
    fn new() -> FakeMachine {
        let m = FakeMachine {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(m.bin()).unwrap();
        m
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    fn file(&self, path: &str) -> &Self {
        let p = self.root().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"").unwrap();
        self
    }

    fn command(&self, name: &str, body: &str) -> &Self {
        let p = self.bin().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        self
    }

    /// Every build command present and working.
    fn toolchain(&self) -> &Self {
        // GCC names its OpenMP library's path.
        let gomp = "/usr/lib/gcc/x86_64-linux-gnu/12/libgomp.so";
        self.file(gomp);
        self.command("cc", &format!("echo {gomp}"));
        for c in [
            "cmake",
            "c++",
            "cargo",
            "bwrap",
            "chromedriver",
            "prometheus",
        ] {
            self.command(c, "exit 0");
        }
        self.file("/usr/bin/python3");
        self.command("python3", "exit 0")
    }

    fn run(&self, function: &str, env: &[(&str, &str)]) -> String {
        let out = Command::new("/bin/bash")
            .arg("-c")
            .arg(format!(
                "source '{}' && {function}",
                setup_script().display()
            ))
            .env_clear()
            .env("PATH", self.bin())
            .env("MOOT_SETUP_ROOT", self.root())
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{function}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn missing(&self) -> Vec<String> {
        self.missing_with(&[])
    }

    /// What is missing for the tests (`MOOT_SETUP_TESTS=1`, as scripts/test and .ci/run set).
    fn missing_for_tests(&self) -> Vec<String> {
        self.missing_with(&[("MOOT_SETUP_TESTS", "1")])
    }

    fn missing_with(&self, env: &[(&str, &str)]) -> Vec<String> {
        self.run("moot_missing_packages", env)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }
}

#[test]
fn libclang_cpp_alone_is_not_the_libclang_bindgen_loads() {
    let m = FakeMachine::new();
    m.toolchain()
        .file("/usr/lib/llvm-14/lib/libclang-cpp.so.14")
        .file("/usr/lib/x86_64-linux-gnu/libclang-cpp.so.14")
        .file("/usr/lib/llvm-14/lib/libLLVM-14.so");
    assert_eq!(m.run("moot_find_libclang", &[]), "");
    assert_eq!(m.missing(), ["libclang-dev"]);
}

#[test]
fn every_name_bindgen_loads_counts_as_libclang() {
    for path in [
        "/usr/lib/llvm-14/lib/libclang.so",
        "/usr/lib/llvm-14/lib/libclang-14.so",
        "/usr/lib/llvm-14/lib/libclang.so.1",
        "/usr/lib/x86_64-linux-gnu/libclang-14.so.1",
        "/usr/lib/x86_64-linux-gnu/libclang-14.0.6.so",
        "/usr/local/lib/libclang.so.18.1",
        "/usr/lib64/libclang.so",
    ] {
        let m = FakeMachine::new();
        m.toolchain()
            .file("/usr/lib/llvm-14/lib/libclang-cpp.so.14")
            .file(path);
        let found = m.run("moot_find_libclang", &[]);
        assert!(found.ends_with(path), "{path}: found {found:?}");
        assert_eq!(m.missing(), Vec::<String>::new(), "{path}");
    }
}

#[test]
fn libclang_path_is_searched_first() {
    let m = FakeMachine::new();
    m.toolchain().file("/opt/llvm/lib/libclang.so");
    assert_eq!(m.missing(), ["libclang-dev"]);
    let dir = m.root().join("opt/llvm/lib");
    let found = m.run(
        "moot_find_libclang",
        &[("LIBCLANG_PATH", dir.to_str().unwrap())],
    );
    assert_eq!(Path::new(&found), dir.join("libclang.so"));
}

#[test]
fn missing_build_commands_name_their_packages() {
    let m = FakeMachine::new();
    m.command("cargo", "exit 0")
        .file("/usr/lib/llvm-14/lib/libclang-14.so.1");
    assert_eq!(
        m.missing(),
        [
            "cmake",
            "g++",
            "python3",
            "python3-pip",
            "python3-venv",
            "bubblewrap"
        ]
    );
    // The tests also drive a browser, start PostgreSQL servers and a Prometheus; the quick
    // start needs none of them.
    assert_eq!(
        m.missing_for_tests()[6..],
        [
            "chromium".to_string(),
            "chromium-driver".to_string(),
            "postgresql".to_string(),
            "prometheus".to_string()
        ]
    );
    // A compiler for C but not for C++ still needs g++.
    m.command("cmake", "exit 0").command("cc", "exit 0");
    m.command("bwrap", "exit 0")
        .command("chromedriver", "exit 0");
    assert_eq!(
        m.missing(),
        ["g++", "python3", "python3-pip", "python3-venv"]
    );
    m.command("c++", "exit 0");
    // A compiler that has no OpenMP library (clang alone; GCC would name its path) still
    // needs g++: llama.cpp's threads are OpenMP's.
    let without_gomp = ["g++", "python3", "python3-pip", "python3-venv"];
    assert_eq!(m.missing(), without_gomp);
    m.command("cc", "echo libgomp.so");
    assert_eq!(m.missing(), without_gomp);
    m.command("cc", "echo /usr/lib/gcc/x86_64-linux-gnu/12/libgomp.so");
    assert_eq!(m.missing(), without_gomp);
    m.file("/usr/lib/gcc/x86_64-linux-gnu/12/libgomp.so");
    // A python3 on PATH but none under /usr (pyenv): the sandbox needs Debian's.
    m.command("python3", "exit 0");
    assert_eq!(m.missing(), ["python3"]);
    m.file("/usr/bin/python3");
    // Debian's python3 without pip, and without ensurepip (python3-venv).
    m.command(
        "python3",
        r#"case "$1 $2" in "-m pip") exit 1;; "-c import venv, ensurepip") exit 1;; esac; exit 0"#,
    );
    assert_eq!(m.missing(), ["python3-pip", "python3-venv"]);
    m.command("python3", r#"[ "$1" = "-c" ] && exit 1; exit 0"#);
    assert_eq!(m.missing(), ["python3-venv"]);
    m.command("python3", "exit 0");
    assert_eq!(m.missing(), Vec::<String>::new());
}

#[test]
fn the_tests_need_a_postgresql_server_installation() {
    let m = FakeMachine::new();
    m.toolchain().file("/usr/lib/llvm-14/lib/libclang.so");
    assert_eq!(m.missing(), Vec::<String>::new());
    assert_eq!(m.missing_for_tests(), ["postgresql"]);
    // The client alone (postgresql-client) cannot start a server: no initdb.
    m.file("/usr/lib/postgresql/15/bin/psql")
        .command("psql", "exit 0");
    assert_eq!(m.missing_for_tests(), ["postgresql"]);
    // Debian's server package, whatever its major version, off PATH.
    m.file("/usr/lib/postgresql/16/bin/initdb");
    assert_eq!(m.missing_for_tests(), Vec::<String>::new());
    let found = m.run("moot_find_initdb", &[]);
    assert_eq!(
        Path::new(&found),
        m.root().join("usr/lib/postgresql/16/bin/initdb")
    );
}

#[test]
fn with_nothing_missing_installing_does_nothing() {
    // No apt-get on the fake PATH: reaching it would fail the command.
    let m = FakeMachine::new();
    m.toolchain().file("/usr/lib/llvm-14/lib/libclang.so");
    assert_eq!(m.run("moot_install_packages && echo done", &[]), "done");
}
