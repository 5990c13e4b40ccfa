//! The store file on hostile ground: opened by many processes at once, on a full disk, on a
//! read-only filesystem, or replaced by something that is not a file (issue 42, LOWs 8 and 10).
//!
//! The full and read-only disks are real: a size-capped tmpfs mounted for the test, remounted
//! read-only when the test needs it. Mounting takes root (or CAP_SYS_ADMIN); where it is not
//! allowed those tests say so on stderr and pass without checking anything.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::*;

/// A tmpfs of a given size on a folder of its own, unmounted when dropped.
struct Tmpfs {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Tmpfs {
    /// Mounts one of `size` (`mount -o size=…`), or says why the test is skipped and gives
    /// `None` where this process may not mount.
    fn mount(size: &str, test: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("fs");
        std::fs::create_dir(&root).unwrap();
        let mounted = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(&root)
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Tmpfs { _dir: dir, root }),
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
        let out = Command::new("mount")
            .args(["-o", &format!("remount,{how}")])
            .arg(&self.root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "remount {how}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Fills the filesystem until `free` bytes are left, in a file [`Tmpfs::unfill`] removes.
    fn fill_leaving(&self, free: u64) {
        let filler = self.root.join("filler");
        let _ = std::fs::remove_file(&filler);
        let available = available_bytes(&self.root);
        let take = available.saturating_sub(free);
        let mut file = std::fs::File::create(&filler).unwrap();
        let block = vec![0x5au8; 4096];
        let mut written = 0;
        while written < take {
            let n = (take - written).min(block.len() as u64) as usize;
            use std::io::Write;
            if file.write_all(&block[..n]).is_err() {
                break;
            }
            written += n as u64;
        }
    }

    fn unfill(&self) {
        let _ = std::fs::remove_file(self.root.join("filler"));
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.root).status();
    }
}

/// Bytes free on the filesystem holding `path`, as `df` counts them.
fn available_bytes(path: &Path) -> u64 {
    let out = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap()
}

/// Runs `open` on a thread of its own, failing the test unless it ends within `bound`: a hung
/// open (a FIFO blocks `open(2)` until a writer comes) cannot hold the test's runtime.
fn within<T: Send + 'static>(
    bound: Duration,
    what: &str,
    open: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(open());
    });
    rx.recv_timeout(bound)
        .unwrap_or_else(|_| panic!("{what}: still not answered after {bound:?}"))
}

/// Opens `path` for `access` on a runtime of its own (for [`within`]).
fn open_blocking(path: &Path, access: Access) -> Result<SqliteStore, StoreError> {
    let path = path.to_path_buf();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async move {
            let store = SqliteStore::open_with(&path, access).await?;
            store.close().await;
            Ok(store)
        })
}

/// The migrations recorded in the store at `path`, in order.
async fn applied_migrations(path: &Path) -> Vec<i64> {
    let mut conn = raw(path).await;
    let versions = sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    versions
}

fn known_migrations() -> Vec<i64> {
    MIGRATOR.iter().map(|m| m.version).collect()
}

/// Opens `path` for `access` from `n` threads at once, each with a runtime of its own (as
/// separate processes would), records a run `r{i}` through each, and closes them; the first
/// failure, if any.
fn open_at_once(path: &Path, access: Access, n: usize) -> Result<(), String> {
    let start = std::sync::Arc::new(std::sync::Barrier::new(n));
    let openers: Vec<_> = (0..n)
        .map(|i| {
            let (path, start) = (path.to_path_buf(), start.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                start.wait();
                rt.block_on(async move {
                    let store = SqliteStore::open_with(&path, access)
                        .await
                        .map_err(|e| format!("opening: {e}"))?;
                    let written = store.create_run(&run(&format!("new{i}"))).await;
                    store.close().await;
                    written.map_err(|e| format!("writing: {e}"))
                })
            })
        })
        .collect();
    openers
        .into_iter()
        .map(|o| o.join().unwrap())
        .collect::<Result<Vec<()>, String>>()
        .map(|_| ())
}

/// Issue 42, LOW 8: eight `moot ask --store new.db` started together failed 3 to 7 of 8
/// ("table runs already exists", "UNIQUE constraint failed: _sqlx_migrations.version"): each
/// migrated the new file as if alone.
#[tokio::test]
async fn openers_of_one_new_store_at_once_all_succeed_and_it_is_migrated_once() {
    for attempt in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        open_at_once(&path, Access::Create, 8).unwrap_or_else(|e| panic!("attempt {attempt}: {e}"));
        assert_eq!(applied_migrations(&path).await, known_migrations());
        let store = SqliteStore::open_with(&path, Access::Read).await.unwrap();
        assert_eq!(
            store.list_runs(&RunFilter::newest(20)).await.unwrap().len(),
            8
        );
        store.close().await;
    }
}

/// The same for an older store that writers upgrade at once.
#[tokio::test]
async fn writers_upgrading_one_older_store_at_once_all_succeed_and_migrate_it_once() {
    for attempt in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        first_migration_store(&path).await;
        open_at_once(&path, Access::Write, 8).unwrap_or_else(|e| panic!("attempt {attempt}: {e}"));
        assert_eq!(applied_migrations(&path).await, known_migrations());
        let store = SqliteStore::open_with(&path, Access::Read).await.unwrap();
        assert_eq!(store.calls("r1").await.unwrap().len(), 1);
        assert_eq!(
            store.list_runs(&RunFilter::newest(20)).await.unwrap().len(),
            9
        );
        store.close().await;
    }
}

/// Issue 42, LOW 10: a FIFO given as `--store` hung `ask` and `show` (opening it waits for a
/// writer). A FIFO, a socket or a device is refused at once, by name, by every access; so is
/// a store whose WAL companions are one.
#[test]
fn a_fifo_a_socket_or_a_device_is_refused_at_once_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.db");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let socket = dir.path().join("socket.db");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let mut cases = vec![(fifo.clone(), "a FIFO"), (socket, "a socket")];
    // A device of the test's own (`/dev/null`'s numbers), so that nothing is made in `/dev`
    // when the open is not refused.
    let device = dir.path().join("device.db");
    match Command::new("mknod")
        .arg(&device)
        .args(["c", "1", "3"])
        .status()
    {
        Ok(s) if s.success() => cases.push((device, "a device")),
        _ => eprintln!("devices: SKIPPED, mknod needs root"),
    }
    for (path, kind) in cases {
        for access in ACCESSES {
            let shown = format!("{} ({access:?})", path.display());
            let open = path.clone();
            let e = within(Duration::from_secs(10), &shown, move || {
                open_blocking(&open, access)
            })
            .map(|_| ())
            .unwrap_err();
            one_clear_line(
                &e,
                &format!(
                    "cannot open the store {}: it is {kind}, not a file",
                    path.display()
                ),
            );
            assert!(e.is_unusable_store(), "{shown}");
        }
    }
    // A real store whose `-wal` (or `-shm`) is a FIFO: SQLite would block reading it.
    for companion in ["-wal", "-shm"] {
        let store = dir.path().join(format!("store{companion}.db"));
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(filled_store(&store, 1));
        let mut name = store.clone().into_os_string();
        name.push(companion);
        let beside = PathBuf::from(name);
        // The store may have left its own companion behind (its pool closes as the runtime
        // ends, and a busy machine may not have checkpointed yet): the FIFO takes its place.
        let _ = std::fs::remove_file(&beside);
        assert!(Command::new("mkfifo")
            .arg(&beside)
            .status()
            .unwrap()
            .success());
        for access in ACCESSES {
            let shown = format!("{} ({access:?})", beside.display());
            let open = store.clone();
            let e = within(Duration::from_secs(10), &shown, move || {
                open_blocking(&open, access)
            })
            .map(|_| ())
            .unwrap_err();
            one_clear_line(
                &e,
                &format!(
                    "cannot open the store {}: {} is a FIFO, not a file",
                    store.display(),
                    beside.display()
                ),
            );
        }
    }
}

/// Issue 42, LOW 10: on a read-only filesystem a store could not be read at all ("unable to
/// open database file": SQLite cannot make the `-shm` a WAL file's reader needs). Reading
/// works there, for a current store and an older one; writing is refused in one line that
/// says why.
#[tokio::test]
async fn a_store_on_a_read_only_filesystem_is_read_and_writing_it_is_refused_by_name() {
    let Some(fs) = Tmpfs::mount("16m", "read-only filesystem") else {
        return;
    };
    let current = fs.root.join("current.db");
    filled_store(&current, 3).await;
    let older = fs.root.join("older.db");
    first_migration_store(&older).await;
    fs.remount("ro");
    let before = listing(&fs.root);
    let store = SqliteStore::open_with(&current, Access::Read)
        .await
        .unwrap_or_else(|e| panic!("reading {}: {e}", current.display()));
    assert_eq!(
        store.list_runs(&RunFilter::newest(10)).await.unwrap().len(),
        3
    );
    assert_eq!(store.run("r2").await.unwrap().question, "q".repeat(2000));
    assert!(matches!(
        store.create_run(&run("r9")).await,
        Err(StoreError::ReadOnly(_))
    ));
    store.close().await;
    let store = SqliteStore::open_with(&older, Access::Read)
        .await
        .unwrap_or_else(|e| panic!("reading {}: {e}", older.display()));
    assert_eq!(store.calls("r1").await.unwrap().len(), 1);
    store.close().await;
    for (path, access) in [
        (&current, Access::Write),
        (&current, Access::Create),
        (&older, Access::Write),
    ] {
        let e = SqliteStore::open_with(path, access).await.unwrap_err();
        one_clear_line(
            &e,
            &format!(
                "the store {} cannot be written: it is on a read-only filesystem (reading commands such as moot show and moot report can still open it)",
                path.display()
            ),
        );
        assert!(e.is_unusable_store());
    }
    let e = SqliteStore::open_with(&fs.root.join("new.db"), Access::Create)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("read-only filesystem"), "{e}");
    assert_eq!(listing(&fs.root), before, "nothing created on it");
    fs.remount("rw");
}

/// A writer that died leaves its WAL beside the store; on a read-only filesystem the reader
/// still sees what the WAL holds.
#[tokio::test]
async fn a_read_only_store_left_with_its_wal_is_read_with_what_the_wal_holds() {
    let Some(fs) = Tmpfs::mount("16m", "read-only WAL") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let live = work.path().join("live.db");
    let store = SqliteStore::open(&live).await.unwrap();
    store.create_run(&run("r1")).await.unwrap();
    // A snapshot of the files while the writer is alive, as a crash leaves them.
    let copy = fs.root.join("crashed.db");
    for suffix in ["", "-wal", "-shm"] {
        let mut from = live.clone().into_os_string();
        from.push(suffix);
        let mut to = copy.clone().into_os_string();
        to.push(suffix);
        std::fs::copy(&from, &to).unwrap();
    }
    store.close().await;
    fs.remount("ro");
    let store = SqliteStore::open_with(&copy, Access::Read)
        .await
        .unwrap_or_else(|e| panic!("reading {}: {e}", copy.display()));
    assert_eq!(store.run("r1").await.unwrap().id, "r1");
    store.close().await;
    fs.remount("rw");
}

/// Copies the store at `from` with its `-wal` and `-shm` to `to`: what a crash leaves when
/// the store is open.
fn snapshot(from: &Path, to: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut source = from.as_os_str().to_owned();
        source.push(suffix);
        let mut target = to.as_os_str().to_owned();
        target.push(suffix);
        std::fs::copy(&source, &target).unwrap();
    }
}

/// Issue 42, LOW 10, what a full disk left: a checkpoint that wrote the store's first page
/// (whose header then counts every page) but could not grow the file, every page still in
/// the WAL. SQLite reads it whole (`PRAGMA integrity_check` said ok); moot took the header
/// for the file's and called the store "malformed" for good.
#[tokio::test]
async fn a_store_whose_checkpoint_a_full_disk_cut_short_opens_whole() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.db");
    let store = SqliteStore::open(&live).await.unwrap();
    store.create_run(&run("r1")).await.unwrap();
    let cut = dir.path().join("cut.db");
    snapshot(&live, &cut);
    store.close().await;
    // The header as the checkpoint wrote it: the page count of the whole store.
    let whole = std::fs::read(&live).unwrap();
    let mut bytes = std::fs::read(&cut).unwrap();
    assert!(bytes.len() < whole.len(), "the pages are in the WAL");
    bytes[24..28].copy_from_slice(&whole[24..28]);
    bytes[28..32].copy_from_slice(&whole[28..32]);
    bytes[92..96].copy_from_slice(&whole[92..96]);
    std::fs::write(&cut, &bytes).unwrap();
    for access in ACCESSES {
        let store = SqliteStore::open_with(&cut, access)
            .await
            .unwrap_or_else(|e| panic!("{access:?}: {e}"));
        assert_eq!(store.run("r1").await.unwrap().id, "r1");
        store.close().await;
    }
}

/// Issue 42, LOW 10: a store created on a nearly full disk was called corrupt ever after
/// ("database disk image is malformed", though `PRAGMA integrity_check` said ok). For every
/// amount of space left, the first open says the disk is full (or works), and once space is
/// back the store opens and works.
#[tokio::test]
async fn a_store_started_on_a_full_disk_opens_and_works_once_space_is_back() {
    let Some(fs) = Tmpfs::mount("2m", "full disk, new store") else {
        return;
    };
    let path = fs.root.join("s.db");
    for free_kib in [0, 8, 16, 24, 40, 64, 96, 128, 160, 200, 256, 320] {
        for entry in std::fs::read_dir(&fs.root).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        fs.fill_leaving(free_kib * 1024);
        match SqliteStore::open(&path).await {
            Ok(store) => {
                let _ = store.create_run(&run("r0")).await;
                store.close().await;
            }
            Err(e) => one_clear_line(
                &e,
                &format!(
                    "the store {} cannot be written: its disk is full (free some space and run again; nothing stored before is lost)",
                    path.display()
                ),
            ),
        }
        fs.unfill();
        let store = SqliteStore::open(&path)
            .await
            .unwrap_or_else(|e| panic!("{free_kib} KiB were free: {e}"));
        store.create_run(&run("r1")).await.unwrap();
        store.close().await;
        let store = SqliteStore::open_with(&path, Access::Read)
            .await
            .unwrap_or_else(|e| panic!("{free_kib} KiB were free, reading: {e}"));
        assert_eq!(store.run("r1").await.unwrap().id, "r1");
        store.close().await;
    }
}

/// A disk that fills while a store is in use: the write that does not fit fails naming the
/// store and saying the disk is full, and once space is back nothing acknowledged is lost and
/// writing works again.
#[tokio::test]
async fn a_full_disk_fails_a_write_by_name_and_loses_nothing_stored() {
    let Some(fs) = Tmpfs::mount("4m", "full disk, store in use") else {
        return;
    };
    let path = fs.root.join("s.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let mut stored = Vec::new();
    for i in 0..3 {
        let mut r = run(&format!("before{i}"));
        r.question = "q".repeat(20_000);
        store.create_run(&r).await.unwrap();
        stored.push(r.id);
    }
    fs.fill_leaving(64 * 1024);
    let mut refused = None;
    for i in 0..100 {
        let mut r = run(&format!("during{i}"));
        r.question = "q".repeat(20_000);
        match store.create_run(&r).await {
            Ok(()) => stored.push(r.id),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let e = refused.expect("a full disk refused a write");
    one_clear_line(
        &e,
        &format!(
            "the store {} cannot be written: its disk is full (free some space and run again; nothing stored before is lost)",
            path.display()
        ),
    );
    store.close().await;
    fs.unfill();
    let store = SqliteStore::open(&path)
        .await
        .unwrap_or_else(|e| panic!("once space is back: {e}"));
    for id in &stored {
        assert_eq!(&store.run(id).await.unwrap().id, id);
    }
    store.create_run(&run("after")).await.unwrap();
    store.close().await;
}
