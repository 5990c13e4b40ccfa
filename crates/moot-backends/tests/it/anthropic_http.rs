//! The Anthropic Messages backend over real HTTP against a scripted local server that speaks its
//! wire format (the real API is unreachable here): the exact request, plain and streamed
//! answers, and errors of every class.

use std::sync::Arc;
use std::time::Duration;

use moot_backends::anthropic::{AnthropicConfig, AnthropicModel};
use moot_backends::retry::{RetryPolicy, RetryingModel};
use moot_backends::{
    BackendError, ChatMessage, CompletionRequest, ErrorClass, FinishReason, LanguageModel,
    SamplingParams,
};
use serde_json::json;

use crate::common;

use common::{response, serve, serve_each, sse_head, with_header, Reply};

const ANSWER: &str = r#"{"id":"msg_01","type":"message","role":"assistant","model":"claude-test",
"content":[{"type":"text","text":"17 * 24 = 408. Final answer: 408"}],
"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":31,"output_tokens":12}}"#;

fn request() -> CompletionRequest {
    CompletionRequest {
        params: SamplingParams {
            temperature: Some(0.5),
            max_tokens: Some(200),
            ..SamplingParams::default()
        },
        ..CompletionRequest::new(vec![
            ChatMessage::system("Solve it."),
            ChatMessage::user("What is 17 * 24?"),
        ])
    }
}

fn model(base_url: &str, stream: bool) -> AnthropicModel {
    // Set once: this binary's other modules read the environment from their threads (spawning
    // agent processes), and setting it again while they do is a race outside Rust's lock.
    static KEY: std::sync::Once = std::sync::Once::new();
    KEY.call_once(|| std::env::set_var("MOOT_TEST_ANTHROPIC_KEY", "sk-ant-test-123"));
    AnthropicModel::new(AnthropicConfig {
        api_key_env: Some("MOOT_TEST_ANTHROPIC_KEY".into()),
        stream,
        ..AnthropicConfig::new(base_url, "claude-test")
    })
    .expect("config")
}

/// The fake server's base URL without the `/v1` the OpenAI helper adds.
fn root(base_url: &str) -> String {
    base_url.trim_end_matches("/v1").to_string()
}

#[tokio::test]
async fn sends_the_documented_request_and_reads_the_answer() {
    let server = serve(Reply::Pieces(vec![response(
        "200 OK",
        "application/json",
        ANSWER,
    )]))
    .await;
    let m = model(&root(&server.base_url), false);
    assert!(
        !m.capabilities().logprobs,
        "the Messages API has no logprobs"
    );
    let c = m.complete(request()).await.unwrap();
    assert_eq!(c.text, "17 * 24 = 408. Final answer: 408");
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (31, 12));
    assert_eq!(c.finish, FinishReason::Stop);
    let seen = server.seen.await.unwrap();
    assert!(
        seen.head.starts_with("POST /v1/messages HTTP/1.1"),
        "{}",
        seen.head
    );
    assert_eq!(seen.header("x-api-key").as_deref(), Some("sk-ant-test-123"));
    assert_eq!(
        seen.header("anthropic-version").as_deref(),
        Some("2023-06-01")
    );
    assert_eq!(
        seen.header("authorization"),
        None,
        "the key is not sent as a bearer token"
    );
    assert_eq!(
        seen.json(),
        json!({
            "model": "claude-test",
            "max_tokens": 200,
            "system": "Solve it.",
            "messages": [{"role": "user", "content": "What is 17 * 24?"}],
            "temperature": 0.5
        })
    );
}

#[tokio::test]
async fn streams_are_assembled() {
    let events = [
        (
            "message_start",
            r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"claude-test","usage":{"input_tokens":31,"output_tokens":1}}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        ("ping", r#"{"type":"ping"}"#),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Final answer: "}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"408"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ];
    let mut pieces = vec![sse_head()];
    for (name, data) in events {
        pieces.push(format!("event: {name}\ndata: {data}\n\n").into_bytes());
    }
    let server = serve(Reply::Pieces(pieces)).await;
    let c = model(&root(&server.base_url), true)
        .complete(request())
        .await
        .unwrap();
    assert_eq!(c.text, "Final answer: 408");
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (31, 5));
    let seen = server.seen.await.unwrap();
    assert_eq!(seen.json()["stream"], true);
    assert_eq!(seen.header("accept").as_deref(), Some("text/event-stream"));

    // A stream that stops before message_stop is a transport error, not a short answer.
    let server = serve(Reply::Pieces(vec![
        sse_head(),
        format!("event: message_start\ndata: {}\n\n", events[0].1).into_bytes(),
    ]))
    .await;
    let err = model(&root(&server.base_url), true)
        .complete(request())
        .await
        .unwrap_err();
    assert!(matches!(err, BackendError::Transport(_)), "{err:?}");
}

#[tokio::test]
async fn errors_keep_their_class_and_rate_limits_are_retried() {
    let overloaded = response(
        "529 Overloaded",
        "application/json",
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    let limited = with_header(
        response(
            "429 Too Many Requests",
            "application/json",
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
        ),
        "retry-after: 1",
    );
    let (url, count) = serve_each(vec![
        vec![overloaded],
        vec![limited],
        vec![response("200 OK", "application/json", ANSWER)],
    ])
    .await;
    let retrying = RetryingModel::new(
        Arc::new(model(&root(&url), false)),
        RetryPolicy {
            max_retries: 3,
            min_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(100),
            jitter: false,
        },
    );
    let c = retrying.complete(request()).await.unwrap();
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 3);
    let seen: Vec<(&str, u64)> = c
        .retries
        .iter()
        .map(|a| (a.class.as_str(), a.wait_ms))
        .collect();
    assert_eq!(seen[0].0, "transient");
    assert_eq!(seen[1], ("rate-limited", 1000));
    assert!(
        c.retries[0].error.contains("overloaded_error: Overloaded"),
        "{:?}",
        c.retries
    );

    let server = serve(Reply::Pieces(vec![response(
        "401 Unauthorized",
        "application/json",
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )]))
    .await;
    let err = model(&root(&server.base_url), false)
        .complete(request())
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Permanent);
    assert_eq!(
        err,
        BackendError::Http {
            status: 401,
            body: "authentication_error: invalid x-api-key".into()
        }
    );
}
