//! Traces and metrics read by the real tools (issue 45): an OTLP/HTTP receiver that decodes
//! the protobuf with the OpenTelemetry project's own Python package gets one debate's spans,
//! and a real Prometheus (Debian's package, on a port of its own) scrapes `moot serve`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;

use common::{moot_serve, venv_with, Env};

/// The OpenTelemetry project's protobuf bindings, pinned.
const OTLP_PROTO: &str = "opentelemetry-proto==1.45.2 protobuf==7.36.2";

/// A receiver of OTLP/HTTP trace exports: each span as a JSON line in the file it is given;
/// prints its port first.
const RECEIVER: &str = r#"
import gzip, json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)

def val(v):
    k = v.WhichOneof("value")
    if k == "array_value":
        return [val(x) for x in v.array_value.values]
    return getattr(v, k) if k else None

class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path != "/v1/traces" or not self.headers.get("Content-Type", "").startswith("application/x-protobuf"):
            self.send_response(404); self.end_headers(); return
        req = ExportTraceServiceRequest.FromString(body)
        with open(sys.argv[1], "a") as out:
            for rs in req.resource_spans:
                res = {a.key: val(a.value) for a in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.write(json.dumps({
                            "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                            "parent": s.parent_span_id.hex(), "name": s.name, "kind": s.kind,
                            "status": s.status.code,
                            "attributes": {a.key: val(a.value) for a in s.attributes},
                            "resource": res}) + "\n")
        payload = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
    def log_message(self, *a):
        pass

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the receiver writing into `spans`; returns it and its endpoint.
fn receiver(env: &Env, spans: &Path) -> (Killed, String) {
    let venv = venv_with(OTLP_PROTO);
    let script = env.write("receiver.py", RECEIVER);
    let mut child = Command::new(venv.join("bin/python"))
        .arg(&script)
        .arg(spans)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the OTLP receiver");
    let mut port = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut port)
        .expect("the receiver's port");
    let endpoint = format!("http://127.0.0.1:{}", port.trim());
    (Killed(child), endpoint)
}

/// Three scripted agents under `som`, one round; `[security] redact` names `secret`; agent
/// `a` has a rate limit (high enough never to wait long).
fn team(env: &Env, secret: &str) -> String {
    let mut text = format!(
        "[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"numeric\"\n\n[security]\nredact = [{secret:?}]\n\n"
    );
    for (id, reply, limit) in [
        (
            "a",
            format!("{secret} says 17 * 24 = 408.\nFinal answer: 408"),
            "requests_per_minute = 6000\n",
        ),
        ("b", "Final answer: 408".to_string(), ""),
        ("c", "Final answer: 418".to_string(), ""),
    ] {
        text.push_str(&format!(
            "[[agents]]\nid = \"{id}\"\nbackend = \"scripted\"\nresponses = [{reply:?}]\n{limit}\n"
        ));
    }
    env.write("team.toml", &text).display().to_string()
}

fn read_spans(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a span line"))
        .collect()
}

/// Runs one debate with the exporter pointed at `endpoint` and `vars` set; returns its run id.
fn debate(
    env: &Env,
    endpoint: &str,
    config: &str,
    question: &str,
    vars: &[(&str, &str)],
) -> String {
    let out = env
        .moot()
        .args(["ask", question, "--config", config, "--json"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_SERVICE_NAME", "moot-test")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env_remove(moot_core::semconv::CAPTURE_CONTENT_VARIABLE)
        .envs(vars.iter().copied())
        .output()
        .expect("run moot ask");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).expect("ask --json");
    summary["run_id"].as_str().expect("run_id").to_string()
}

/// Runs `moot ARGS` with the exporter pointed at `endpoint`; it must succeed.
fn traced(env: &Env, endpoint: &str, args: &[&str]) {
    let out = env
        .moot()
        .args(args)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .output()
        .expect("run moot");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// The spans whose name starts with `prefix`.
fn named<'a>(spans: &'a [Value], prefix: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
        .collect()
}

#[test]
fn a_debates_spans_reach_an_otlp_receiver_as_one_tree_with_the_genai_attributes() {
    let env = Env::new();
    let spans_file = env.dir.path().join("spans.jsonl");
    let (_receiver, endpoint) = receiver(&env, &spans_file);
    let config = team(&env, "CONFIDENTIAL-7731");
    let run = debate(&env, &endpoint, &config, "What is 17 * 24?", &[]);
    // moot sends what is queued before it exits: every span is in by now.
    let spans = read_spans(&spans_file);
    assert!(!spans.is_empty(), "no span arrived");
    let by_name = |prefix: &str| named(&spans, prefix);
    let ids: BTreeMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["span_id"].as_str().unwrap(), s))
        .collect();
    let parent_name = |s: &Value| -> String {
        ids.get(s["parent"].as_str().unwrap_or(""))
            .and_then(|p| p["name"].as_str())
            .unwrap_or("(none)")
            .to_string()
    };

    // One trace, one root: the debate.
    let traces: BTreeSet<&str> = spans
        .iter()
        .map(|s| s["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(traces.len(), 1, "{spans:#?}");
    let debates = by_name("invoke_workflow");
    assert_eq!(debates.len(), 1);
    let root = debates[0];
    assert_eq!(root["name"], "invoke_workflow som");
    assert_eq!(root["parent"], "", "the debate is the root");
    assert_eq!(attr(root, "gen_ai.operation.name"), "invoke_workflow");
    assert_eq!(attr(root, "gen_ai.workflow.name"), "som");
    assert_eq!(attr(root, "gen_ai.conversation.id"), run.as_str());
    assert_eq!(attr(root, "moot.rounds"), 1);
    assert_eq!(attr(root, "moot.outcome"), "done");
    assert_eq!(root["resource"]["service.name"], "moot-test");

    // Rounds under the debate, agents' turns under rounds, requests under turns.
    let rounds = by_name("round ");
    assert_eq!(rounds.len(), 2);
    assert!(rounds
        .iter()
        .all(|r| parent_name(r) == "invoke_workflow som"));
    let turns = by_name("invoke_agent ");
    assert_eq!(turns.len(), 6);
    assert!(turns.iter().all(|t| parent_name(t).starts_with("round ")));
    let agents: BTreeSet<&str> = turns
        .iter()
        .map(|t| attr(t, "gen_ai.agent.name").as_str().unwrap())
        .collect();
    assert_eq!(agents, BTreeSet::from(["a", "b", "c"]));
    assert!(turns
        .iter()
        .all(|t| attr(t, "gen_ai.conversation.id") == run.as_str()));
    let chats = by_name("chat ");
    assert_eq!(chats.len(), 6);
    for c in &chats {
        assert!(parent_name(c).starts_with("invoke_agent "), "{c}");
        assert_eq!(c["kind"], 3, "a client span: {c}");
        assert_eq!(attr(c, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(c, "moot.backend"), "scripted");
        assert_eq!(attr(c, "moot.outcome"), "ok");
        // A list, as the conventions define it.
        assert_eq!(
            attr(c, "gen_ai.response.finish_reasons"),
            &serde_json::json!(["stop"])
        );
        // Counts are numbers, not text.
        assert!(attr(c, "gen_ai.usage.input_tokens").is_i64(), "{c}");
        assert!(attr(c, "gen_ai.usage.output_tokens").is_i64(), "{c}");
    }
    // Store writes are in the trace too, and the rate-limited agent's waits, inside its
    // requests.
    assert!(!by_name("moot.store.write").is_empty());
    let waits = by_name("moot.rate_limit.wait");
    assert_eq!(waits.len(), 2, "agent a's two requests");
    for w in &waits {
        assert!(parent_name(w).starts_with("chat "), "{w}");
        assert!(
            attr(w, "moot.rate_limit.key")
                .as_str()
                .is_some_and(|k| k.starts_with("scripted:")),
            "{w}"
        );
    }

    // The token sums are the stored ones.
    let shown = env.json(&["show", &run, "--format", "json"]);
    let stored = |field: &str| -> i64 {
        shown["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c[field].as_i64().unwrap_or(0))
            .sum()
    };
    let sent = |field: &str| -> i64 {
        chats
            .iter()
            .map(|c| attr(c, field).as_i64().unwrap_or(0))
            .sum()
    };
    assert_eq!(
        sent("gen_ai.usage.input_tokens"),
        stored("input_tokens"),
        "{shown}"
    );
    assert_eq!(sent("gen_ai.usage.output_tokens"), stored("output_tokens"));

    // No prompt or answer text unless the user opts in.
    for s in &spans {
        assert!(attr(s, "gen_ai.input.messages").is_null(), "{s}");
        assert!(attr(s, "gen_ai.output.messages").is_null(), "{s}");
        assert!(!s.to_string().contains("17 * 24"), "{s}");
    }
}

#[test]
fn message_texts_are_in_spans_only_when_opted_in_and_then_redacted() {
    let env = Env::new();
    let spans_file = env.dir.path().join("spans.jsonl");
    let (_receiver, endpoint) = receiver(&env, &spans_file);
    let secret = "CONFIDENTIAL-7731";
    let config = team(&env, secret);
    debate(
        &env,
        &endpoint,
        &config,
        &format!("What is 17 * 24? ({secret})"),
        &[(moot_core::semconv::CAPTURE_CONTENT_VARIABLE, "true")],
    );
    let spans = read_spans(&spans_file);
    let turns = named(&spans, "invoke_agent ");
    assert_eq!(turns.len(), 6);
    for t in &turns {
        let input = attr(t, "gen_ai.input.messages")
            .as_str()
            .expect("input messages");
        let input: Value = serde_json::from_str(input).expect("the messages are JSON");
        let text = input.to_string();
        assert!(text.contains("17 * 24"), "{text}");
        assert!(attr(t, "gen_ai.output.messages").is_string(), "{t}");
    }
    let all = serde_json::to_string(&spans).unwrap();
    assert!(
        !all.contains(secret),
        "the redactor's secret reached a span"
    );
}

#[test]
fn with_no_endpoint_configured_nothing_is_sent() {
    let env = Env::new();
    let spans_file = env.dir.path().join("spans.jsonl");
    let (_receiver, endpoint) = receiver(&env, &spans_file);
    let config = team(&env, "CONFIDENTIAL-7731");
    // Without an endpoint moot installs no exporter (the exporter's own default would send to
    // localhost:4318). The receiver cannot tell a silent moot from a missing one, so the
    // same moot is then run with the endpoint set but the SDK disabled, which it must honour.
    let out = env
        .moot()
        .args(["ask", "What is 17 * 24?", "--config", &config, "--json"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .output()
        .unwrap();
    assert!(out.status.success());
    // And with the endpoint but the SDK disabled.
    debate(
        &env,
        &endpoint,
        &config,
        "What is 17 * 24?",
        &[("OTEL_SDK_DISABLED", "true")],
    );
    assert!(read_spans(&spans_file).is_empty());
}

/// A collector that takes connections and never answers costs a command at most the
/// shutdown limit at its end, and is told once.
#[test]
fn a_silent_collector_delays_a_command_at_most_the_shutdown_limit_and_is_told_once() {
    let env = Env::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    // Accepted and held, never answered.
    let held = std::thread::spawn(move || {
        let mut connections = Vec::new();
        for stream in listener.incoming().take(16) {
            connections.push(stream);
        }
        connections
    });
    let config = team(&env, "CONFIDENTIAL-7731");
    let started = std::time::Instant::now();
    let out = env
        .moot()
        .args(["ask", "What is 17 * 24?", "--config", &config, "--json"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The debate itself is quick (scripted agents); the limit is 3 s.
    assert!(took < std::time::Duration::from_secs(8), "{took:?}");
    assert_eq!(
        stderr.matches("moot: warning: traces:").count(),
        1,
        "{stderr}"
    );
    drop(held);
}

/// A running Prometheus, its folder and port.
struct Prometheus {
    _child: Killed,
    url: String,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Starts Debian's Prometheus scraping `target` (host:port) every second with `token`.
fn prometheus(env: &Env, target: &str, token: &str) -> Prometheus {
    let config = env.write(
        "prometheus.yml",
        &format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: moot\n    authorization:\n      type: Bearer\n      credentials: {token:?}\n    static_configs:\n      - targets: [{target:?}]\n"
        ),
    );
    // A port found free and then bound by Prometheus could be taken meanwhile: tried again.
    for _ in 0..3 {
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!(
                "--storage.tsdb.path={}",
                env.dir.path().join("tsdb").display()
            ))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus (Debian's package `prometheus`; scripts/setup.sh installs it for the tests)");
        let mut child = Killed(child);
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.0.try_wait() {
                break;
            }
            if reqwest::blocking::get(format!("{url}/-/ready"))
                .is_ok_and(|r| r.status().is_success())
            {
                return Prometheus { _child: child, url };
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = child.0.kill();
    }
    panic!("prometheus did not become ready");
}

/// The value of PromQL `query` once it is `expected` (Prometheus scrapes every second, and
/// takes a few seconds to pick its target up); panics with what it last saw after a minute.
fn wait_for_value(p: &Prometheus, query: &str, expected: f64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = Value::Null;
    while Instant::now() < deadline {
        if let Ok(r) = reqwest::blocking::Client::new()
            .get(format!("{}/api/v1/query", p.url))
            .query(&[("query", query)])
            .send()
        {
            last = r.json().unwrap_or(Value::Null);
            let value = last["data"]["result"][0]["value"][1]
                .as_str()
                .and_then(|v| v.parse::<f64>().ok());
            if value == Some(expected) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("{query} never was {expected}: {last}");
}

#[test]
fn prometheus_scrapes_moot_serves_metrics_with_its_token_and_counts_the_debates_calls() {
    let env = Env::new();
    let config = team(&env, "CONFIDENTIAL-7731");
    let token = "t0ken-for-the-metrics-test";
    let served = moot_serve(&env, &["--config", &config, "--token", token], &[]);
    let client = reqwest::blocking::Client::new();
    // Without the token, /metrics is refused like every route but /health.
    let refused = client
        .get(format!("{}/metrics", served.url))
        .send()
        .unwrap();
    assert_eq!(refused.status(), 401);
    // Two debates over the API, each followed to its end.
    for _ in 0..2 {
        let started: Value = client
            .post(format!("{}/api/runs", served.url))
            .bearer_auth(token)
            .json(&serde_json::json!({"question": "What is 17 * 24?"}))
            .send()
            .unwrap()
            .json()
            .unwrap();
        let run = started["run_id"].as_str().expect("run_id");
        let events = client
            .get(format!("{}/api/runs/{run}/events", served.url))
            .bearer_auth(token)
            .send()
            .unwrap()
            .text()
            .unwrap();
        assert!(events.contains("event: done"), "{events}");
    }
    let text = client
        .get(format!("{}/metrics", served.url))
        .bearer_auth(token)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(text.contains("# TYPE moot_calls counter"), "{text}");

    let target = served.url.trim_start_matches("http://").to_string();
    let p = prometheus(&env, &target, token);
    // 2 debates × 3 agents × 2 rounds, all answered by their scripted backends.
    wait_for_value(
        &p,
        r#"sum(moot_calls_total{backend="scripted",outcome="ok"})"#,
        12.0,
    );
    wait_for_value(
        &p,
        r#"sum(moot_debates_total{protocol="som",outcome="done"})"#,
        2.0,
    );
    wait_for_value(&p, "moot_debates_in_flight", 0.0);
    wait_for_value(
        &p,
        r#"sum(moot_call_duration_seconds_count{backend="scripted"})"#,
        12.0,
    );
    // Agent a's limit was passed 4 times: too fast to count as waits, but their time is kept.
    wait_for_value(&p, "count(moot_rate_limit_wait_seconds_total)", 1.0);
    // Each run's creation, its calls and its outcome.
    wait_for_value(&p, "count(moot_store_write_duration_seconds_count)", 3.0);
}

#[test]
fn a_benchmarks_debates_are_children_of_its_span() {
    let env = Env::new();
    let spans_file = env.dir.path().join("spans.jsonl");
    let (_receiver, endpoint) = receiver(&env, &spans_file);
    let dataset = common::arith_dataset(&env, 2);
    traced(
        &env,
        &endpoint,
        &[
            "bench",
            "--sim",
            "--dataset",
            &dataset,
            "--protocol",
            "som,cot",
            "--run",
            "arith",
        ],
    );
    let spans = read_spans(&spans_file);
    let bench: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "bench arith")
        .collect();
    assert_eq!(bench.len(), 1, "{spans:#?}");
    assert_eq!(bench[0]["parent"], "");
    assert_eq!(attr(bench[0], "moot.bench.name"), "arith");
    let debates = named(&spans, "invoke_workflow ");
    // Two items under two protocols.
    assert_eq!(debates.len(), 4);
    assert!(debates.iter().all(|d| d["parent"] == bench[0]["span_id"]));
    assert!(debates
        .iter()
        .all(|d| d["trace_id"] == bench[0]["trace_id"]));
}

#[test]
fn the_configurations_telemetry_section_sends_traces_and_the_variables_win_over_it() {
    let env = Env::new();
    let spans_file = env.dir.path().join("spans.jsonl");
    let (_receiver, endpoint) = receiver(&env, &spans_file);
    let team = std::fs::read_to_string(team(&env, "CONFIDENTIAL-7731")).unwrap();
    let config = env
        .write(
            "with-telemetry.toml",
            &format!(
                "[telemetry]\notlp_endpoint = {endpoint:?}\nservice_name = \"from-config\"\nresource_attributes = \"deployment.environment=lab\"\n\n{team}"
            ),
        )
        .display()
        .to_string();
    let ask = |vars: &[(&str, &str)]| {
        let out = env
            .moot()
            .args(["ask", "What is 17 * 24?", "--config", &config, "--json"])
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env_remove("OTEL_SERVICE_NAME")
            .env_remove("OTEL_RESOURCE_ATTRIBUTES")
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ask(&[]);
    let spans = read_spans(&spans_file);
    let root = spans
        .iter()
        .find(|s| s["name"] == "invoke_workflow som")
        .expect("the debate's span");
    assert_eq!(root["resource"]["service.name"], "from-config");
    assert_eq!(root["resource"]["deployment.environment"], "lab");
    std::fs::remove_file(&spans_file).unwrap();
    ask(&[("OTEL_SERVICE_NAME", "from-env")]);
    let spans = read_spans(&spans_file);
    assert!(!spans.is_empty());
    assert!(spans
        .iter()
        .all(|s| s["resource"]["service.name"] == "from-env"));
}

#[test]
fn code_answers_sandbox_checks_are_spans_with_their_verdicts_in_the_debate() {
    let env = Env::new();
    let spans_file = env.dir.path().join("spans.jsonl");
    let (_receiver, endpoint) = receiver(&env, &spans_file);
    let mut config =
        String::from("[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"code\"\n\n");
    for (i, program) in [
        "def add(a, b):\n    return a - b",
        "def add(a, b):\n    return a + b",
    ]
    .iter()
    .enumerate()
    {
        let reply = format!("Here it is:\n```python\n{program}\n```\n");
        config.push_str(&format!(
            "[[agents]]\nid = \"a{i}\"\nbackend = \"scripted\"\nresponses = [{reply:?}]\n\n"
        ));
    }
    let config = env.write("code.toml", &config).display().to_string();
    let tests = env
        .write("test_add.py", "assert add(2, 3) == 5\n")
        .display()
        .to_string();
    traced(
        &env,
        &endpoint,
        &[
            "ask",
            "Write add(a, b).",
            "--config",
            &config,
            "--tests",
            &tests,
        ],
    );
    let spans = read_spans(&spans_file);
    let root = named(&spans, "invoke_workflow ")[0]["span_id"].clone();
    let checks = named(&spans, "moot.sandbox.check");
    // Two programs: each compiles, and one passes its tests.
    let mut verdicts: Vec<&str> = checks
        .iter()
        .map(|c| attr(c, "moot.sandbox.verdict").as_str().unwrap_or("?"))
        .collect();
    verdicts.sort_unstable();
    assert_eq!(
        verdicts,
        ["failed", "passed", "passed", "passed"],
        "{checks:#?}"
    );
    assert!(checks.iter().all(|c| c["parent"] == root));
}
