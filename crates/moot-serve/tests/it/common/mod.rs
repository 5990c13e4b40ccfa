//! What the server's tests share: a real server on a free port on its own runtime, plain
//! blocking sockets to drive it, a runner that runs nothing and a store that counts its reads.
//!
//! Reads that wait for the server have a 30 s read timeout ([`GUARD`]): a guard that turns a
//! server that never answers or closes into a failure instead of a hang, never a wait a test
//! relies on.

#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use axum::Router;
use moot_serve::{
    App, BenchReport, Checked, DebateRequest, Runner, RunnerError, ServeOptions, Started, Team,
};
use moot_store::{
    BenchItemRecord, BenchJobRecord, BenchRecord, CallCursor, CallRecord, DecisionRecord,
    JobCounts, JobState, MemoryStore, RunFilter, RunRecord, RunStatus, Store, StoreError,
    ValidationRecord, WholeRun, WorkerRecord,
};

/// How long a read may wait for the server before the test fails (never reached when it works).
pub const GUARD: Duration = Duration::from_secs(30);
/// Timeouts long enough not to matter in a test that is about something else.
pub const NEVER: Duration = Duration::from_secs(600);

/// A server on a free port, serving on its own runtime until dropped.
pub struct Server {
    pub addr: SocketAddr,
    pub rt: tokio::runtime::Runtime,
}

impl Server {
    pub fn start(router: Router, options: ServeOptions) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let options = ServeOptions { port: 0, ..options };
        let (listener, addr) = rt.block_on(moot_serve::bind(&options)).unwrap();
        rt.spawn(async move { moot_serve::serve(listener, router, &options).await });
        Server { addr, rt }
    }

    /// The real router (every route and safety layer) over an empty store.
    pub fn real(options: ServeOptions) -> Server {
        Server::over(
            Arc::new(MemoryStore::default()),
            Arc::new(NoRunner),
            options,
        )
    }

    /// The real router over `store`, starting debates with `runner`.
    pub fn over(store: Arc<dyn Store>, runner: Arc<dyn Runner>, options: ServeOptions) -> Server {
        let app = Arc::new(App::new(store, runner, &options));
        Server::start(moot_serve::router(app, &options), options)
    }
}

/// Runs no debates and has no reports.
pub struct NoRunner;

#[async_trait]
impl Runner for NoRunner {
    fn check(&self, _: DebateRequest) -> Result<Checked, RunnerError> {
        Err(RunnerError::BadRequest("no debates here".into()))
    }
    async fn start(&self, _: Checked) -> Result<Started, RunnerError> {
        Err(RunnerError::BadRequest("no debates here".into()))
    }
    fn team(&self) -> Team {
        Team::default()
    }
    fn check_config(&self, _: &str) -> Result<String, String> {
        Err("no configurations here".into())
    }
    async fn bench_report(&self, _: &str) -> Result<Option<BenchReport>, RunnerError> {
        Ok(None)
    }
}

/// Reads from `s` until what came holds `marker`, failing the test if the server closes first;
/// everything read.
pub fn read_until(s: &mut TcpStream, marker: &str) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&got).contains(marker) {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// Sends `raw` as is on a new connection and reads the response to its end (the server closes
/// after it: send `Connection: close`); its status, head and body. How long it took from
/// connecting to the last byte.
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> (u16, String, Vec<u8>, Duration) {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(GUARD)).unwrap();
    s.write_all(raw).unwrap();
    let mut got = Vec::new();
    match s.read_to_end(&mut got) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset && !got.is_empty() => {}
        Err(e) => panic!(
            "reading the response: {e}; got {:?}",
            String::from_utf8_lossy(&got)
        ),
    }
    let took = started.elapsed();
    let end = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {:?}", String::from_utf8_lossy(&got)));
    let head = String::from_utf8_lossy(&got[..end]).into_owned();
    let body = got[end + 4..].to_vec();
    (status_of(&head), head, body, took)
}

/// `GET path` on a new connection; the status, the raw body and how long it took from
/// connecting to the last byte.
pub fn get(addr: SocketAddr, path: &str) -> (u16, String, Duration) {
    let (status, _, body, took) = exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    (status, String::from_utf8_lossy(&body).into_owned(), took)
}

/// A response's status and what follows its head.
pub fn parse(text: &str) -> (u16, &str) {
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status_of(text), body)
}

fn status_of(head: &str) -> u16 {
    head.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {head:?}"))
}

/// Waits (up to [`GUARD`]) for the server to close `s`: end of file, or a reset when it closed
/// before reading what the client had sent. False if the wait ran out.
pub fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(GUARD)).unwrap();
    let mut buf = [0u8; 256];
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(n) => panic!(
            "expected the server to close, got {:?}",
            String::from_utf8_lossy(&buf[..n])
        ),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => true,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
        Err(e) => panic!("reading: {e}"),
    }
}

/// Whether `s` is still open with nothing to read (a non-blocking read would block).
pub fn still_open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut reader = s;
    let open = matches!(reader.read(&mut [0u8; 16]), Err(e) if e.kind() == ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    open
}

/// This process's resident memory, from /proc/self/status (`None` where there is none).
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A store that counts how often a run and its new calls are read, and passes everything to
/// the store it wraps.
pub struct CountingStore {
    pub inner: MemoryStore,
    pub calls_after: AtomicUsize,
    pub runs: AtomicUsize,
}

impl CountingStore {
    pub fn new() -> CountingStore {
        CountingStore {
            inner: MemoryStore::default(),
            calls_after: AtomicUsize::new(0),
            runs: AtomicUsize::new(0),
        }
    }

    pub fn calls_after_count(&self) -> usize {
        self.calls_after.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Store for CountingStore {
    async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.inner.create_run(run).await
    }
    async fn record_call(&self, call: &CallRecord) -> Result<(), StoreError> {
        self.inner.record_call(call).await
    }
    async fn record_decision(&self, decision: &DecisionRecord) -> Result<(), StoreError> {
        self.inner.record_decision(decision).await
    }
    async fn finish_run(
        &self,
        id: &str,
        status: RunStatus,
        answer: Option<&str>,
        at: &str,
    ) -> Result<(), StoreError> {
        self.inner.finish_run(id, status, answer, at).await
    }
    async fn record_whole_run(&self, whole: &WholeRun) -> Result<bool, StoreError> {
        self.inner.record_whole_run(whole).await
    }
    async fn run(&self, id: &str) -> Result<RunRecord, StoreError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.inner.run(id).await
    }
    async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError> {
        self.inner.calls(id).await
    }
    async fn calls_after(
        &self,
        id: &str,
        after: &CallCursor,
        limit: u32,
    ) -> Result<Vec<(CallCursor, CallRecord)>, StoreError> {
        self.calls_after.fetch_add(1, Ordering::SeqCst);
        self.inner.calls_after(id, after, limit).await
    }
    async fn take_allowance(
        &self,
        key: &str,
        cost_us: i64,
        tolerance_us: i64,
    ) -> Result<moot_store::Allowance, StoreError> {
        self.inner.take_allowance(key, cost_us, tolerance_us).await
    }
    async fn beat_run(&self, id: &str) -> Result<(), StoreError> {
        self.inner.beat_run(id).await
    }
    async fn decisions(&self, id: &str) -> Result<Vec<DecisionRecord>, StoreError> {
        self.inner.decisions(id).await
    }
    async fn record_validation(&self, v: &ValidationRecord) -> Result<(), StoreError> {
        self.inner.record_validation(v).await
    }
    async fn validations(&self, id: &str) -> Result<Vec<ValidationRecord>, StoreError> {
        self.inner.validations(id).await
    }
    async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        self.inner.list_runs(filter).await
    }
    async fn forks_of(&self, parent: &str, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        self.inner.forks_of(parent, limit).await
    }
    async fn create_bench(&self, bench: &BenchRecord) -> Result<(), StoreError> {
        self.inner.create_bench(bench).await
    }
    async fn bench(&self, name: &str) -> Result<BenchRecord, StoreError> {
        self.inner.bench(name).await
    }
    async fn list_benches(&self) -> Result<Vec<BenchRecord>, StoreError> {
        self.inner.list_benches().await
    }
    async fn record_bench_item(&self, item: &BenchItemRecord) -> Result<(), StoreError> {
        self.inner.record_bench_item(item).await
    }
    async fn bench_items(&self, name: &str) -> Result<Vec<BenchItemRecord>, StoreError> {
        self.inner.bench_items(name).await
    }
    /// One query in a SQL store: its reads are not counted as runs read.
    async fn bench_version(&self, name: &str) -> Result<String, StoreError> {
        self.inner.bench_version(name).await
    }
    async fn cache_get(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError> {
        self.inner.cache_get(key).await
    }
    async fn cache_put(&self, key: &str, response: &serde_json::Value) -> Result<(), StoreError> {
        self.inner.cache_put(key, response).await
    }
    async fn cache_trim(&self, keep: u64) -> Result<u64, StoreError> {
        self.inner.cache_trim(keep).await
    }
    async fn plan_jobs(&self, jobs: &[BenchJobRecord]) -> Result<u64, StoreError> {
        self.inner.plan_jobs(jobs).await
    }
    async fn claim_job(
        &self,
        bench: &str,
        worker: &str,
        lease: Duration,
    ) -> Result<Option<BenchJobRecord>, StoreError> {
        self.inner.claim_job(bench, worker, lease).await
    }
    async fn renew_job(
        &self,
        job: &BenchJobRecord,
        worker: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        self.inner.renew_job(job, worker, lease).await
    }
    async fn finish_job(
        &self,
        job: &BenchJobRecord,
        worker: &str,
        state: JobState,
        error: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.inner.finish_job(job, worker, state, error).await
    }
    async fn bench_jobs(&self, bench: &str) -> Result<Vec<BenchJobRecord>, StoreError> {
        self.inner.bench_jobs(bench).await
    }
    async fn job_counts(&self, bench: &str) -> Result<JobCounts, StoreError> {
        self.inner.job_counts(bench).await
    }
    async fn record_worker(&self, worker: &WorkerRecord) -> Result<(), StoreError> {
        self.inner.record_worker(worker).await
    }
    async fn claim_worker(
        &self,
        bench: &str,
        worker: &str,
        lease_ms: i64,
    ) -> Result<bool, StoreError> {
        self.inner.claim_worker(bench, worker, lease_ms).await
    }
    async fn bench_workers(&self, bench: &str) -> Result<Vec<WorkerRecord>, StoreError> {
        self.inner.bench_workers(bench).await
    }
    async fn cache_entries(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        self.inner.cache_entries().await
    }
}
