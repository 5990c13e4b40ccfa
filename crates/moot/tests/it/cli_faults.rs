//! Every fault at once, through `moot ask`: one debate whose agents are a healthy one and one
//! per way a server or an agent process can fail. Real local servers (plain TCP on 127.0.0.1)
//! and real processes; the debate must end within its hard deadline with each agent's outcome
//! recorded, and leave no process behind.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;

use common::{read_http_request, script, Env};

/// A server on 127.0.0.1 that treats every connection with `behave`; returns its base URL.
fn server(behave: fn(TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                read_http_request(&mut stream);
                behave(stream);
            });
        }
    });
    url
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
const FIRST_CHUNK: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me think\"}}]}\n\n";

fn json_reply(status: &str, extra_header: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra_header}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Accepts the request and never answers.
fn hang(stream: TcpStream) {
    std::thread::sleep(Duration::from_secs(600));
    drop(stream);
}

/// Starts a stream, then sends a chunk that is not JSON.
fn invalid_json_mid_stream(mut stream: TcpStream) {
    let _ = write!(
        stream,
        "{SSE_HEAD}{FIRST_CHUNK}data: {{\"choices\":[{{\"index\":0,\"delta\":\n\n"
    );
}

/// Starts a stream, then closes the connection.
fn closed_mid_stream(mut stream: TcpStream) {
    let _ = write!(stream, "{SSE_HEAD}{FIRST_CHUNK}");
}

/// Streams chunks until the client goes away.
fn endless_stream(mut stream: TcpStream) {
    let _ = stream.write_all(SSE_HEAD.as_bytes());
    let chunk = FIRST_CHUNK.repeat(64);
    while stream.write_all(chunk.as_bytes()).is_ok() {}
}

/// Sends one answer body that never ends.
fn endless_body(mut stream: TcpStream) {
    let _ = stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"choices\":[{\"index\":0,\"message\":{\"content\":\"",
    );
    let chunk = "408 ".repeat(4096);
    while stream.write_all(chunk.as_bytes()).is_ok() {}
}

fn rate_limited(mut stream: TcpStream) {
    let _ = stream.write_all(
        json_reply(
            "429 Too Many Requests",
            "retry-after: 1\r\n",
            r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#,
        )
        .as_bytes(),
    );
}

fn out_of_quota(mut stream: TcpStream) {
    let _ = stream.write_all(
        json_reply(
            "429 Too Many Requests",
            "",
            r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#,
        )
        .as_bytes(),
    );
}

fn server_error(mut stream: TcpStream) {
    let _ = stream.write_all(
        json_reply(
            "500 Internal Server Error",
            "",
            r#"{"error":{"code":500,"message":"slot unavailable","type":"server_error"}}"#,
        )
        .as_bytes(),
    );
}

#[test]
fn every_fault_ends_in_a_recorded_outcome_within_the_deadline() {
    let env = Env::new();
    let grandchild = common::sleeper_marker(1);
    let stubborn = script(
        &env,
        "stubborn.sh",
        "#!/bin/sh\ntrap '' TERM\nwhile true; do sleep 1; done\n",
    );
    let forker = script(
        &env,
        "forker.sh",
        &format!("#!/bin/sh\ncat > /dev/null\nsleep {grandchild} &\necho 'SOLUTION:'\necho 'Final answer: 408'\n"),
    );
    let flood = script(
        &env,
        "flood.sh",
        "#!/bin/sh\ncat > /dev/null\nyes 'Final answer: 408'\n",
    );
    let failing = script(
        &env,
        "failing.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'model weights not found' >&2\nexit 3\n",
    );
    let http_agents = [
        ("hang", server(hang), false),
        ("badjson", server(invalid_json_mid_stream), true),
        ("cut", server(closed_mid_stream), true),
        ("endless", server(endless_stream), true),
        ("bloated", server(endless_body), false),
        ("limited", server(rate_limited), false),
        ("quota", server(out_of_quota), false),
        ("broken", server(server_error), false),
    ];
    let cli_agents = [
        ("stubborn", &stubborn),
        ("forker", &forker),
        ("flood", &flood),
        ("failing", &failing),
    ];
    let n = 1 + http_agents.len() + cli_agents.len();
    let allowed: Vec<String> = cli_agents
        .iter()
        .map(|(_, p)| format!("\"{}\"", p.display()))
        .collect();
    let mut cfg = format!(
        "[debate]\nprotocol = \"cot-sc\"\nanswer = \"numeric\"\nmin_agents = {n}\nsoft_timeout_ms = 3000\nhard_timeout_ms = 6000\n\n[retry]\nmax_retries = 2\nmin_delay_ms = 10\nmax_delay_ms = 50\n\n[security]\ncli_allowed_commands = [{}]\ncli_max_output_bytes = 65536\n\n[[agents]]\nid = \"ok\"\nbackend = \"scripted\"\nresponses = [\"17 * 24 = 408. Final answer: 408\"]\n",
        allowed.join(", ")
    );
    for (id, url, stream) in &http_agents {
        cfg += &format!(
            "\n[[agents]]\nid = \"{id}\"\nbackend = \"openai\"\nbase_url = \"{url}\"\nmodel = \"m\"\nstream = {stream}\n"
        );
    }
    for (id, path) in &cli_agents {
        cfg += &format!(
            "\n[[agents]]\nid = \"{id}\"\nbackend = \"cli\"\ncommand = \"{}\"\n",
            path.display()
        );
    }
    let cfg = env.write("faults.toml", &cfg);

    let started = Instant::now();
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
    ]);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "the 6 s hard deadline held: {took:?}"
    );
    assert_eq!(v["answer"], "408", "{v}");

    let shown = env.json(&["show", v["run_id"].as_str().unwrap(), "--format", "json"]);
    let calls = shown["calls"].as_array().unwrap();
    assert_eq!(calls.len(), n, "one recorded call per agent");
    let call = |id: &str| -> &Value {
        calls
            .iter()
            .find(|c| c["agent_id"] == id)
            .unwrap_or_else(|| panic!("no call of {id}"))
    };
    let error = |id: &str| call(id)["error"].as_str().unwrap_or_default().to_string();
    let retry_classes = |id: &str| -> Vec<String> {
        call(id)["retries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["class"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(call("ok")["answer"], "408");
    assert_eq!(
        call("forker")["answer"],
        "408",
        "answered, then its job was killed"
    );
    for (id, needle, retries) in [
        ("badjson", "not JSON", vec!["transient"; 2]),
        (
            "cut",
            "stream ended before the answer was complete",
            vec!["transient"; 2],
        ),
        ("endless", "without finishing", vec!["transient"; 2]),
        ("bloated", "larger than 8388608 bytes", vec!["transient"; 2]),
        ("limited", "rate limited", vec!["rate-limited"; 2]),
        ("quota", "exceeded your current quota", vec![]),
        ("broken", "HTTP 500", vec!["transient"; 2]),
        // Over the output cap: refused, and the same call would be again.
        ("flood", "exceeds 65536 bytes", vec![]),
        // An agent process that exits unsuccessfully has said no: not retried.
        ("failing", "model weights not found", vec![]),
        ("hang", "deadline", vec![]),
        ("stubborn", "deadline", vec![]),
    ] {
        let e = error(id);
        assert!(e.contains(needle), "{id}: {e:?} should mention {needle:?}");
        assert_eq!(call(id)["answer"], Value::Null, "{id}");
        assert_eq!(retry_classes(id), retries, "{id}: {}", call(id)["retries"]);
    }
    assert!(error("failing").contains('3'), "{}", error("failing"));

    // Nothing is left running: the agent that ignored SIGTERM and the forked job are gone.
    let stubborn = stubborn.display().to_string();
    for marker in [stubborn.as_str(), grandchild.as_str()] {
        assert_eq!(
            common::survivors_after(marker, Duration::from_secs(5)),
            Vec::<u32>::new(),
            "{marker} outlived the debate"
        );
    }
}
