//! A deterministic OpenAI-compatible model server for tests and benchmarks: each chat
//! completion's reply depends only on the request (so any process asking the same thing gets
//! the same answer), takes a set latency, and is counted by its content, so a test can tell how
//! many requests the server saw more than once.
//!
//! The questions it answers are the arithmetic items of `common::arith_dataset` ("What is
//! 3 * 7?"); about one reply in four is off by one, chosen by a hash of the request, so debates
//! have something to argue about.

#![allow(dead_code)]

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// A hash of the request body: equal bodies, equal keys.
    pub key: u64,
    pub model: String,
    pub at: Instant,
}

#[derive(Default)]
struct State {
    seen: Mutex<Vec<Seen>>,
    open: AtomicUsize,
}

/// A running fake server (its threads live as long as the test process).
#[derive(Clone)]
pub struct FakeOpenAi {
    /// `http://127.0.0.1:PORT/v1`
    pub url: String,
    state: Arc<State>,
}

impl FakeOpenAi {
    /// Answers every request after `latency`.
    pub fn start(latency: Duration) -> FakeOpenAi {
        FakeOpenAi::with_latency(move |_| latency)
    }

    /// Answers each request after `latency(model)`.
    pub fn with_latency(latency: impl Fn(&str) -> Duration + Send + Sync + 'static) -> FakeOpenAi {
        FakeOpenAi::serving(latency, arithmetic)
    }

    /// Answers each request at once with `content(prompt)`, the prompt being every message's
    /// text joined by newlines.
    pub fn answering(content: impl Fn(&str) -> String + Send + Sync + 'static) -> FakeOpenAi {
        FakeOpenAi::serving(|_| Duration::ZERO, move |prompt, _| content(prompt))
    }

    /// Answers each request after `latency(model)` with `content(prompt, request key)`.
    fn serving(
        latency: impl Fn(&str) -> Duration + Send + Sync + 'static,
        content: impl Fn(&str, u64) -> String + Send + Sync + 'static,
    ) -> FakeOpenAi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake model server");
        let url = format!(
            "http://127.0.0.1:{}/v1",
            listener.local_addr().expect("its address").port()
        );
        let state = Arc::new(State::default());
        let latency = Arc::new(latency);
        let content = Arc::new(content);
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let state = shared.clone();
                let latency = latency.clone();
                let content = content.clone();
                std::thread::spawn(move || {
                    let raw = read_http_request(&mut stream);
                    let text = String::from_utf8_lossy(&raw);
                    let Some((_, body)) = text.split_once("\r\n\r\n") else {
                        return;
                    };
                    let request: serde_json::Value =
                        serde_json::from_str(body).unwrap_or(serde_json::Value::Null);
                    let model = request["model"].as_str().unwrap_or("").to_string();
                    let mut h = DefaultHasher::new();
                    body.hash(&mut h);
                    let key = h.finish();
                    state.seen.lock().expect("seen").push(Seen {
                        key,
                        model: model.clone(),
                        at: Instant::now(),
                    });
                    state.open.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(latency(&model));
                    let reply = reply_to(&request, key, body.len(), &*content);
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                        reply.len()
                    );
                    let _ = stream.write_all(response.as_bytes());
                    state.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        FakeOpenAi { url, state }
    }

    /// Every request so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().expect("seen").clone()
    }

    /// Requests being answered right now.
    pub fn open(&self) -> usize {
        self.state.open.load(Ordering::SeqCst)
    }

    /// How many requests repeated an earlier one exactly.
    pub fn repeats(&self) -> usize {
        let mut times: HashMap<u64, usize> = HashMap::new();
        for s in self.seen() {
            *times.entry(s.key).or_default() += 1;
        }
        times.values().map(|n| n - 1).sum()
    }

    /// A team of `agents` agents on this server (`fake-a`, `fake-b`, …: each agent's requests
    /// differ by model, so the server tells their calls apart), as moot TOML.
    pub fn team(&self, agents: usize, rounds: usize) -> String {
        let mut toml = format!("[debate]\nrounds = {rounds}\n\n");
        for i in 0..agents {
            let id = (b'a' + i as u8) as char;
            toml.push_str(&format!(
                "[[agents]]\nid = \"{id}\"\nbackend = \"openai\"\nbase_url = \"{}\"\nmodel = \"fake-{id}\"\nstream = false\n\n",
                self.url
            ));
        }
        toml
    }
}

/// The reply to `request`, its content `content(prompt, key)`.
fn reply_to(
    request: &serde_json::Value,
    key: u64,
    body_len: usize,
    content: &dyn Fn(&str, u64) -> String,
) -> String {
    let prompt: String = request["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let content = content(&prompt, key);
    serde_json::json!({
        "id": format!("fake-{key:x}"),
        "object": "chat.completion",
        "created": 0,
        "model": request["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": body_len / 4, "completion_tokens": 12, "total_tokens": body_len / 4 + 12},
    })
    .to_string()
}

/// `A * B = X. Final answer: X` for the last "What is A * B?" in the prompt, X off by one when
/// `key` says so.
fn arithmetic(prompt: &str, key: u64) -> String {
    let product = prompt.rfind("What is ").and_then(|at| {
        let rest = &prompt[at + "What is ".len()..];
        let (a, rest) = rest.split_once(" * ")?;
        let b: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        Some((a.trim().parse::<i64>().ok()?, b.parse::<i64>().ok()?))
    });
    match product {
        Some((a, b)) => {
            let x = a * b + i64::from(key.is_multiple_of(4));
            format!("{a} * {b} = {x}.\nFinal answer: {x}")
        }
        None => "I cannot tell.\nFinal answer: 0".to_string(),
    }
}

/// Reads one HTTP request from `stream`: the head, then the body by its content-length.
pub fn read_http_request(stream: &mut impl std::io::Read) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).unwrap_or(0);
        if n == 0 {
            return buf;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return buf;
            }
        }
    }
}
