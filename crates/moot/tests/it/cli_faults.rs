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

/// A team of two working agents (a script answering 7) and one whose server refuses every
/// connection, retried quickly.
fn team_with_one_down(env: &Env, port: u16) -> String {
    let agent = script(
        env,
        "seven.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'Final answer: 7'\n",
    );
    let a = agent.display();
    env.write(
        "down.toml",
        &format!(
            "[retry]\nmax_retries = 2\nmin_delay_ms = 1\nmax_delay_ms = 2\n\n[security]\ncli_allowed_commands = [\"{a}\"]\n\n\
             [[agents]]\nid = \"alpha\"\nbackend = \"cli\"\ncommand = \"{a}\"\n\n\
             [[agents]]\nid = \"beta\"\nbackend = \"cli\"\ncommand = \"{a}\"\n\n\
             [[agents]]\nid = \"gammadown\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
        ),
    )
    .display()
    .to_string()
}

/// Issue 58 item 2: an agent that fails while the debate still decides is named on standard
/// error with its reason and the number of tries, `--json` carries it, and `--strict` fails the
/// command (the run stays stored).
#[test]
fn ask_names_a_failed_agent_with_its_reason_and_strict_fails_the_command() {
    let env = Env::new();
    let (_held, port) = common::refusing_port();
    let config = team_with_one_down(&env, port);
    let ask = |extra: &[&str]| {
        env.moot()
            .args([
                "ask",
                "What is 3 + 4?",
                "--config",
                &config,
                "--protocol",
                "som",
            ])
            .args(extra)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap()
    };
    let out = ask(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Answer: 7"), "{stdout}");
    assert!(stdout.contains("gammadown (failed)"), "{stdout}");
    let line = stderr
        .lines()
        .find(|l| l.contains("agent gammadown failed"))
        .unwrap_or_else(|| panic!("no failure line: {stderr}"));
    assert!(line.contains("refused"), "the reason: {line}");
    assert!(line.contains("3 tries"), "the tries: {line}");
    assert!(line.contains("decided by 2 of 3 agents"), "{line}");
    assert!(!stderr.contains("agent alpha failed"), "{stderr}");

    let out = ask(&["--json"]);
    assert_eq!(out.status.code(), Some(0));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let failures = json["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{json}");
    assert_eq!(failures[0]["agent_id"], "gammadown");
    assert_eq!(
        failures[0]["agent"], 3,
        "numbered from 1, as moot show does"
    );
    assert_eq!(failures[0]["rounds"], serde_json::json!([0, 1]));
    assert!(failures[0]["errors"][0]
        .as_str()
        .unwrap()
        .contains("refused"));
    assert_eq!(
        json["decided_by"],
        serde_json::json!({"agents": 2, "of": 3})
    );

    let out = ask(&["--strict"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("agent gammadown failed"), "{stderr}");
    assert!(stderr.contains("--strict: 1 agent failed"), "{stderr}");
    // The run is stored, and `moot show` marks the failed calls with their error.
    let run = json["run_id"].as_str().unwrap();
    let shown = env.stdout(&["show", run]);
    assert!(
        shown.contains("- **agent gammadown failed in rounds 0 and 1 (2 calls)"),
        "{shown}"
    );
    assert!(shown.contains("answer: **failed**"), "{shown}");
    // The run page says it in its facts and marks the cells.
    let served = common::moot_serve(&env, &[], &[]);
    let page = tokio::runtime::Runtime::new().unwrap().block_on(async {
        reqwest::get(format!("{}/runs/{run}", served.url))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    assert!(page.contains("id=\"failures\""), "{page}");
    assert!(
        page.contains("agent gammadown failed in rounds 0 and 1"),
        "{page}"
    );
    assert!(page.contains("cell failed"), "{page}");
}

/// Issue 58 item 2: a benchmark's report counts failed calls and the failing agents per
/// protocol; `--strict` fails the command once the report is printed.
#[test]
fn bench_counts_failed_calls_per_protocol_and_strict_fails_the_command() {
    let env = Env::new();
    let (_held, port) = common::refusing_port();
    let config = team_with_one_down(&env, port);
    let data = common::arith_dataset(&env, 3);
    let bench = |name: &str, extra: &[&str]| {
        env.moot()
            .args([
                "bench",
                "--dataset",
                &data,
                "--protocol",
                "som,cot",
                "--config",
                &config,
            ])
            .args(["--name", name])
            .args(extra)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap()
    };
    let out = bench("b", &["--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let protocols = report["protocols"].as_array().unwrap();
    // som: the down agent's two calls (rounds 0 and 1) on each of 3 items.
    assert_eq!(protocols[0]["failed_calls"], 6, "{}", protocols[0]);
    assert_eq!(
        protocols[0]["failed_agents"],
        serde_json::json!({"gammadown": 3})
    );
    // cot asks the first agent alone, which answers.
    assert_eq!(protocols[1]["failed_calls"], 0, "{}", protocols[1]);
    assert_eq!(protocols[1]["failed_agents"], serde_json::json!({}));
    assert!(
        stderr.contains("som 6 calls (gammadown in 3 debates)"),
        "{stderr}"
    );
    let text = env.stdout(&["report", "b"]);
    assert!(
        text.contains("som: 6 calls failed") && text.contains("gammadown in 3 debates"),
        "{text}"
    );
    let out = bench("b2", &["--strict"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--strict: calls failed"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("| som |"),
        "the report is printed"
    );
}
