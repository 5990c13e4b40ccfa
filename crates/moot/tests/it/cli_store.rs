//! Which store a command opens, driven through the binary on real SQLite files: reading commands
//! (`show`, `decide`, `report`, `resume`) never create a store, only `ask` and `bench` do and
//! only in a folder that exists (or the default location's), and a store that cannot be used
//! (not a database, truncated, from a newer moot) is refused in one line, exit 2, byte for byte
//! as it was.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

use crate::common;

use common::{arith_dataset, Env};

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// An empty folder in `env`.
fn folder(env: &Env, name: &str) -> PathBuf {
    let dir = env.dir.path().join(name);
    std::fs::create_dir(&dir).unwrap();
    dir
}

/// Every reading command, and `resume`, on a run or benchmark named `r1`.
const READERS: [&[&str]; 4] = [
    &["show", "r1"],
    &["decide", "--run", "r1"],
    &["report", "r1"],
    &["resume", "r1"],
];

fn ask_args(store: &Path) -> Vec<String> {
    [
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--answer",
        "numeric",
        "--rounds",
        "1",
        "--json",
        "--store",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([store.display().to_string()])
    .collect()
}

/// Records one debate of simulated agents in `store`; its run id.
fn record_a_run(env: &Env, store: &Path) -> String {
    let v = env.json(
        &ask_args(store)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    v["run_id"].as_str().unwrap().to_string()
}

/// Runs `moot ARGS --store STORE`, expects exit 2, and returns stderr.
fn refused(env: &Env, args: &[&str], store: &Path) -> String {
    let out = env
        .moot()
        .args(args)
        .arg("--store")
        .arg(store)
        .assert()
        .code(2)
        .get_output()
        .clone();
    String::from_utf8(out.stderr).unwrap()
}

/// Every command that opens a store, on `store`: the readers, `resume`, `ask` and `bench`.
fn every_store_command(env: &Env) -> Vec<Vec<String>> {
    let data = arith_dataset(env, 2);
    let mut all: Vec<Vec<String>> = READERS
        .iter()
        .map(|a| a.iter().map(|s| s.to_string()).collect())
        .collect();
    let mut ask = ask_args(Path::new("-"));
    ask.truncate(ask.len() - 2);
    all.push(ask);
    all.push(
        [
            "bench",
            "--dataset",
            &data,
            "--protocol",
            "som",
            "--sim",
            "--limit",
            "1",
            "--run",
            "b1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    );
    all
}

#[test]
fn reading_commands_never_create_a_store() {
    let env = Env::new();
    let dir = folder(&env, "work");
    let typo = dir.join("typo.db");
    for args in READERS {
        let err = refused(&env, args, &typo);
        assert_eq!(
            err,
            format!("moot: error: no store at {}\n", typo.display()),
            "{args:?}"
        );
        assert!(
            listing(&dir).is_empty(),
            "{args:?} created {:?}",
            listing(&dir)
        );
    }
    // A missing folder is not created either.
    let deep = dir.join("nodir").join("typo").join("moot.db");
    for args in READERS {
        let err = refused(&env, args, &deep);
        assert_eq!(
            err,
            format!("moot: error: no store at {}\n", deep.display())
        );
    }
    assert!(listing(&dir).is_empty());
    // Through MOOT_STORE, the message says where the path came from.
    let out = env
        .moot()
        .env("MOOT_STORE", &typo)
        .args(["show", "r1"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("moot: error: no store at {} (MOOT_STORE)\n", typo.display())
    );
    assert!(listing(&dir).is_empty());
}

#[cfg(target_os = "linux")]
#[test]
fn the_default_location_is_named_when_empty_and_created_only_by_a_writing_command() {
    let env = Env::new();
    let data = env.dir.path().join("data");
    let default = data.join("moot").join("moot.db");
    let moot = || {
        let mut c = Command::cargo_bin("moot").unwrap();
        c.env_remove("MOOT_STORE")
            .env_remove("MOOT_MODEL_DIR")
            .env("XDG_DATA_HOME", &data)
            .env("HOME", env.dir.path().join("home"));
        c
    };
    for args in READERS {
        let out = moot().args(args).assert().code(2).get_output().clone();
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            format!(
                "moot: error: no store at {} (the default location; pass --store FILE or set MOOT_STORE to use another)\n",
                default.display()
            ),
            "{args:?}"
        );
        assert!(!data.exists(), "{args:?} created {}", data.display());
    }
    // A writing command creates the user data folder and the store in it.
    let out = moot()
        .args([
            "ask",
            "What is 17 * 24?",
            "--sim",
            "--gold",
            "408",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(default.is_file());
    moot()
        .args(["show", v["run_id"].as_str().unwrap()])
        .assert()
        .success();
}

#[test]
fn a_writing_command_does_not_create_a_missing_folder_of_an_explicit_path() {
    let env = Env::new();
    let nodir = env.dir.path().join("nodir");
    let path = nodir.join("typo").join("moot.db");
    for args in every_store_command(&env) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = refused(&env, &args, &path);
        let expected = if matches!(args[0], "ask" | "bench") {
            format!(
                "moot: error: cannot create the store {}: the folder {} does not exist\n",
                path.display(),
                nodir.display()
            )
        } else {
            format!("moot: error: no store at {}\n", path.display())
        };
        assert_eq!(err, expected, "{args:?}");
        assert!(!nodir.exists(), "{args:?} created {}", nodir.display());
    }
}

/// Checks that every command refuses `store` with `message` (one line, exit 2) and leaves its
/// bytes as they were.
fn refused_by_every_command_untouched(env: &Env, store: &Path, message: &str) {
    let before = std::fs::read(store).unwrap();
    for args in every_store_command(env) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = refused(env, &args, store);
        assert_eq!(err, format!("moot: error: {message}\n"), "{args:?}");
        assert!(
            std::fs::read(store).unwrap() == before,
            "{args:?} changed {}",
            store.display()
        );
    }
}

#[test]
fn a_file_of_random_bytes_is_refused_in_one_line_and_left_as_it_was() {
    let env = Env::new();
    let dir = folder(&env, "work");
    let path = dir.join("random.db");
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let bytes: Vec<u8> = (0..50_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect();
    std::fs::write(&path, &bytes).unwrap();
    refused_by_every_command_untouched(
        &env,
        &path,
        &format!(
            "the store {} is not a moot database or is corrupt: file is not a database",
            path.display()
        ),
    );
    assert_eq!(listing(&dir), ["random.db"], "nothing created beside it");
}

#[test]
fn a_truncated_store_is_refused_in_one_line_and_left_as_it_was() {
    let env = Env::new();
    let store = folder(&env, "live").join("moot.db");
    let run = record_a_run(&env, &store);
    let whole = std::fs::read(&store).unwrap();
    // The file alone holds the run: moot closed the store, writing out its WAL.
    let copy = folder(&env, "copy").join("moot.db");
    std::fs::write(&copy, &whole).unwrap();
    env.moot()
        .args(["show", &run, "--store"])
        .arg(&copy)
        .assert()
        .success();
    // A copy cut short (an interrupted transfer).
    let cut = folder(&env, "cut").join("moot.db");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    refused_by_every_command_untouched(
        &env,
        &cut,
        &format!(
            "the store {} is not a moot database or is corrupt: database disk image is malformed",
            cut.display()
        ),
    );
}

/// The newest migration this binary has (its version is the file name's number).
fn newest_migration() -> i64 {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../moot-store/migrations/sqlite");
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.split('_').next()?.parse().ok()
        })
        .max()
        .unwrap()
}

#[test]
fn a_store_from_a_newer_moot_is_refused_in_one_line_and_left_as_it_was() {
    let env = Env::new();
    let store = folder(&env, "live").join("moot.db");
    record_a_run(&env, &store);
    // The same store as a newer moot would leave it: its newest migration's version, which
    // SQLite keeps as a 6-byte big-endian integer (in the migrations table and in its primary
    // key's index), raised past every migration this binary knows.
    let newest = newest_migration();
    let future: i64 = 20_991_231_000_001;
    let (old, new) = (&newest.to_be_bytes()[2..], &future.to_be_bytes()[2..]);
    let mut bytes = std::fs::read(&store).unwrap();
    let mut patched = 0;
    for i in 0..bytes.len() - old.len() {
        if &bytes[i..i + old.len()] == old {
            bytes[i..i + old.len()].copy_from_slice(new);
            patched += 1;
        }
    }
    assert!(patched >= 1, "the migration version is in the file");
    let newer = folder(&env, "newer").join("moot.db");
    std::fs::write(&newer, &bytes).unwrap();
    refused_by_every_command_untouched(
        &env,
        &newer,
        &format!(
            "the store {} was written by a newer moot (schema version {future}; this moot knows up to {newest}): use that version of moot or a newer one",
            newer.display()
        ),
    );
}

#[test]
fn reading_a_store_leaves_its_file_as_it_was() {
    let env = Env::new();
    let store = folder(&env, "live").join("moot.db");
    let run = record_a_run(&env, &store);
    let before = std::fs::read(&store).unwrap();
    for args in [
        vec!["show", run.as_str()],
        vec!["show", run.as_str(), "--format", "json"],
        vec!["decide", "--run", run.as_str()],
    ] {
        env.moot()
            .args(&args)
            .arg("--store")
            .arg(&store)
            .assert()
            .success();
    }
    // Names nothing stored: input errors, and still nothing written.
    let err = refused(&env, &["show", "nope"], &store);
    assert_eq!(
        err,
        format!(
            "moot: error: no run named \"nope\" in the store {}\n",
            store.display()
        )
    );
    let err = refused(&env, &["report", "nope"], &store);
    assert!(err.contains("no benchmark named \"nope\""), "{err}");
    assert!(
        std::fs::read(&store).unwrap() == before,
        "a reader changed the store"
    );
}

/// A store spec with a password never shows it: not for a password with `/` or `?` in it, not
/// for an upper-case scheme, and a libpq `key=value` string is refused rather than taken for a
/// file name (which would put the password in a file's name).
#[test]
fn passwords_in_store_specs_never_show() {
    let env = Env::new();
    let (_refusing, port) = common::refusing_port();
    for spec in [
        format!("postgres://moot:hun/ter?2@127.0.0.1:{port}/moot"),
        format!("POSTGRES://moot:hunter2@127.0.0.1:{port}/moot"),
        format!("PostgreSQL://moot:hunter2@127.0.0.1:{port}/moot"),
        format!("host=127.0.0.1 port={port} password=hunter2 dbname=moot"),
        "password='hunter2' dbname=moot".to_string(),
    ] {
        let out = env
            .moot()
            .current_dir(env.dir.path())
            .args([
                "ask",
                "What is 2 + 2?",
                "--sim",
                "--gold",
                "4",
                "--store",
                &spec,
            ])
            .assert()
            .failure()
            .get_output()
            .clone();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !said.contains("hunter2") && !said.contains("ter?2"),
            "{spec}: {said}"
        );
        let files: Vec<String> = std::fs::read_dir(env.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            files
                .iter()
                .all(|f| !f.contains("hunter2") && !f.contains("password")),
            "{spec}: {files:?}"
        );
    }
}

/// A tmpfs of a given size on a folder of `env`, unmounted when dropped.
struct Tmpfs {
    root: PathBuf,
}

impl Tmpfs {
    /// Mounts one (`mount -o size=SIZE`), or says the test is skipped and gives `None` where
    /// this process may not mount (mounting needs root).
    fn mount(env: &Env, size: &str, test: &str) -> Option<Tmpfs> {
        let root = folder(env, "fs");
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(&root)
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Tmpfs { root }),
            Ok(out) => {
                eprintln!(
                    "{test}: SKIPPED, no tmpfs can be mounted here (needs root): {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("{test}: SKIPPED, mount cannot run: {e}");
                None
            }
        }
    }

    fn remount(&self, how: &str) {
        let out = std::process::Command::new("mount")
            .args(["-o", &format!("remount,{how}")])
            .arg(&self.root)
            .output()
            .unwrap();
        assert!(out.status.success(), "remount {how}: {out:?}");
    }

    /// Fills the filesystem until about `free` bytes are left, in a file `unfill` removes.
    fn fill_leaving(&self, free: u64) {
        use std::io::Write;
        let out = std::process::Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(&self.root)
            .output()
            .unwrap();
        let available: u64 = String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .and_then(|l| l.trim().parse().ok())
            .unwrap();
        let mut left = available.saturating_sub(free);
        let mut file = std::fs::File::create(self.root.join("filler")).unwrap();
        let block = vec![0x5au8; 4096];
        while left > 0 {
            let n = left.min(block.len() as u64) as usize;
            if file.write_all(&block[..n]).is_err() {
                break;
            }
            left -= n as u64;
        }
    }

    fn unfill(&self) {
        std::fs::remove_file(self.root.join("filler")).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.root)
            .status();
    }
}

/// Issue 42, LOW 8: eight `moot ask --store new.db` started together: 3 to 7 failed ("table
/// runs already exists", "UNIQUE constraint failed: _sqlx_migrations.version").
#[test]
fn eight_asks_started_together_on_a_new_store_all_succeed() {
    let env = Env::new();
    let store = folder(&env, "new").join("new.db");
    let asks: Vec<std::process::Child> = (0..8)
        .map(|_| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("moot"))
                .args(ask_args(&store))
                .env_remove("MOOT_STORE")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for ask in asks {
        let out = ask.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        common::sqlite_text(&store, "SELECT CAST(COUNT(*) AS TEXT) FROM runs").as_deref(),
        Some("8")
    );
}

/// Issue 42, LOW 10: a FIFO as `--store` hung `ask` and `show`. It is refused at once, by name.
#[test]
fn a_fifo_as_the_store_is_refused_at_once_by_name() {
    let env = Env::new();
    let fifo = env.dir.path().join("fifo.db");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the file.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
    for args in every_store_command(&env) {
        let out = env
            .moot()
            .args(&args)
            .arg("--store")
            .arg(&fifo)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "moot: error: cannot open the store {}: it is a FIFO, not a file\n",
                fifo.display()
            ),
            "{args:?}"
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// Issue 42, LOW 10: on a read-only filesystem `show`, `decide` and `serve` failed ("unable to
/// open database file") though they only read. They read it; `ask` is refused in one line that
/// says why.
#[test]
fn reading_commands_and_the_server_work_on_a_store_on_a_read_only_filesystem() {
    let env = Env::new();
    let Some(fs) = Tmpfs::mount(&env, "32m", "read-only filesystem") else {
        return;
    };
    let store = fs.root.join("moot.db");
    let run = record_a_run(&env, &store);
    let dataset = arith_dataset(&env, 2);
    env.moot()
        .args(["bench", "--sim", "--dataset", &dataset, "--protocol", "som"])
        .args(["--run", "arith", "--store"])
        .arg(&store)
        .assert()
        .success();
    fs.remount("ro");
    let on = |args: &[&str]| {
        let out = env
            .moot()
            .args(args)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(on(&["show", &run]).contains("408"));
    assert!(on(&["decide", "--run", &run]).contains("408"));
    assert!(on(&["report", "arith"]).contains("som"));
    let served = common::moot_serve_on(store.to_str().unwrap(), &[], &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (status, body) = rt.block_on(async {
        let r = reqwest::get(format!("{}/api/runs/{run}", served.url))
            .await
            .unwrap();
        (r.status(), r.text().await.unwrap())
    });
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&run), "{body}");
    drop(served);
    let err = refused(
        &env,
        &["ask", "What is 1 + 1?", "--sim", "--gold", "2"],
        &store,
    );
    assert_eq!(
        err,
        format!(
            "moot: error: the store {} cannot be written: it is on a read-only filesystem (reading commands such as moot show and moot report can still open it)\n",
            store.display()
        )
    );
    fs.remount("rw");
}

/// What `moot ARGS` did on `store`, given two minutes: its exit status and stderr.
fn attempt(env: &Env, args: &[String]) -> (bool, String) {
    let out = env
        .moot()
        .args(args)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 42, LOW 10: a store created on a nearly full disk was called corrupt ever after
/// ("database disk image is malformed"). For every amount of space left, `ask` works or says
/// the disk is full, naming the store; once space is back the store works.
#[test]
fn a_store_started_on_a_nearly_full_disk_works_once_space_is_back() {
    let env = Env::new();
    let Some(fs) = Tmpfs::mount(&env, "2m", "full disk, new store") else {
        return;
    };
    let store = fs.root.join("moot.db");
    let full = format!(
        "moot: error: the store {} cannot be written: its disk is full",
        store.display()
    );
    for free_kib in [0, 8, 16, 24, 40, 64, 96, 128, 160, 200, 256, 320] {
        for entry in std::fs::read_dir(&fs.root).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        fs.fill_leaving(free_kib * 1024);
        let (ok, err) = attempt(&env, &ask_args(&store));
        assert!(ok || err.starts_with(&full), "{free_kib} KiB free: {err}");
        fs.unfill();
        let (ok, err) = attempt(&env, &ask_args(&store));
        assert!(ok, "{free_kib} KiB were free, then space came back: {err}");
    }
}

/// A disk that fills under a store in use: `ask` says so, naming the store; once space is
/// back what the store held is there and `ask` works.
#[test]
fn a_full_disk_is_named_and_the_store_works_once_space_is_back() {
    let env = Env::new();
    let Some(fs) = Tmpfs::mount(&env, "4m", "full disk") else {
        return;
    };
    let store = fs.root.join("moot.db");
    let run = record_a_run(&env, &store);
    fs.fill_leaving(0);
    let (ok, err) = attempt(&env, &ask_args(&store));
    assert!(!ok, "{err}");
    assert!(
        err.contains(&format!(
            "the store {} cannot be written: its disk is full",
            store.display()
        )),
        "{err}"
    );
    fs.unfill();
    env.moot()
        .args(["show", &run, "--store"])
        .arg(&store)
        .assert()
        .success();
    record_a_run(&env, &store);
}

/// Issue 42, LOW 9: a `rate_allowances` row set far ahead (`tat_us` = 9×10^18, or a clock
/// stepped back) stalled every debate of that model, silently, until its hard deadline. The
/// debate goes ahead and the user is told.
#[test]
fn a_rate_allowance_set_far_ahead_is_reset_with_a_warning_not_waited_on() {
    let env = Env::new();
    let model = common::fake_openai::FakeOpenAi::start(std::time::Duration::from_millis(1));
    let team = model.team(2, 1).replace(
        "stream = false\n",
        "stream = false\nrequests_per_minute = 600\n",
    );
    let team = env.write("team.toml", &team);
    let ask = |env: &Env| {
        env.moot()
            .args(["ask", "What is 6 * 7?", "--config"])
            .arg(&team)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap()
    };
    let first = ask(&env);
    assert!(first.status.success(), "{first:?}");
    let store = env.store();
    assert!(
        common::sqlite_text(&store, "SELECT key FROM rate_allowances").is_some(),
        "the limit is shared through the store"
    );
    common::sqlite_exec(
        &store,
        "UPDATE rate_allowances SET tat_us = 9000000000000000000",
    );
    let second = ask(&env);
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{err}");
    assert_eq!(
        common::sqlite_text(
            &store,
            "SELECT CAST(MAX(tat_us) < 9000000000000000000 AS TEXT) FROM rate_allowances"
        )
        .as_deref(),
        Some("1"),
        "reset"
    );
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("moot: warning:"))
        .collect();
    assert!(
        !warnings.is_empty() && warnings.iter().all(|w| w.contains("rate allowance")),
        "{err}"
    );
}
