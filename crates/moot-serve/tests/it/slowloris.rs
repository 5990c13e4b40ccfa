//! Slow and idle clients cannot take the server down (issue 31, item 2): clients that send half a
//! request head and hold it are timed out and, past the connection cap, shed oldest first, while
//! `/health` keeps answering; a long response (server-sent events) is never cut by the timeouts.
//! Slow request bodies and slow readers are bounded too (issue 42, item 3): a body that stalls or
//! trickles is answered 408 and closed, and counts against the cap like a half-open head; a
//! client that takes none of its response is closed after the send timeout.
//!
//! Each test runs `moot_serve::serve` on its own runtime on a free port and drives it with plain
//! blocking sockets (`common`), so a held connection costs the client one descriptor and no task.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::sse::{Event, Sse};
use axum::routing;
use axum::Router;
use futures::stream::{self, Stream, StreamExt};
use moot_serve::ServeOptions;

use crate::common;

use common::{closed_by_server, get, parse, rss_bytes, still_open, Server, GUARD, NEVER};

/// A connection that sent the start of a request head and nothing more (a slowloris client).
fn half_open(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(format!("GET / HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
        .unwrap();
    s
}

/// Sends a whole `GET /health` on a kept-alive connection and reads its whole response (the
/// connection stays open).
fn health_kept_alive(s: &mut TcpStream, addr: SocketAddr) -> u16 {
    s.set_read_timeout(Some(GUARD)).unwrap();
    s.write_all(format!("GET /health HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "closed mid-response: {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .expect("a content-length");
            if body.len() >= length {
                return parse(&text).0;
            }
        }
    }
}

/// `/health`, and `/stream`: server-sent events `first`, then `last` once `then` resolves.
fn test_router<F>(then: impl Fn() -> F + Clone + Send + Sync + 'static) -> Router
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    Router::new()
        .route("/health", routing::get(|| async { "ok" }))
        .route(
            "/stream",
            routing::get(move || {
                let then = then.clone();
                async move { Sse::new(first_then_last(then())) }
            }),
        )
}

fn first_then_last(
    then: impl std::future::Future<Output = ()> + Send + 'static,
) -> impl Stream<Item = Result<Event, std::convert::Infallible>> + Send {
    let first = stream::once(async { Ok(Event::default().data("first")) });
    let last = stream::once(async move {
        then.await;
        Ok(Event::default().data("last"))
    });
    first.chain(last)
}

/// Says on `dropped` when it is dropped: a response body that tells when the server let go of
/// it.
struct DropSignal(std::sync::mpsc::Sender<()>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// `/endless`: a response of 64 KiB chunks that never ends, telling `dropped` when the server
/// drops it (its connection closed).
fn endless_router(dropped: std::sync::mpsc::Sender<()>) -> Router {
    Router::new().route(
        "/endless",
        routing::get(move || {
            let signal = DropSignal(dropped.clone());
            async move {
                let chunks = stream::unfold(signal, |signal| async move {
                    let chunk = axum::body::Bytes::from(vec![b'x'; 64 * 1024]);
                    Some((Ok::<_, std::convert::Infallible>(chunk), signal))
                });
                axum::body::Body::from_stream(chunks)
            }
        }),
    )
}

/// A `POST /api/runs` whose head announces a 1 MiB body of which only `sent` bytes come.
fn stalled_body(addr: SocketAddr, sent: usize) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut request = format!(
        "POST /api/runs HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{{\"question\": \"",
        1 << 20
    )
    .into_bytes();
    request.resize(request.len() + sent, b'x');
    // A connection the server has already shed to make room refuses the rest: the test then
    // finds it closed.
    let _ = s.write_all(&request);
    s
}

/// Reads a response to its end (the server closes); its status. Fails if the server neither
/// answers nor closes within [`GUARD`].
fn response_status(s: &mut TcpStream) -> u16 {
    s.set_read_timeout(Some(GUARD)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "no answer within {GUARD:?} ({e}); got {:?}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    parse(&String::from_utf8_lossy(&got)).0
}

#[test]
fn health_answers_within_a_second_while_5000_half_open_connections_are_held() {
    // Client and server share this process: two descriptors per held connection, plus the
    // runtime's and the test harness's. 5,000 needs a hard limit of about 11,000 (it is 20,000
    // where this was written); below that, hold as many as fit and say so.
    let limit = moot_serve::raise_descriptor_limit().expect("the descriptor limit");
    let held = 5_000.min(limit.saturating_sub(1_000) / 2);
    if held < 5_000 {
        eprintln!("descriptor limit {limit}: holding {held} half-open connections, not 5,000");
    }
    assert!(
        held >= 500,
        "descriptor limit {limit} is too low for this test"
    );
    let server = Server::real(ServeOptions {
        header_read_timeout: NEVER,
        idle_timeout: NEVER,
        ..ServeOptions::default()
    });
    let opening = Instant::now();
    let mut sockets: Vec<TcpStream> = Vec::with_capacity(held);
    let mut slowest = Duration::ZERO;
    while sockets.len() < held {
        let more = 500.min(held - sockets.len());
        sockets.extend((0..more).map(|_| half_open(server.addr)));
        // Connections are accepted in the order they arrived: once this is answered, every
        // held one has been accepted. Waiting for it every 500 also keeps the kernel's queue
        // of connections not yet accepted (1,024) from overflowing while the server is
        // descheduled, which made connects stall a second at a time on a busy machine.
        let (status, _, took) = get(server.addr, "/health");
        assert_eq!(status, 200, "with {} held", sockets.len());
        slowest = slowest.max(took);
    }
    let opening = opening.elapsed();
    let (status, body, took) = get(server.addr, "/health");
    assert_eq!((status, body.as_str()), (200, "ok"));
    eprintln!(
        "/health with {held} half-open connections held: {took:?} (while opening them, in {opening:?}: at most {slowest:?})"
    );
    assert!(took < Duration::from_secs(1), "/health took {took:?}");
    // It answered with every one of them still held, none closed to make room.
    let open = sockets.iter().filter(|s| still_open(s)).count();
    assert_eq!(open, held);
    // The server closes first, so the closed connections' TIME_WAIT is on its port and not on
    // 5,000 of the client's ephemeral ports (it made the next run's connects stall here, a
    // second at a time, while the kernel retried).
    drop(server);
    drop(sockets);
}

#[test]
fn past_the_connection_cap_the_oldest_half_open_connections_are_shed() {
    let server = Server::real(ServeOptions {
        max_connections: Some(64),
        header_read_timeout: NEVER,
        idle_timeout: NEVER,
        ..ServeOptions::default()
    });
    let mut sockets: Vec<TcpStream> = (0..200).map(|_| half_open(server.addr)).collect();
    for _ in 0..3 {
        assert_eq!(get(server.addr, "/health").0, 200);
    }
    // The server holds the 64 newest; the oldest were closed to make room as new ones came.
    for (i, s) in sockets[..100].iter_mut().enumerate() {
        assert!(closed_by_server(s), "held connection {i} was not closed");
    }
    for (i, s) in sockets.iter().enumerate().skip(200 - 32) {
        assert!(still_open(s), "held connection {i} was closed");
    }
}

#[test]
fn a_connection_with_a_request_in_flight_is_never_shed() {
    let release = Arc::new(tokio::sync::Notify::new());
    let r = release.clone();
    let server = Server::start(
        test_router(move || {
            let r = r.clone();
            async move { r.notified().await }
        }),
        ServeOptions {
            max_connections: Some(8),
            header_read_timeout: NEVER,
            idle_timeout: NEVER,
            ..ServeOptions::default()
        },
    );
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(GUARD)).unwrap();
    stream
        .write_all(
            format!(
                "GET /stream HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                server.addr
            )
            .as_bytes(),
        )
        .unwrap();
    // Its first event arrived: the request is in flight.
    let mut got = common::read_until(&mut stream, "data: first");
    // Far more half-open connections than the cap, and requests that need room.
    let mut sockets: Vec<TcpStream> = (0..50).map(|_| half_open(server.addr)).collect();
    for _ in 0..3 {
        assert_eq!(get(server.addr, "/health").0, 200);
    }
    assert!(closed_by_server(&mut sockets[0]));
    // The stream was left alone and ends when its run does.
    release.notify_one();
    stream.read_to_end(&mut got).unwrap();
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("data: last"), "{text}");
}

#[test]
fn a_half_open_connection_is_closed_after_the_header_read_timeout() {
    let timeout = Duration::from_millis(300);
    let server = Server::start(
        test_router(|| async {}),
        ServeOptions {
            header_read_timeout: timeout,
            idle_timeout: NEVER,
            ..ServeOptions::default()
        },
    );
    // The first request: the clock runs from connecting.
    let connected = Instant::now();
    let mut s = half_open(server.addr);
    assert!(closed_by_server(&mut s), "not closed within {GUARD:?}");
    let after = connected.elapsed();
    assert!(after >= timeout, "closed after {after:?}");
    // A later request on a kept-alive connection: the clock runs from its first byte, though
    // the connection may idle far longer.
    let mut s = TcpStream::connect(server.addr).unwrap();
    assert_eq!(health_kept_alive(&mut s, server.addr), 200);
    let started = Instant::now();
    s.write_all(b"GET /health HTTP/1.1\r\n").unwrap();
    assert!(closed_by_server(&mut s), "not closed within {GUARD:?}");
    let after = started.elapsed();
    assert!(after >= timeout, "closed after {after:?}");
    // A whole request in time is answered.
    assert_eq!(get(server.addr, "/health").0, 200);
}

#[test]
fn a_kept_alive_connection_with_no_request_is_closed_after_the_idle_timeout() {
    let idle = Duration::from_millis(1500);
    let server = Server::start(
        test_router(|| async {}),
        ServeOptions {
            // Shorter than the idle timeout: it must not apply to a connection that sends nothing.
            header_read_timeout: Duration::from_millis(300),
            idle_timeout: idle,
            ..ServeOptions::default()
        },
    );
    let mut s = TcpStream::connect(server.addr).unwrap();
    let sent = Instant::now();
    assert_eq!(health_kept_alive(&mut s, server.addr), 200);
    assert!(closed_by_server(&mut s), "not closed within {GUARD:?}");
    let after = sent.elapsed();
    assert!(after >= idle, "closed {after:?} after the request");
}

#[test]
fn a_response_longer_than_the_timeouts_is_not_cut() {
    let timeout = Duration::from_millis(300);
    // The stream says nothing for five times the timeouts between its two events: the
    // scenario's own clock, on the server's side, not a wait of the test's.
    let server = Server::start(
        test_router(move || tokio::time::sleep(timeout * 5)),
        ServeOptions {
            header_read_timeout: timeout,
            idle_timeout: timeout,
            // Nothing to send is not a client that takes nothing.
            send_timeout: timeout,
            ..ServeOptions::default()
        },
    );
    let (status, body, took) = get(server.addr, "/stream");
    assert_eq!(status, 200);
    assert!(
        body.contains("data: first") && body.contains("data: last"),
        "{body}"
    );
    assert!(took >= timeout * 5, "{took:?}");
}

#[test]
fn a_request_body_that_stalls_is_answered_408_and_closed_after_the_body_read_timeout() {
    let timeout = Duration::from_millis(300);
    let server = Server::real(ServeOptions {
        header_read_timeout: NEVER,
        idle_timeout: NEVER,
        body_read_timeout: timeout,
        body_timeout: NEVER,
        ..ServeOptions::default()
    });
    let started = Instant::now();
    let mut s = stalled_body(server.addr, 1000);
    assert_eq!(response_status(&mut s), 408);
    let after = started.elapsed();
    assert!(after >= timeout, "answered after {after:?}");
}

#[test]
fn a_request_body_that_trickles_is_answered_408_at_the_body_timeout() {
    let whole = Duration::from_millis(1200);
    let server = Server::real(ServeOptions {
        header_read_timeout: NEVER,
        idle_timeout: NEVER,
        // A byte comes far more often than this: only the bound on the whole body can stop it.
        body_read_timeout: Duration::from_secs(5),
        body_timeout: whole,
        ..ServeOptions::default()
    });
    let started = Instant::now();
    let mut s = stalled_body(server.addr, 10);
    // The client's own pace (a byte every 50 ms, for up to the guard), not a wait of the test:
    // it stops when the server closes.
    let mut trickle = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        while started.elapsed() < GUARD && trickle.write_all(b"x").is_ok() {
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    assert_eq!(response_status(&mut s), 408);
    let after = started.elapsed();
    assert!(after >= whole, "answered after {after:?}");
    drop(s);
    writer.join().unwrap();
}

#[test]
fn stalled_bodies_count_against_the_connection_cap_and_are_shed_oldest_first() {
    let server = Server::real(ServeOptions {
        max_connections: Some(32),
        header_read_timeout: NEVER,
        idle_timeout: NEVER,
        body_read_timeout: NEVER,
        body_timeout: NEVER,
        ..ServeOptions::default()
    });
    let before = rss_bytes();
    // Each has sent 256 KiB of a 1 MiB body: held, the 200 would buffer 50 MiB.
    let mut sockets: Vec<TcpStream> = (0..200)
        .map(|_| stalled_body(server.addr, 256 * 1024))
        .collect();
    for _ in 0..3 {
        assert_eq!(get(server.addr, "/health").0, 200);
    }
    if let (Some(before), Some(after)) = (before, rss_bytes()) {
        eprintln!(
            "200 stalled bodies of 256 KiB, cap 32: resident memory grew by {} KiB",
            after.saturating_sub(before) / 1024
        );
    }
    for (i, s) in sockets[..100].iter_mut().enumerate() {
        assert!(closed_by_server(s), "stalled body {i} was not closed");
    }
    for (i, s) in sockets.iter().enumerate().skip(200 - 16) {
        assert!(still_open(s), "stalled body {i} was closed");
    }
}

#[test]
fn a_client_that_takes_none_of_its_response_is_closed_after_the_send_timeout() {
    let send = Duration::from_millis(500);
    let (dropped, told) = std::sync::mpsc::channel();
    let server = Server::start(
        endless_router(dropped),
        ServeOptions {
            header_read_timeout: NEVER,
            idle_timeout: NEVER,
            send_timeout: send,
            ..ServeOptions::default()
        },
    );
    let mut s = TcpStream::connect(server.addr).unwrap();
    let started = Instant::now();
    s.write_all(format!("GET /endless HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).as_bytes())
        .unwrap();
    // The client reads nothing: once the socket's buffers are full the server can send no
    // more, and lets go of the response (closing the connection) after the send timeout.
    told.recv_timeout(GUARD)
        .unwrap_or_else(|_| panic!("the response was still held after {GUARD:?}"));
    let after = started.elapsed();
    assert!(after >= send, "closed after {after:?}");
    // What was sent ends, cut short, instead of going on for ever.
    s.set_read_timeout(Some(GUARD)).unwrap();
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("reading what was sent: {e} after {got} bytes"),
        }
    }
    eprintln!("a client that read nothing for {send:?}: {got} bytes were buffered for it");
}

#[test]
fn a_burst_of_connections_waits_in_the_kernel_until_it_is_accepted() {
    // The kernel caps the queue at net.core.somaxconn (4,096 on Linux since 5.4).
    let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4096);
    let burst = 1_000.min(somaxconn.saturating_sub(1));
    if burst <= 128 {
        eprintln!("net.core.somaxconn is {somaxconn}: no queue longer than tokio's to test");
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let options = ServeOptions {
        port: 0,
        ..ServeOptions::default()
    };
    // Bound, not yet serving: as if the accept loop were descheduled during the burst.
    let (listener, addr) = rt.block_on(moot_serve::bind(&options)).unwrap();
    let queued: Vec<TcpStream> = (0..burst)
        .map(|i| {
            // A dropped SYN is retried after a second: the guard is shorter than that.
            TcpStream::connect_timeout(&addr, Duration::from_millis(900)).unwrap_or_else(|e| {
                panic!("connection {i} of a burst of {burst} was not queued: {e}")
            })
        })
        .collect();
    drop(listener);
    drop(queued);
}

/// Set in the child process of the descriptor exhaustion test, which runs
/// [`child_server_with_128_descriptors`] under `ulimit -n 128`.
const CHILD: &str = "MOOT_SERVE_TEST_FEW_DESCRIPTORS";

/// In the child of [`out_of_descriptors_the_oldest_half_open_is_shed_and_the_server_recovers`]
/// only (elsewhere it returns at once): a server with no connection cap of its own, so the
/// descriptor limit is what stops it, serving until the parent kills it.
#[test]
fn child_server_with_128_descriptors() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let options = ServeOptions {
        port: 0,
        max_connections: Some(usize::MAX),
        header_read_timeout: NEVER,
        idle_timeout: NEVER,
        ..ServeOptions::default()
    };
    let (listener, addr) = rt.block_on(moot_serve::bind(&options)).unwrap();
    println!("ADDR {addr}");
    let router = test_router(|| async {});
    rt.block_on(moot_serve::serve(listener, router, &options))
        .unwrap();
}

/// Kills the child server however the test ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[cfg(unix)]
#[test]
fn out_of_descriptors_the_oldest_half_open_is_shed_and_the_server_recovers() {
    // The server runs in a child with 128 descriptors (soft and hard: it cannot raise them),
    // so `accept` fails with EMFILE; this process holds the clients and keeps its own limit.
    let exe = std::env::current_exe().unwrap();
    // The harness names a test by its path below the crate root (`slowloris::child_…`).
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let child_test = format!("{module}::child_server_with_128_descriptors");
    let mut child = Killed(
        Command::new("sh")
            .arg("-c")
            .arg(r#"ulimit -n 128 && exec "$0" --exact "$1" --nocapture --test-threads 1"#)
            .arg(&exe)
            .arg(&child_test)
            .env(CHILD, "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let out = child.0.stdout.take().unwrap();
    let addr: SocketAddr = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        // The harness's `test NAME ... ` comes first on the same line.
        .find_map(|l| {
            l.split_once("ADDR ")
                .map(|(_, a)| a.trim().parse().unwrap())
        })
        .expect("the child server's address");
    let mut sockets: Vec<TcpStream> = (0..300).map(|_| half_open(addr)).collect();
    let (status, _, took) = get(addr, "/health");
    eprintln!(
        "/health with 300 half-open connections held by a server with 128 descriptors: {took:?}"
    );
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(1), "/health took {took:?}");
    // Room was made by closing the oldest.
    assert!(closed_by_server(&mut sockets[0]));
    assert!(still_open(&sockets[299]));
    // Once the clients let go, it serves as before, by itself.
    drop(sockets);
    for _ in 0..3 {
        assert_eq!(get(addr, "/health").0, 200);
    }
    assert!(child.0.try_wait().unwrap().is_none(), "the server ended");
}

/// `/big`: 8 MiB at once, then nothing (the response never ends), and `/health`; tells
/// `dropped` when the server drops a `/big` response (its connection closed).
fn big_router(dropped: std::sync::mpsc::Sender<()>) -> Router {
    Router::new()
        .route("/health", routing::get(|| async { "ok" }))
        .route(
            "/big",
            routing::get(move || {
                let signal = DropSignal(dropped.clone());
                async move {
                    let chunk = axum::body::Bytes::from(vec![b'x'; 8 << 20]);
                    let body =
                        stream::once(async move { Ok::<_, std::convert::Infallible>(chunk) })
                            .chain(stream::pending())
                            .map(move |chunk| {
                                let _held = &signal;
                                chunk
                            });
                    axum::body::Body::from_stream(body)
                }
            }),
        )
}

/// Issue 57 item 3: what the server holds for clients that take none of their responses counts
/// against one budget for the whole server. Past it, a new request closes the connections that
/// have taken nothing for longest (and is served); 1,000 such connections held 3.44 GB before.
#[test]
fn responses_no_client_takes_count_against_one_budget_and_the_stalled_are_closed_first() {
    let (dropped, told) = std::sync::mpsc::channel();
    let server = Server::start(
        big_router(dropped),
        ServeOptions {
            header_read_timeout: NEVER,
            idle_timeout: NEVER,
            send_timeout: NEVER,
            max_unsent_bytes: 16 << 20,
            ..ServeOptions::default()
        },
    );
    // Six clients ask for 8 MiB each and read nothing: the kernel's buffers take a few MiB of
    // each, the server holds the rest.
    let stalled: Vec<TcpStream> = (0..6)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr).unwrap();
            s.write_all(format!("GET /big HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).as_bytes())
                .unwrap();
            s
        })
        .collect();
    // New requests make room: the stalled are closed, oldest stall first, until the server is
    // within its budget, and each new request is answered.
    let started = Instant::now();
    let mut closed = 0;
    while closed < 2 {
        assert!(
            started.elapsed() < GUARD,
            "no stalled connection was closed: {closed} in {GUARD:?}"
        );
        let (status, _, _) = get(server.addr, "/health");
        assert!(status == 200 || status == 503, "{status}");
        while told.try_recv().is_ok() {
            closed += 1;
        }
    }
    let (status, body, _) = get(server.addr, "/health");
    assert_eq!(status, 200, "{body}");
    assert!(closed < 6, "every stalled connection was closed: {closed}");
    drop(stalled);
}
