//! What the tests that drive the `moot` binary share: a temporary directory with its own store.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

pub mod fake_openai;

#[allow(unused_imports)]
pub use fake_openai::read_http_request;

pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn store(&self) -> PathBuf {
        self.dir.path().join("moot.db")
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// `moot` with this environment's store and no model directory override.
    pub fn moot(&self) -> Command {
        let mut c = Command::cargo_bin("moot").unwrap();
        c.env("MOOT_STORE", self.store())
            .env_remove("MOOT_MODEL_DIR");
        c
    }

    /// Runs `moot ARGS`, expects success, and parses stdout as JSON.
    /// Runs `moot ARGS`, expects success, and returns stdout as JSON. A benchmark's
    /// `"throughput"` (calls/s of this invocation, different every run) is checked for
    /// consistency and taken out, so that reports compare as reports; [`Env::raw_json`] keeps it.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut value = self.raw_json(args);
        if let Some(t) = value.as_object_mut().and_then(|o| o.remove("throughput")) {
            let calls = t["calls"].as_f64().expect("throughput.calls");
            let seconds = t["seconds"].as_f64().expect("throughput.seconds");
            let rate = t["calls_per_second"].as_f64().expect("calls_per_second");
            assert!(seconds > 0.0, "{t}");
            assert!(
                (rate - calls / seconds).abs() <= 1e-6 * rate.max(1.0),
                "{t}"
            );
        }
        value
    }

    /// Runs `moot ARGS`, expects success, and returns stdout as JSON, as printed.
    pub fn raw_json(&self, args: &[&str]) -> Value {
        let out = self.stdout(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }

    /// Runs `moot ARGS`, expects success, and returns stdout.
    pub fn stdout(&self, args: &[&str]) -> String {
        let out = self
            .moot()
            .args(args)
            .assert()
            .success()
            .get_output()
            .clone();
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs `moot ARGS`, expects exit code 2, and returns stderr. A command that should have
    /// been refused but runs on (a server that starts) fails after a minute instead of hanging.
    pub fn refused(&self, args: &[&str]) -> String {
        let out = self
            .moot()
            .args(args)
            .timeout(Duration::from_secs(60))
            .assert()
            .code(2)
            .get_output()
            .clone();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// `moot ARGS` on the store `store` (not the environment's own), which must succeed; its
/// stdout.
pub fn stdout_on(env: &Env, store: &str, args: &[&str]) -> String {
    let out = env
        .moot()
        .env("MOOT_STORE", store)
        .args(args)
        .assert()
        .success()
        .get_output()
        .clone();
    String::from_utf8(out.stdout).unwrap()
}

/// [`stdout_on`], parsed as JSON.
pub fn json_on(env: &Env, store: &str, args: &[&str]) -> Value {
    let out = stdout_on(env, store, args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Waits until `path` exists (a marker a test agent leaves), failing after `timeout`.
pub fn wait_for(path: &Path, timeout: Duration) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < timeout,
            "timed out waiting for {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The shell words with which a test's agent records a pid (`$$`, or `$!` for its last job)
/// with its PID namespace, for [`wait_for_pid`]: `echo "$$ $(readlink /proc/self/ns/pid)"`.
/// An agent runs in a PID namespace of its own, where its pids are not the test's.
pub const PID_NAMESPACE: &str = "$(readlink /proc/self/ns/pid)";

/// Waits for `path` to hold a whole pid record of a running process (a line ending in a
/// newline: `echo … > FILE` creates the file empty before it writes, so its existence alone
/// says nothing) and returns its pid as seen from here.
pub fn wait_for_pid(path: &Path, timeout: Duration) -> u32 {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return moot_proc::pid_from_record(&text).unwrap_or_else(|| {
                    panic!("{}: {text:?} names no running process", path.display())
                });
            }
        }
        assert!(
            start.elapsed() < timeout,
            "timed out waiting for a pid in {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `sleep` argument no other process has (`1000.`, this test process's pid and `n`), so
/// that what a test's agent left running can be found by its command line alone.
pub fn sleeper_marker(n: u32) -> String {
    format!("1000.{}{n:03}", std::process::id())
}

/// Waits until no running process has `argument` on its command line, or `within` passes; the
/// ones still running.
pub fn survivors_after(argument: &str, within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let running = moot_proc::processes_with_argument(argument);
        if running.is_empty() || Instant::now() > deadline {
            return running;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes an executable shell script (a test's CLI agent).
pub fn script(env: &Env, name: &str, text: &str) -> PathBuf {
    let path = env.write(name, text);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

/// `n` arithmetic questions (`q1`: "What is 1 * 7?" → 7, …) as a JSONL file in `env`, and the
/// dataset name that reads it.
pub fn arith_dataset(env: &Env, n: usize) -> String {
    let lines: Vec<String> = (1..=n)
        .map(|i| {
            format!(
                "{{\"id\": \"q{i}\", \"q\": \"What is {i} * 7?\", \"a\": {}}}",
                i * 7
            )
        })
        .collect();
    let path = env.write("arith.jsonl", &(lines.join("\n") + "\n"));
    format!(
        "jsonl:{}?kind=numeric&question=q&answer=a&id=id",
        path.display()
    )
}

/// A venv holding the PyPI package `spec` (`openai==1.109.1`; several: `a==1 b==2`), made once under
/// `CARGO_TARGET_TMPDIR` and shared by later runs: a lock lets one test process make it while
/// others wait, and a marker written after a successful install keeps a half-made venv from
/// being trusted. Returns the venv's folder.
pub fn venv_with(spec: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(root).expect("create CARGO_TARGET_TMPDIR");
    let name = format!("venv-{}", spec.replace("==", "-").replace(' ', "+"));
    let dir = root.join(&name);
    let marker = dir.join("moot-installed");
    let lock = std::fs::File::create(root.join(format!("{name}.lock"))).expect("lock file");
    lock.lock().expect("lock the venv");
    // The marker names the venv's place as well as its packages: a venv's scripts start with
    // its python's path, so one moved (a build cache copied elsewhere) is made again.
    let installed = format!("{spec}\n{}", dir.display());
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(installed.as_str()) {
        eprintln!("creating a venv with {spec} in {}", dir.display());
        run_ok(
            std::process::Command::new("python3")
                .args(["-m", "venv", "--clear"])
                .arg(&dir),
            "python3 -m venv (Debian and Ubuntu need python3-venv)",
        );
        run_ok(
            std::process::Command::new(dir.join("bin/python"))
                .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
                // `spec` may name several packages, separated by spaces.
                .args(spec.split_whitespace()),
            &format!("pip install {spec}"),
        );
        std::fs::write(&marker, &installed).expect("write the venv's marker");
    }
    drop(lock);
    dir
}

/// Runs `cmd`, failing the test with its output when it cannot start or does not succeed.
pub fn run_ok(cmd: &mut std::process::Command, what: &str) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A running `moot serve` (on a free port, with `env`'s store), killed when dropped.
pub struct Served {
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT`, from the server's first line.
    pub url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `moot serve --port 0 ARGS` with `vars` set on `env`'s store, created first if it is
/// not there (`moot store init`: the server never creates one), and waits for its first line.
pub fn moot_serve(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> Served {
    env.stdout(&["store", "init"]);
    moot_serve_on(&env.store().display().to_string(), args, vars)
}

/// Starts `moot serve --port 0 --store STORE ARGS` with `vars` set, and waits for its first
/// line.
pub fn moot_serve_on(store: &str, args: &[&str], vars: &[(&str, &str)]) -> Served {
    use std::io::BufRead;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("moot"))
        .arg("serve")
        .args(["--port", "0", "--store", store])
        .args(args)
        .env_remove("MOOT_SERVE_TOKEN")
        .envs(vars.iter().copied())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start moot serve");
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read the first line");
    let url = first
        .trim()
        .strip_prefix("moot serve: ")
        .unwrap_or_else(|| panic!("first line: {first:?}"))
        .to_string();
    Served { child, url }
}

/// A benchmark `arith` of `n` arithmetic questions under `som` and `cot` with simulated agents,
/// in `env`'s store.
pub fn arith_bench(env: &Env, n: usize) {
    let dataset = arith_dataset(env, n);
    env.stdout(&[
        "bench",
        "--sim",
        "--dataset",
        &dataset,
        "--protocol",
        "som,cot",
        "--run",
        "arith",
    ]);
}

/// A port of 127.0.0.1 that refuses connections for as long as the returned socket lives: bound
/// but not listening, so no other process can take it meanwhile (a port found free, released
/// and then used could have been).
pub fn refusing_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("bind a port");
    let port = socket.local_addr().expect("its address").port();
    (socket, port)
}

/// Reads a started `moot ask`'s standard error until the `run ID` line it prints before its
/// first round; returns the id, and the reader, to keep while the process runs (a closed pipe
/// would fail its later writes).
pub fn run_id_from_stderr(
    child: &mut std::process::Child,
) -> (std::io::BufReader<std::process::ChildStderr>, String) {
    use std::io::BufRead;
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("piped stderr"));
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).expect("read stderr") > 0,
            "no run id on stderr"
        );
        if let Some(id) = line.strip_prefix("run ") {
            return (stderr, id.trim().to_string());
        }
    }
}

/// Runs `statements` on the SQLite file at `path` through a connection of its own, as another
/// program could (a test damaging or mending a store, or adding a trigger to it).
pub fn sqlite_exec(path: &Path, statements: &str) {
    let statements = statements.to_string();
    sqlite(path, |mut conn| async move {
        sqlx::raw_sql(&statements).execute(&mut conn).await.unwrap();
        (conn, ())
    });
}

/// The text of the first column of the first row `query` gives on the SQLite file at `path`.
pub fn sqlite_text(path: &Path, query: &str) -> Option<String> {
    let query = query.to_string();
    sqlite(path, |mut conn| async move {
        let found = sqlx::query_scalar::<_, String>(&query)
            .fetch_optional(&mut conn)
            .await
            .unwrap();
        (conn, found)
    })
}

fn sqlite<T, F, Fut>(path: &Path, work: F) -> T
where
    F: FnOnce(sqlx::SqliteConnection) -> Fut,
    Fut: std::future::Future<Output = (sqlx::SqliteConnection, T)>,
{
    use sqlx::{ConnectOptions, Connection};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(path)
            .connect()
            .await
            .unwrap();
        let (conn, found) = work(conn).await;
        conn.close().await.unwrap();
        found
    })
}
