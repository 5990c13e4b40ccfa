//! The OpenAI-compatible backend against a real llama.cpp server (the `xllamacpp` package,
//! started by `tests/support/llama_server.py`) serving SmolLM2-135M.
//!
//! Ignored by default: the first run creates a venv with xllamacpp (pip, under the target
//! directory's test scratch folder; nothing is installed into the system interpreter) and pulls
//! the 98 MB model. Run with `cargo test -p moot-backends -- --include-ignored`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use moot_backends::models::ModelRef;
use moot_backends::openai::{OpenAiConfig, OpenAiModel, ServerKind};
use moot_backends::{
    BackendError, ChatMessage, Completion, CompletionRequest, FinishReason, LanguageModel,
    SamplingParams,
};

const XLLAMACPP: &str = "xllamacpp==2026.10.11549";

/// The interpreter the venv is made with: `MOOT_PYTHON`, else `python3`.
fn base_python() -> String {
    std::env::var("MOOT_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// Runs `command`, panicking with its output unless it succeeds.
fn run_ok(command: &mut Command, what: &str) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The python of a venv holding xllamacpp, made on first use under `CARGO_TARGET_TMPDIR` and
/// shared by every later run. Test threads and concurrent test processes may race to make it:
/// an exclusive lock on a file beside it lets one make it while the others wait, and a marker
/// naming the package and the venv's place is written only after pip succeeded and the module
/// imports, so a venv left half-made by an interrupted run is made again instead of being
/// trusted.
fn venv_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(root).expect("create CARGO_TARGET_TMPDIR");
        let name = format!("venv-{}", XLLAMACPP.replace("==", "-"));
        let dir = root.join(&name);
        let python = dir.join("bin").join("python");
        let marker = dir.join("moot-installed");
        let lock = std::fs::File::create(root.join(format!("{name}.lock"))).expect("lock file");
        lock.lock().expect("lock the venv");
        // The marker names the venv's place too: a moved venv's scripts name the old python.
        let installed = format!("{XLLAMACPP}\n{}", dir.display());
        if std::fs::read_to_string(&marker).ok().as_deref() != Some(installed.as_str()) {
            eprintln!("creating a venv with {XLLAMACPP} in {}", dir.display());
            run_ok(
                Command::new(base_python())
                    .args(["-m", "venv", "--clear"])
                    .arg(&dir),
                "python3 -m venv (Debian and Ubuntu need python3-venv)",
            );
            run_ok(
                Command::new(&python).args([
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    XLLAMACPP,
                ]),
                &format!("pip install {XLLAMACPP} into the venv"),
            );
            run_ok(
                Command::new(&python).args(["-c", "import xllamacpp"]),
                "import xllamacpp in the venv",
            );
            std::fs::write(&marker, &installed).expect("write the venv's marker");
        }
        drop(lock);
        python
    })
}

fn model_path() -> PathBuf {
    ModelRef::parse("smollm2-135m")
        .expect("known model")
        .ensure(&mut |msg| eprintln!("{msg}"))
        .expect("the model should be available (pulled with pip)")
}

/// A llama.cpp server process; killed when dropped.
struct LlamaServer {
    child: Child,
    /// Closing it tells the script to exit; kept open while the server should live.
    _stdin: ChildStdin,
    /// `127.0.0.1:PORT`, the port the server bound itself.
    addr: String,
    base_url: String,
    log: PathBuf,
    _log_dir: tempfile::TempDir,
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let start = text.len().saturating_sub(3000);
    text.get(start..).unwrap_or(&text).to_string()
}

/// `GET path` → status code and body, if the server answers at all.
fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Some((status, body.to_string()))
}

impl LlamaServer {
    fn start() -> LlamaServer {
        let python = venv_python();
        let model = model_path();
        let log_dir = tempfile::tempdir().expect("tempdir");
        let log = log_dir.path().join("llama-server.log");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/llama_server.py");
        let mut child = Command::new(python)
            .arg(&script)
            .arg(&model)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start llama_server.py");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        // The script binds a port of the system's choosing and names it on its READY line.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if let Some(url) = l.trim().strip_prefix("READY ") {
                            let _ = tx.send(Some(url.to_string()));
                            return;
                        }
                    }
                    Err(_) => break,
                }
            }
            let _ = tx.send(None);
        });
        let mut server = LlamaServer {
            child,
            _stdin: stdin,
            addr: String::new(),
            base_url: String::new(),
            log,
            _log_dir: log_dir,
        };
        let url = rx.recv_timeout(Duration::from_secs(300)).ok().flatten();
        let Some(url) = url else {
            panic!(
                "llama_server.py did not become ready: {}",
                log_tail(&server.log)
            );
        };
        let addr = url
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("READY names no http address: {url:?}"))
            .to_string();
        server.base_url = format!("http://{addr}/v1");
        server.addr = addr;
        let deadline = Instant::now() + Duration::from_secs(300);
        while get(&server.addr, "/health").map(|(status, _)| status) != Some(200) {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the server exited ({status}): {}", log_tail(&server.log));
            }
            assert!(
                Instant::now() < deadline,
                "the server never became healthy: {}",
                log_tail(&server.log)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    /// Tokens generated so far for the request a slot is working on (`GET /slots`).
    fn decoded_in_progress(&self) -> u64 {
        let Some((200, body)) = get(&self.addr, "/slots") else {
            return 0;
        };
        let slots: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("/slots is not JSON ({e}): {body}"));
        slots
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["is_processing"] == true)
            .flat_map(|s| s["next_token"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t["n_decoded"].as_u64())
            .max()
            .unwrap_or(0)
    }

    fn model(&self, stream: bool) -> OpenAiModel {
        OpenAiModel::new(OpenAiConfig {
            stream,
            ..OpenAiConfig::new(self.base_url.clone(), "smollm2-135m")
        })
        .expect("config")
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One server for the tests that only talk to it (never dropped: it exits when this test
/// process does, as its stdin closes).
fn shared() -> &'static LlamaServer {
    static SERVER: OnceLock<LlamaServer> = OnceLock::new();
    SERVER.get_or_init(LlamaServer::start)
}

/// The shared server takes one test at a time, so batching with another test's requests cannot
/// perturb the numbers the determinism tests compare.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn ask(question: &str, params: SamplingParams) -> CompletionRequest {
    CompletionRequest {
        params,
        ..CompletionRequest::new(vec![
            ChatMessage::system("You are a helpful assistant. Answer briefly."),
            ChatMessage::user(question),
        ])
    }
}

fn greedy(max_tokens: u32) -> SamplingParams {
    SamplingParams {
        temperature: Some(0.0),
        seed: Some(1234),
        max_tokens: Some(max_tokens),
        ..SamplingParams::default()
    }
}

async fn call(model: &OpenAiModel, request: CompletionRequest) -> Completion {
    tokio::time::timeout(Duration::from_secs(600), model.complete(request))
        .await
        .expect("the call should finish")
        .expect("the call should succeed")
}

#[tokio::test]
#[ignore = "needs a model and xllamacpp; run with --include-ignored"]
async fn a_request_works_and_usage_is_real() {
    let server = shared();
    let _turn = TURN.lock().await;
    let c = call(
        &server.model(false),
        ask("What is the capital of France?", greedy(24)),
    )
    .await;
    assert!(!c.text.trim().is_empty());
    assert!(c.usage.input_tokens > 0, "{:?}", c.usage);
    assert!(c.usage.output_tokens > 0, "{:?}", c.usage);
    assert!(c.usage.output_tokens <= 24, "{:?}", c.usage);
    assert!(matches!(
        c.finish,
        FinishReason::Stop | FinishReason::Length
    ));
    assert!(c.logprobs.is_none(), "not requested");
}

#[tokio::test]
#[ignore = "needs a model and xllamacpp; run with --include-ignored"]
async fn logprobs_match_the_completion_tokens() {
    let server = shared();
    let _turn = TURN.lock().await;
    let params = SamplingParams {
        logprobs: true,
        ..greedy(32)
    };
    for stream in [false, true] {
        let c = call(
            &server.model(stream),
            ask("Name three colours.", params.clone()),
        )
        .await;
        let lps = c.logprobs.clone().expect("logprobs were requested");
        assert_eq!(
            lps.len() as u64,
            c.usage.output_tokens,
            "stream={stream}: one logprob per generated token"
        );
        assert!(
            lps.iter().all(|&l| l <= 0.0 && l.is_finite()),
            "stream={stream}: {lps:?}"
        );
        let summary = c.logprob_summary().expect("a summary");
        assert!(summary.perplexity >= 1.0);
    }
}

#[tokio::test]
#[ignore = "needs a model and xllamacpp; run with --include-ignored"]
async fn seed_and_temperature_zero_reproduce() {
    let server = shared();
    let _turn = TURN.lock().await;
    let m = server.model(false);
    let request = ask("Write one sentence about the sea.", greedy(40));
    let a = call(&m, request.clone()).await;
    let b = call(&m, request).await;
    assert_eq!(a.text, b.text);
    assert_eq!(a.usage.output_tokens, b.usage.output_tokens);
}

#[tokio::test]
#[ignore = "needs a model and xllamacpp; run with --include-ignored"]
async fn streaming_gives_the_same_greedy_answer() {
    let server = shared();
    let _turn = TURN.lock().await;
    let params = SamplingParams {
        logprobs: true,
        ..greedy(48)
    };
    let request = ask("Explain in two sentences why the sky is blue.", params);
    let plain = call(&server.model(false), request.clone()).await;
    let streamed = call(&server.model(true), request).await;
    assert_eq!(streamed.text, plain.text);
    assert_eq!(streamed.finish, plain.finish);
    assert_eq!(streamed.usage.input_tokens, plain.usage.input_tokens);
    assert_eq!(streamed.usage.output_tokens, plain.usage.output_tokens);
    assert_eq!(
        streamed.logprobs.as_ref().map(Vec::len),
        plain.logprobs.as_ref().map(Vec::len)
    );
}

#[tokio::test]
#[ignore = "needs a model and xllamacpp; run with --include-ignored"]
async fn a_server_dying_mid_answer_is_a_clean_transport_error() {
    // Its own server: this one gets killed.
    let mut server = LlamaServer::start();
    let m = server.model(true);
    // A prompt this model answers at length (greedy decoding drifts into repetition), capped
    // at 2000 tokens: far more than it can produce before the kill.
    let request = ask(
        "Write a very long, detailed essay (at least 3000 words) about the history of the Roman Empire.",
        greedy(2000),
    );
    let call = tokio::spawn(async move { m.complete(request).await });
    // Kill it once the answer is streaming: the server has generated part of it.
    let deadline = Instant::now() + Duration::from_secs(300);
    while server.decoded_in_progress() < 16 {
        assert!(
            !call.is_finished(),
            "the call ended before the answer streamed"
        );
        assert!(
            Instant::now() < deadline,
            "the server never started answering: {}",
            log_tail(&server.log)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!call.is_finished(), "the answer finished before the kill");
    server.kill();
    let result = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("a dead server must not leave the call hanging")
        .expect("the call must not panic");
    match result {
        Err(BackendError::Transport(message)) => {
            assert!(
                message.contains("before the answer was complete"),
                "{message}"
            );
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
}

fn with_server_kind(server: &LlamaServer, server_kind: ServerKind, stream: bool) -> OpenAiModel {
    OpenAiModel::new(OpenAiConfig {
        stream,
        server_kind,
        ..OpenAiConfig::new(server.base_url.clone(), "smollm2-135m")
    })
    .expect("config")
}

#[tokio::test]
#[ignore = "needs a model and xllamacpp; run with --include-ignored"]
async fn the_dialect_decides_what_a_real_llama_cpp_server_returns() {
    let server = shared();
    let _turn = TURN.lock().await;
    let params = SamplingParams {
        logprobs: true,
        ..greedy(6)
    };
    let request = ask("Say hello to the reader.", params);
    // llama.cpp reads `top_logprobs: 0` (right for OpenAI and vLLM) as "no logprobs".
    let as_vllm = call(
        &with_server_kind(server, ServerKind::Vllm, false),
        request.clone(),
    )
    .await;
    assert_eq!(as_vllm.logprobs, None);
    for stream in [false, true] {
        let m = with_server_kind(server, ServerKind::LlamaCpp, stream);
        let first = call(&m, request.clone()).await;
        assert_eq!(
            first.logprobs.as_ref().map(Vec::len),
            Some(first.usage.output_tokens as usize),
            "stream={stream}"
        );
        // The same prompt again: the server reuses its cache and says how much it processed.
        let again = call(&m, request.clone()).await;
        let processed = again.usage.processed_input_tokens.expect("reported");
        assert!(
            processed < again.usage.input_tokens,
            "stream={stream}: {:?}",
            again.usage
        );
    }
    // OpenAI's answer cap (`max_completion_tokens`) is honoured here too.
    let capped = call(
        &with_server_kind(server, ServerKind::OpenAi, false),
        request,
    )
    .await;
    assert!(capped.usage.output_tokens <= 6, "{:?}", capped.usage);
}

#[tokio::test]
#[ignore = "needs a model and xllamacpp; run with --include-ignored"]
async fn a_stream_without_usage_is_counted_from_llama_cpp_timings() {
    let server = shared();
    let _turn = TURN.lock().await;
    // As a build that ignores `stream_options` answers: no usage chunk, only timings.
    let body = serde_json::json!({
        "model": "smollm2-135m",
        "messages": [{"role": "user", "content": "Count to three."}],
        "max_tokens": 8,
        "temperature": 0.0,
        "stream": true
    });
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", server.base_url))
        .json(&body)
        .send()
        .await
        .expect("the server answers");
    assert!(response.status().is_success());
    let c = moot_backends::openai::read_event_stream(response.bytes_stream())
        .await
        .expect("usage comes from the timings");
    assert!(c.usage.input_tokens > 0, "{:?}", c.usage);
    assert!((1..=8).contains(&c.usage.output_tokens), "{:?}", c.usage);
    assert!(c.usage.processed_input_tokens.is_some(), "{:?}", c.usage);
}
