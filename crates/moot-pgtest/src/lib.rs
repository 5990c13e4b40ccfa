//! `moot-pgtest`: a throwaway real PostgreSQL server for moot's tests.
//!
//! The PostgreSQL store is tested against a real server, not a mock: what matters there is what
//! only a real server does — `FOR UPDATE SKIP LOCKED`, transactions racing each other, pools of
//! connections, a server that goes away in the middle of a query. Each server is a fresh
//! `initdb` in a temporary directory, listening only on 127.0.0.1 on a free port, with its unix
//! socket and its log inside that directory, so tests need nothing configured on the machine
//! beyond Debian's `postgresql` package (`scripts/setup.sh` installs it when `MOOT_SETUP_TESTS=1`)
//! and never touch a system cluster.
//!
//! - [`PgServer::shared`]: one server per test process, started on first use; each test takes a
//!   [`PgServer::fresh_database`] of its own on it.
//! - [`PgServer::start`]: a server of its own, for tests that [`PgServer::stop`] it (an immediate
//!   shutdown, like a crash) and [`PgServer::restart`] it.
//!
//! Durability is traded for speed where only an operating-system crash could lose data
//! (`fsync=off`, `full_page_writes=off`, `initdb --no-sync`): a stopped server loses nothing it
//! acknowledged, as a real one would, because commits stay synchronous (with `fsync=off` a
//! synchronous commit costs one `write`, not a disk flush; `synchronous_commit=off` would let
//! [`PgServer::stop`] drop commits the client was told had succeeded).
//!
//! `initdb` and `postgres` refuse to run as root. When the tests run as root (CI containers),
//! the server runs as the `postgres` system user that the Debian package creates: the temporary
//! directory is given to that user and the child processes switch to its uid and gid before
//! they start. Clients (`psql`, the store under test) connect over TCP as the superuser `moot`
//! with trust authentication, whoever runs them.
//!
//! A server never outlives its test process: dropping a [`PgServer`] stops it and removes its
//! directory, the shared one is stopped and removed by an exit handler, and the kernel kills
//! every postmaster when the test process dies (`PR_SET_PDEATHSIG`), even on a crash.
//!
//! The installation is found through `MOOT_PG_BIN` (a directory holding `initdb`, `postgres`,
//! `psql` and `pg_isready`), else the newest `/usr/lib/postgresql/*/bin`, else
//! `pg_config --bindir`.

use std::ffi::CString;
use std::fs::{self, File};
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The superuser `initdb` creates; every URL connects as it.
const SUPERUSER: &str = "moot";
/// The only address the server listens on.
const HOST: &str = "127.0.0.1";
/// Programs the tests need from the installation.
const PROGRAMS: [&str; 4] = ["initdb", "postgres", "psql", "pg_isready"];
/// The system user the server runs as when the tests run as root.
const SYSTEM_USER: &str = "postgres";
/// How long a starting server may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an immediate shutdown may take before the postmaster is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Another process may take the free port between choosing it and the server binding it.
const PORT_ATTEMPTS: usize = 5;
/// Settings for a disposable server. Several workers, each with a pool, connect at once.
const SERVER_SETTINGS: [&str; 5] = [
    "listen_addresses=127.0.0.1",
    "fsync=off",
    "full_page_writes=off",
    "max_connections=200",
    "shared_buffers=32MB",
];

const INSTALL_HINT: &str = "install Debian's postgresql \
    (scripts/setup.sh with MOOT_SETUP_TESTS=1 does), or set MOOT_PG_BIN to a directory holding \
    initdb, postgres, psql and pg_isready";

/// A PostgreSQL server of the tests' own, in a temporary directory, on a free port of 127.0.0.1.
pub struct PgServer {
    /// Holds the data directory (`data/`), the unix socket and the server's log (`server.log`).
    dir: TempDir,
    bin_dir: PathBuf,
    port: u16,
    /// Who `initdb` and `postgres` run as: `None` for the current user, `postgres` for root.
    run_as: Option<SystemUser>,
    /// Serializes stopping and restarting.
    lifecycle: Mutex<()>,
    /// The running postmaster's pid, 0 while stopped. Not behind the lock, so the exit handler
    /// can stop the shared server even while a thread holds the lock.
    postmaster_pid: AtomicI32,
}

/// The uid and gid a child process switches to.
#[derive(Clone, Copy, Debug)]
struct SystemUser {
    uid: libc::uid_t,
    gid: libc::gid_t,
}

static SHARED: OnceLock<PgServer> = OnceLock::new();

impl PgServer {
    /// One server per test process, started on first use; stopped (and its folder removed) when
    /// the process exits.
    pub fn shared() -> &'static PgServer {
        SHARED.get_or_init(|| {
            let server = PgServer::start();
            // Statics are never dropped: without the handler the server would outlive a test
            // process that ends normally (the parent-death signal covers the other endings).
            // SAFETY: registers a function that takes no arguments and returns nothing.
            if unsafe { libc::atexit(stop_shared_server) } != 0 {
                eprintln!(
                    "moot-pgtest: could not register the exit handler; the shared PostgreSQL \
                     server in {} is killed when this process exits, but its folder stays",
                    server.dir.path().display()
                );
            }
            server
        })
    }

    /// A server of its own (for tests that stop it); stopped and removed on drop.
    pub fn start() -> PgServer {
        let bin_dir = bin_dir();
        let run_as = system_user_for_server();
        let dir = tempfile::Builder::new()
            .prefix("moot-pgtest-")
            .tempdir()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot create a temporary directory for PostgreSQL in {}: {e}",
                    std::env::temp_dir().display()
                )
            });
        if let Some(user) = run_as {
            std::os::unix::fs::chown(dir.path(), Some(user.uid), Some(user.gid)).unwrap_or_else(
                |e| {
                    panic!(
                        "cannot give {} to user {SYSTEM_USER}, who runs the server: {e}",
                        dir.path().display()
                    )
                },
            );
        }
        let mut server = PgServer {
            dir,
            bin_dir,
            port: 0,
            run_as,
            lifecycle: Mutex::new(()),
            postmaster_pid: AtomicI32::new(0),
        };
        server.initdb();
        let mut attempt = 1;
        loop {
            server.port = free_port();
            match server.launch() {
                Ok(()) => return server,
                Err(StartFailure::PortTaken) if attempt < PORT_ATTEMPTS => attempt += 1,
                Err(failure) => server.fail(failure),
            }
        }
    }

    /// Creates a new empty database with a unique name and returns its URL,
    /// `postgres://moot@127.0.0.1:PORT/NAME`.
    pub fn fresh_database(&self) -> String {
        static NEXT_DATABASE: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "moot_test_{}_{}",
            std::process::id(),
            NEXT_DATABASE.fetch_add(1, Ordering::Relaxed)
        );
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        self.url(&name)
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{SUPERUSER}@{HOST}:{}/{name}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server at once (immediate shutdown, like a crash or a lost network):
    /// connections in use fail. Does nothing when it is stopped already.
    pub fn stop(&self) {
        let _lifecycle = self
            .lifecycle
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.stop_locked();
    }

    /// Starts it again on the same port and data (after [`PgServer::stop`]; a running server
    /// is stopped first), waiting until it accepts connections.
    pub fn restart(&self) {
        let _lifecycle = self
            .lifecycle
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.stop_locked();
        if let Err(failure) = self.launch() {
            self.fail(failure);
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    fn program(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// A command for a program of the installation with nothing inherited from the test's
    /// environment (`PGDATA`, `PGPORT`, `PGOPTIONS`… would change what it does), run in the
    /// server's directory.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.program(program));
        command.env_clear().current_dir(self.dir.path());
        command
    }

    /// A command for `initdb` or `postgres`, run as the user that owns the data.
    fn server_command(&self, program: &str) -> Command {
        let mut command = self.command(program);
        if let Some(user) = self.run_as {
            // SAFETY: the closure only makes async-signal-safe system calls.
            unsafe {
                command.pre_exec(move || become_user(user));
            }
        }
        command
    }

    fn initdb(&self) {
        let output = self
            .server_command("initdb")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-U", SUPERUSER, "--auth=trust", "-E", "UTF8"])
            // A C collation: the same order on every machine, whatever its locales.
            .args(["--no-locale", "--no-sync"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.program("initdb").display()));
        if !output.status.success() {
            let root_hint = if self.run_as.is_some() {
                format!(
                    "\n(as root, initdb runs as user {SYSTEM_USER}, who must be able to reach {}; \
                     point TMPDIR at a directory it can reach, e.g. /tmp)",
                    self.dir.path().display()
                )
            } else {
                String::new()
            };
            panic!(
                "initdb failed in {} ({}):\n{}{}{root_hint}",
                self.dir.path().display(),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }

    /// Starts the postmaster on `self.port` and waits until it accepts connections. Called with
    /// the server stopped.
    fn launch(&self) -> Result<(), StartFailure> {
        let log_path = self.log_path();
        let log = File::options()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", log_path.display()));
        // Only this start's lines tell whether it failed to bind.
        let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
        let log_for_stdout = log
            .try_clone()
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", log_path.display()));
        let mut command = self.server_command("postgres");
        command
            .arg("-D")
            .arg(self.data_dir())
            .args(["-p", &self.port.to_string()])
            .arg("-k")
            .arg(self.dir.path())
            .args(SERVER_SETTINGS.iter().flat_map(|setting| ["-c", setting]))
            .stdin(Stdio::null())
            .stdout(log_for_stdout)
            .stderr(log);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure only makes async-signal-safe system calls. It runs after the
        // user switch installed by `server_command`, which would clear the death signal.
        unsafe {
            command.pre_exec(move || die_with_parent(parent));
        }
        let postmaster = spawn_from_lasting_thread(command)
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.program("postgres").display()));
        let pid = postmaster.id() as libc::pid_t;
        // The pid is all that is needed from here on: signals and waitpid, also from the exit
        // handler. Dropping the `Child` neither waits for nor kills the process.
        drop(postmaster);
        self.postmaster_pid.store(pid, Ordering::SeqCst);

        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = reap(pid, false) {
                self.postmaster_pid.store(0, Ordering::SeqCst);
                let this_start = read_log_from(&log_path, log_start);
                if this_start.contains("could not bind")
                    || this_start.contains("could not create any TCP/IP sockets")
                {
                    return Err(StartFailure::PortTaken);
                }
                return Err(StartFailure::Exited(describe_wait_status(status)));
            }
            if self.accepts_connections() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.stop_locked();
                return Err(StartFailure::NotReady);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn accepts_connections(&self) -> bool {
        self.command("pg_isready")
            .args(["-q", "-h", HOST, "-p", &self.port.to_string()])
            .args(["-U", SUPERUSER, "-d", "postgres"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }

    fn fail(&self, failure: StartFailure) -> ! {
        let what = match failure {
            StartFailure::PortTaken => format!(
                "could not bind port {} (taken by another process {PORT_ATTEMPTS} times in a row \
                 when starting; on restart, by another process since the stop)",
                self.port
            ),
            StartFailure::Exited(status) => format!("exited while starting ({status})"),
            StartFailure::NotReady => format!(
                "did not accept connections within {} s",
                READY_TIMEOUT.as_secs()
            ),
        };
        panic!(
            "PostgreSQL ({}) on port {} {what}; its log ({}):\n{}",
            self.program("postgres").display(),
            self.port,
            self.log_path().display(),
            read_log_from(&self.log_path(), 0)
        );
    }

    fn stop_locked(&self) {
        let pid = self.postmaster_pid.swap(0, Ordering::SeqCst);
        if pid > 0 {
            shut_down(pid);
        }
    }

    /// Runs SQL through `psql` on database `database`, panicking with psql's message if it
    /// fails; returns what it printed (unaligned, tuples only).
    fn psql(&self, database: &str, sql: &str) -> String {
        let output = self.try_psql(database, sql);
        if !output.status.success() {
            panic!(
                "psql on port {} (database {database}) failed running `{sql}`: {}",
                self.port,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn try_psql(&self, database: &str, sql: &str) -> Output {
        self.psql_command(database, sql)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.program("psql").display()))
    }

    fn psql_command(&self, database: &str, sql: &str) -> Command {
        let mut command = self.command("psql");
        command
            // No ~/.psqlrc, never ask for a password, stop at the first error.
            .args(["-X", "-w", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", HOST, "-p", &self.port.to_string()])
            .args(["-U", SUPERUSER, "-d", database, "-c", sql]);
        command
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
        // The TempDir, dropped next, removes the folder.
    }
}

/// Why a start did not give a server that accepts connections.
enum StartFailure {
    /// Another process bound the port first.
    PortTaken,
    /// The postmaster exited; how.
    Exited(String),
    /// It ran but did not accept connections in time (it has been stopped).
    NotReady,
}

/// Whether a PostgreSQL installation is present (for clear skip/fail messages).
pub fn available() -> bool {
    find_bin_dir().is_some_and(|dir| has_programs(&dir))
}

/// The installation's bin directory, or a panic that says how to get one.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MOOT_PG_BIN") {
        let dir = PathBuf::from(dir);
        if !has_programs(&dir) {
            panic!(
                "MOOT_PG_BIN={} does not hold all of {}: point it at a PostgreSQL bin directory, \
                 or unset it to use /usr/lib/postgresql/*/bin",
                dir.display(),
                PROGRAMS.join(", ")
            );
        }
        return dir;
    }
    match find_bin_dir() {
        Some(dir) if has_programs(&dir) => dir,
        Some(dir) => panic!(
            "PostgreSQL in {} lacks some of {}: {INSTALL_HINT}",
            dir.display(),
            PROGRAMS.join(", ")
        ),
        None => panic!("PostgreSQL not found under /usr/lib/postgresql/*/bin: {INSTALL_HINT}"),
    }
}

fn find_bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MOOT_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    newest_debian_bin_dir().or_else(pg_config_bin_dir)
}

/// The newest `/usr/lib/postgresql/VERSION/bin` that has `initdb` (Debian installs each major
/// version side by side there; only the server package brings `initdb`).
fn newest_debian_bin_dir() -> Option<PathBuf> {
    let versions = fs::read_dir("/usr/lib/postgresql").ok()?;
    versions
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str().map(parse_version)??;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .max_by(|(a, _), (b, _)| a.cmp(b))
        .map(|(_, bin)| bin)
}

/// "15" → [15], "9.6" → [9, 6]; None for anything else.
fn parse_version(name: &str) -> Option<Vec<u32>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}

fn pg_config_bin_dir() -> Option<PathBuf> {
    let output = Command::new("pg_config").arg("--bindir").output().ok()?;
    if !output.status.success() {
        return None;
    }
    let dir = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    dir.join("initdb").is_file().then_some(dir)
}

fn has_programs(dir: &Path) -> bool {
    PROGRAMS.iter().all(|program| dir.join(program).is_file())
}

/// `Some(postgres user)` when running as root, which `initdb` and `postgres` refuse.
fn system_user_for_server() -> Option<SystemUser> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let name = CString::new(SYSTEM_USER).expect("a user name without NUL");
    // getpwnam_r, not getpwnam: test threads may start servers at the same time, and
    // getpwnam's record is shared by the whole process.
    // SAFETY: all-zero is a valid `passwd` (null pointers, zero ids) for getpwnam_r to fill.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut strings = vec![0 as libc::c_char; 16 * 1024];
    let mut record: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call and `strings.len()` is the buffer's size.
    let error = unsafe {
        libc::getpwnam_r(
            name.as_ptr(),
            &mut entry,
            strings.as_mut_ptr(),
            strings.len(),
            &mut record,
        )
    };
    if error != 0 {
        panic!(
            "cannot look up user {SYSTEM_USER}, who runs PostgreSQL when the tests run as root: {}",
            io::Error::from_raw_os_error(error)
        );
    }
    if record.is_null() {
        panic!(
            "running as root, but PostgreSQL refuses to run as root and there is no \
             `{SYSTEM_USER}` user to run it as: install Debian's postgresql (it creates the user; \
             scripts/setup.sh with MOOT_SETUP_TESTS=1 does), or run the tests as another user"
        );
    }
    Some(SystemUser {
        uid: entry.pw_uid,
        gid: entry.pw_gid,
    })
}

/// In a forked child before exec: drops to `user`, supplementary groups included.
fn become_user(user: SystemUser) -> io::Result<()> {
    // SAFETY: plain system calls; the group list lives on the stack for the call.
    unsafe {
        let groups = [user.gid];
        if libc::setgroups(1, groups.as_ptr()) != 0
            || libc::setgid(user.gid) != 0
            || libc::setuid(user.uid) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// In a forked child before exec, after any user switch (changing credentials clears it): the
/// kernel kills the child when the thread that spawned it ends, so a crashed test process
/// leaves no server behind.
fn die_with_parent(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: plain system calls.
    unsafe {
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        // The parent may have died before the signal was set: then nothing would kill us.
        if libc::getppid() != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

/// Spawns `command` from a thread that lives as long as the process. The parent-death signal
/// fires when the spawning *thread* ends, not the process: a postmaster spawned from a test's
/// own thread would be killed as soon as that test returned.
fn spawn_from_lasting_thread(command: Command) -> io::Result<Child> {
    type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);
    static SPAWNER: OnceLock<mpsc::Sender<SpawnRequest>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("moot-pgtest-spawner".to_string())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    // The requester waits for the reply; it cannot have gone.
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("cannot start the thread that starts PostgreSQL servers");
        requests
    });
    let (reply, replied) = mpsc::channel();
    spawner
        .send((command, reply))
        .expect("the thread that starts PostgreSQL servers has ended");
    replied
        .recv()
        .expect("the thread that starts PostgreSQL servers has ended")
}

/// Immediate shutdown (SIGQUIT): the postmaster stops its backends without a checkpoint, so
/// the next start runs crash recovery. Killed if it takes longer than `STOP_TIMEOUT`. Also
/// used by the exit handler, so only system calls, no locks or panics.
fn shut_down(pid: libc::pid_t) {
    // SAFETY: signals a process that is our child (not reaped yet, so the pid is still ours).
    unsafe { libc::kill(pid, libc::SIGQUIT) };
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        if reap(pid, false).is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    reap(pid, true);
}

/// The wait status of child `pid` if it has exited (waiting for that when `block`), reaping it;
/// `Some(-1)` if it is not (or no longer) our child.
fn reap(pid: libc::pid_t, block: bool) -> Option<libc::c_int> {
    let mut status = 0;
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: waits for our own child; status is a valid out pointer.
        match unsafe { libc::waitpid(pid, &mut status, flags) } {
            0 => return None,
            -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            -1 => return Some(-1),
            _ => return Some(status),
        }
    }
}

fn describe_wait_status(status: libc::c_int) -> String {
    if status == -1 {
        "no longer a child of this process".to_string()
    } else if libc::WIFEXITED(status) {
        format!("exit code {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status}")
    }
}

fn read_log_from(path: &Path, offset: u64) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            String::from_utf8_lossy(&bytes[start..]).into_owned()
        }
        Err(e) => format!("(cannot read it: {e})"),
    }
}

/// A port nobody listens on now: the kernel's choice for port 0.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|e| panic!("cannot find a free port on 127.0.0.1: {e}"))
}

/// Stops the shared server and removes its folder when the test process exits.
extern "C" fn stop_shared_server() {
    let Some(server) = SHARED.get() else {
        return;
    };
    let pid = server.postmaster_pid.swap(0, Ordering::SeqCst);
    if pid > 0 {
        shut_down(pid);
    }
    let _ = fs::remove_dir_all(server.dir.path());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpStream;

    fn database_name(url: &str) -> &str {
        url.rsplit('/').next().unwrap()
    }

    #[test]
    fn shared_server_gives_distinct_databases_that_accept_tables() {
        let server = PgServer::shared();
        assert!(std::ptr::eq(server, PgServer::shared()));
        // Tests take databases from many threads at once.
        let urls: Vec<String> = std::thread::scope(|scope| {
            let takers: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| server.fresh_database()))
                .collect();
            takers.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let prefix = format!("postgres://moot@127.0.0.1:{}/", server.port());
        for (i, url) in urls.iter().enumerate() {
            assert!(url.starts_with(&prefix), "{url}");
            assert_eq!(server.url(database_name(url)), *url);
            assert!(!urls[..i].contains(url), "{url} given twice");
        }
        let (first, second) = (database_name(&urls[0]), database_name(&urls[1]));
        server.psql(
            first,
            "CREATE TABLE answers (text TEXT); INSERT INTO answers VALUES ('42')",
        );
        assert_eq!(server.psql(first, "SELECT text FROM answers").trim(), "42");
        // Each database is empty: the table is only in the first.
        let tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'";
        assert_eq!(server.psql(second, tables).trim(), "0");
        server.psql(second, "CREATE TABLE answers (text TEXT)");
    }

    #[test]
    fn own_server_stops_and_restarts_with_its_data() {
        let server = PgServer::start();
        let db = database_name(&server.fresh_database()).to_string();
        server.psql(
            &db,
            "CREATE TABLE calls (n INT); INSERT INTO calls VALUES (1)",
        );
        // A connection in use when the server stops fails.
        let mut busy = server
            .psql_command(&db, "SELECT pg_sleep(60)")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Stopped once the query runs (the server says so), not after a guessed delay: a
        // psql still connecting when the server stops would fail for another reason.
        let started = Instant::now();
        let running = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query = 'SELECT pg_sleep(60)'";
        while server.psql(&db, running).trim() != "1" {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the query never ran"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let stopped = Instant::now();
        server.stop();
        let busy_status = busy.wait().unwrap();
        assert!(!busy_status.success());
        assert!(stopped.elapsed() < Duration::from_secs(5));
        let refused = TcpStream::connect((Ipv4Addr::LOCALHOST, server.port())).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
        assert!(!server.try_psql(&db, "SELECT 1").status.success());
        server.stop(); // stopping a stopped server does nothing

        server.restart();
        // A commit acknowledged before the stop survives it.
        assert_eq!(server.psql(&db, "SELECT n FROM calls").trim(), "1");
        server.psql(&db, "INSERT INTO calls VALUES (2)");
        server.stop();
        server.restart();
        assert_eq!(
            server
                .psql(&db, "SELECT string_agg(n::text, ',' ORDER BY n) FROM calls")
                .trim(),
            "1,2"
        );
    }

    #[test]
    fn dropping_a_server_removes_its_folder_and_process() {
        let server = PgServer::start();
        let dir = server.dir.path().to_path_buf();
        let pid = server.postmaster_pid.load(Ordering::SeqCst);
        assert!(pid > 0);
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        assert!(dir.join("data/PG_VERSION").exists());
        drop(server);
        assert!(!dir.exists(), "{} left behind", dir.display());
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "postmaster {pid} still runs"
        );
    }

    #[test]
    fn a_server_outlives_the_thread_that_started_it() {
        // `join` returns once the starting thread has ended.
        let server = std::thread::spawn(PgServer::start).join().unwrap();
        let db = database_name(&server.fresh_database()).to_string();
        assert_eq!(server.psql(&db, "SELECT 1").trim(), "1");
    }

    #[test]
    #[should_panic(expected = "could not bind port")]
    fn restarting_on_a_port_taken_since_the_stop_says_so() {
        let server = PgServer::start();
        server.stop();
        let _squatter = TcpListener::bind((Ipv4Addr::LOCALHOST, server.port())).unwrap();
        server.restart();
    }

    #[test]
    fn versions_order_numerically() {
        assert_eq!(parse_version("15"), Some(vec![15]));
        assert_eq!(parse_version("9.6"), Some(vec![9, 6]));
        assert_eq!(parse_version("main"), None);
        assert!(parse_version("9.6") < parse_version("15"));
    }
}
