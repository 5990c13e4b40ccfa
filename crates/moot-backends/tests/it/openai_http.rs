//! The OpenAI-compatible backend over real HTTP against a tiny scripted server on 127.0.0.1:
//! what goes on the wire, error statuses, streams cut short, and cancellation. No model needed.

use std::time::{Duration, Instant};

use moot_backends::openai::{request_body, OpenAiConfig, OpenAiModel, ServerKind};
use moot_backends::{
    BackendError, ChatMessage, CompletionRequest, FinishReason, LanguageModel, SamplingParams,
};
use serde_json::json;

use crate::common;

use common::{chunk, response, serve, serve_each, sse_event, sse_head, with_header, Reply};

const CHUNKS: &[&str] = &[
    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":"Four"},"logprobs":{"content":[{"token":"Four","logprob":-0.5}]},"finish_reason":null}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":"."},"logprobs":{"content":[{"token":".","logprob":-0.125}]},"finish_reason":null}]}"#,
    r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}"#,
    "[DONE]",
];

fn request() -> CompletionRequest {
    CompletionRequest {
        params: SamplingParams {
            temperature: Some(0.2),
            max_tokens: Some(8),
            seed: Some(7),
            logprobs: true,
            ..SamplingParams::default()
        },
        ..CompletionRequest::new(vec![
            ChatMessage::system("Answer in one word."),
            ChatMessage::user("2+2?"),
        ])
    }
}

fn model(base_url: &str, stream: bool) -> OpenAiModel {
    OpenAiModel::new(OpenAiConfig {
        stream,
        ..OpenAiConfig::new(base_url, "test-model")
    })
    .expect("config")
}

async fn complete(model: &OpenAiModel) -> Result<moot_backends::Completion, BackendError> {
    tokio::time::timeout(Duration::from_secs(30), model.complete(request()))
        .await
        .expect("the call should not hang")
}

#[tokio::test]
async fn sends_the_documented_request_and_reads_the_answer() {
    let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Four."},
        "logprobs":{"content":[{"token":"Four","logprob":-0.5},{"token":".","logprob":-0.125}]},
        "finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2}}"#;
    let server = serve(Reply::Pieces(vec![response(
        "200 OK",
        "application/json",
        body,
    )]))
    .await;
    // The key is read from the variable the config names (HOME is set for every test run).
    let key = std::env::var("HOME").expect("HOME");
    let config = OpenAiConfig {
        api_key_env: Some("HOME".into()),
        ..OpenAiConfig::new(server.base_url.clone(), "test-model")
    };
    let m = OpenAiModel::new(config.clone()).unwrap();
    let c = complete(&m).await.unwrap();
    assert_eq!(c.text, "Four.");
    assert_eq!(c.finish, FinishReason::Stop);
    assert_eq!(c.logprobs, Some(vec![-0.5, -0.125]));
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (9, 2));

    let seen = server.seen.await.unwrap();
    assert!(
        seen.head
            .starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{}",
        seen.head
    );
    assert_eq!(seen.header("authorization"), Some(format!("Bearer {key}")));
    assert_eq!(
        seen.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(
        seen.json(),
        request_body(&config, &request(), false).unwrap()
    );
    assert_eq!(
        seen.json(),
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "Answer in one word."},
                {"role": "user", "content": "2+2?"}
            ],
            "temperature": 0.2,
            "max_tokens": 8,
            "seed": 7,
            "logprobs": true,
            "top_logprobs": 1
        })
    );
}

#[tokio::test]
async fn http_errors_keep_status_and_body() {
    let body =
        r#"{"error":{"code":404,"message":"model 'gpt-9' not found","type":"not_found_error"}}"#;
    let server = serve(Reply::Pieces(vec![response(
        "404 Not Found",
        "application/json",
        body,
    )]))
    .await;
    let err = complete(&model(&server.base_url, false)).await.unwrap_err();
    assert_eq!(
        err,
        BackendError::Http {
            status: 404,
            body: body.to_string()
        }
    );

    // A large error page is cut; one past what is read at all says so.
    let page = "x".repeat(50_000);
    let server = serve(Reply::Pieces(vec![response(
        "502 Bad Gateway",
        "text/html",
        &page,
    )]))
    .await;
    match complete(&model(&server.base_url, true)).await.unwrap_err() {
        BackendError::Http { status, body } => {
            assert_eq!(status, 502);
            assert!(body.len() < 2100, "{}", body.len());
            assert!(body.ends_with("(50000 bytes in all)"), "{body}");
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
}

#[tokio::test]
async fn streams_are_assembled() {
    let mut pieces = vec![sse_head()];
    pieces.extend(CHUNKS.iter().map(|c| sse_event(c)));
    let server = serve(Reply::Pieces(pieces)).await;
    let c = complete(&model(&server.base_url, true)).await.unwrap();
    assert_eq!(c.text, "Four.");
    assert_eq!(c.logprobs, Some(vec![-0.5, -0.125]));
    assert_eq!(c.finish, FinishReason::Stop);
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (9, 2));
    let seen = server.seen.await.unwrap();
    assert_eq!(seen.json()["stream"], json!(true));
    assert_eq!(
        seen.json()["stream_options"],
        json!({"include_usage": true})
    );
    assert_eq!(seen.header("accept").as_deref(), Some("text/event-stream"));
}

#[tokio::test]
async fn a_stream_closed_early_is_a_transport_error() {
    // Connection-delimited body: the close looks like a clean end of stream.
    let mut pieces = vec![sse_head()];
    pieces.extend(CHUNKS[..3].iter().map(|c| sse_event(c)));
    let server = serve(Reply::Pieces(pieces)).await;
    let err = complete(&model(&server.base_url, true)).await.unwrap_err();
    assert_eq!(
        err,
        BackendError::Transport("stream ended before the answer was complete".into())
    );

    // Chunked body cut before its last chunk: the HTTP layer itself reports the failure.
    let mut pieces = vec![
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec(),
    ];
    pieces.extend(CHUNKS[..3].iter().map(|c| chunk(&sse_event(c))));
    let server = serve(Reply::Pieces(pieces)).await;
    let err = complete(&model(&server.base_url, true)).await.unwrap_err();
    assert!(
        matches!(&err, BackendError::Transport(m) if m.starts_with("stream ended before the answer was complete")),
        "{err}"
    );
}

#[tokio::test]
async fn dropping_the_call_closes_the_connection() {
    let server = serve(Reply::Hold).await;
    let m = model(&server.base_url, false);
    let out = tokio::time::timeout(Duration::from_millis(300), m.complete(request())).await;
    assert!(out.is_err(), "the server never answers");
    let waited = tokio::time::timeout(Duration::from_secs(5), server.hung_up)
        .await
        .expect("the server should see the client hang up")
        .unwrap();
    assert!(waited < Duration::from_secs(5));
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error() {
    // A port this test holds bound without listening on it: connecting is refused, and no
    // other process can start listening there while the test runs.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind("127.0.0.1:0".parse().unwrap()).expect("bind");
    let port = socket.local_addr().expect("addr").port();
    let m = model(&format!("http://127.0.0.1:{port}/v1"), false);
    let err = complete(&m).await.unwrap_err();
    assert!(
        matches!(&err, BackendError::Transport(msg) if msg.to_lowercase().contains("connect")),
        "{err}"
    );
    drop(socket);
}

const ANSWER: &str = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Four."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}"#;

fn retrying(base_url: &str) -> moot_backends::retry::RetryingModel {
    use moot_backends::retry::{RetryPolicy, RetryingModel};
    RetryingModel::new(
        std::sync::Arc::new(model(base_url, false)),
        RetryPolicy {
            max_retries: 3,
            min_delay: Duration::from_millis(50),
            max_delay: Duration::from_millis(200),
            jitter: false,
        },
    )
}

#[tokio::test]
async fn a_429_is_retried_after_the_servers_retry_after() {
    let limited = with_header(
        response(
            "429 Too Many Requests",
            "application/json",
            r#"{"error":{"message":"slow down"}}"#,
        ),
        "retry-after: 1",
    );
    let (url, count) = serve_each(vec![
        vec![limited],
        vec![response("200 OK", "application/json", ANSWER)],
    ])
    .await;
    let started = Instant::now();
    let c = retrying(&url).complete(request()).await.unwrap();
    assert_eq!(c.text, "Four.");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(c.retries.len(), 1);
    assert_eq!(
        (c.retries[0].class.as_str(), c.retries[0].wait_ms),
        ("rate-limited", 1000)
    );
    assert!(c.retries[0].error.contains("slow down"), "{:?}", c.retries);
}

#[tokio::test]
async fn server_errors_and_resets_are_retried_then_given_up() {
    // A 500, then a connection closed before any response, then a valid answer.
    let (url, count) = serve_each(vec![
        vec![response("500 Internal Server Error", "text/plain", "boom")],
        vec![],
        vec![response("200 OK", "application/json", ANSWER)],
    ])
    .await;
    let c = retrying(&url).complete(request()).await.unwrap();
    assert_eq!(c.text, "Four.");
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 3);
    let classes: Vec<&str> = c.retries.iter().map(|a| a.class.as_str()).collect();
    assert_eq!(classes, ["transient", "transient"]);

    // Always failing: the first attempt and three retries, then the last error with the others.
    let (url, count) = serve_each(vec![vec![response(
        "503 Service Unavailable",
        "text/plain",
        "down",
    )]])
    .await;
    let err = retrying(&url).complete(request()).await.unwrap_err();
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 4);
    assert_eq!(err.attempts().len(), 3);
    assert!(err.to_string().contains("HTTP 503: down"), "{err}");

    // An authentication failure is not retried.
    let (url, count) = serve_each(vec![vec![response(
        "401 Unauthorized",
        "text/plain",
        "bad key",
    )]])
    .await;
    let err = retrying(&url).complete(request()).await.unwrap_err();
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(err.class(), moot_backends::ErrorClass::Permanent);
}

#[tokio::test]
async fn an_endless_stream_is_abandoned_not_buffered_forever() {
    let event = sse_event(
        r#"{"choices":[{"index":0,"delta":{"content":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}]}"#,
    );
    let mut flood = Vec::with_capacity(10 << 20);
    while flood.len() < (9 << 20) {
        flood.extend_from_slice(&event);
    }
    let server = serve(Reply::Pieces(vec![sse_head(), flood])).await;
    let err = complete(&model(&server.base_url, true)).await.unwrap_err();
    assert!(
        matches!(&err, BackendError::InvalidResponse(m) if m.contains("without finishing")),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_openai_dialect_sends_its_own_answer_cap() {
    let server = serve(Reply::Pieces(vec![response(
        "200 OK",
        "application/json",
        ANSWER,
    )]))
    .await;
    let config = OpenAiConfig {
        server_kind: ServerKind::OpenAi,
        ..OpenAiConfig::new(server.base_url.clone(), "test-model")
    };
    let c = complete(&OpenAiModel::new(config).unwrap()).await.unwrap();
    assert_eq!(c.text, "Four.");
    let mut sent = server.seen.await.unwrap().json();
    sent.as_object_mut().unwrap().remove("messages");
    assert_eq!(
        sent,
        json!({
            "model": "test-model",
            "temperature": 0.2,
            "max_completion_tokens": 8,
            "seed": 7,
            "logprobs": true,
            "top_logprobs": 0
        })
    );
}

#[tokio::test]
async fn an_exhausted_quota_is_not_retried() {
    let (url, count) = serve_each(vec![vec![with_header(
        response(
            "429 Too Many Requests",
            "application/json",
            r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
        ),
        "retry-after: 1",
    )]])
    .await;
    let err = retrying(&url).complete(request()).await.unwrap_err();
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(err.class(), moot_backends::ErrorClass::Permanent);
    assert!(
        err.to_string().contains("exceeded your current quota"),
        "{err}"
    );
}

#[tokio::test]
async fn invalid_json_mid_stream_is_retried_and_recorded() {
    let broken = vec![
        sse_head(),
        sse_event(CHUNKS[1]),
        sse_event(r#"{"choices":[{"index":0,"delta":{"content":"#),
    ];
    let good: Vec<Vec<u8>> = std::iter::once(sse_head())
        .chain(CHUNKS.iter().map(|c| sse_event(c)))
        .collect();
    let (url, count) = serve_each(vec![broken, good]).await;
    use moot_backends::retry::{RetryPolicy, RetryingModel};
    let m = RetryingModel::new(
        std::sync::Arc::new(model(&url, true)),
        RetryPolicy {
            max_retries: 2,
            min_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(20),
            jitter: false,
        },
    );
    let c = m.complete(request()).await.unwrap();
    assert_eq!(c.text, "Four.");
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(c.retries.len(), 1);
    assert_eq!(c.retries[0].class, "transient");
    assert!(c.retries[0].error.contains("not JSON"), "{:?}", c.retries);
}

#[tokio::test]
async fn an_endless_body_is_abandoned_not_buffered_forever() {
    let head = |status: &str| {
        format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n")
            .into_bytes()
    };
    let body = b"{\"choices\":[{\"index\":0,\"message\":{\"content\":\"".repeat(1000);
    // An answer that never ends.
    let server = serve(Reply::Endless {
        head: head("200 OK"),
        body: body.clone(),
    })
    .await;
    let err = complete(&model(&server.base_url, false)).await.unwrap_err();
    assert!(
        matches!(&err, BackendError::InvalidResponse(m) if m.contains("larger than 8388608 bytes")),
        "{err:?}"
    );
    // An error whose body never ends: its status, and the start of its body.
    let server = serve(Reply::Endless {
        head: head("500 Internal Server Error"),
        body,
    })
    .await;
    let err = complete(&model(&server.base_url, false)).await.unwrap_err();
    match &err {
        BackendError::Http { status: 500, body } => {
            assert!(body.starts_with("{\"choices\""), "{body}");
            assert!(body.ends_with("… (more than 65536 bytes)"), "{body}");
            assert!(body.len() < 2100, "{}", body.len());
        }
        other => panic!("expected HTTP 500, got {other:?}"),
    }
}

/// A 307 to another port of the same host: the call fails naming where it pointed, and the
/// other server is never sent the prompt (issue 56 item 5).
#[tokio::test]
async fn a_redirect_to_another_origin_fails_naming_its_location() {
    let (elsewhere, reached) =
        serve_each(vec![vec![response("200 OK", "application/json", ANSWER)]]).await;
    for status in [
        "307 Temporary Redirect",
        "308 Permanent Redirect",
        "302 Found",
    ] {
        let server = serve(Reply::Pieces(vec![with_header(
            response(status, "text/plain", ""),
            &format!("location: {elsewhere}/chat/completions?sig=abc"),
        )]))
        .await;
        let err = complete(&model(&server.base_url, false)).await.unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&format!("redirected to {elsewhere}/chat/completions,")),
            "{status}: {text}"
        );
        assert!(!text.contains("sig=abc"), "{status}: {text}");
    }
    assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// A redirect within the configured origin is followed.
#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let (base, count) = serve_each(vec![
        vec![with_header(
            response("307 Temporary Redirect", "text/plain", ""),
            "location: /v2/chat/completions",
        )],
        vec![response("200 OK", "application/json", ANSWER)],
    ])
    .await;
    let done = complete(&model(&base, false)).await.expect("followed");
    assert_eq!(done.text, "Four.");
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 2);
}

/// A password or token in base_url is no part of a transport error's message.
#[tokio::test]
async fn a_transport_error_names_the_url_without_its_credentials() {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind("127.0.0.1:0".parse().unwrap()).expect("bind");
    let port = socket.local_addr().expect("addr").port();
    let m = model(
        &format!("http://alice:HunterPassw0rd4242@127.0.0.1:{port}/v1?key=TokenValue99"),
        false,
    );
    let text = complete(&m).await.unwrap_err().to_string();
    assert!(
        text.contains(&format!("http://127.0.0.1:{port}/v1")),
        "{text}"
    );
    for secret in ["HunterPassw0rd4242", "TokenValue99", "alice"] {
        assert!(!text.contains(secret), "{secret}: {text}");
    }
    drop(socket);
}
