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

/// A server on 127.0.0.1 that answers each request (read whole, as text) with `answer`'s status
/// and JSON body, on a thread of its own; its `http://HOST:PORT`.
fn answering(answer: impl Fn(&str) -> (&'static str, String) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let raw = read_http_request(&mut stream);
                let (status, body) = answer(&String::from_utf8_lossy(&raw));
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

/// The bearer key of a request's head.
fn bearer(text: &str) -> String {
    text.lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("authorization")
                .then(|| value.trim().trim_start_matches("Bearer ").to_string())
        })
        .unwrap_or_default()
}

/// A chat completion whose answer is `content`.
fn chat_answer(content: &str) -> String {
    serde_json::json!({
        "id": "x", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
    })
    .to_string()
}

/// A server that echoes the request's bearer key: under `/deny` as a 401 error, under `/ok` in
/// a chat answer (ending "Final answer: 7").
fn echo_server() -> String {
    answering(|text| {
        let echoed = traces(&bearer(text)).join(" | ");
        if text.starts_with("POST /deny") {
            let error = serde_json::json!({"error": {
                "message": format!("Incorrect API key provided: {echoed}"),
                "type": "invalid_request_error"
            }});
            ("401 Unauthorized", error.to_string())
        } else {
            (
                "200 OK",
                chat_answer(&format!("Your key: {echoed}\nFinal answer: 7")),
            )
        }
    })
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

/// `What is 3 + 4?` asked of the team `moot serve` at `url` serves, through its OpenAI endpoint.
async fn ask_served(client: &reqwest::Client, url: &str) -> reqwest::Response {
    let ask = serde_json::json!({"model": "moot", "messages": [{"role": "user", "content": "What is 3 + 4?"}]});
    client
        .post(format!("{url}/v1/chat/completions"))
        .json(&ask)
        .send()
        .await
        .unwrap()
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
    let r = ask_served(&client, &s.url).await;
    assert_eq!(r.status(), 502);
    served.push(("/v1/chat/completions".into(), r.text().await.unwrap()));
    for (path, text) in &served {
        assert_eq!(leaks(text), Vec::<String>::new(), "{path}: {text}");
    }
    assert!(served[0].1.contains("[REDACTED]"), "{}", served[0].1);
}

/// The password in the agent's `base_url` (`alice:PASSWORD@`).
const PASSWORD: &str = "HunterPassw0rd4242";
/// The token in the agent's `base_url` query (`?key=`).
const URL_TOKEN: &str = "UrlTokenValue99xyzQ";

/// Every form of every credential that must never be written anywhere: the key whole, in
/// base64 (standard and URL-safe, alone and as a `Bearer` header) and hex; the URL's password,
/// also as Basic authentication sends it; the URL's token.
fn credential_forms() -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use base64::Engine;
    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    vec![
        KEY.to_string(),
        STANDARD.encode(KEY),
        URL_SAFE_NO_PAD.encode(KEY),
        STANDARD.encode(format!("Bearer {KEY}")),
        hex.clone(),
        hex.to_ascii_uppercase(),
        PASSWORD.to_string(),
        STANDARD.encode(format!("alice:{PASSWORD}")),
        URL_TOKEN.to_string(),
    ]
}

/// The credential forms (or their first 16 characters) `text` holds.
fn credential_leaks(text: &str) -> Vec<String> {
    credential_forms()
        .into_iter()
        .filter(|form| text.contains(form.as_str()) || text.contains(&form[..16]))
        .collect()
}

/// An upstream that reflects each request in its answer: the request line (with the URL's
/// query), every header, and the bearer key in base64 and hex. Its `HOST:PORT`.
fn reflecting_server() -> String {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use base64::Engine;
    let url = answering(|text| {
        let head = text.split("\r\n\r\n").next().unwrap_or_default();
        let key = bearer(head);
        let hex: String = key.bytes().map(|b| format!("{b:02X}")).collect();
        let content = format!(
            "I saw:\n{head}\nbase64: {} {}\nhex: {hex}\nFinal answer: 7",
            STANDARD.encode(&key),
            URL_SAFE_NO_PAD.encode(format!("Bearer {key}")),
        );
        ("200 OK", chat_answer(&content))
    });
    url.trim_start_matches("http://").to_string()
}

/// A trace collector that keeps the bytes of every request it is sent (OTLP's protobuf holds
/// span names and attributes as plain strings). Its endpoint, and what it got.
fn collector() -> (String, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let raw = read_http_request(&mut stream);
            keep.lock().unwrap().extend_from_slice(&raw);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (url, got)
}

/// Issue 56 items 3 and 8: a password and a token in an agent's `base_url`, and the key in
/// base64 and hex, reach no sink — the terminal, JSON, every `show` format, the store's rows,
/// the run log, transcripts, the served API and pages, `/metrics` and exported spans — though
/// the upstream reflects them all in its answer; identifiers name the URL without them.
#[tokio::test]
async fn no_credential_in_any_form_reaches_any_sink() {
    let env = Env::new();
    let upstream = reflecting_server();
    let (traces_endpoint, spans) = collector();
    let dir = env.dir.path().display().to_string();
    let config = env
        .write(
            "cfg.toml",
            &format!(
                "[debate]\nprotocol = \"cot\"\n\n[retry]\nmax_retries = 0\n\n\
                 [logging]\nfile = \"{dir}/run.log\"\n\n[output]\ntranscript_dir = \"{dir}/transcripts\"\n\n\
                 [telemetry]\notlp_endpoint = \"{traces_endpoint}\"\n\n\
                 [[agents]]\nid = \"a\"\nbackend = \"openai\"\nmodel = \"m\"\n\
                 base_url = \"http://alice:{PASSWORD}@{upstream}/ok/v1?key={URL_TOKEN}\"\napi_key_env = \"{KEY_VAR}\"\n"
            ),
        )
        .display()
        .to_string();
    let mut sinks: Vec<(String, String)> = Vec::new();
    let out = env
        .moot()
        .env(KEY_VAR, KEY)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .args(["ask", "What is 3 + 4?", "--config", &config, "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(v["answer"], "7", "{v}");
    let run_id = v["run_id"].as_str().unwrap().to_string();
    sinks.push((
        "ask --json".into(),
        format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)),
    ));
    let (ok, text) = run(&env, &["ask", "What is 3 + 4?", "--config", &config]);
    assert!(ok, "{text}");
    sinks.push(("ask".into(), text));
    for format in ["markdown", "json", "freemad"] {
        let (ok, text) = run(&env, &["show", &run_id, "--format", format]);
        assert!(ok, "{format}: {text}");
        sinks.push((format!("show --format {format}"), text));
    }
    // The upstream did reflect the credentials: the stored answer holds them, redacted.
    let shown: serde_json::Value = serde_json::from_str(&sinks[3].1).expect("show --format json");
    let answer_text = shown["calls"][0]["response_text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        answer_text.contains("I saw:") && answer_text.contains("[REDACTED]"),
        "{answer_text}"
    );
    // Identifiers name the URL by scheme, host, port and path.
    let backend = shown["calls"][0]["backend"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(backend, format!("openai:m@http://{upstream}/ok/v1"));

    {
        let s = common::moot_serve(&env, &["--config", &config], &[(KEY_VAR, KEY)]);
        let client = reqwest::Client::new();
        let r = ask_served(&client, &s.url).await;
        assert_eq!(r.status(), 200);
        sinks.push(("/v1/chat/completions".into(), r.text().await.unwrap()));
        for path in [
            format!("/api/runs/{run_id}"),
            format!("/runs/{run_id}"),
            format!("/api/runs/{run_id}/events"),
            "/metrics".to_string(),
        ] {
            let r = client.get(format!("{}{path}", s.url)).send().await.unwrap();
            assert_eq!(r.status(), 200, "{path}");
            sinks.push((path, r.text().await.unwrap()));
        }
        let metrics = &sinks.last().unwrap().1;
        assert!(
            metrics.contains(r#"moot_calls_total{backend="openai",model="m",outcome="ok"} 1"#),
            "{metrics}"
        );
    }
    for file in ["moot.db", "moot.db-wal", "run.log"] {
        let path = env.dir.path().join(file);
        let bytes = std::fs::read(&path).unwrap_or_default();
        sinks.push((file.into(), String::from_utf8_lossy(&bytes).into_owned()));
    }
    let transcripts: Vec<_> = std::fs::read_dir(env.dir.path().join("transcripts"))
        .expect("transcripts written")
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!transcripts.is_empty());
    for path in transcripts {
        let bytes = std::fs::read(&path).unwrap();
        sinks.push((
            path.display().to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    let exported = String::from_utf8_lossy(&spans.lock().unwrap()).into_owned();
    assert!(exported.contains("/v1/traces"), "no spans were exported");
    sinks.push(("spans".into(), exported));
    for (sink, text) in &sinks {
        assert_eq!(
            credential_leaks(text),
            Vec::<String>::new(),
            "{sink}: {text}"
        );
    }
}
