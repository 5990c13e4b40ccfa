//! `moot serve`'s pages in a real headless Chromium (Debian's `chromium` and
//! `chromium-driver`, driven over WebDriver): the runs list, a debate started from the form
//! against a local fake model server and followed live, its result and "why this answer won",
//! and a benchmark report.
//!
//! Ignored by default (it needs the browser, which `scripts/setup.sh` installs); `scripts/test`
//! runs it. With `MOOT_SCREENSHOTS=DIR` it also saves the run and benchmark pages as PNGs (the
//! README's screenshots come from there).

use crate::common;

use std::io::Write;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{read_http_request, Env};
use fantoccini::{ClientBuilder, Locator};

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An OpenAI-compatible model server that answers every chat completion after `delay`, so that
/// a debate's calls complete one after another while a page watches.
fn fake_model(delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let _ = read_http_request(&mut stream);
                // Agents answer at different speeds, so calls finish apart.
                std::thread::sleep(delay * (1 + (n % 3) as u32));
                let body = r#"{"id":"x","object":"chat.completion","created":0,"model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":"17 * 24 = 408.\nFinal answer: 408"},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":9,"total_tokens":49}}"#;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes());
            });
        }
    });
    url
}

/// chromedriver on a port of its choosing (`--port=0`), read from the line it announces once
/// it is ready for sessions: no port chosen here, released and raced for.
fn chromedriver() -> (Killed, String) {
    use std::io::BufRead;
    let mut child = Command::new("chromedriver")
        .arg("--port=0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver (Debian: chromium-driver; scripts/setup.sh installs it)");
    let stdout = child.stdout.take().expect("chromedriver's stdout");
    let child = Killed(child);
    let mut lines = std::io::BufReader::new(stdout).lines();
    let port = loop {
        let line = lines
            .next()
            .expect("chromedriver ended before announcing its port")
            .expect("chromedriver's output");
        if let Some(rest) = line.split("started successfully on port ").nth(1) {
            break rest
                .trim_end_matches('.')
                .trim()
                .parse::<u16>()
                .expect("a port");
        }
    };
    // Its later lines go nowhere; reading them keeps chromedriver from blocking on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, format!("http://127.0.0.1:{port}"))
}

async fn wait_for(
    c: &fantoccini::Client,
    what: &str,
    mut ok: impl AsyncFnMut(&fantoccini::Client) -> bool,
) {
    let started = Instant::now();
    while !ok(c).await {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
#[ignore = "drives a real headless Chromium; scripts/test runs it"]
async fn a_debate_is_started_watched_live_and_explained_in_the_browser() {
    let env = Env::new();
    let model = fake_model(Duration::from_millis(350));
    let agents: String = ["a", "b", "c"]
        .iter()
        .map(|id| format!("[[agents]]\nid = \"{id}\"\nbackend = \"openai\"\nbase_url = \"{model}\"\nmodel = \"fake\"\nstream = false\n\n"))
        .collect();
    let cfg = env.write(
        "team.toml",
        &format!("[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"numeric\"\n\n{agents}"),
    );
    // A benchmark to open later, in the same store.
    common::arith_bench(&env, 3);
    let cfg = cfg.display().to_string();
    let server = common::moot_serve(&env, &["--config", &cfg], &[]);
    let url = server.url.clone();
    let (_driver, c) = browser().await;

    // The runs list, empty of debates but the benchmark's.
    c.goto(&url).await.unwrap();
    assert_eq!(c.title().await.unwrap(), "moot · runs");

    // A request the server refuses says why on the form (the script posts to the JSON API).
    c.goto(&format!("{url}/new")).await.unwrap();
    type_into(&c, "textarea[name=question]", "What is 17 * 24?").await;
    type_into(&c, "textarea[name=options]", "topology=moebius").await;
    click(&c, "form.new button[type=submit]").await;
    wait_for(&c, "the refusal", async |c| {
        match c.find(Locator::Id("form-error")).await {
            Ok(e) => e.text().await.is_ok_and(|t| t.contains("moebius")),
            Err(_) => false,
        }
    })
    .await;

    // Start a debate from the form.
    c.goto(&format!("{url}/new")).await.unwrap();
    type_into(&c, "textarea[name=question]", "What is 17 * 24?").await;
    click(&c, "select[name=protocol] option[value=som]").await;
    click(&c, "form.new button[type=submit]").await;
    wait_for(&c, "the run page", async |c| {
        c.current_url()
            .await
            .is_ok_and(|u| u.path().starts_with("/runs/"))
    })
    .await;

    // Calls appear live, one after another, before the debate ends.
    wait_for(&c, "a live call", async |c| {
        c.find_all(Locator::Css("#live-calls tr"))
            .await
            .is_ok_and(|rows| !rows.is_empty())
    })
    .await;
    let first_seen = c
        .find_all(Locator::Css("#live-calls tr"))
        .await
        .unwrap()
        .len();
    assert!(first_seen < 6, "every call was there at once: not live");

    // The page reloads with the whole debate when it is done: no live section any more.
    wait_for(&c, "the finished debate", async |c| {
        text_of(c, "status").await.as_deref() == Some("done")
            && c.find(Locator::Id("live")).await.is_err()
    })
    .await;
    assert_eq!(text_of(&c, "answer").await.as_deref(), Some("408"));
    let why = c.find(Locator::Css("#why")).await.unwrap();
    why.find(Locator::Css("table.why tbody tr"))
        .await
        .expect("a contribution row");
    let why_text = why.text().await.unwrap();
    assert!(
        why_text.contains("Why this answer won") && why_text.contains("vote"),
        "{why_text}"
    );
    // A cell opens to the full response.
    let cell = c
        .find(Locator::Css("table.grid details summary"))
        .await
        .unwrap();
    cell.click().await.unwrap();
    let response = c
        .find(Locator::Css("table.grid details[open] pre.response"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(response.contains("Final answer: 408"));
    shot(&c, "run.png").await;

    // A benchmark's report.
    c.goto(&format!("{url}/benches")).await.unwrap();
    c.find(Locator::LinkText("arith"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let report = c
        .find(Locator::Css("#report table"))
        .await
        .expect("the report's table");
    assert!(report.text().await.unwrap().contains("som"));
    let plot = c.find(Locator::Css("#report img")).await.unwrap();
    let loaded = c
        .execute(
            "return arguments[0].naturalWidth > 0",
            vec![serde_json::to_value(&plot).unwrap()],
        )
        .await
        .unwrap();
    assert_eq!(loaded, serde_json::json!(true), "the plot did not load");
    shot(&c, "benchmark.png").await;
    c.close().await.unwrap();
}

/// A Chromium session over a fresh chromedriver (kept alive by the returned guard).
async fn browser() -> (Killed, fantoccini::Client) {
    let (driver_process, driver) = chromedriver();
    let caps: serde_json::Map<String, serde_json::Value> = serde_json::from_value(serde_json::json!({
        "goog:chromeOptions": {"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1600"]}
    }))
    .unwrap();
    // chromedriver listens on loopback over plain HTTP.
    let http = hyper_util::client::legacy::connect::HttpConnector::new();
    let c = ClientBuilder::new(http)
        .capabilities(caps)
        .connect(&driver)
        .await
        .expect("a Chromium session");
    (driver_process, c)
}

/// A debate whose judge is a person: started from the form, the judge's question waits on
/// `/people` once the debaters are done, the person reads the debate there and answers in the
/// page, and the run finishes with the person's answer stored like any call's.
#[tokio::test]
#[ignore = "drives a real headless Chromium; scripts/test runs it"]
async fn a_person_judges_a_debate_in_the_browser() {
    let env = Env::new();
    let cfg = env.write(
        "people.toml",
        "[debate]\nprotocol = \"judge\"\nrounds = 1\nanswer = \"numeric\"\n\n\
         [[agents]]\nid = \"d1\"\nbackend = \"scripted\"\nresponses = [\"17 * 24 = 408.\\nFinal answer: 408\"]\n\n\
         [[agents]]\nid = \"d2\"\nbackend = \"scripted\"\nresponses = [\"17 * 24 = 418.\\nFinal answer: 418\"]\n\n\
         [[agents]]\nid = \"person\"\nbackend = \"human\"\nrole = \"judge\"\nanswer_within = \"2m\"\n",
    );
    let cfg = cfg.display().to_string();
    let server = common::moot_serve(&env, &["--config", &cfg], &[]);
    let url = server.url.clone();
    let (_driver, c) = browser().await;

    c.goto(&format!("{url}/new")).await.unwrap();
    type_into(&c, "textarea[name=question]", "What is 17 * 24?").await;
    click(&c, "form.new button[type=submit]").await;
    wait_for(&c, "the run page", async |c| {
        c.current_url()
            .await
            .is_ok_and(|u| u.path().starts_with("/runs/"))
    })
    .await;
    let run_path = c.current_url().await.unwrap().path().to_string();

    // The judge's question waits for the person.
    wait_for(&c, "the judge's question on /people", async |c| {
        if c.goto(&format!("{url}/people")).await.is_err() {
            return false;
        }
        c.find(Locator::Css("a.question")).await.is_ok()
    })
    .await;
    click(&c, "a.question").await;
    let page = c
        .find(Locator::Css("main"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("as agent person"), "{page}");
    // The debate so far is on the page: both debaters' answers.
    assert!(
        page.contains("17 * 24 = 408.") && page.contains("17 * 24 = 418."),
        "{page}"
    );
    // An empty answer is refused on the page, and the question still waits.
    click(&c, "form.answer button[value=answer]").await;
    wait_for(&c, "the refusal of an empty answer", async |c| {
        c.find(Locator::Css("p.error")).await.is_ok()
    })
    .await;
    type_into(
        &c,
        "textarea[name=answer]",
        "Agent 1 is right.\nFinal answer: 408",
    )
    .await;
    click(&c, "form.answer button[value=answer]").await;
    wait_for(&c, "the list again, without the question", async |c| {
        c.find(Locator::Id("none-waiting")).await.is_ok()
    })
    .await;

    // The run finishes with the person's verdict.
    c.goto(&format!("{url}{run_path}")).await.unwrap();
    wait_for(&c, "the finished debate", async |c| {
        c.refresh().await.is_ok() && text_of(c, "status").await.as_deref() == Some("done")
    })
    .await;
    assert_eq!(text_of(&c, "answer").await.as_deref(), Some("408"));
    c.close().await.unwrap();
    let run_id = run_path.trim_start_matches("/runs/");
    let shown = env.json(&["show", run_id, "--format", "json"]);
    let judge = shown["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["agent_id"] == "person" && c["skipped"] == false)
        .cloned()
        .expect("the person's call");
    assert_eq!(
        judge["response_text"], "Agent 1 is right.\nFinal answer: 408",
        "{judge}"
    );
    assert!(
        judge["backend"]
            .as_str()
            .unwrap_or_default()
            .starts_with("human"),
        "{judge}"
    );
}

/// The text of the element with id `id`, if the page has it.
async fn text_of(c: &fantoccini::Client, id: &str) -> Option<String> {
    c.find(Locator::Id(id)).await.ok()?.text().await.ok()
}

async fn type_into(c: &fantoccini::Client, css: &str, text: &str) {
    let field = c.find(Locator::Css(css)).await.unwrap();
    field.send_keys(text).await.unwrap();
}

async fn click(c: &fantoccini::Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Saves a screenshot into `MOOT_SCREENSHOTS`, when set.
async fn shot(c: &fantoccini::Client, name: &str) {
    if let Some(dir) = std::env::var_os("MOOT_SCREENSHOTS") {
        let png = c.screenshot().await.unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(std::path::Path::new(&dir).join(name), png).unwrap();
    }
}
