//! Paid-API providers through the `moot` binary against a local server speaking their wire
//! format: configuration, keys from the environment, retries recorded in the transcript.

use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common;

use common::{read_http_request, Env};
use serde_json::json;

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

/// The JSON bodies of the requests `seen` holds, in arrival order.
fn bodies(seen: &std::sync::Mutex<Vec<String>>) -> Vec<serde_json::Value> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|r| {
            let (_, body) = r.split_once("\r\n\r\n").expect("a request with a body");
            serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
        })
        .collect()
}

/// How many cache breakpoints a Messages request marks.
fn breakpoints(body: &serde_json::Value) -> usize {
    body.to_string().matches("\"cache_control\"").count()
}

/// A team of two `backend` agents on one model at `url`, debating `som` with two debate rounds
/// after the first answers (six calls), with
/// `extra` in each agent's table.
fn two_agents(backend: &str, url: &str, extra: &str) -> String {
    let agent = |id: &str| {
        format!("[[agents]]\nid = \"{id}\"\nbackend = \"{backend}\"\nbase_url = \"{url}\"\nmodel = \"claude-sonnet-4-5\"\n{extra}\n")
    };
    format!(
        "[debate]\nprotocol = \"som\"\nrounds = 2\nanswer = \"numeric\"\n\n{}{}",
        agent("a"),
        agent("b")
    )
}

const CLAUDE_408: &str = r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"17 * 24 = 408. Final answer: 408"}],"stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":10}}"#;

/// Issue 44 item 4: the part of a debate's prompts every agent reads (here the question, with
/// a long context) is marked as a cache breakpoint for Anthropic's prompt cache, in every
/// round; a short prompt, which the API would not cache, and an agent with `prompt_cache =
/// false` send none.
#[test]
fn anthropic_requests_mark_a_long_shared_question_as_a_cache_breakpoint_and_nothing_else() {
    let env = Env::new();
    let context = "Every agent reads this long context before the question. ".repeat(120);
    let question = format!("{context}What is 17 * 24?");
    // Each call's answer its own (the agents' conversations differ after their first answers).
    let replies: Vec<String> = (1..=6)
        .map(|i| {
            http(
                "200 OK",
                &CLAUDE_408.replace("17 * 24", &format!("Reply {i}: 17 * 24")),
            )
        })
        .collect();
    let ask = |cfg: &str, question: &str| {
        let (url, seen, _) = serve(replies.clone());
        let cfg = env.write("team.toml", &cfg.replace("URL", &url));
        let v = env.json(&["ask", question, "--config", cfg.to_str().unwrap(), "--json"]);
        assert_eq!(v["answer"], "408", "{v}");
        bodies(&seen)
    };
    let marked = ask(&two_agents("anthropic", "URL", ""), &question);
    assert_eq!(marked.len(), 6, "two agents, three rounds");
    for body in &marked {
        // The default system prompt is far too short to cache: it stays a plain string.
        assert!(body["system"].is_string(), "{body}");
        let first = &body["messages"][0];
        assert_eq!(first["role"], "user");
        let blocks = first["content"]
            .as_array()
            .unwrap_or_else(|| panic!("the question as blocks: {body}"));
        assert_eq!(blocks.len(), 1, "{body}");
        assert_eq!(blocks[0]["type"], "text");
        assert!(
            blocks[0]["text"].as_str().unwrap().starts_with(&question),
            "{body}"
        );
        assert_eq!(blocks[0]["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(breakpoints(body), 1, "{body}");
        // The rest of the conversation (each agent's own answer, the peers it reads) differs
        // between agents: unmarked, as plain text.
        for m in body["messages"].as_array().unwrap().iter().skip(1) {
            assert!(m["content"].is_string(), "{body}");
        }
    }
    for body in ask(&two_agents("anthropic", "URL", ""), "What is 17 * 24?") {
        assert_eq!(breakpoints(&body), 0, "{body}");
        assert!(body["messages"][0]["content"].is_string(), "{body}");
    }
    for body in ask(
        &two_agents("anthropic", "URL", "prompt_cache = false"),
        &question,
    ) {
        assert_eq!(breakpoints(&body), 0, "{body}");
    }
}

/// Issue 44 item 4: Anthropic counts prompt-cache reads and writes apart from `input_tokens`;
/// a call's input is the whole prompt, of which the cached part and the part written to the
/// cache are stored and shown (`moot ask`, `moot show`, the run page).
#[test]
fn anthropic_cache_reads_and_writes_are_part_of_the_input_and_shown_apart() {
    let env = Env::new();
    let answer = r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"Final answer: 408"}],"stop_reason":"end_turn","usage":{"input_tokens":30,"cache_read_input_tokens":2000,"cache_creation_input_tokens":500,"output_tokens":10}}"#;
    let (url, _, _) = serve(vec![http("200 OK", answer)]);
    let cfg = env.write(
        "claude.toml",
        &format!("[debate]\nprotocol = \"cot\"\nanswer = \"numeric\"\n\n[[agents]]\nid = \"claude\"\nbackend = \"anthropic\"\nbase_url = \"{url}\"\nmodel = \"claude-test\"\n"),
    );
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        v["tokens"],
        json!({"input": 2530, "output": 10, "input_processed": 530, "input_cached": 2000, "input_cache_writes": 500}),
        "{v}"
    );
    let run = v["run_id"].as_str().unwrap();
    let shown = env.json(&["show", run, "--format", "json"]);
    let call = &shown["calls"][0];
    assert_eq!(
        (
            &call["input_tokens"],
            &call["cached_input_tokens"],
            &call["cache_write_input_tokens"],
            &call["output_tokens"]
        ),
        (&json!(2530), &json!(2000), &json!(500), &json!(10)),
        "{call}"
    );
    let md = env.stdout(&["show", run]);
    assert!(
        md.contains("2530 in (2000 from the prompt cache, 500 written to it) / 10 out tokens"),
        "{md}"
    );
    assert!(
        md.contains(
            "2530 input (2000 from the prompt cache, 500 written to it) / 10 output tokens"
        ),
        "{md}"
    );
    let served = common::moot_serve(&env, &[], &[]);
    let page = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let url = format!("{}/runs/{run}", served.url);
        reqwest::get(url).await.unwrap().text().await.unwrap()
    });
    assert!(
        page.contains(
            "2530 tokens in (of which 2000 from the prompt cache, 500 written to it), 10 out"
        ),
        "{page}"
    );
    // The agents' table: input, of which from the prompt cache, output.
    assert!(
        page.contains("<td>2530</td><td>2000</td><td>10</td>"),
        "{page}"
    );
}

/// Issue 44 item 4: OpenAI's API is given one `prompt_cache_key` per debate (a hash: neither
/// the question nor the run id), so that the agents' requests meet the same cache; servers of
/// other dialects, which would refuse or ignore the field, never get it, nor does an agent with
/// `prompt_cache = false`. The cached tokens OpenAI reports are stored with the call.
#[test]
fn openai_requests_carry_one_prompt_cache_key_per_debate_and_other_servers_none() {
    let env = Env::new();
    let answer = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Final answer: 408"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1100,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":1024}}}"#;
    let ask = |extra: &str| {
        let (url, seen, _) = serve(vec![http("200 OK", answer)]);
        let cfg = env.write(
            "team.toml",
            &two_agents("openai", &format!("{url}/v1"), extra),
        );
        let v = env.json(&[
            "ask",
            "What is 17 * 24?",
            "--config",
            cfg.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(v["answer"], "408", "{v}");
        (v["run_id"].as_str().unwrap().to_string(), bodies(&seen))
    };
    let (run, first) = ask("dialect = \"openai\"");
    assert_eq!(first.len(), 6);
    let key = first[0]["prompt_cache_key"]
        .as_str()
        .unwrap_or_else(|| panic!("no prompt_cache_key: {}", first[0]))
        .to_string();
    assert!(first.iter().all(|b| b["prompt_cache_key"] == key.as_str()));
    assert!(!key.contains("17 * 24") && !key.contains(&run), "{key}");
    let (_, second) = ask("dialect = \"openai\"");
    assert_ne!(
        second[0]["prompt_cache_key"],
        key.as_str(),
        "one key per debate"
    );
    for extra in [
        "dialect = \"llama.cpp\"",
        "dialect = \"vllm\"",
        "dialect = \"ollama\"",
        "",
        "dialect = \"openai\"\nprompt_cache = false",
    ] {
        for body in ask(extra).1 {
            assert!(body.get("prompt_cache_key").is_none(), "{extra}: {body}");
        }
    }
    let shown = env.json(&["show", &run, "--format", "json"]);
    let call = &shown["calls"][0];
    assert_eq!(
        (&call["input_tokens"], &call["cached_input_tokens"]),
        (&json!(1100), &json!(1024)),
        "{call}"
    );
    assert!(call["cache_write_input_tokens"].is_null(), "{call}");
}

/// `prompt_cache` is a key of the paid APIs' agents only.
#[test]
fn prompt_cache_is_a_key_of_the_http_backends() {
    let env = Env::new();
    for backend in ["anthropic", "openai"] {
        let cfg = env.write(
            "ok.toml",
            &format!("[[agents]]\nid = \"x\"\nbackend = \"{backend}\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\nprompt_cache = false\n"),
        );
        env.stdout(&["config", "check", cfg.to_str().unwrap()]);
    }
    let cfg = env.write(
        "bad.toml",
        "[[agents]]\nid = \"x\"\nbackend = \"scripted\"\nresponses = [\"408\"]\nprompt_cache = false\n",
    );
    let err = env.refused(&["config", "check", cfg.to_str().unwrap()]);
    assert!(err.contains("prompt_cache"), "{err}");
}
