//! `moot serve` as a user meets it: a real server process on a free port, driven over HTTP —
//! the JSON API and its events, the pages, the OpenAI-compatible endpoint, and the safety
//! rules (token, loopback, escaping, size and concurrency limits).

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::Env;
use serde_json::{json, Value};

type Server = common::Served;

fn serve(env: &Env, args: &[&str]) -> Server {
    common::moot_serve(env, args, &[])
}

/// Three scripted agents; the first two answer 408 and the third `third`, every round.
fn team(env: &Env, third: &str, extra: &str) -> String {
    let mut text =
        format!("[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"numeric\"\n{extra}\n");
    for (id, reply) in [
        ("a", "17 * 24 = 408.\nFinal answer: 408"),
        ("b", "Final answer: 408"),
        ("c", third),
    ] {
        text.push_str(&format!(
            "[[agents]]\nid = \"{id}\"\nbackend = \"scripted\"\nresponses = [{reply:?}]\n\n"
        ));
    }
    env.write("team.toml", &text).display().to_string()
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The body of `GET url`.
async fn get_text(url: impl reqwest::IntoUrl) -> String {
    client()
        .get(url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// `POST url` with a JSON body.
async fn post_json(url: impl reqwest::IntoUrl, body: &Value) -> reqwest::Response {
    client().post(url).json(body).send().await.unwrap()
}

/// `GET url` as JSON.
async fn get_json(url: impl reqwest::IntoUrl) -> Value {
    let text = get_text(url).await;
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

async fn start(s: &Server, question: &str) -> String {
    let r = post_json(
        format!("{}/api/runs", s.url),
        &json!({"question": question}),
    )
    .await;
    assert_eq!(r.status(), 202);
    r.json::<Value>().await.unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The server-sent events of a run, until the stream ends after `done`.
async fn events(s: &Server, run: &str) -> Vec<(String, Value)> {
    let text = get_text(format!("{}/api/runs/{run}/events", s.url)).await;
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut event = String::new();
        let mut data = String::new();
        for line in block.lines() {
            if let Some(e) = line.strip_prefix("event: ") {
                event = e.to_string();
            } else if let Some(d) = line.strip_prefix("data: ") {
                data.push_str(d);
            }
        }
        if !event.is_empty() {
            out.push((event, serde_json::from_str(&data).unwrap_or(Value::Null)));
        }
    }
    out
}

#[tokio::test]
async fn a_debate_started_over_the_api_is_followed_and_shown() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 418", "");
    let s = serve(&env, &["--config", &cfg]);
    let run = start(&s, "What is 17 * 24?").await;
    let ev = events(&s, &run).await;
    let calls: Vec<&Value> = ev
        .iter()
        .filter(|(e, _)| e == "call")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(calls.len(), 6, "{ev:?}");
    assert!(calls
        .iter()
        .all(|c| c["ms"].is_u64() && c["output_tokens"].is_u64()));
    let (last, done) = ev.last().unwrap();
    assert_eq!(last, "done");
    assert_eq!(done["answer"], "408");
    assert_eq!(done["status"], "done");

    let t: Value = get_json(format!("{}/api/runs/{run}", s.url)).await;
    assert_eq!(t["run"]["answer"], "408");
    assert_eq!(t["calls"].as_array().unwrap().len(), 6);
    assert!(
        t["run"].get("config").is_none(),
        "configurations stay out of the API"
    );
    assert_eq!(t["view"]["rounds"].as_array().unwrap().len(), 2);

    let page = client()
        .get(format!("{}/runs/{run}", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let html = page.text().await.unwrap();
    for want in [
        "Why this answer won",
        "The same debate under every rule",
        "Who read whom",
        "<svg class=\"topology\"",
        "majority-last",
    ] {
        assert!(html.contains(want), "{want} missing");
    }
    let list = get_text(&s.url).await;
    assert!(list.contains(&format!("/runs/{run}")), "{list}");
    let filtered = get_text(format!("{}/?protocol=cot", s.url)).await;
    assert!(!filtered.contains(&format!("/runs/{run}")));
    assert!(filtered.contains("No run matches."));
}

#[tokio::test]
async fn model_text_is_shown_as_text() {
    let env = Env::new();
    let evil = "<script>alert(1)</script><img src=x onerror=alert(2)> Final answer: 12";
    let cfg = team(&env, evil, "");
    let s = serve(&env, &["--config", &cfg]);
    let run = start(&s, "<b>What</b> is 17 * 24?").await;
    events(&s, &run).await;
    let html = get_text(format!("{}/runs/{run}", s.url)).await;
    assert!(!html.contains("<script>alert"), "raw script in the page");
    assert!(!html.contains("<img src=x"), "raw img in the page");
    assert!(!html.contains("<b>What</b>"));
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;")
            || html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "escaped text missing"
    );
    let list = get_text(&s.url).await;
    assert!(!list.contains("<b>What</b>"));
}

#[tokio::test]
async fn a_token_guards_every_route_but_health() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 408", "");
    let s = serve(&env, &["--config", &cfg, "--token", "s3cret"]);
    let c = client();
    assert_eq!(
        c.get(format!("{}/health", s.url))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    for path in ["/", "/api/runs", "/v1/models", "/new"] {
        let r = c.get(format!("{}{path}", s.url)).send().await.unwrap();
        assert_eq!(r.status(), 401, "{path}");
        for (token, status) in [("wrong", 401), ("s3cret", 200)] {
            let r = c
                .get(format!("{}{path}", s.url))
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), status, "{path} with {token}");
        }
    }
    let r = post_json(format!("{}/api/runs", s.url), &json!({"question": "q"})).await;
    assert_eq!(r.status(), 401);
    // A browser opens /?token=… once and gets a cookie instead.
    let nofollow = no_redirects();
    let r = nofollow
        .get(format!("{}/?token=s3cret", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    let pair = cookie.split(';').next().unwrap().to_string();
    let r = c
        .get(format!("{}/", s.url))
        .header("cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // No page shows the token.
    let html = r.text().await.unwrap();
    assert!(!html.contains("s3cret"));
}

#[test]
fn listening_beyond_loopback_needs_a_token() {
    let env = Env::new();
    let out = env
        .moot()
        .args(["serve", "--host", "0.0.0.0", "--port", "0"])
        .env_remove("MOOT_SERVE_TOKEN")
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("without a token") && err.contains("--token"),
        "{err}"
    );
}

/// A name given with --allow-host that can never match a request's Host (a URL, a name with a
/// path or a space) is refused when the server starts, naming the flag and the value, instead of
/// being dropped: the server would otherwise start and refuse every request sent to that name.
#[test]
fn an_allowed_host_that_is_not_a_host_name_is_refused_by_name() {
    let env = Env::new();
    for given in [
        "https://moot.lan",
        "moot.lan/runs",
        "moot lan",
        "moot.lan:99999",
        "",
    ] {
        // Before the check the server started and served until stopped.
        let err = env.refused(&["serve", "--port", "0", "--allow-host", given]);
        assert!(
            err.contains("--allow-host") && err.contains(&format!("{given:?}")),
            "{given:?}: {err}"
        );
    }
}

#[tokio::test]
async fn bodies_and_running_debates_are_capped() {
    let env = Env::new();
    // An agent that takes a while, so that the first debate still runs when the second asks.
    let slow = common::script(
        &env,
        "slow.sh",
        "#!/bin/sh\ncat > /dev/null\nsleep 3\necho 'Final answer: 7'\n",
    );
    let slow = slow.display().to_string();
    let cfg = env.write(
        "slow.toml",
        &format!(
            "[debate]\nprotocol = \"cot\"\nrounds = 0\n[security]\ncli_allowed_commands = [{slow:?}]\n[[agents]]\nid = \"s\"\nbackend = \"cli\"\ncommand = {slow:?}\n"
        ),
    );
    let s = serve(
        &env,
        &["--config", &cfg.display().to_string(), "--max-running", "1"],
    );
    // A body over the cap is refused from its declared length. The request's head is sent
    // alone: a client still writing 2 MiB when the server answers and closes may see a reset
    // instead of the answer.
    let addr = s.url.trim_start_matches("http://").to_string();
    let status = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut conn = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            conn,
            "POST /api/runs HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            2 << 20
        )
        .unwrap();
        let mut head = [0u8; 12];
        conn.read_exact(&mut head).unwrap();
        String::from_utf8_lossy(&head).into_owned()
    })
    .await
    .unwrap();
    assert_eq!(status, "HTTP/1.1 413");
    let first = start(&s, "What is 3 + 4?").await;
    let r = post_json(
        format!("{}/api/runs", s.url),
        &json!({"question": "And 5 + 6?"}),
    )
    .await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "5");
    // Once the first is done, a slot is free again: the server says so as soon as the debate's
    // task has let go of it, which follows its `done` (asked again until then, never after a
    // guessed delay).
    events(&s, &first).await;
    let freed = std::time::Instant::now();
    loop {
        let r = post_json(
            format!("{}/api/runs", s.url),
            &json!({"question": "And 5 + 6?"}),
        )
        .await;
        if r.status() == 202 {
            break;
        }
        assert_eq!(r.status(), 429);
        assert!(
            freed.elapsed() < Duration::from_secs(10),
            "the slot stayed taken"
        );
        tokio::task::yield_now().await;
    }
    // Bad requests name their field.
    let r = post_json(
        format!("{}/api/runs", s.url),
        &json!({"question": "q", "protocol": "nope"}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert!(e["error"].as_str().unwrap().contains("nope"), "{e}");
}

#[tokio::test]
async fn the_openai_endpoint_answers_as_a_model_would() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 418", "");
    let s = serve(&env, &["--config", &cfg]);
    let models: Value = get_json(format!("{}/v1/models", s.url)).await;
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(ids.contains(&"moot") && ids.contains(&"moot/free-mad-n") && ids.contains(&"moot/som"));
    let r: Value = post_json(format!("{}/v1/chat/completions", s.url), &json!({"model": "moot/som", "messages": [{"role": "user", "content": "What is 17 * 24?"}]})).await
        .json()
        .await
        .unwrap();
    assert_eq!(r["object"], "chat.completion");
    assert_eq!(
        r["choices"][0]["message"]["content"],
        "17 * 24 = 408.\nFinal answer: 408"
    );
    assert_eq!(r["moot"]["answer"], "408");
    assert_eq!(r["moot"]["protocol"], "som");
    let usage = &r["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(
            usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
        )
    );
    assert!(usage["completion_tokens"].as_u64().unwrap() > 0);
    // The id opens the run.
    let run = r["id"].as_str().unwrap();
    env.moot().args(["show", run]).assert().success();

    let text = post_json(format!("{}/v1/chat/completions", s.url), &json!({"model": "moot", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "What is 17 * 24?"}]})).await
        .text()
        .await
        .unwrap();
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "17 * 24 = 408.\nFinal answer: 408");
    assert!(chunks
        .iter()
        .any(|c| c["choices"][0]["finish_reason"] == "stop"));
    assert!(
        chunks.last().unwrap()["usage"]["total_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Progress came first, as comments a client skips: before any data.
    let progress = text
        .find(": moot run ")
        .unwrap_or_else(|| panic!("no progress: {text}"));
    let first_data = text.find("data: ").unwrap();
    assert!(progress < first_data, "{text}");

    let r = post_json(
        format!("{}/v1/chat/completions", s.url),
        &json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .contains("moot/PROTOCOL"));
}

#[tokio::test]
async fn benchmarks_show_progress_their_report_and_each_debate() {
    let env = Env::new();
    common::arith_bench(&env, 4);
    let s = serve(&env, &[]);
    let c = client();
    let list = get_text(format!("{}/benches", s.url)).await;
    assert!(list.contains("/benches/arith"), "{list}");
    // minijinja writes `/` in values as `&#x2f;`, which a browser reads back as `/`.
    let page = get_text(format!("{}/benches/arith", s.url))
        .await
        .replace("&#x2f;", "/");
    assert!(page.contains("8 done, 0 running, 0 failed"), "{page}");
    assert!(page.contains("<table>"), "the report's tables are HTML");
    assert!(
        page.contains("src=\"/benches/arith/plots/accuracy-vs-tokens.svg\""),
        "{page}"
    );
    assert!(
        page.contains("href=\"/runs/arith/som/"),
        "items link to their debates"
    );
    assert!(page.contains('✓') || page.contains('✗'));
    // The controls of issue 35, with the numbers `moot report` gives for the same debates.
    let report = env.json(&["report", "arith", "--format", "json"]);
    let vote = &report["controls"]["vote_vs_decision"][0];
    assert_eq!(vote["protocol"], "som");
    let share = |key: &str| {
        let k = vote["paired"][key].as_u64().unwrap();
        format!("{k}/4 = {:.3}", k as f64 / 4.0)
    };
    let martingale = &report["controls"]["martingale"][0]["rounds"][0];
    for needle in [
        "Did the debate beat its own vote?".to_string(),
        format!(
            "<td>som</td><td>4</td><td>{}</td><td>{}</td>",
            share("vote_correct"),
            share("decision_correct")
        ),
        "<td>cot</td><td>not applicable: no debate round".into(),
        "Martingale check".into(),
        format!(
            "<td>som</td><td>1</td><td>4</td><td>{:+.4}</td>",
            martingale["mean"].as_f64().unwrap()
        ),
        "Flips by agent".into(),
        "<td>som</td><td>sim-1</td>".into(),
        "Flips by team mix".into(),
        "no cot-sc arm".into(),
    ] {
        assert!(page.contains(&needle), "{needle:?} missing from {page}");
    }
    let plot = c
        .get(format!(
            "{}/benches/arith/plots/accuracy-vs-tokens.svg",
            s.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(plot.headers()["content-type"], "image/svg+xml");
    assert!(plot.text().await.unwrap().starts_with("<svg"));
    // A debate of the benchmark opens (its id holds slashes).
    let run_link = page
        .split("href=\"/runs/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    let run = c
        .get(format!("{}/runs/{run_link}", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(run.status(), 200);
    let missing = c
        .get(format!("{}/benches/nope", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

/// The real `openai` Python package, pinned, against the server: a debate team as its model.
const OPENAI: &str = "openai==1.109.1";

#[test]
#[ignore = "installs the openai package from PyPI into a venv; scripts/test runs it"]
fn the_openai_python_client_uses_a_debate_team_as_its_model() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 418", "");
    let s = serve(&env, &["--config", &cfg]);
    let python = common::venv_with(OPENAI).join("bin/python");
    let script = env.write(
        "client.py",
        r#"
import json, sys
from openai import OpenAI

client = OpenAI(base_url=sys.argv[1] + "/v1", api_key="unused")
ids = [m.id for m in client.models.list()]
assert "moot" in ids and "moot/free-mad-n" in ids, ids

r = client.chat.completions.create(
    model="moot/som",
    messages=[{"role": "user", "content": "What is 17 * 24?"}],
)
extra = r.model_extra or {}
out = {
    "id": r.id,
    "content": r.choices[0].message.content,
    "finish": r.choices[0].finish_reason,
    "total_tokens": r.usage.total_tokens,
    "answer": extra.get("moot", {}).get("answer"),
}

stream = client.chat.completions.create(
    model="moot",
    messages=[{"role": "user", "content": "What is 17 * 24?"}],
    stream=True,
)
out["streamed"] = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
print(json.dumps(out))
"#,
    );
    let ran = common::run_ok(
        Command::new(python).arg(&script).arg(&s.url),
        "the openai client",
    );
    let out: Value = serde_json::from_slice(&ran.stdout).unwrap();
    assert_eq!(out["content"], "17 * 24 = 408.\nFinal answer: 408", "{out}");
    assert_eq!(out["streamed"], out["content"]);
    assert_eq!(out["answer"], "408");
    assert_eq!(out["finish"], "stop");
    assert!(out["total_tokens"].as_u64().unwrap() > 0);
    // The completion's id is the run.
    env.moot()
        .args(["show", out["id"].as_str().unwrap()])
        .assert()
        .success();
}

/// An OpenAI-compatible upstream that answers every chat completion with `reply`, recording
/// each request body.
fn upstream(reply: &'static str) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    upstream_answering(json!({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
    }))
}

/// An OpenAI-compatible upstream that answers every chat completion with `body`, recording
/// each request (head and body).
fn upstream_answering(body: Value) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::Write as _;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let seen = seen2.clone();
            let body = body.clone();
            std::thread::spawn(move || {
                let request = common::read_http_request(&mut stream);
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&request).into_owned());
                let body = body.to_string();
                let _ = stream.write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
            });
        }
    });
    (url, seen)
}

#[tokio::test]
async fn a_model_name_builds_a_team_on_the_upstream_and_no_secret_reaches_a_page() {
    let env = Env::new();
    let (url, seen) = upstream("Final answer: 408");
    let secret = "sk-test-0123456789abcdef";
    let cfg = env.write(
        "up.toml",
        &format!(
            "[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"numeric\"\n\n[serve]\nupstream = {url:?}\nupstream_api_key_env = \"MOOT_TEST_UPSTREAM_KEY\"\n\n[[agents]]\nid = \"x\"\nbackend = \"openai\"\nbase_url = {url:?}\nmodel = \"configured\"\napi_key_env = \"MOOT_TEST_UPSTREAM_KEY\"\nstream = false\n\n[[agents]]\nid = \"y\"\nbackend = \"openai\"\nbase_url = {url:?}\nmodel = \"configured\"\napi_key_env = \"MOOT_TEST_UPSTREAM_KEY\"\nstream = false\n"
        ),
    );
    let cfg = cfg.display().to_string();
    let s = common::moot_serve(
        &env,
        &["--config", &cfg],
        &[("MOOT_TEST_UPSTREAM_KEY", secret)],
    );
    let r: Value = post_json(format!("{}/v1/chat/completions", s.url), &json!({"model": "moot/som/qwen-up", "messages": [{"role": "user", "content": format!("What is 17 * 24? (my key is {secret})")}]})).await
        .json()
        .await
        .unwrap();
    assert_eq!(r["moot"]["answer"], "408", "{r}");
    // A team of the configured size (two), every call on the named model, with the key.
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 4, "two agents, two rounds");
    assert!(requests.iter().all(|q| q.contains("\"model\":\"qwen-up\"")));
    assert!(requests.iter().all(|q| q
        .to_lowercase()
        .contains(&format!("authorization: bearer {secret}"))));
    // The key the question quoted is redacted from everything the server shows.
    let run = r["id"].as_str().unwrap();
    for path in [
        format!("/runs/{run}"),
        format!("/api/runs/{run}"),
        "/".to_string(),
        "/new".to_string(),
        "/v1/models".to_string(),
    ] {
        let body = get_text(format!("{}{path}", s.url)).await;
        assert!(!body.contains(secret), "{path} shows the key");
    }
    // Without an upstream, such a model is refused by name.
    let cfg = team(&env, "Final answer: 408", "");
    let plain = serve(&env, &["--config", &cfg]);
    let r = client()
        .post(format!("{}/v1/chat/completions", plain.url))
        .json(
            &json!({"model": "moot/som/qwen-up", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("[serve] upstream"),
        "{e}"
    );
}

#[tokio::test]
async fn faults_and_options_given_to_the_api_show_on_the_run_page() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 418", "");
    let s = serve(&env, &["--config", &cfg]);
    let r = post_json(format!("{}/api/runs", s.url), &json!({"question": "What is 17 * 24?", "rounds": 2, "agents": 5, "options": {"faults.cut_off": "0.67", "topology": "ring"}})).await;
    assert_eq!(r.status(), 202);
    let run = r.json::<Value>().await.unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    events(&s, &run).await;
    let t: Value = get_json(format!("{}/api/runs/{run}", s.url)).await;
    assert_eq!(t["view"]["rounds"].as_array().unwrap().len(), 3);
    let html = get_text(format!("{}/runs/{run}", s.url)).await;
    assert!(html.contains("Faults injected"), "no faults section");
    assert!(html.contains("cut off"), "no cut-off fault");
    // The ring was used: of five agents, each reads its two neighbours on the ring (or, cut
    // off, none), where all-to-all would show each the other four.
    let shown = env.json(&["show", &run, "--format", "json"]);
    let peers: Vec<usize> = shown["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["round"].as_u64() > Some(0))
        .map(|c| c["peers"].as_array().unwrap().len())
        .collect();
    assert!(!peers.is_empty());
    assert!(peers.iter().all(|&n| n <= 2), "{peers:?}");
    assert!(peers.contains(&2), "{peers:?}");
}

/// A judged debate started over the API: the page names the judge's role, shows its turn, and
/// the chosen rule is the verdict.
#[tokio::test]
async fn a_judge_debate_shows_the_judge_and_its_verdict_on_the_run_page() {
    let env = Env::new();
    let cfg = team(&env, "Agent 1 is right.\nFinal answer: 408", "");
    let s = serve(&env, &["--config", &cfg]);
    let r = post_json(
        format!("{}/api/runs", s.url),
        &json!({"question": "What is 17 * 24?", "protocol": "judge", "rounds": 1}),
    )
    .await;
    assert_eq!(r.status(), 202);
    let run = r.json::<Value>().await.unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    events(&s, &run).await;
    let t: Value = get_json(format!("{}/api/runs/{run}", s.url)).await;
    assert_eq!(t["view"]["rule"], "verdict", "{t}");
    let roles: Vec<Value> = t["view"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["role"].clone())
        .collect();
    assert_eq!(roles, [Value::Null, Value::Null, json!("judge")]);
    let html = get_text(format!("{}/runs/{run}", s.url)).await;
    assert!(
        html.contains("c <span class=\"hint\">(judge)</span>"),
        "{html}"
    );
    assert!(html.contains("speaks once the debate is over"), "{html}");
}

#[tokio::test]
async fn the_form_works_without_the_script_too() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 418", "");
    let s = serve(&env, &["--config", &cfg]);
    let nofollow = no_redirects();
    let r = nofollow
        .post(format!("{}/new", s.url))
        .form(&[
            ("question", "What is 17 * 24?"),
            ("protocol", "som"),
            ("agents", "3"),
            ("rounds", "1"),
            ("options", ""),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let to = r.headers()["location"].to_str().unwrap().to_string();
    assert!(to.starts_with("/runs/r"), "{to}");
    let r = nofollow
        .post(format!("{}/new", s.url))
        .form(&[("question", "q"), ("options", "ring")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("is not KEY=VALUE"));
    let r = nofollow
        .post(format!("{}/config", s.url))
        .form(&[("text", "[debate]\nrounds = 2\n")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let checked = r.text().await.unwrap();
    assert!(
        checked.contains("ok (moot&#x27;s format; 3 agents, protocol free-mad-n, 2 debate rounds)"),
        "{checked}"
    );
    let r = nofollow
        .post(format!("{}/config", s.url))
        .form(&[("text", "[debate]\nrouns = 2\n")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert!(r.text().await.unwrap().contains("rouns"));
}

#[tokio::test]
async fn debates_the_server_starts_are_logged_and_written_out_as_configured() {
    let env = Env::new();
    let log = env.dir.path().join("serve.log");
    let out = env.dir.path().join("transcripts");
    let extra = format!(
        "\n[logging]\nfile = {:?}\n\n[output]\ntranscript_dir = {:?}\n",
        log.display().to_string(),
        out.display().to_string()
    );
    // `team` puts `extra` inside [debate]'s table position; give it as whole sections.
    let cfg = team(&env, "Final answer: 418", "");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let (head, agents) = text.split_once("[[agents]]").unwrap();
    std::fs::write(&cfg, format!("{head}{extra}\n[[agents]]{agents}")).unwrap();
    let s = serve(&env, &["--config", &cfg]);
    let run = start(&s, "What is 17 * 24?").await;
    events(&s, &run).await;
    // The transcript is written after the decision; give the debate's thread a moment.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_dir(&out).map_or(0, |d| d.count()) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no transcript written"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains(&format!("[run_start] run={run}")),
        "{logged}"
    );
    assert!(logged.contains("[run_end]"), "{logged}");
    assert_eq!(logged.matches("[call]").count(), 6, "{logged}");
}

#[tokio::test]
async fn agents_are_picked_from_the_configuration_by_id() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 418", "");
    let s = serve(&env, &["--config", &cfg]);
    let r = post_json(
        format!("{}/api/runs", s.url),
        &json!({"question": "What is 17 * 24?", "agents": ["c", "a"]}),
    )
    .await;
    assert_eq!(r.status(), 202);
    let run = r.json::<Value>().await.unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    events(&s, &run).await;
    let t = get_json(format!("{}/api/runs/{run}", s.url)).await;
    let ids: Vec<&str> = t["view"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["agent_id"].as_str())
        .collect();
    assert_eq!(ids, ["c", "a"]);
    let r = post_json(
        format!("{}/api/runs", s.url),
        &json!({"question": "q", "agents": ["a", "zed"]}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert!(
        e["error"].as_str().unwrap().contains("configured: a, b, c"),
        "{e}"
    );
    // The form offers the configured agents to tick, and a ticked pair debates.
    let form = get_text(format!("{}/new", s.url)).await;
    assert!(form.contains("name=\"pick\" value=\"b\""), "{form}");
    let nofollow = no_redirects();
    let r = nofollow
        .post(format!("{}/new", s.url))
        .body("question=What+is+17+*+24%3F&agents=3&pick=b&pick=c")
        .header("content-type", "application/x-www-form-urlencoded")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let run = r.headers()["location"]
        .to_str()
        .unwrap()
        .trim_start_matches("/runs/")
        .to_string();
    events(&s, &run).await;
    let t = get_json(format!("{}/api/runs/{run}", s.url)).await;
    assert_eq!(t["view"]["agents"].as_array().unwrap().len(), 2);
}

/// DNS rebinding: a page on evil.example whose name now points at 127.0.0.1 reaches the server
/// with `Host: evil.example`. Only the names of the bound address, `localhost` and hosts given
/// with --allow-host are served.
#[tokio::test]
async fn a_foreign_host_is_not_served() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 408", "");
    let s = serve(
        &env,
        &[
            "--config",
            &cfg,
            "--allow-host",
            "moot.lan",
            "--allow-host",
            "[fd00::5]:8001",
        ],
    );
    let port = s.url.rsplit(':').next().unwrap().to_string();
    let c = client();
    for (host, status) in [
        ("evil.example".to_string(), 403),
        (format!("evil.example:{port}"), 403),
        (format!("127.0.0.1.evil.example:{port}"), 403),
        (format!("localhost:{port}"), 200),
        (format!("LOCALHOST:{port}"), 200),
        (format!("127.0.0.1:{port}"), 200),
        (format!("moot.lan:{port}"), 200),
        (format!("[fd00::5]:{port}"), 200),
        (format!("[fd00::6]:{port}"), 403),
    ] {
        for path in ["/api/runs", "/", "/health"] {
            let r = c
                .get(format!("{}{path}", s.url))
                .header("host", &host)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), status, "{path} with Host {host}");
        }
    }
}

/// A form posted from another site, or a script's request from another origin, does not start
/// a debate on this machine's keys.
#[tokio::test]
async fn cross_site_requests_cannot_change_anything() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 408", "");
    let s = serve(&env, &["--config", &cfg]);
    let c = no_redirects();
    for (header, value) in [
        ("origin", "https://evil.example"),
        ("origin", "null"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let r = c
            .post(format!("{}/new", s.url))
            .header(header, value)
            .form(&[("question", "What is 17 * 24?")])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "/new with {header}: {value}");
        let r = c
            .post(format!("{}/api/runs", s.url))
            .header(header, value)
            .json(&json!({"question": "What is 17 * 24?"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "/api/runs with {header}: {value}");
    }
    let runs = get_json(format!("{}/api/runs", s.url)).await;
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(0), "{runs}");
    // The form posted with this Origin and Sec-Fetch-Site: its status.
    let form = async |origin: &str, site: &str| {
        c.post(format!("{}/new", s.url))
            .header("origin", origin)
            .header("sec-fetch-site", site)
            .form(&[("question", "What is 17 * 24?")])
            .send()
            .await
            .unwrap()
            .status()
    };
    // The same origin, or a client that sends none (curl, an OpenAI client), may.
    assert_eq!(form(&s.url, "same-origin").await, 303);
    // A page's own form, as a browser posts it under the server's no-referrer policy: the
    // Origin is "null" and the browser's own Sec-Fetch-Site says same-origin.
    assert_eq!(form("null", "same-origin").await, 303);
    // "null" from anywhere else (a sandboxed frame of another site) may not.
    assert_eq!(form("null", "cross-site").await, 403);
    let r = post_json(
        format!("{}/api/runs", s.url),
        &json!({"question": "What is 17 * 24?"}),
    )
    .await;
    assert_eq!(r.status(), 202);
}

#[tokio::test]
async fn tokens_pages_and_redirects_at_their_edges() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 408", "");
    let s = serve(&env, &["--config", &cfg, "--token", "s3cret"]);
    let c = no_redirects();
    // HTTP's auth schemes are case-insensitive.
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let r = c
            .get(format!("{}/api/runs", s.url))
            .header("authorization", format!("{scheme} s3cret"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{scheme}");
    }
    // `//evil.example/` would be a redirect to another site.
    let r = c
        .get(format!("{}//evil.example/?token=s3cret", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    assert!(
        location.starts_with('/') && !location.starts_with("//"),
        "{location}"
    );
    // A page past the end is empty, not page 1 again.
    let r = c
        .post(format!("{}/api/runs", s.url))
        .bearer_auth("s3cret")
        .json(&json!({"question": "What is 17 * 24?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    for page in ["2147483649", "4294967295"] {
        let v: Value = c
            .get(format!("{}/api/runs?page={page}", s.url))
            .bearer_auth("s3cret")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            v["runs"].as_array().map(Vec::len),
            Some(0),
            "page {page}: {v}"
        );
    }
}

/// The configuration checker does not tell a visitor which files exist on the server: a command
/// that exists but cannot run and one that does not exist read the same.
#[tokio::test]
async fn the_config_checker_does_not_reveal_host_files() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 408", "");
    let s = serve(&env, &["--config", &cfg]);
    let page_for = |command: &'static str| {
        let url = format!("{}/config", s.url);
        async move {
            let text = format!(
                "[security]\ncli_allowed_commands = [\"{command}\"]\n\n[[agents]]\nid = \"a\"\nbackend = \"cli\"\ncommand = \"{command}\"\n"
            );
            let r = client()
                .post(url)
                .form(&[("text", text.as_str())])
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 422, "{command}");
            r.text()
                .await
                .unwrap()
                .replace(&command.replace('/', "&#x2f;"), "COMMAND")
                .replace(command, "COMMAND")
        }
    };
    let exists = page_for("/etc/passwd").await;
    let missing = page_for("/no/such/file").await;
    assert_eq!(exists, missing);
    assert!(exists.contains("not usable"), "{exists}");
    assert!(!exists.contains("not executable") && !exists.contains("does not exist"));
}

/// The server process's CPU time so far (user + system), in clock ticks, and its peak resident
/// memory in kB.
fn cpu_ticks_and_peak_kb(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    // After the command name: state is field 3 of stat(5), utime 14 and stime 15.
    let ticks = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    (ticks, peak)
}

/// Issue 31 item 3: four followers of a large live run (1,500 calls of 20 kB) each get every
/// call once, in the order written, and then cost the server only what is new: while ten more
/// calls arrive one by one, the server uses a small share of one core and its memory stays far
/// below the run's size times the followers (before, each follower reread every call every
/// 150 ms: 100% CPU and gigabytes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_of_a_large_live_run_are_sent_only_what_is_new() {
    const STORED: u32 = 1_500;
    const MORE: u32 = 10;
    let env = Env::new();
    let store = moot_store::StoreLocation::parse(&env.store().display().to_string())
        .open(moot_store::Access::Create)
        .await
        .unwrap();
    let run: moot_store::RunRecord = serde_json::from_value(json!({
        "id": "big", "created_at": "2026-11-26T00:00:00Z", "question": "q", "protocol": "som",
        "rule": "majority-last", "spec": {}, "config": {}, "status": "running",
    }))
    .unwrap();
    store.create_run(&run).await.unwrap();
    let padding = "x".repeat(20_000);
    let call = |n: u32| -> moot_store::CallRecord {
        serde_json::from_value(json!({
            "run_id": "big", "round": n / 3, "agent": n % 3, "agent_id": format!("a{}", n % 3),
            "backend": "scripted", "mode": "answer", "template": "t", "template_hash": "h",
            "messages": [{"role": "user", "content": padding}], "peers": [],
            "response_text": format!("Final answer: {n}"), "answer": n.to_string(),
            "input_tokens": 1, "output_tokens": 1, "latency_ms": 1,
            "recorded_at": "2026-11-26T00:00:01Z",
        }))
        .unwrap()
    };
    for chunk in (0..STORED).collect::<Vec<_>>().chunks(100) {
        let batch = moot_store::CallBatch {
            calls: chunk.iter().map(|&n| call(n)).collect(),
            cache: vec![],
        };
        store.record_batch(&batch).await.unwrap();
    }
    let s = serve(&env, &[]);
    let pid = s.child.id();
    // Each follower reports the answer of every call event it reads, and ends at `done`.
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Option<u32>)>();
    let mut followers = Vec::new();
    for f in 0..4 {
        let url = format!("{}/api/runs/big/events", s.url);
        let seen = seen_tx.clone();
        followers.push(tokio::spawn(async move {
            let mut response = reqwest::Client::new().get(url).send().await.unwrap();
            let mut buffer = String::new();
            let mut answers = Vec::new();
            while let Some(chunk) = response.chunk().await.unwrap() {
                buffer.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buffer.find("\n\n") {
                    let block: String = buffer.drain(..end + 2).collect();
                    if block.contains("event: done") {
                        return answers;
                    }
                    if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) {
                        if block.contains("event: call") {
                            let v: Value = serde_json::from_str(data).unwrap();
                            let answer: u32 = v["answer"].as_str().unwrap().parse().unwrap();
                            answers.push(answer);
                            seen.send((f, Some(answer))).unwrap();
                        }
                    }
                }
            }
            answers
        }));
    }
    drop(seen_tx);
    // Every follower has caught up with the stored calls.
    let mut counts = [0u32; 4];
    while counts.iter().any(|&c| c < STORED) {
        let (f, _) = seen_rx.recv().await.unwrap();
        counts[f] += 1;
    }
    let (ticks_before, _) = cpu_ticks_and_peak_kb(pid);
    let watched = std::time::Instant::now();
    for n in STORED..STORED + MORE {
        store.record_call(&call(n)).await.unwrap();
        let mut got = 0;
        while got < 4 {
            if let (_, Some(a)) = seen_rx.recv().await.unwrap() {
                assert_eq!(a, n, "a new call, once, to each follower");
                got += 1;
            }
        }
    }
    let (ticks_after, peak_kb) = cpu_ticks_and_peak_kb(pid);
    let wall = watched.elapsed().as_secs_f64();
    let ticks_per_second = 100.0; // USER_HZ on Linux
    let cpu = (ticks_after - ticks_before) as f64 / ticks_per_second;
    store
        .finish_run("big", moot_store::RunStatus::Done, Some("7"), "t")
        .await
        .unwrap();
    for follower in followers {
        let answers = follower.await.unwrap();
        assert_eq!(answers, (0..STORED + MORE).collect::<Vec<_>>());
    }
    eprintln!("following: {cpu:.2} s CPU over {wall:.2} s, peak {peak_kb} kB");
    assert!(
        cpu < 0.5 * wall.max(1.0),
        "the server used {cpu:.2} s of CPU in {wall:.2} s while four followers waited for ten calls"
    );
    assert!(
        peak_kb < 200_000,
        "the server's memory peaked at {peak_kb} kB for a 30 MB run"
    );
}

/// Issue 31 item 4: a run whose process was killed is shown as interrupted (not running for
/// ever), on the page with `moot resume` as the way on, in the API, and at the end of its
/// events.
#[tokio::test]
async fn a_run_whose_process_died_is_shown_interrupted_with_resume_as_the_way_on() {
    let env = Env::new();
    let dir = env.dir.path().display().to_string();
    let (a, cfg) = slow_cli_team(&env, &format!("touch {dir}/asked\nsleep 60\n"));
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("moot"))
        .args(["ask", "What is 17 * 24?", "--config", cfg.to_str().unwrap()])
        .env("MOOT_STORE", env.store())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (_stderr, run) = common::run_id_from_stderr(&mut child);
    common::wait_for(&env.dir.path().join("asked"), Duration::from_secs(60));
    let s = serve(&env, &[]);
    let live = get_json(format!("{}/api/runs/{run}", s.url)).await;
    assert_eq!(live["run"]["status"], "running", "{live}");
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = get_json(format!("{}/api/runs/{run}", s.url)).await;
    assert_eq!(gone["run"]["status"], "interrupted", "{gone}");
    let listed = get_json(format!("{}/api/runs", s.url)).await;
    assert_eq!(listed["runs"][0]["status"], "interrupted", "{listed}");
    let ev = events(&s, &run).await;
    let (last, data) = ev.last().unwrap();
    assert_eq!(
        (last.as_str(), &data["status"]),
        ("done", &json!("interrupted"))
    );
    let page = get_text(format!("{}/runs/{run}", s.url)).await;
    assert!(page.contains("class=\"status interrupted\""), "{page}");
    assert!(page.contains(&format!("moot resume {run}")), "{page}");
    // SIGKILL reaches moot alone (nothing can catch it); its agents are ended here.
    let _ = Command::new("pkill").args(["-f", &a]).status();
}

/// Issue 32 item 1: a model name is a plain name, never configuration. The reported payload
/// (a model name that closes the TOML string and adds keys and an agent of its own) is
/// refused with 400 through `/api/runs` and `/v1/chat/completions`, and no request, key or
/// process reaches the attacker's server; a `cli` agent cannot be smuggled in either.
#[tokio::test]
async fn a_model_name_cannot_inject_configuration() {
    let env = Env::new();
    let (url, seen) = upstream("Final answer: 408");
    let (attacker, stolen) = upstream("Final answer: 1");
    let cfg = env.write(
        "up.toml",
        &format!(
            "[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"numeric\"\n\n[serve]\nupstream = {url:?}\n\n[security]\ncli_allowed_commands = [\"/bin/sh\"]\n\n[[agents]]\nid = \"x\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 408\"]\n\n[[agents]]\nid = \"y\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 408\"]\n"
        ),
    );
    let cfg = cfg.display().to_string();
    let s = common::moot_serve(
        &env,
        &["--config", &cfg],
        &[("SERVER_PRIVATE_ENV", "private-value-0123456789")],
    );
    let marker = env.dir.path().join("pwned");
    let payloads = [
        format!("x\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"{attacker}\"\napi_key_env = \"SERVER_PRIVATE_ENV\"\n[[agents]]\nid = \"y"),
        format!("x\"\n[[agents]]\nid = \"z\"\nbackend = \"cli\"\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"touch {}\"]\n[[agents]]\nid = \"w", marker.display()),
        "qwen\u{0}".to_string(),
        "a".repeat(300),
        "../../etc".to_string(),
        String::new(),
    ];
    for payload in &payloads {
        let r = post_json(
            format!("{}/api/runs", s.url),
            &json!({"question": "What is 17 * 24?", "model": payload}),
        )
        .await;
        assert_eq!(r.status(), 400, "{payload:?}");
        let e: Value = r.json().await.unwrap();
        assert!(
            e["error"].as_str().unwrap().contains("model"),
            "{payload:?}: {e}"
        );
        let r = post_json(
            format!("{}/v1/chat/completions", s.url),
            &json!({"model": format!("moot/som/{payload}"), "messages": [{"role": "user", "content": "What is 17 * 24?"}]}),
        )
        .await;
        assert_eq!(r.status(), 400, "{payload:?}");
    }
    assert!(
        stolen.lock().unwrap().is_empty(),
        "the attacker's server was called"
    );
    assert!(seen.lock().unwrap().is_empty());
    assert!(!marker.exists(), "an injected cli agent ran");
    // A plain name of the upstream's still works, with the names models really have.
    for name in [
        "qwen2.5-coder:0.5b",
        "meta-llama/Llama-3.1-8B-Instruct",
        "gpt-4o-mini",
    ] {
        let r = post_json(
            format!("{}/api/runs", s.url),
            &json!({"question": "What is 17 * 24?", "model": name}),
        )
        .await;
        assert_eq!(r.status(), 202, "{name}");
        let run = r.json::<Value>().await.unwrap()["run_id"]
            .as_str()
            .unwrap()
            .to_string();
        events(&s, &run).await;
    }
    assert!(stolen.lock().unwrap().is_empty());
    assert_eq!(
        seen.lock().unwrap().len(),
        3 * 4,
        "three teams of two, two rounds each"
    );
}

/// Issue 32 item 11: when no agent's call gets an answer, `/v1/chat/completions` says so with
/// 502 and an OpenAI-style error naming the cause (before: 200, `finish_reason: "stop"` and
/// empty content), streamed or not.
#[tokio::test]
async fn the_openai_endpoint_reports_failed_upstreams_as_an_error() {
    let env = Env::new();
    let (_refusing, port) = common::refusing_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let cfg = env.write(
        "down.toml",
        &format!(
            "[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"numeric\"\n\n[retry]\nmax_retries = 0\n\n[[agents]]\nid = \"x\"\nbackend = \"openai\"\nbase_url = {url:?}\nmodel = \"m\"\nstream = false\n\n[[agents]]\nid = \"y\"\nbackend = \"openai\"\nbase_url = {url:?}\nmodel = \"m\"\nstream = false\n"
        ),
    );
    let s = serve(&env, &["--config", &cfg.display().to_string()]);
    let ask =
        json!({"model": "moot", "messages": [{"role": "user", "content": "What is 17 * 24?"}]});
    let r = post_json(format!("{}/v1/chat/completions", s.url), &ask).await;
    assert_eq!(r.status(), 502);
    let e: Value = r.json().await.unwrap();
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("got an answer from its model"), "{e}");
    assert!(
        message.to_lowercase().contains("connect"),
        "names the cause: {e}"
    );
    assert_eq!(e["error"]["type"], "upstream_error");
    let mut streamed = ask.clone();
    streamed["stream"] = json!(true);
    let text = post_json(format!("{}/v1/chat/completions", s.url), &streamed)
        .await
        .text()
        .await
        .unwrap();
    assert!(text.contains("\"type\":\"upstream_error\""), "{text}");
    assert!(!text.contains("\"finish_reason\":\"stop\""), "{text}");
}

/// Issue 32 item 11: a client that goes away cancels its debate: the agents stop, the run is
/// recorded as failed, and the slot is free for the next request at once (before, a hanging
/// agent held the slot for the whole deadline).
#[tokio::test]
async fn a_debate_whose_only_client_went_away_is_cancelled() {
    use std::io::Write as _;
    let env = Env::new();
    let dir = env.dir.path().display().to_string();
    let marker = common::sleeper_marker(1);
    let (a, cfg) = slow_cli_team(
        &env,
        &format!("touch {dir}/asked\nsleep {marker}\necho 'Final answer: 1'\n"),
    );
    let s = serve(
        &env,
        &["--config", &cfg.display().to_string(), "--max-running", "1"],
    );
    let addr = s.url.trim_start_matches("http://").to_string();
    let body =
        json!({"model": "moot", "messages": [{"role": "user", "content": "What is 17 * 24?"}]})
            .to_string();
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        conn,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    common::wait_for(&env.dir.path().join("asked"), Duration::from_secs(30));
    drop(conn);
    // The run ends as failed, and its agents are gone.
    let started = std::time::Instant::now();
    let run = loop {
        let listed = get_json(format!("{}/api/runs", s.url)).await;
        let run = &listed["runs"][0];
        if run["status"] == "failed" {
            break run["id"].as_str().unwrap().to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not cancelled: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(!run.is_empty());
    let r = post_json(
        format!("{}/api/runs", s.url),
        &json!({"question": "And 5 + 6?"}),
    )
    .await;
    assert_eq!(r.status(), 202, "the slot was freed");
    assert_eq!(
        common::survivors_after(&marker, Duration::from_secs(10)),
        Vec::<u32>::new(),
        "an agent still runs"
    );
    let _ = Command::new("pkill").args(["-f", &a]).status();
}

/// Two `cli` agents running a script that reads its prompt and then `then` (shell lines),
/// under deadlines far past any test: the script's path and the configuration's.
fn slow_cli_team(env: &Env, then: &str) -> (String, std::path::PathBuf) {
    let agent = common::script(
        env,
        "agent.sh",
        &format!("#!/bin/sh\ncat > /dev/null\n{then}"),
    );
    let a = agent.display().to_string();
    let cfg = env.write(
        "slow.toml",
        &format!(
            "[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"numeric\"\nsoft_timeout_ms = 90000\nhard_timeout_ms = 120000\nmin_agents = 2\n\n[security]\ncli_allowed_commands = [\"{a}\"]\n\n[[agents]]\nid = \"x\"\nbackend = \"cli\"\ncommand = \"{a}\"\n\n[[agents]]\nid = \"y\"\nbackend = \"cli\"\ncommand = \"{a}\"\n"
        ),
    );
    (a, cfg)
}

/// A fork's page links its parent and says what changed (the said text escaped); the parent's
/// page lists its forks; the API gives the same lineage.
#[tokio::test]
async fn a_fork_is_shown_beside_its_parent() {
    let env = Env::new();
    let ask = |args: &[&str]| -> Value {
        let out = env
            .moot()
            .args(args)
            .assert()
            .success()
            .get_output()
            .clone();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let parent = ask(&[
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--protocol",
        "som",
        "--rounds",
        "1",
        "--json",
    ])["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let evil = "<script>alert(3)</script> Final answer: 7";
    let fork = ask(&[
        "fork", &parent, "--round", "1", "--agent", "1", "--say", evil, "--json",
    ])["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let s = serve(&env, &[]);
    let page = get_text(format!("{}/runs/{fork}", s.url)).await;
    assert!(page.contains("id=\"fork-of\""), "{page}");
    assert!(page.contains(&format!("href=\"/runs/{parent}\"")), "{page}");
    assert!(page.contains("at round 1: agent 1 says"), "{page}");
    assert!(
        page.contains("· injected") && page.contains("· reused from"),
        "{page}"
    );
    assert!(!page.contains("<script>alert(3)"), "raw script in the page");
    let page = get_text(format!("{}/runs/{parent}", s.url)).await;
    assert!(page.contains("id=\"forks\""), "{page}");
    assert!(page.contains(&format!("href=\"/runs/{fork}\"")), "{page}");
    let api = get_json(format!("{}/api/runs/{parent}", s.url)).await;
    assert_eq!(api["lineage"]["forks"][0]["id"], fork.as_str());
    assert_eq!(api["lineage"]["forks"][0]["round"], 1);
    let api = get_json(format!("{}/api/runs/{fork}", s.url)).await;
    assert_eq!(api["lineage"]["parent"]["id"], parent.as_str());
}

/// A fork benchmark's page carries the paired comparison with its parent.
#[tokio::test]
async fn a_fork_benchmark_page_pairs_it_with_its_parent() {
    let env = Env::new();
    common::arith_bench(&env, 4);
    env.stdout(&[
        "bench",
        "--fork-of",
        "arith",
        "--round",
        "1",
        "--run",
        "ctl",
    ]);
    let s = serve(&env, &[]);
    let page = get_text(format!("{}/benches/ctl", s.url)).await;
    assert!(page.contains("Against the parent benchmark"), "{page}");
    assert!(page.contains("McNemar p"), "{page}");
}

/// The pages where a person answers are behind the token like every page, a reply is a change
/// that another site's page may not make, and a question that is not waiting says so.
#[tokio::test]
async fn the_peoples_pages_keep_the_servers_rules() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 408", "");
    let s = serve(&env, &["--config", &cfg, "--token", "s3cret"]);
    let c = no_redirects();
    let r = c.get(format!("{}/people", s.url)).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = c
        .get(format!("{}/people", s.url))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("No question is waiting"));
    let r = c
        .post(format!("{}/people/1", s.url))
        .bearer_auth("s3cret")
        .header("origin", "https://evil.example")
        .form(&[("answer", "Final answer: 1"), ("action", "answer")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = c
        .post(format!("{}/people/1", s.url))
        .bearer_auth("s3cret")
        .form(&[("answer", "Final answer: 1"), ("action", "answer")])
        .send()
        .await
        .unwrap();
    // Answered already, or never asked: a conflict with the desk's state, said in words.
    assert_eq!(r.status(), 409);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("question 1 is not waiting"));
}

/// Issue 57 item 3: an answer over the byte limit (in characters under it: a browser's
/// `maxlength` would have let it through) is refused with the answer kept in the box, and the
/// question still waits.
#[tokio::test]
async fn an_over_long_answer_is_refused_and_kept_in_the_box() {
    let env = Env::new();
    let cfg = env.write(
        "people.toml",
        "[debate]\nprotocol = \"judge\"\nrounds = 1\nanswer = \"numeric\"\n\n\
         [[agents]]\nid = \"d1\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 408\"]\n\n\
         [[agents]]\nid = \"d2\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 418\"]\n\n\
         [[agents]]\nid = \"person\"\nbackend = \"human\"\nrole = \"judge\"\nanswer_within = \"2m\"\n",
    );
    let cfg = cfg.display().to_string();
    let s = serve(&env, &["--config", &cfg]);
    let run = start(&s, "What is 17 * 24?").await;
    // The judge's question waits for the person once the debaters are done.
    let started = std::time::Instant::now();
    let id = loop {
        let page = get_text(format!("{}/people", s.url)).await;
        if let Some(at) = page.find("href=\"/people/") {
            let rest = &page[at + "href=\"/people/".len()..];
            break rest[..rest.find('"').unwrap()].to_string();
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{page}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // 40,000 characters, 80,000 bytes: over the 64 KiB an answer may be.
    let long = format!("Final answer: 408 {}", "\u{e9}".repeat(40_000));
    let r = client()
        .post(format!("{}/people/{id}", s.url))
        .form(&[("answer", long.as_str()), ("action", "answer")])
        .send()
        .await
        .unwrap();
    let page = r.text().await.unwrap();
    assert!(
        page.contains("over the 65536 an answer may be"),
        "{}",
        &page[..500.min(page.len())]
    );
    assert!(
        page.contains(&"\u{e9}".repeat(40_000)),
        "the answer was not kept"
    );
    // Still waiting: a short answer is taken, and the run ends with it.
    let r = client()
        .post(format!("{}/people/{id}", s.url))
        .form(&[("answer", "Final answer: 408"), ("action", "answer")])
        .send()
        .await
        .unwrap();
    assert!(
        r.status().is_success() || r.status().is_redirection(),
        "{}",
        r.status()
    );
    let done = events(&s, &run).await;
    assert!(done.iter().any(|(name, _)| name == "done"), "{done:?}");
}

/// Issue 56 item 7: without `--config`, a request that needs the embedded model, which is not
/// pulled, is answered 503 naming `moot model pull`, and nothing is downloaded on its path.
#[tokio::test]
async fn a_request_for_a_model_not_pulled_is_503_and_downloads_nothing() {
    let env = Env::new();
    let models = tempfile::tempdir().unwrap();
    let dir = models.path().display().to_string();
    let s = common::moot_serve(&env, &[], &[("MOOT_MODEL_DIR", dir.as_str())]);
    let client = reqwest::Client::new();
    let chat = serde_json::json!({"model": "moot", "messages": [{"role": "user", "content": "What is 3 + 4?"}]});
    let r = client
        .post(format!("{}/v1/chat/completions", s.url))
        .json(&chat)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let body = r.text().await.unwrap();
    assert!(body.contains("moot model pull"), "{body}");
    let r = client
        .post(format!("{}/api/runs", s.url))
        .json(&serde_json::json!({"question": "What is 3 + 4?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.text().await.unwrap().contains("moot model pull"));
    let fetched: Vec<_> = std::fs::read_dir(models.path()).unwrap().collect();
    assert!(fetched.is_empty(), "{fetched:?}");
}

/// A team of two `openai` agents on `url` (each capped at 500 tokens and sampling at 0.3, as
/// configured), debating `protocol` for one round.
fn openai_team(env: &Env, url: &str, protocol: &str) -> String {
    let agent = |id: &str| {
        format!("[[agents]]\nid = \"{id}\"\nbackend = \"openai\"\nbase_url = {url:?}\nmodel = \"m\"\nstream = false\nmax_tokens = 500\ntemperature = 0.3\n\n")
    };
    let text = format!(
        "[debate]\nprotocol = \"{protocol}\"\nrounds = 1\nanswer = \"numeric\"\n\n[retry]\nmax_retries = 0\n\n{}{}",
        agent("x"),
        agent("y")
    );
    env.write("openai-team.toml", &text).display().to_string()
}

/// The JSON bodies of the requests an upstream saw.
fn bodies(seen: &std::sync::Mutex<Vec<String>>) -> Vec<Value> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|r| {
            let body = r.split("\r\n\r\n").nth(1).unwrap_or("");
            serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {r}"))
        })
        .collect()
}

/// The error of a refused chat completion: its status and OpenAI-shaped body.
async fn chat_error(s: &Server, request: &Value) -> (u16, Value) {
    let r = post_json(format!("{}/v1/chat/completions", s.url), request).await;
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")),
    )
}

/// Issue 58 item 10: every field of a chat completion is honoured or refused. A value moot
/// cannot honour (n = 2, stop sequences, logprobs, tools, JSON output, penalties, an image,
/// an unknown field, a temperature for agents that do not sample) is 400
/// `invalid_request_error` with `param` naming it; values that ask for what moot does anyway
/// (n = 1, no stop, no logprobs, no tools, zero penalties, nulls) are answered.
#[tokio::test]
async fn the_openai_endpoint_refuses_by_name_what_it_cannot_honour() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 408", "");
    let s = serve(&env, &["--config", &cfg]);
    let ask = |extra: Value| {
        let mut r = json!({"model": "moot/som", "messages": [{"role": "user", "content": "What is 17 * 24?"}]});
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    };
    let image = json!([{"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    ]}]);
    let prefill = json!([
        {"role": "user", "content": "What is 17 * 24?"},
        {"role": "assistant", "content": "The answer is"}
    ]);
    for (extra, param) in [
        (json!({"n": 2}), "n"),
        (json!({"n": 0}), "n"),
        (json!({"stop": ["\n"]}), "stop"),
        (json!({"logprobs": true}), "logprobs"),
        (json!({"top_logprobs": 3}), "top_logprobs"),
        (
            json!({"tools": [{"type": "function", "function": {"name": "f"}}]}),
            "tools",
        ),
        (json!({"tool_choice": "required"}), "tool_choice"),
        (
            json!({"response_format": {"type": "json_object"}}),
            "response_format",
        ),
        (json!({"frequency_penalty": 0.5}), "frequency_penalty"),
        (json!({"logit_bias": {"50256": -100}}), "logit_bias"),
        (json!({"store": false}), "store"),
        (json!({"reasoning_effort": "high"}), "reasoning_effort"),
        (json!({"temperature": 3}), "temperature"),
        (json!({"max_tokens": 0}), "max_tokens"),
        (json!({"top_p": 0}), "top_p"),
        (json!({"seed": -1}), "seed"),
        (
            json!({"stream": true, "stream_options": {"include_usage": true, "include_obfuscation": true}}),
            "stream_options.include_obfuscation",
        ),
        (json!({"messages": image}), "messages[0].content[1]"),
        (json!({"messages": prefill}), "messages[1]"),
        // Scripted agents sample with nothing: a temperature or a cap would be dropped.
        (json!({"temperature": 0.7}), "temperature"),
        (json!({"max_tokens": 16}), "max_tokens"),
    ] {
        let (status, e) = chat_error(&s, &ask(extra.clone())).await;
        assert_eq!(status, 400, "{extra} → {e}");
        assert_eq!(e["error"]["type"], "invalid_request_error", "{extra} → {e}");
        assert_eq!(e["error"]["param"], param, "{extra} → {e}");
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains(param), "{extra} → {e}");
    }
    // A body missing a field OpenAI requires is a 400 naming it, as OpenAI answers it.
    for (body, param) in [
        (
            json!({"messages": [{"role": "user", "content": "Hi"}]}),
            "model",
        ),
        (json!({"model": "moot"}), "messages"),
    ] {
        let (status, e) = chat_error(&s, &body).await;
        assert_eq!(status, 400, "{body} → {e}");
        assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
        assert_eq!(e["error"]["param"], param, "{e}");
    }
    // Nothing refused ran.
    let listed = get_json(format!("{}/api/runs", s.url)).await;
    assert_eq!(listed["runs"].as_array().map(Vec::len), Some(0), "{listed}");
    // What moot does anyway is answered.
    let r = post_json(
        format!("{}/v1/chat/completions", s.url),
        &ask(json!({
            "n": 1, "stream": false, "stop": [], "logprobs": false, "tools": [],
            "tool_choice": "none", "response_format": {"type": "text"}, "presence_penalty": 0,
            "frequency_penalty": 0.0, "logit_bias": {}, "user": "someone", "temperature": null,
            "max_tokens": null, "stream_options": null
        })),
    )
    .await;
    assert_eq!(r.status(), 200);
    let r: Value = r.json().await.unwrap();
    assert_eq!(r["moot"]["answer"], "408", "{r}");
}

/// Issue 58 item 10: `temperature`, `top_p`, `max_tokens` (and `max_completion_tokens`) and
/// `seed` reach every call of the debate (a configured smaller cap stays), and an answer cut at
/// its cap finishes with `length`.
#[tokio::test]
async fn sampling_a_request_sets_reaches_every_call_and_a_cut_answer_finishes_with_length() {
    let env = Env::new();
    let (url, seen) = upstream_answering(json!({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "17 * 24 = 408.\nFinal answer: 408"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
    }));
    let cfg = openai_team(&env, &url, "som");
    let s = serve(&env, &["--config", &cfg]);
    let r = post_json(
        format!("{}/v1/chat/completions", s.url),
        &json!({"model": "moot", "messages": [{"role": "user", "content": "What is 17 * 24?"}],
                "temperature": 1.25, "top_p": 0.5, "max_tokens": 64, "seed": 7}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let r: Value = r.json().await.unwrap();
    assert_eq!(r["choices"][0]["finish_reason"], "length", "{r}");
    let asked = bodies(&seen);
    assert_eq!(asked.len(), 4, "two agents, two rounds");
    let cap = |b: &Value| {
        b["max_tokens"]
            .as_u64()
            .or(b["max_completion_tokens"].as_u64())
    };
    for b in &asked {
        assert_eq!(b["temperature"].as_f64(), Some(1.25), "{b}");
        assert_eq!(b["top_p"].as_f64(), Some(0.5), "{b}");
        assert_eq!(cap(b), Some(64), "{b}");
    }
    let mut seeds: Vec<u64> = asked.iter().filter_map(|b| b["seed"].as_u64()).collect();
    seeds.sort();
    seeds.dedup();
    assert_eq!(
        seeds,
        vec![7, 8],
        "the debate's seed, plus each agent's place"
    );
    // A cap over the configured one leaves the configured one.
    seen.lock().unwrap().clear();
    let r = post_json(
        format!("{}/v1/chat/completions", s.url),
        &json!({"model": "moot", "messages": [{"role": "user", "content": "What is 17 * 25?"}],
                "max_completion_tokens": 1000}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let asked = bodies(&seen);
    assert!(!asked.is_empty());
    for b in &asked {
        assert_eq!(cap(b), Some(500), "{b}");
        assert_eq!(b["temperature"].as_f64(), Some(0.3), "as configured: {b}");
    }
}

/// Issue 58 item 10: `usage.prompt_tokens_details.cached_tokens` sums the prompt tokens the
/// upstream read from its prompt cache, in the answer and in the streamed usage chunk.
#[tokio::test]
async fn usage_reports_the_prompt_tokens_read_from_a_prompt_cache() {
    let env = Env::new();
    let (url, _seen) = upstream_answering(json!({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Final answer: 408"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25,
                  "prompt_tokens_details": {"cached_tokens": 12}}
    }));
    let cfg = openai_team(&env, &url, "som");
    let s = serve(&env, &["--config", &cfg]);
    let r: Value = post_json(
        format!("{}/v1/chat/completions", s.url),
        &json!({"model": "moot", "messages": [{"role": "user", "content": "What is 17 * 24?"}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    // Four calls of 20 prompt tokens, 12 of each from the cache.
    assert_eq!(r["usage"]["prompt_tokens"], 80, "{r}");
    assert_eq!(
        r["usage"]["prompt_tokens_details"]["cached_tokens"], 48,
        "{r}"
    );
    let text = post_json(
        format!("{}/v1/chat/completions", s.url),
        &json!({"model": "moot", "stream": true, "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "What is 17 * 25?"}]}),
    )
    .await
    .text()
    .await
    .unwrap();
    let usage = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|c| c["usage"].is_object())
        .unwrap_or_else(|| panic!("no usage chunk: {text}"));
    assert_eq!(
        usage["usage"]["prompt_tokens_details"]["cached_tokens"], 48,
        "{usage}"
    );
}

/// Issue 58 item 10: a route that does not exist is 404 with a body (OpenAI's error shape under
/// `/v1/`, the API's JSON under `/api/`, text elsewhere), and a method a route does not take
/// is 405 with one.
#[tokio::test]
async fn unknown_routes_and_methods_are_answered_with_a_body() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 408", "");
    let s = serve(&env, &["--config", &cfg]);
    let r = client()
        .get(format!("{}/nowhere", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let text = r.text().await.unwrap();
    assert!(text.contains("/nowhere"), "{text:?}");
    let r = client()
        .get(format!("{}/v1/nowhere", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/nowhere"),
        "{e}"
    );
    let r = client()
        .get(format!("{}/api/nowhere", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let e: Value = r.json().await.unwrap();
    assert!(e["error"].as_str().unwrap().contains("/api/nowhere"), "{e}");
    let r = client()
        .get(format!("{}/v1/chat/completions", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    let e: Value = r.json().await.unwrap();
    assert!(
        e["error"]["message"].as_str().unwrap().contains("GET"),
        "{e}"
    );
}

/// Issue 58 item 10: `sid-et` reads token logprobs; a team with an agent whose backend has
/// none is refused with 400 before any run is recorded, through the OpenAI endpoint and the
/// JSON API alike.
#[tokio::test]
async fn sid_et_on_agents_without_logprobs_is_refused_before_any_run() {
    let env = Env::new();
    let cfg = team(&env, "Final answer: 408", "");
    let s = serve(&env, &["--config", &cfg]);
    let (status, e) = chat_error(
        &s,
        &json!({"model": "moot/sid-et", "messages": [{"role": "user", "content": "What is 17 * 24?"}]}),
    )
    .await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("logprobs"),
        "{e}"
    );
    let r = post_json(
        format!("{}/api/runs", s.url),
        &json!({"question": "What is 17 * 24?", "protocol": "sid-et"}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let listed = get_json(format!("{}/api/runs", s.url)).await;
    assert_eq!(listed["runs"].as_array().map(Vec::len), Some(0), "{listed}");
}

/// Issue 58 item 10: an `openai` agent whose server returns no logprobs gives `sid-et` nothing
/// to read: its calls fail naming the missing logprobs, the debate goes no further than round
/// 0, and the endpoint answers 502 saying so (before, the debate ran every round as `som`,
/// never able to stop early, and answered 200).
#[tokio::test]
async fn sid_et_on_a_server_that_returns_no_logprobs_is_an_error_naming_them() {
    let env = Env::new();
    let (url, seen) = upstream("Final answer: 408");
    let cfg = openai_team(&env, &url, "sid-et");
    let s = serve(&env, &["--config", &cfg]);
    let (status, e) = chat_error(
        &s,
        &json!({"model": "moot", "messages": [{"role": "user", "content": "What is 17 * 24?"}]}),
    )
    .await;
    assert_eq!(status, 502, "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("logprobs"),
        "{e}"
    );
    assert_eq!(seen.lock().unwrap().len(), 2, "round 0 only");
}
