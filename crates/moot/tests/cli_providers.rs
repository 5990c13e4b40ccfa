//! Paid-API providers through the `moot` binary against a local server speaking their wire
//! format: configuration, keys from the environment, retries recorded in the transcript.

use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod common;

use common::{read_http_request, Env};

/// Serves `replies` (raw HTTP responses) to successive connections, the last one repeating;
/// returns the base URL and the request heads and bodies it read.
fn serve(replies: Vec<String>) -> (String, Arc<std::sync::Mutex<Vec<String>>>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let (seen2, count2) = (seen.clone(), count.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let buf = read_http_request(&mut stream);
            seen2
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(&buf).to_string());
            let n = count2.fetch_add(1, Ordering::SeqCst);
            let reply = &replies[n.min(replies.len() - 1)];
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (url, seen, count)
}

/// Everything the store holds on disk (the database and its write-ahead log), as text.
fn stored_bytes(env: &Env) -> String {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(env.dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("moot.db"))
        {
            all.extend(std::fs::read(&path).unwrap());
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

fn http(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn an_anthropic_debate_retries_an_overloaded_server_and_records_it() {
    let env = Env::new();
    let answer = r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"17 * 24 = 408. Final answer: 408"}],"stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":10}}"#;
    let (url, seen, count) = serve(vec![
        http(
            "529 Overloaded",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        http("200 OK", answer),
    ]);
    let cfg = env.write(
        "claude.toml",
        &format!(
            "[debate]\nprotocol = \"cot\"\nanswer = \"numeric\"\n\n[retry]\nmin_delay_ms = 10\nmax_delay_ms = 50\n\n[[agents]]\nid = \"claude\"\nbackend = \"anthropic\"\nbase_url = \"{url}\"\nmodel = \"claude-test\"\napi_key_env = \"MOOT_TEST_CLAUDE_KEY\"\nrequests_per_minute = 600\n"
        ),
    );
    let out = env
        .moot()
        .env("MOOT_TEST_CLAUDE_KEY", "sk-ant-secret-value")
        .args([
            "ask",
            "What is 17 * 24?",
            "--config",
            cfg.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["answer"], "408");
    assert_eq!(count.load(Ordering::SeqCst), 2, "one retry");
    let requests = seen.lock().unwrap().clone();
    assert!(
        requests[1].starts_with("POST /v1/messages "),
        "{}",
        requests[1]
    );
    assert!(requests[1].contains("x-api-key: sk-ant-secret-value"));
    let run = v["run_id"].as_str().unwrap();
    let shown = env.json(&["show", run, "--format", "json"]);
    let retries = &shown["calls"][0]["retries"];
    assert_eq!(retries[0]["class"], "transient", "{shown}");
    let md = env.moot().args(["show", run]).output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("attempt 1 failed (transient): HTTP 529: overloaded_error: Overloaded"),
        "{md}"
    );
    // The key is sent to the provider, never stored.
    assert!(
        stored_bytes(&env).contains("claude-test"),
        "the store is read"
    );
    assert!(
        !stored_bytes(&env).contains("sk-ant-secret-value"),
        "the API key leaked into the store"
    );
}

#[test]
fn anthropic_agents_are_checked_before_anything_runs() {
    let env = Env::new();
    let cfg = env.write(
        "bad.toml",
        "[[agents]]\nid = \"claude\"\nbackend = \"anthropic\"\nmodel = \"claude-test\"\ntemperature = 1.5\n",
    );
    let err = env.refused(&["config", "check", cfg.to_str().unwrap()]);
    assert!(
        err.contains("agents[0].temperature must be at most 1"),
        "{err}"
    );
    let cfg = env.write(
        "nokey.toml",
        "[debate]\nprotocol = \"cot\"\n\n[[agents]]\nid = \"claude\"\nbackend = \"anthropic\"\nmodel = \"claude-test\"\napi_key_env = \"MOOT_TEST_NO_SUCH_KEY_41\"\n",
    );
    let out = env
        .moot()
        .env_remove("MOOT_TEST_NO_SUCH_KEY_41")
        .args(["ask", "2+2?", "--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("MOOT_TEST_NO_SUCH_KEY_41") && err.contains("not set"),
        "{err}"
    );
}

#[test]
fn secrets_in_questions_and_responses_are_redacted_before_they_are_stored() {
    let env = Env::new();
    let cfg = env.write(
        "leaky.toml",
        "[debate]\nprotocol = \"cot\"\n\n[security]\nredact = [\"corp-[0-9]{6}\"]\n\n[[agents]]\nid = \"s\"\nbackend = \"scripted\"\nresponses = [\"Using key sk-proj-AbCdEfGhIjKlMnOp1234 and corp-654321. Final answer: 408\"]\n",
    );
    let v = env.json(&[
        "ask",
        "Ticket corp-123456: what is 17 * 24?",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["answer"], "408");
    let stored = stored_bytes(&env);
    assert!(stored.contains("[REDACTED]"), "the response is stored");
    for secret in ["sk-proj-AbCdEfGhIjKlMnOp1234", "corp-654321", "corp-123456"] {
        assert!(!stored.contains(secret), "{secret} reached the store");
    }
    let shown = env
        .moot()
        .args(["show", v["run_id"].as_str().unwrap()])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("Using key [REDACTED] and [REDACTED]. Final answer: 408"),
        "{shown}"
    );
    // A pattern that does not compile is refused, naming the key.
    let bad = env.write("bad.toml", "[security]\nredact = [\"(\"]\n");
    let err = env.refused(&["config", "check", bad.to_str().unwrap()]);
    assert!(err.contains("security.redact"), "{err}");
}

#[test]
fn a_configured_key_is_redacted_when_simulated_agents_replace_its_agent() {
    let env = Env::new();
    // A key with no recognisable shape: only knowing it is the agent's key redacts it.
    let key = "plainkeyvalue8675309";
    let cfg = env.write(
        "keyed.toml",
        "[[agents]]\nid = \"a\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"MOOT_TEST_PLAIN_KEY_7\"\n",
    );
    let question = format!("My key is {key}. What is 17 * 24?");
    for command in [
        vec!["ask", question.as_str(), "--sim", "--gold", "408"],
        vec!["ask", question.as_str()],
    ] {
        let mut args = command.clone();
        args.extend(["--config", cfg.to_str().unwrap(), "--json"]);
        let out = env
            .moot()
            .env("MOOT_TEST_PLAIN_KEY_7", key)
            .args(&args)
            .output()
            .unwrap();
        // Without --sim the agent's server is down: the run fails, but is stored first.
        let simulated = command.contains(&"--sim");
        assert_eq!(
            out.status.success(),
            simulated,
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stored = stored_bytes(&env);
        assert!(
            stored.contains("My key is [REDACTED]"),
            "{command:?}: the question is stored"
        );
        assert!(
            !stored.contains(key),
            "{command:?}: the key reached the store"
        );
    }
}

#[test]
fn a_debate_whose_agents_all_fail_exits_non_zero_with_their_reasons_and_asks_each_once() {
    let env = Env::new();
    let counter = env.dir.path().join("calls");
    let agent = common::script(
        &env,
        "broken.sh",
        &format!(
            "#!/bin/sh\necho called >> {}\necho 'model weights not found' >&2\nexit 3\n",
            counter.display()
        ),
    );
    let agents: String = (1..=3)
        .map(|i| {
            format!(
                "\n[[agents]]\nid = \"c{i}\"\nbackend = \"cli\"\ncommand = \"{}\"\n",
                agent.display()
            )
        })
        .collect();
    let cfg = env.write(
        "broken.toml",
        &format!(
            "[debate]\nprotocol = \"som\"\nrounds = 2\n\n[security]\ncli_allowed_commands = [\"{}\"]\n{agents}",
            agent.display()
        ),
    );
    let out = env
        .moot()
        .args(["ask", "What is 17 * 24?", "--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("every agent failed"), "{err}");
    for id in ["c1", "c2", "c3"] {
        assert!(err.contains(&format!("{id}: ")), "{id}: {err}");
    }
    assert!(err.contains("model weights not found"), "{err}");
    assert!(err.contains("exit status: 3"), "{err}");
    // Not retried, and rounds 1 and 2 are not asked once round 0 failed for good.
    let calls = std::fs::read_to_string(&counter).unwrap();
    assert_eq!(calls.lines().count(), 3, "{calls}");
    // The run is stored with its reasons.
    let run = err
        .split("(run ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap();
    let shown = env.json(&["show", run, "--format", "json"]);
    let calls = shown["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 9);
    assert_eq!(
        calls.iter().filter(|c| c["skipped"] == true).count(),
        6,
        "{shown}"
    );
}

#[test]
fn an_openai_agent_with_several_endpoints_fails_over_to_a_healthy_one() {
    let env = Env::new();
    let answer = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Final answer: 408"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3}}"#;
    let (down, _, down_count) = serve(vec![http("503 Service Unavailable", "down")]);
    let (up, _, up_count) = serve(vec![http("200 OK", answer)]);
    let cfg = env.write(
        "replicas.toml",
        &format!(
            "[debate]\nprotocol = \"cot-sc\"\nanswer = \"numeric\"\nmin_agents = 3\n\n[retry]\nmax_retries = 0\n\n[[agents]]\nid = \"a\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_urls = [\"{down}/v1\", \"{up}/v1\"]\n\n[[agents]]\nid = \"b\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_urls = [\"{down}/v1\", \"{up}/v1\"]\n\n[[agents]]\nid = \"c\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_urls = [\"{down}/v1\", \"{up}/v1\"]\n"
        ),
    );
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["answer"], "408", "{v}");
    // Every agent got its answer although one replica is down and retries are off.
    assert_eq!(up_count.load(Ordering::SeqCst), 3);
    assert!(down_count.load(Ordering::SeqCst) >= 1);
    let both = env.write(
        "both.toml",
        "[[agents]]\nid = \"a\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"http://x/v1\"\nbase_urls = [\"http://y/v1\"]\n",
    );
    let err = env.refused(&["config", "check", both.to_str().unwrap()]);
    assert!(err.contains("base_url or base_urls"), "{err}");
}
