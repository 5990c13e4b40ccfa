//! The accept loop, and what keeps slow or idle clients from taking the server down.
//!
//! `axum::serve` reads request heads with no time limit and accepts connections until the
//! process runs out of descriptors, after which even `/health` fails: 20,000 sockets that each
//! sent half a request head held `moot serve` down for as long as they stayed open. Here:
//! - a client has `header_read_timeout` to send a request's head: from connecting for the first
//!   request; from the first byte of each later one on a kept-alive connection;
//! - a kept-alive connection with no request in flight is closed after `idle_timeout`;
//! - a request's body must keep coming: a body with no byte for `body_read_timeout`, or not whole
//!   `body_timeout` after its head, is answered 408 and its connection closed (2,000 stalled
//!   `POST /api/runs` bodies held 2.19 GB before). Until its body is whole and its response
//!   begun, a connection counts as half-open: it may be shed to make room, as a stalled head is;
//! - a response must be taken: a connection whose client takes no byte of it for
//!   `send_timeout` (the socket stays full) is closed, and what was buffered for it freed (ten
//!   clients that never read a large run held 1.3 GB). A response with nothing to send for a
//!   while (server-sent events last as long as their run) is never cut;
//! - what responses hold until their clients take it counts against one budget for the whole
//!   server (`max_unsent_bytes`): past it, a new request first closes the connection whose
//!   client has taken nothing for longest, and is answered 503 when no such connection is left
//!   (1,000 connections that read nothing held 3.44 GB before, each with a page in hand);
//! - the soft descriptor limit is raised to the hard one, and connections are capped below it;
//!   at the cap, the oldest half-open connection (its head or body not yet whole, or kept alive
//!   with nothing to do) is closed to make room for the new one;
//! - when `accept` fails for want of descriptors or memory, the oldest half-open connection is
//!   closed and the loop backs off briefly, so it neither ends nor spins, and recovers by itself;
//! - the kernel queues up to [`BACKLOG`] connections not yet accepted, not tokio's 128.
//!
//! hyper's own `header_read_timeout` is not used: its clock restarts as soon as a response is
//! sent, so it cannot tell a kept-alive connection waiting for its next request (which may wait
//! `idle_timeout`) from a client that started a head and stalled.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::http::{header, HeaderValue, Request, Response, StatusCode};
use axum::Router;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::service::Service as _;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{oneshot, Notify};

use crate::descriptors::connections;
use tokio::time::Instant;

use crate::app::ServeOptions;
use crate::error::ServeError;
use crate::safety::check_binding;

/// Connections the kernel queues before the server accepts them (Linux caps it at
/// `net.core.somaxconn`, 4,096 by default). With tokio's 128, a burst of connections overflowed
/// the queue whenever the accept loop was descheduled for a moment, and each client whose SYN
/// was dropped waited a second or more to retry: /health stalled behind a flood it could serve.
const BACKLOG: u32 = 4096;

/// The first wait when `accept` keeps failing for want of resources; it doubles up to
/// [`LONGEST_BACKOFF`] while failures go on: short enough that new clients barely notice, long
/// enough not to spin.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const LONGEST_BACKOFF: Duration = Duration::from_secs(1);

/// Binds `options.host:options.port` (port 0: a free one), refusing a non-loopback address
/// without a token; returns the listener and the address it got.
pub async fn bind(options: &ServeOptions) -> Result<(TcpListener, SocketAddr), ServeError> {
    check_binding(options.host, options.token.as_deref())?;
    let asked = SocketAddr::new(options.host, options.port);
    let failed = |e: io::Error| ServeError::Bind(format!("{asked}: {e}"));
    let socket = if asked.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(failed)?;
    // As std and tokio do on Unix: a restarted server gets its port back while the last one's
    // connections wait out TIME_WAIT.
    #[cfg(unix)]
    socket.set_reuseaddr(true).map_err(failed)?;
    socket.bind(asked).map_err(failed)?;
    let listener = socket.listen(BACKLOG).map_err(failed)?;
    let addr = listener.local_addr().map_err(failed)?;
    Ok((listener, addr))
}

/// Serves `router` on `listener` until the process ends (see the module's doc for the limits);
/// it returns only if the listening socket itself is broken.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    options: &ServeOptions,
) -> Result<(), ServeError> {
    let limits = Limits {
        header_read: options.header_read_timeout,
        idle: options.idle_timeout,
        body_read: options.body_read_timeout,
        body: options.body_timeout,
        send: options.send_timeout,
    };
    let cap = connections(options.max_connections);
    let registry = Arc::new(Registry::with_budget(options.max_unsent_bytes));
    // The next wait while `accept` keeps failing; `None` since the last accept.
    let mut failing: Option<Duration> = None;
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                failing = None;
                if registry.len() >= cap && registry.shed_oldest_half_open().is_none() {
                    // Every connection has a request being worked on or answered, and closing
                    // one would waste that; one more would eat the descriptors kept back for the store and
                    // the agents. This client is turned away (its socket closes here).
                    continue;
                }
                let (registered, close) = registry.add();
                tokio::spawn(connection(
                    stream,
                    router.clone(),
                    registered,
                    close,
                    limits,
                ));
            }
            Err(e) => match AcceptFailure::of(&e) {
                // The client went away between connecting and being accepted.
                AcceptFailure::Peer => continue,
                AcceptFailure::Listener => return Err(ServeError::Accept(e)),
                AcceptFailure::Resources => {
                    // Out of descriptors (EMFILE, ENFILE) or memory: the pending connection
                    // stays queued and `accept` would fail again at once. Free a descriptor
                    // held by the oldest half-open connection.
                    match (registry.shed_oldest_half_open(), failing) {
                        // The first failure since an accept: accept again as soon as that
                        // connection's socket is closed (a flood is then shed at the pace it
                        // comes, not one connection per wait).
                        (Some(shed), None) => {
                            let _ =
                                tokio::time::timeout(LONGEST_BACKOFF, shed.gone.notified()).await;
                            failing = Some(FIRST_BACKOFF);
                        }
                        // Failing again although a descriptor was freed (another process took
                        // it, or the system is short), or nothing to close: wait longer each
                        // time for clients to let go, rather than close every idle client or spin.
                        (_, wait) => {
                            let wait = wait.unwrap_or(FIRST_BACKOFF);
                            tokio::time::sleep(wait).await;
                            failing = Some((wait * 2).min(LONGEST_BACKOFF));
                        }
                    }
                }
            },
        }
    }
}

/// Why `accept` failed, as far as the loop is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AcceptFailure {
    /// The connection being accepted failed (reset, aborted, a network error passed on):
    /// accept the next.
    Peer,
    /// The listening socket is unusable: nothing will ever be accepted.
    Listener,
    /// The process or system is out of descriptors or memory, or something unknown: free one
    /// and back off.
    Resources,
}

impl AcceptFailure {
    fn of(e: &io::Error) -> AcceptFailure {
        use io::ErrorKind as K;
        if matches!(
            e.kind(),
            K::ConnectionAborted
                | K::ConnectionReset
                | K::ConnectionRefused
                | K::Interrupted
                | K::WouldBlock
                | K::TimedOut
        ) {
            return AcceptFailure::Peer;
        }
        #[cfg(unix)]
        if let Some(code) = e.raw_os_error() {
            use nix::errno::Errno as E;
            return match E::from_raw(code) {
                E::EBADF | E::ENOTSOCK | E::EINVAL | E::EFAULT => AcceptFailure::Listener,
                // accept(2) on Linux passes the new socket's pending network errors on; they
                // are to be treated as EAGAIN. EPERM: a firewall refused this connection.
                E::ENETDOWN
                | E::EPROTO
                | E::ENOPROTOOPT
                | E::EHOSTDOWN
                | E::ENONET
                | E::EHOSTUNREACH
                | E::EOPNOTSUPP
                | E::ENETUNREACH
                | E::EPERM => AcceptFailure::Peer,
                _ => AcceptFailure::Resources,
            };
        }
        AcceptFailure::Resources
    }
}

/// The timeouts a connection runs under.
#[derive(Debug, Clone, Copy)]
struct Limits {
    header_read: Duration,
    idle: Duration,
    body_read: Duration,
    body: Duration,
    send: Duration,
}

/// Where a connection stands: whether a request is in flight, and since when it has waited.
#[derive(Debug)]
struct Track {
    phase: Mutex<Phase>,
    /// Told on every change of phase, so the connection's watchdog picks up its new deadline.
    changed: Notify,
    /// Told once the connection's socket is closed and its registry entry gone.
    gone: Notify,
    /// Bytes of its responses handed to hyper and not yet written to its socket.
    unsent: AtomicU64,
    /// The same, over every connection of the server.
    unsent_total: Arc<AtomicU64>,
}

#[derive(Debug, Clone, Copy)]
struct Phase {
    /// Requests whose response has not been sent whole (HTTP/1: at most one).
    in_flight: usize,
    /// Whether a whole request head has arrived: until then, the header timeout runs from the
    /// connection's start.
    served: bool,
    /// Since when no request has been in flight: the connection's start, or the end of its
    /// last response.
    waiting_since: Instant,
    /// When the first byte of the next request arrived on a kept-alive connection.
    head_since: Option<Instant>,
    /// While the request in flight waits for the rest of its body (and its response has not
    /// begun): when its head ended, and when the last byte of its body came.
    body: Option<BodyWait>,
    /// Since when a write has waited on a socket that takes nothing (the client reads nothing):
    /// `None` while writes go through or there is nothing to write.
    blocked_since: Option<Instant>,
}

#[derive(Debug, Clone, Copy)]
struct BodyWait {
    since: Instant,
    last_byte: Instant,
}

impl BodyWait {
    fn deadline(&self, limits: Limits) -> Instant {
        (self.last_byte + limits.body_read).min(self.since + limits.body)
    }
}

impl Track {
    fn new(unsent_total: Arc<AtomicU64>) -> Track {
        Track {
            unsent: AtomicU64::new(0),
            unsent_total,
            phase: Mutex::new(Phase {
                in_flight: 0,
                served: false,
                waiting_since: Instant::now(),
                head_since: None,
                body: None,
                blocked_since: None,
            }),
            changed: Notify::new(),
            gone: Notify::new(),
        }
    }

    fn phase(&self) -> MutexGuard<'_, Phase> {
        // No update of `Phase` can panic halfway, so a poisoned one is still whole.
        self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When the connection is to be closed if nothing changes: `send_timeout` after a write
    /// began to wait on a client that takes nothing; else `None` while a request is in flight
    /// (a response takes as long as it takes; its body's timeouts are the request's own).
    fn deadline(&self, limits: Limits) -> Option<Instant> {
        let p = *self.phase();
        if let Some(blocked) = p.blocked_since {
            Some(blocked + limits.send)
        } else if p.in_flight > 0 {
            None
        } else if !p.served {
            Some(p.waiting_since + limits.header_read)
        } else if let Some(head) = p.head_since {
            Some(head + limits.header_read)
        } else {
            Some(p.waiting_since + limits.idle)
        }
    }

    /// Whether the connection may be closed to make room: no request in flight, or one still
    /// waiting for its body (nothing has been done for it that closing would waste).
    fn half_open(&self) -> bool {
        let p = self.phase();
        p.in_flight == 0 || p.body.is_some()
    }

    /// Bytes arrived: on a kept-alive connection waiting for its next request, they start
    /// that request's head and its header timeout.
    fn bytes_arrived(&self) {
        let mut p = self.phase();
        if p.served && p.in_flight == 0 && p.head_since.is_none() {
            p.head_since = Some(Instant::now());
            drop(p);
            self.changed.notify_one();
        }
    }

    /// A request head is whole and handed to the router (with a body to wait for, or not);
    /// the request is in flight until the returned guard (held by its response body) is
    /// dropped.
    fn begin(self: &Arc<Track>, body_to_come: bool) -> InFlightGuard {
        {
            let mut p = self.phase();
            p.in_flight += 1;
            p.served = true;
            p.head_since = None;
            let now = Instant::now();
            p.body = body_to_come.then_some(BodyWait {
                since: now,
                last_byte: now,
            });
        }
        self.changed.notify_one();
        InFlightGuard(self.clone())
    }

    /// A piece of the request's body arrived.
    fn body_arrived(&self) {
        if let Some(body) = self.phase().body.as_mut() {
            body.last_byte = Instant::now();
        }
    }

    /// The request's body is whole (or failed), or its response has begun: its timeouts no
    /// longer apply, and closing the connection would now waste work.
    fn body_over(&self) {
        self.phase().body = None;
    }

    /// Resolves when the request's body has waited past its timeouts; never once it is over.
    async fn body_expired(&self, limits: Limits) {
        loop {
            let deadline = self.phase().body.map(|b| b.deadline(limits));
            match deadline {
                None => std::future::pending::<()>().await,
                Some(d) if d <= Instant::now() => return,
                // Woken at the deadline as it stood; a byte since has moved it on.
                Some(d) => tokio::time::sleep_until(d).await,
            }
        }
    }

    /// A write could not go through: the socket is full.
    fn write_blocked(&self) {
        let mut p = self.phase();
        if p.blocked_since.is_none() {
            p.blocked_since = Some(Instant::now());
            drop(p);
            self.changed.notify_one();
        }
    }

    /// `n` bytes of a response were handed to hyper to send.
    fn owe(&self, n: u64) {
        self.unsent.fetch_add(n, Ordering::SeqCst);
        self.unsent_total.fetch_add(n, Ordering::SeqCst);
    }

    /// `n` bytes were written to the socket (the response's head counts too, but never more
    /// than is owed).
    fn paid(&self, n: u64) {
        let mut paid = 0;
        let _ = self
            .unsent
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |owed| {
                paid = owed.min(n);
                Some(owed - paid)
            });
        self.unsent_total.fetch_sub(paid, Ordering::SeqCst);
    }

    /// The connection is closed, or about to be: what it owed is no longer held.
    fn forgive(&self) {
        let owed = self.unsent.swap(0, Ordering::SeqCst);
        self.unsent_total.fetch_sub(owed, Ordering::SeqCst);
    }

    /// Since when its writes have waited on a client that takes nothing, while it owes bytes.
    fn stalled_since(&self) -> Option<Instant> {
        if self.unsent.load(Ordering::SeqCst) == 0 {
            return None;
        }
        self.phase().blocked_since
    }

    /// A write went through: the client is taking its response. Between requests, a kept-alive
    /// connection's idle time runs from its last byte sent.
    fn write_went_through(&self) {
        let mut p = self.phase();
        if p.blocked_since.is_some() {
            p.blocked_since = None;
            if p.in_flight == 0 {
                p.waiting_since = Instant::now();
            }
        }
    }
}

/// A request in flight; dropped when its response has been sent whole (or abandoned).
#[derive(Debug)]
struct InFlightGuard(Arc<Track>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        {
            let mut p = self.0.phase();
            p.in_flight = p.in_flight.saturating_sub(1);
            if p.in_flight == 0 {
                p.waiting_since = Instant::now();
                p.head_since = None;
            }
        }
        self.0.changed.notify_one();
    }
}

/// Every open connection, in the order they were accepted (ids only grow).
#[derive(Debug)]
struct Registry {
    conns: Mutex<BTreeMap<u64, Entry>>,
    next_id: AtomicU64,
    /// Bytes of responses not yet written, over every connection.
    unsent: Arc<AtomicU64>,
    /// The most of those the server holds before it makes room (see [`Registry::make_room`]).
    budget: u64,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::with_budget(u64::MAX)
    }
}

#[derive(Debug)]
struct Entry {
    track: Arc<Track>,
    /// Dropping it (removing the entry) tells the connection's task to close.
    _close: oneshot::Sender<Infallible>,
}

impl Registry {
    fn with_budget(budget: u64) -> Registry {
        Registry {
            conns: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(0),
            unsent: Arc::new(AtomicU64::new(0)),
            budget,
        }
    }

    /// Before a new request on connection `asking`: while the responses not yet taken are past
    /// the budget, closes the connection (another than `asking`) whose client has taken none of
    /// its response for longest. Whether the server is then within its budget: if not, no
    /// client is stalled, and the request is to be refused.
    fn make_room(&self, asking: &Arc<Track>) -> bool {
        loop {
            if self.unsent.load(Ordering::SeqCst) <= self.budget {
                return true;
            }
            let mut conns = self.conns();
            let slowest = conns
                .iter()
                .filter(|(_, entry)| !Arc::ptr_eq(&entry.track, asking))
                .filter_map(|(id, entry)| entry.track.stalled_since().map(|since| (since, *id)))
                .min();
            let Some((_, id)) = slowest else {
                return false;
            };
            if let Some(entry) = conns.remove(&id) {
                // Its task closes the socket and drops the response as soon as it runs.
                entry.track.forgive();
            }
        }
    }

    fn conns(&self) -> MutexGuard<'_, BTreeMap<u64, Entry>> {
        // Map operations do not panic halfway; a poisoned map is still whole.
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn len(&self) -> usize {
        self.conns().len()
    }

    /// A new connection's place, and what tells it to close.
    fn add(self: &Arc<Registry>) -> (Registered, oneshot::Receiver<Infallible>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let track = Arc::new(Track::new(self.unsent.clone()));
        let (close, closed) = oneshot::channel();
        self.conns().insert(
            id,
            Entry {
                track: track.clone(),
                _close: close,
            },
        );
        let registered = Registered {
            registry: self.clone(),
            id,
            track,
        };
        (registered, closed)
    }

    /// Tells the oldest half-open connection (no request in flight, or one still waiting for
    /// its body) to close and returns its track (whose `gone` says when its socket is closed);
    /// `None` if every connection has a request being worked on or answered. It leaves the count at once; its descriptor is freed when its task next runs.
    fn shed_oldest_half_open(&self) -> Option<Arc<Track>> {
        let mut conns = self.conns();
        let oldest = conns
            .iter()
            .find(|(_, entry)| entry.track.half_open())
            .map(|(id, _)| *id)?;
        conns.remove(&oldest).map(|entry| entry.track)
    }
}

/// A connection's place in the registry, given up when its task ends however it ends.
struct Registered {
    registry: Arc<Registry>,
    id: u64,
    track: Arc<Track>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.conns().remove(&self.id);
        self.track.forgive();
        self.track.gone.notify_one();
    }
}

/// Serves one connection until it ends, its deadline passes, or the registry sheds it.
async fn connection(
    stream: TcpStream,
    router: Router,
    registered: Registered,
    close: oneshot::Receiver<Infallible>,
    limits: Limits,
) {
    serve_connection(
        stream,
        router,
        registered.registry.clone(),
        registered.track.clone(),
        close,
        limits,
    )
    .await;
    // The socket was dropped with the future above: the registry may count it gone.
    drop(registered);
}

async fn serve_connection(
    stream: TcpStream,
    router: Router,
    registry: Arc<Registry>,
    track: Arc<Track>,
    mut close: oneshot::Receiver<Infallible>,
    limits: Limits,
) {
    let io = TokioIo::new(Watched {
        stream,
        track: track.clone(),
    });
    let router = TowerToHyperService::new(router);
    let tracked = track.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let in_flight = tracked.begin(!request.body().is_end_stream());
        let track = tracked.clone();
        let room = registry.make_room(&track);
        let unsent_total = registry.unsent.load(Ordering::SeqCst);
        let budget = registry.budget;
        let request = request.map(|body| {
            Body::new(Received {
                body,
                track: track.clone(),
            })
        });
        let response = router.call(request);
        async move {
            if !room {
                // Not run: the server holds too much for clients that are still reading.
                let refused = over_budget(unsent_total, budget);
                track.body_over();
                return Ok::<_, Infallible>(refused.map(|body| InFlight {
                    body,
                    track: track.clone(),
                    _guard: in_flight,
                }));
            }
            let response = tokio::select! {
                response = response => response?,
                // The body stalled or took too long: nothing the handler did with it so far is
                // kept, and the client is told why its connection closes.
                () = track.body_expired(limits) => body_timed_out(),
            };
            track.body_over();
            Ok::<_, Infallible>(response.map(|body| InFlight {
                body,
                track: track.clone(),
                _guard: in_flight,
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The watchdog below keeps the time (see the module's doc).
    builder.header_read_timeout(None);
    // A request head (and what a connection buffers) is at most 64 KiB: a slow client's
    // partial head cannot grow to hyper's default of about 400 KB per connection.
    builder.max_buf_size(64 * 1024);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    loop {
        let deadline = track.deadline(limits);
        let changed = track.changed.notified();
        tokio::select! {
            // Served to its end, or the client went away: either way there is no one to tell.
            _ = conn.as_mut() => return,
            // Shed to make room (the sender was dropped; nothing is ever sent).
            _ = &mut close => return,
            () = changed => {}
            () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                if track.deadline(limits).is_some_and(|d| d <= Instant::now()) {
                    // Dropping the connection closes its socket.
                    return;
                }
            }
        }
    }
}

/// The answer to a request that came while the server held more than its budget of responses
/// not yet taken, with none of their clients stalled to close; its connection closes after it.
fn over_budget(unsent: u64, budget: u64) -> Response<Body> {
    let mut response = Response::new(Body::from(format!(
        "the server holds {} MiB of responses its clients have not yet taken, past its bound of \
         {} MiB; try again shortly\n",
        unsent >> 20,
        budget >> 20
    )));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The answer to a request whose body stalled or took too long; its connection closes after it.
fn body_timed_out() -> Response<Body> {
    let mut response = Response::new(Body::from(
        "the request's body did not arrive in time; the connection is closed\n",
    ));
    *response.status_mut() = StatusCode::REQUEST_TIMEOUT;
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A request's body, telling its connection's [`Track`] as it arrives and when it is whole.
struct Received {
    body: Incoming,
    track: Arc<Track>,
}

impl HttpBody for Received {
    type Data = <Incoming as HttpBody>::Data;
    type Error = <Incoming as HttpBody>::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(_))) if this.body.is_end_stream() => this.track.body_over(),
            Poll::Ready(Some(Ok(_))) => this.track.body_arrived(),
            Poll::Ready(None | Some(Err(_))) => this.track.body_over(),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The socket, telling its connection's [`Track`] when bytes arrive and whether what is
/// written goes through.
struct Watched {
    stream: TcpStream,
    track: Arc<Track>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.track.bytes_arrived();
        }
        polled
    }
}

impl Watched {
    /// Notes whether a write went through (and how much of what is owed it took) or waits on
    /// the client.
    fn wrote(&self, polled: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        match &polled {
            Poll::Pending => self.track.write_blocked(),
            Poll::Ready(written) => {
                if let Ok(n) = written {
                    self.track.paid(*n as u64);
                }
                self.track.write_went_through()
            }
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.wrote(polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.wrote(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// A response body that keeps its request in flight until hyper has sent it whole and dropped
/// it, and counts what hyper takes from it as owed until the socket takes it.
struct InFlight {
    body: Body,
    track: Arc<Track>,
    _guard: InFlightGuard,
}

impl HttpBody for InFlight {
    type Data = <Body as HttpBody>::Data;
    type Error = <Body as HttpBody>::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                this.track.owe(data.len() as u64);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn running_out_of_descriptors_backs_off_and_a_reset_peer_does_not() {
        let of = |code| AcceptFailure::of(&io::Error::from_raw_os_error(code));
        assert_eq!(of(nix::libc::EMFILE), AcceptFailure::Resources);
        assert_eq!(of(nix::libc::ENFILE), AcceptFailure::Resources);
        assert_eq!(of(nix::libc::ENOBUFS), AcceptFailure::Resources);
        assert_eq!(of(nix::libc::ECONNABORTED), AcceptFailure::Peer);
        assert_eq!(of(nix::libc::EPROTO), AcceptFailure::Peer);
        assert_eq!(of(nix::libc::EBADF), AcceptFailure::Listener);
    }

    #[test]
    fn shedding_takes_the_oldest_connection_with_no_request_in_flight() {
        use futures::FutureExt;
        let registry = Arc::new(Registry::default());
        let ids = |r: &Registry| r.conns().keys().copied().collect::<Vec<_>>();
        let (first, _c1) = registry.add();
        let (second, mut second_closed) = registry.add();
        let (third, _c3) = registry.add();
        let busy = first.track.begin(false);
        let shed = registry.shed_oldest_half_open().expect("one to shed");
        assert!(Arc::ptr_eq(&shed, &second.track));
        assert_eq!(ids(&registry), vec![first.id, third.id]);
        // The shed connection's task hears of it, and says when it is gone.
        assert!(matches!(
            second_closed.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        assert!(shed.gone.notified().now_or_never().is_none());
        drop(second);
        assert!(shed.gone.notified().now_or_never().is_some());
        // The one with a request in flight goes only once its response is sent.
        assert!(Arc::ptr_eq(
            &registry.shed_oldest_half_open().expect("one to shed"),
            &third.track
        ));
        assert!(registry.shed_oldest_half_open().is_none());
        drop(busy);
        assert!(registry.shed_oldest_half_open().is_some());
        assert!(ids(&registry).is_empty());
    }
}
