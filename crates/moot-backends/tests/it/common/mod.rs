//! A tiny scripted HTTP server on 127.0.0.1 for the provider tests: it records what it was sent
//! and answers with the exact bytes a test gives it.
#![allow(dead_code)] // each test file uses part of it

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// One request as the server saw it.
#[derive(Debug)]
pub struct Seen {
    pub head: String,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

pub async fn read_request(socket: &mut TcpStream) -> Seen {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.expect("read request");
        assert!(n > 0, "client closed before sending a request");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut seen = Seen {
        head,
        body: buf[head_end..].to_vec(),
    };
    let length: usize = seen
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while seen.body.len() < length {
        let n = socket.read(&mut chunk).await.expect("read body");
        assert!(n > 0, "client closed mid-body");
        seen.body.extend_from_slice(&chunk[..n]);
    }
    seen
}

/// What the scripted server does after reading the request.
pub enum Reply {
    /// Write these pieces (pausing between them), then close.
    Pieces(Vec<Vec<u8>>),
    /// Write nothing; report how long until the client hung up.
    Hold,
    /// Write `head`, then `body` again and again until the client hangs up.
    Endless { head: Vec<u8>, body: Vec<u8> },
}

pub struct FakeServer {
    pub base_url: String,
    pub seen: oneshot::Receiver<Seen>,
    pub hung_up: oneshot::Receiver<Duration>,
}

pub async fn serve(reply: Reply) -> FakeServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (seen_tx, seen) = oneshot::channel();
    let (hung_tx, hung_up) = oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let request = read_request(&mut socket).await;
        let _ = seen_tx.send(request);
        match reply {
            Reply::Pieces(pieces) => {
                for piece in pieces {
                    if socket.write_all(&piece).await.is_err() {
                        return;
                    }
                    let _ = socket.flush().await;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                // Dropping the socket closes the connection.
            }
            Reply::Endless { head, body } => {
                if socket.write_all(&head).await.is_err() {
                    return;
                }
                while socket.write_all(&body).await.is_ok() {}
            }
            Reply::Hold => {
                let start = Instant::now();
                let mut byte = [0u8; 1];
                // Returns 0 (or an error) once the client has closed the connection.
                let _ = tokio::time::timeout(Duration::from_secs(30), socket.read(&mut byte)).await;
                let _ = hung_tx.send(start.elapsed());
            }
        }
    });
    FakeServer {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        seen,
        hung_up,
    }
}

/// A server answering successive connections with successive replies (the last repeats);
/// returns its base URL and how many requests it has read.
pub async fn serve_each(replies: Vec<Vec<Vec<u8>>>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let _ = read_request(&mut socket).await;
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let pieces = replies[n.min(replies.len() - 1)].clone();
            for piece in pieces {
                if socket.write_all(&piece).await.is_err() {
                    break;
                }
                let _ = socket.flush().await;
            }
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), count)
}

pub fn response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// An event-stream response delimited by closing the connection.
pub fn sse_head() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_vec()
}

pub fn sse_event(data: &str) -> Vec<u8> {
    format!("data: {data}\n\n").into_bytes()
}

/// One HTTP/1.1 chunk of a chunked body.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

pub fn with_header(mut response: Vec<u8>, header: &str) -> Vec<u8> {
    // Insert the header after the status line.
    let at = response.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    let line = format!("{header}\r\n");
    response.splice(at..at, line.into_bytes());
    response
}
