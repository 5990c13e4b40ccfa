//! Keys never print: every command that shows an upstream's text, run against a server that
//! echoes the agent's key back in full, cut short and URL-encoded, in an error and in an answer.

use std::io::Write;
use std::net::TcpListener;

use crate::common;

use common::{read_http_request, Env};

/// A key with no recognisable shape: only knowing it is the agent's key redacts it.
const KEY: &str = "Zq9T-OPSECRETabcdefghijklmnopqrstuvwxyz0123/+=";
/// The variable the configuration names; its name does not say it holds a secret.
const KEY_VAR: &str = "MOOT_TEST_ECHO_CRED";

fn percent(text: &str, every_byte: bool) -> String {
    text.bytes()
        .map(|b| {
            if !every_byte && (b.is_ascii_alphanumeric() || b"-._~".contains(&b)) {
                (b as char).to_string()
            } else {
                format!("%{b:02x}")
            }
        })
        .collect()
}

/// The traces of the key an upstream shows: whole, cut short (as providers show a wrong key),
/// URL-encoded whole, and every byte encoded and cut short.
fn traces(key: &str) -> Vec<String> {
    vec![
        key.to_string(),
        format!("{}****", &key[..24]),
        percent(key, false),
        percent(&key[..16], true),
    ]
}

/// What must never be printed or stored: each trace, and each long run of the key.
fn leaks(text: &str) -> Vec<String> {
    let mut found: Vec<String> = traces(KEY)
        .into_iter()
        .filter(|t| text.contains(t.as_str()))
        .collect();
    if text.contains(&KEY[..16]) {
        found.push(KEY[..16].to_string());
    }
    found
}

/// A server that echoes the request's bearer key: under `/deny` as a 401 error, under `/ok` in
/// a chat answer (ending "Final answer: 7").
fn echo_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let raw = read_http_request(&mut stream);
                let text = String::from_utf8_lossy(&raw);
                let key = text
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("authorization")
                            .then(|| value.trim().trim_start_matches("Bearer ").to_string())
                    })
                    .unwrap_or_default();
                let echoed = traces(&key).join(" | ");
                let (status, body) = if text.starts_with("POST /deny") {
                    (
                        "401 Unauthorized",
                        serde_json::json!({"error": {
                            "message": format!("Incorrect API key provided: {echoed}"),
                            "type": "invalid_request_error"
                        }}),
                    )
                } else {
                    (
                        "200 OK",
                        serde_json::json!({
                            "id": "x", "object": "chat.completion", "model": "m",
                            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                "role": "assistant",
                                "content": format!("Your key: {echoed}\nFinal answer: 7")
                            }}],
                            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
                        }),
                    )
                };
                let body = body.to_string();
                let _ = stream.write_all(
                    format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
            });
        }
    });
    url
}

fn config(env: &Env, name: &str, base_url: &str) -> String {
    env.write(
        name,
        &format!(
            "[debate]\nprotocol = \"cot\"\n\n[retry]\nmax_retries = 0\n\n\
             [[agents]]\nid = \"a\"\nbackend = \"openai\"\nmodel = \"m\"\n\
             base_url = \"{base_url}\"\napi_key_env = \"{KEY_VAR}\"\n"
        ),
    )
    .to_str()
    .unwrap()
    .to_string()
}

fn run(env: &Env, args: &[&str]) -> (bool, String) {
    let out = env.moot().env(KEY_VAR, KEY).args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn keys_an_upstream_echoes_never_print_or_reach_the_store() {
    let env = Env::new();
    let url = echo_server();
    let ok = config(&env, "ok.toml", &format!("{url}/ok/v1"));
    let deny = config(&env, "deny.toml", &format!("{url}/deny/v1"));

    // The server does echo every trace, so each command below is tested against them all.
    let (answered, text) = run(&env, &["ask", "What is 3 + 4?", "--config", &ok, "--json"]);
    assert!(answered, "{text}");
    let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(v["answer"], "7", "{text}");
    let run_id = v["run_id"].as_str().unwrap().to_string();

    // (command, whether it succeeds, whether it shows the upstream's text: then the test
    // checks that the echo did reach what it prints).
    let commands: Vec<(Vec<&str>, bool, bool)> = vec![
        (vec!["health", "--config", &ok], true, true),
        (vec!["health", "--config", &deny], false, true),
        (vec!["ask", "What is 3 + 4?", "--config", &ok], true, false),
        (
            vec!["ask", "What is 3 + 4?", "--config", &deny],
            false,
            true,
        ),
        (
            vec!["ask", "What is 3 + 4?", "--config", &deny, "--json"],
            false,
            true,
        ),
        (vec!["show", &run_id], true, true),
        (vec!["show", &run_id, "--format", "json"], true, true),
    ];
    for (args, succeeds, shows_upstream_text) in commands {
        let (success, text) = run(&env, &args);
        assert_eq!(success, succeeds, "{args:?}: {text}");
        assert!(
            !shows_upstream_text || text.contains("[REDACTED]"),
            "{args:?} shows the upstream's text: {text}"
        );
        assert_eq!(leaks(&text), Vec::<String>::new(), "{args:?}: {text}");
    }
    // The store and its write-ahead log, byte for byte.
    for file in ["moot.db", "moot.db-wal"] {
        let path = env.store().with_file_name(file);
        let stored = std::fs::read(&path).unwrap_or_default();
        assert_eq!(
            leaks(&String::from_utf8_lossy(&stored)),
            Vec::<String>::new(),
            "{}",
            path.display()
        );
    }
}

/// What `moot serve` sends passes its configuration's redactor too: a stored run whose agent
/// said the key (written by a process whose configuration did not name it, so stored as it
/// was) is served without it — as JSON, as a page (where HTML escaping would hide a key's `/`
/// from a redactor run after it) and as events — and so is an upstream's error echoing it.
#[tokio::test]
async fn keys_in_stored_runs_and_upstream_errors_are_never_served() {
    let env = Env::new();
    let url = echo_server();
    let said = env.write(
        "said.toml",
        &format!(
            "[debate]\nprotocol = \"cot\"\n\n[[agents]]\nid = \"a\"\nbackend = \"scripted\"\nresponses = [{:?}]\n",
            format!("My key is {KEY}, or {}.\nFinal answer: 7", traces(KEY).join(" | "))
        ),
    );
    let out = env
        .moot()
        .env_remove(KEY_VAR)
        .args(["ask", "What is 3 + 4?", "--json", "--config"])
        .arg(&said)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    let run_id = v["run_id"].as_str().unwrap().to_string();
    let deny = config(&env, "deny.toml", &format!("{url}/deny/v1"));
    let s = common::moot_serve(&env, &["--config", &deny], &[(KEY_VAR, KEY)]);
    let client = reqwest::Client::new();
    let mut served = Vec::new();
    for path in [
        format!("/api/runs/{run_id}"),
        format!("/runs/{run_id}"),
        format!("/api/runs/{run_id}/events"),
    ] {
        let text = client
            .get(format!("{}{path}", s.url))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        served.push((path, text));
    }
    // A debate on the upstream that answers 401 with the key it was sent.
    let ask = serde_json::json!({"model": "moot", "messages": [{"role": "user", "content": "What is 3 + 4?"}]});
    let r = client
        .post(format!("{}/v1/chat/completions", s.url))
        .json(&ask)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    served.push(("/v1/chat/completions".into(), r.text().await.unwrap()));
    for (path, text) in &served {
        assert_eq!(leaks(text), Vec::<String>::new(), "{path}: {text}");
    }
    assert!(served[0].1.contains("[REDACTED]"), "{}", served[0].1);
}
