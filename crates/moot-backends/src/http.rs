//! What the HTTP providers share: turning an error response into a [`BackendError`] the same
//! way for all of them (status, `Retry-After`, a bounded body).

use std::error::Error as StdError;
use std::time::{Duration, SystemTime};

use secrecy::SecretString;
use serde_json::Value;

use crate::{BackendError, Completion};

/// How much of an error body is kept in an error.
pub const MAX_ERROR_BODY: usize = 2000;

/// The longest wait a server's `Retry-After` may ask for; longer asks are capped to it.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// The wait a `Retry-After` value asks for: delta-seconds (`"2"`, also fractional `"1.5"`) or an
/// HTTP date, counted from `now`. Negative, unparsable or past values give `None`; long waits
/// are capped at [`MAX_RETRY_AFTER`].
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let wait = match value.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => {
            Duration::from_secs_f64(seconds.min(MAX_RETRY_AFTER.as_secs_f64()))
        }
        Ok(_) => return None,
        Err(_) => httpdate::parse_http_date(value)
            .ok()?
            .duration_since(now)
            .ok()?,
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

/// The wait an error response's headers ask for: `retry-after-ms` (OpenAI, Azure) first, then
/// `Retry-After`.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0).min(MAX_RETRY_AFTER));
        }
    }
    header("retry-after").and_then(|v| parse_retry_after(v, SystemTime::now()))
}

/// A non-success response as an error: 429 becomes [`BackendError::RateLimited`] with the wait
/// the server asked for, anything else [`BackendError::Http`]; the body is trimmed and bounded.
pub async fn error_from_response(response: reqwest::Response) -> BackendError {
    let status = response.status().as_u16();
    let wait = retry_after(response.headers());
    let body = match read_up_to(response, MAX_ERROR_READ).await {
        Ok((bytes, true)) => truncate(String::from_utf8_lossy(&bytes).trim(), MAX_ERROR_BODY),
        Ok((bytes, false)) => format!(
            "{}… (more than {MAX_ERROR_READ} bytes)",
            prefix(String::from_utf8_lossy(&bytes).trim(), MAX_ERROR_BODY)
        ),
        Err(e) => format!("(the error body could not be read: {})", describe(&e)),
    };
    if status == 429 {
        BackendError::RateLimited {
            retry_after: wait,
            body,
        }
    } else {
        BackendError::Http { status, body }
    }
}

/// The first `max` bytes of `text` (cut at a character boundary), marked when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    format!("{}… ({} bytes in all)", prefix(text, max), text.len())
}

/// The longest start of `text` of at most `max` bytes that ends on a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// How much of an error response is read (enough to parse any real error object); the rest is
/// never read.
const MAX_ERROR_READ: usize = 64 << 10;

/// Reads at most `cap` bytes of a body: the bytes and whether that was all of it. Nothing past
/// the cap is kept, so a server sending without end cannot exhaust memory.
async fn read_up_to(
    response: reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    use futures_util::StreamExt;
    let mut body = Vec::new();
    let mut chunks = std::pin::pin!(response.bytes_stream());
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}

/// An `f32` as the JSON number a person would write (`0.7`, not `0.699999988079071`).
pub fn float(name: &str, x: f32) -> Result<Value, BackendError> {
    if !x.is_finite() {
        return Err(BackendError::Config(format!(
            "{name} must be a finite number, not {x}"
        )));
    }
    let shortest: f64 = x.to_string().parse().unwrap_or(f64::from(x));
    Ok(Value::from(shortest))
}

/// An error and its sources, `outer: inner: innermost` (reqwest's own message is terse). A URL
/// reqwest names is shown as [`display_url`] shows it: a password or token in it is no part of
/// a message.
pub fn describe(error: &(dyn StdError + 'static)) -> String {
    let mut text = without_credentials(error);
    let mut source = error.source();
    while let Some(s) = source {
        let part = without_credentials(s);
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// `error`'s own message, with the URL of a reqwest error as [`display_url`] shows it.
fn without_credentials(error: &(dyn StdError + 'static)) -> String {
    let text = error.to_string();
    match error
        .downcast_ref::<reqwest::Error>()
        .and_then(reqwest::Error::url)
    {
        Some(url) => text.replace(url.as_str(), &display_url(url)),
        None => text,
    }
}

/// A URL as moot names it in messages and identifiers: scheme, host, port and path. Never its
/// user, password, query or fragment, which can hold credentials (`user:pass@`, `?key=`).
pub fn display_url(url: &reqwest::Url) -> String {
    let mut shown = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(url.path());
    shown
}

/// A configured base URL as [`display_url`] shows it. One that does not parse is shown up to
/// the first character that could start credentials (`@`, `?`, `#`): no request goes there.
pub fn display_base_url(base_url: &str) -> String {
    match reqwest::Url::parse(base_url.trim()) {
        Ok(url) => display_url(&url),
        Err(_) => {
            let end = base_url.find(['@', '?', '#']).unwrap_or(base_url.len());
            format!("{}…", &base_url[..end])
        }
    }
}

/// The credentials a URL carries, to be redacted wherever they would be written: its user name
/// (which can be a token) and password, also as `user:password` (what Basic authentication
/// sends, base64-encoded), and the values of query parameters whose names say they hold one
/// (`key`, `api_key`, `token`, `sig`, …), each as written and decoded.
pub fn url_credentials(url: &str) -> Vec<String> {
    let Ok(parsed) = reqwest::Url::parse(url.trim()) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    // A user name can be the token itself (`https://TOKEN@host`, sent as Basic `TOKEN:`).
    let user = percent_decoded(parsed.username());
    if !user.is_empty() {
        found.push(parsed.username().to_string());
        found.push(user.clone());
        found.push(format!("{user}:"));
    }
    // The URL as written: `url` re-encodes some characters (`;`, `^`, a space, non-ASCII), so a
    // password mixing them with `%XX` escapes is in neither of its forms.
    let (written_user, written_password, written_query) = written_parts(url.trim());
    if let Some(user) = written_user.filter(|u| !u.is_empty()) {
        found.push(user.to_string());
    }
    if let Some(password) = written_password.filter(|p| !p.is_empty()) {
        found.push(password.to_string());
    }
    if let Some(password) = parsed.password() {
        found.push(password.to_string());
        let decoded = percent_decoded(password);
        found.push(format!("{user}:{decoded}"));
        found.push(decoded);
    }
    // As written (split by hand: `query_pairs` decodes) and decoded.
    let query = [
        parsed.query().unwrap_or_default(),
        written_query.unwrap_or_default(),
    ];
    for pair in query.iter().flat_map(|q| q.split('&')) {
        let (name, raw) = pair.split_once('=').unwrap_or((pair, ""));
        if !raw.is_empty() && names_a_credential(&percent_decoded(name)) {
            found.push(raw.to_string());
        }
    }
    for (name, value) in parsed.query_pairs() {
        if !value.is_empty() && names_a_credential(&name) {
            found.push(value.into_owned());
        }
    }
    found.sort();
    found.dedup();
    found
}

/// What of a URL typed on a command line to hide there: its password and secret query
/// values in every form; its user name only when there is no password (the name can then be
/// a token, `https://TOKEN@host`), since hiding a short name everywhere in the URL would hide
/// pieces of its host and path too.
pub fn hidden_on_a_command_line(url: &str) -> Vec<String> {
    let found = url_credentials(url);
    let (user, password, _) = written_parts(url.trim());
    let (Some(user), Some(_)) = (user, password) else {
        return found;
    };
    let decoded = percent_decoded(user);
    let with_colon = format!("{decoded}:");
    found
        .into_iter()
        .filter(|f| f != user && *f != decoded && !f.starts_with(&with_colon))
        .collect()
}

/// The user name, password and query of `url` as its text writes them (no decoding, no
/// re-encoding): the user information is what lies between `://` and the authority's last `@`.
fn written_parts(url: &str) -> (Option<&str>, Option<&str>, Option<&str>) {
    let Some((_, rest)) = url.split_once("://") else {
        return (None, None, None);
    };
    let rest = rest.split('#').next().unwrap_or(rest);
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(authority_end);
    let query = after.split_once('?').map(|(_, q)| q);
    let Some((userinfo, _host)) = authority.rsplit_once('@') else {
        return (None, None, query);
    };
    match userinfo.split_once(':') {
        Some((user, password)) => (Some(user), Some(password), query),
        None => (Some(userinfo), None, query),
    }
}

/// Whether a query parameter of this name holds a credential.
fn names_a_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key", "token", "sig", "secret", "pass", "auth", "cred", "session",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// `text` with its `%XX` escapes decoded, lossily.
fn percent_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// Redirects followed only within the origin (scheme, host and port) a request was sent to: a
/// server cannot send moot's prompts, or its key, anywhere else. Another origin fails the call,
/// naming where it pointed.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let from = attempt.previous().first().map(reqwest::Url::origin);
        if from.is_some_and(|from| from != attempt.url().origin()) {
            let location = display_url(attempt.url());
            attempt.error(format!(
                "the server redirected to {location}, another origin than base_url's; moot follows redirects only within it"
            ))
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// reqwest's own limit.
const MAX_REDIRECTS: usize = 10;

/// The API key in the environment variable `var` names (`None`: no key, for local servers).
/// Read once, when a model is built; empty, unset or non-UTF-8 variables are errors naming it.
/// The key is held as a [`SecretString`]: it prints as `[REDACTED]` and is wiped on drop.
pub fn api_key_from_env(var: Option<&str>) -> Result<Option<SecretString>, BackendError> {
    let Some(var) = var else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(key) if !key.trim().is_empty() => Ok(Some(SecretString::from(key.trim()))),
        Ok(_) => Err(BackendError::Config(format!(
            "api_key_env names {var}, which is empty"
        ))),
        Err(std::env::VarError::NotPresent) => Err(BackendError::Config(format!(
            "api_key_env names {var}, which is not set"
        ))),
        Err(std::env::VarError::NotUnicode(_)) => Err(BackendError::Config(format!(
            "api_key_env names {var}, which is not valid UTF-8"
        ))),
    }
}

/// `base_url` joined with `path`, which must be http or https. The path goes after the base's
/// path, before its query (`…/v1?api-version=X` posts to `…/v1/chat/completions?api-version=X`).
pub fn endpoint(base_url: &str, path: &str) -> Result<reqwest::Url, BackendError> {
    let shown = display_base_url(base_url);
    let mut url = reqwest::Url::parse(base_url.trim())
        .map_err(|e| BackendError::Config(format!("base_url {shown:?}: {e}")))?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(BackendError::Config(format!(
                "base_url {shown:?}: scheme {other:?} is not http or https"
            )))
        }
    }
    let joined = format!("{}/{path}", url.path().trim_end_matches('/'));
    url.set_path(&joined);
    Ok(url)
}

/// What an HTTP provider holds: where it posts, the key it sends (a secret: printed redacted,
/// wiped on drop) and a client.
#[derive(Debug)]
pub struct HttpEndpoint {
    pub url: reqwest::Url,
    pub api_key: Option<SecretString>,
    pub client: reqwest::Client,
}

impl HttpEndpoint {
    /// Checks the URL, the model name and reads the key from the variable `api_key_env` names.
    pub fn new(
        url: reqwest::Url,
        model: &str,
        api_key_env: Option<&str>,
    ) -> Result<HttpEndpoint, BackendError> {
        let api_key = api_key_from_env(api_key_env)?;
        if model.trim().is_empty() {
            return Err(BackendError::Config("the model name is empty".into()));
        }
        let client = reqwest::Client::builder()
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| BackendError::Config(format!("HTTP client: {}", describe(&e))))?;
        Ok(HttpEndpoint {
            url,
            api_key,
            client,
        })
    }

    /// Sends `call`, asking for server-sent events when `stream`. A failed connection is a
    /// transport error and a non-success status an error from [`error_from_response`].
    pub async fn send(
        &self,
        mut call: reqwest::RequestBuilder,
        stream: bool,
    ) -> Result<reqwest::Response, BackendError> {
        if stream {
            call = call.header(reqwest::header::ACCEPT, "text/event-stream");
        }
        let response = call
            .send()
            .await
            .map_err(|e| BackendError::Transport(describe(&e)))?;
        if !response.status().is_success() {
            return Err(error_from_response(response).await);
        }
        Ok(response)
    }

    /// Sends `call` and reads the answer as `A` does: its events as they come when `stream`,
    /// else the whole body; an error response as `A` reads its provider's errors.
    pub async fn answer<A: Answer>(
        &self,
        call: reqwest::RequestBuilder,
        stream: bool,
    ) -> Result<Completion, BackendError> {
        let response = self.send(call, stream).await.map_err(A::error)?;
        if stream {
            read_answer::<A, _, _, _>(response.bytes_stream()).await
        } else {
            A::parse(&body_text(response).await?)
        }
    }
}

/// How a provider reads its answers, whole or as server-sent events: what
/// [`HttpEndpoint::answer`] needs to end every call of every provider the same way. The
/// streamed answer is assembled in the implementing value, one event at a time.
pub trait Answer: Default {
    /// One whole (non-streamed) response body.
    fn parse(body: &str) -> Result<Completion, BackendError>;
    /// Takes one event, its name and data; `Ok(true)` once the answer is complete.
    fn take_event(&mut self, name: &str, data: &str) -> Result<bool, BackendError>;
    /// The answer, once the events have ended.
    fn finish(self) -> Result<Completion, BackendError>;
    /// An error response (from [`error_from_response`]) as the provider's errors read; by
    /// default as it is.
    fn error(error: BackendError) -> BackendError {
        error
    }
}

/// Reads a server-sent-event byte stream into an answer as `A` does; stops reading once `A`
/// has the whole answer.
pub async fn read_answer<A, S, B, E>(bytes: S) -> Result<Completion, BackendError>
where
    A: Answer,
    S: futures_util::Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: StdError + 'static,
{
    let mut answer = A::default();
    read_events(bytes, |name, data| answer.take_event(name, data)).await?;
    answer.finish()
}

/// A whole (non-streamed) response body as text; one over [`MAX_RESPONSE_BYTES`] is abandoned.
pub async fn body_text(response: reqwest::Response) -> Result<String, BackendError> {
    match read_up_to(response, MAX_RESPONSE_BYTES).await {
        Ok((bytes, true)) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Ok((_, false)) => Err(BackendError::InvalidResponse(format!(
            "the response is larger than {MAX_RESPONSE_BYTES} bytes"
        ))),
        Err(e) => Err(BackendError::Transport(format!(
            "reading the response: {}",
            describe(&e)
        ))),
    }
}

/// The most one answer may carry, as one body or as a stream's event data; past it the response
/// is abandoned (a server that sends forever cannot exhaust memory before the deadline).
pub const MAX_RESPONSE_BYTES: usize = 8 << 20;

/// Reads a server-sent-event byte stream, handing each event's name and data to `on_event`
/// until it says the answer is complete (`Ok(true)`) or the stream ends. A broken connection,
/// bytes that are not UTF-8, a malformed stream and a stream over [`MAX_RESPONSE_BYTES`] are
/// errors; so is whatever `on_event` returns.
pub async fn read_events<S, B, E>(
    bytes: S,
    mut on_event: impl FnMut(&str, &str) -> Result<bool, BackendError>,
) -> Result<(), BackendError>
where
    S: futures_util::Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: StdError + 'static,
{
    use eventsource_stream::{EventStreamError, Eventsource};
    use futures_util::StreamExt;
    let mut events = std::pin::pin!(bytes.eventsource());
    let mut seen = 0usize;
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                seen += event.data.len();
                if seen > MAX_RESPONSE_BYTES {
                    return Err(BackendError::InvalidResponse(format!(
                        "the stream sent more than {MAX_RESPONSE_BYTES} bytes without finishing"
                    )));
                }
                if on_event(&event.event, &event.data)? {
                    return Ok(());
                }
            }
            Err(EventStreamError::Transport(e)) => {
                return Err(BackendError::Transport(format!(
                    "stream ended before the answer was complete: {}",
                    describe(&e)
                )))
            }
            Err(EventStreamError::Utf8(e)) => {
                return Err(BackendError::InvalidResponse(format!(
                    "event stream is not UTF-8: {e}"
                )))
            }
            Err(EventStreamError::Parser(e)) => {
                return Err(BackendError::InvalidResponse(format!(
                    "malformed event stream: {e}"
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shown_url_keeps_scheme_host_port_and_path_only() {
        for (url, shown) in [
            (
                "http://alice:pw@127.0.0.1:8080/v1?key=t#f",
                "http://127.0.0.1:8080/v1",
            ),
            ("https://api.example.com/v1/", "https://api.example.com/v1/"),
            ("http://[::1]:9/x?sig=1", "http://[::1]:9/x"),
            ("not a url user:pw@host?key=1", "not a url user:pw…"),
        ] {
            assert_eq!(display_base_url(url), shown, "{url}");
        }
    }

    #[test]
    fn a_urls_credentials_are_its_password_and_secret_looking_query_values() {
        let found = url_credentials(
            "http://alice:p%40ss%3Aword@h/v1?api-version=2024-02-01&key=K%2B1&access_token=T&sig=S",
        );
        for expected in [
            "p%40ss%3Aword",
            "p@ss:word",
            "alice:p@ss:word",
            "K%2B1",
            "K+1",
            "T",
            "S",
        ] {
            assert!(
                found.contains(&expected.to_string()),
                "{expected}: {found:?}"
            );
        }
        assert!(!found.iter().any(|f| f.contains("2024")), "{found:?}");
        assert!(url_credentials("http://h/v1").is_empty());
        let token = url_credentials("https://ghtokUSERONLY1234567@h/v1");
        assert!(
            token.contains(&"ghtokUSERONLY1234567".to_string()),
            "{token:?}"
        );
        assert!(
            token.contains(&"ghtokUSERONLY1234567:".to_string()),
            "{token:?}"
        );
        assert!(url_credentials("::").is_empty());
    }

    #[test]
    fn a_password_is_a_credential_as_written_though_url_would_write_it_otherwise() {
        // `url` re-encodes `;`, `^`, a space, `"` and non-ASCII: a password mixing them with
        // `%XX` escapes is then in neither its re-encoded nor its decoded form.
        for (url, written) in [
            ("postgres://moot:PW-a%40b;c@127.0.0.1:5432/db", "PW-a%40b;c"),
            ("postgres://moot:PW-a%40b^c@h/db", "PW-a%40b^c"),
            ("postgres://moot:PW-a%40b c@h/db", "PW-a%40b c"),
            ("postgres://moot:PW\u{e4}-x%21@h/db", "PW\u{e4}-x%21"),
            (
                "postgres://h/db?user=moot&password=PW-a%40b\"c",
                "PW-a%40b\"c",
            ),
        ] {
            let found = url_credentials(url);
            assert!(found.contains(&written.to_string()), "{url}: {found:?}");
        }
    }

    #[test]
    fn a_user_name_is_hidden_on_the_command_line_only_when_it_can_be_the_token() {
        let with_password = hidden_on_a_command_line("postgres://b:pw@db/b");
        assert_eq!(with_password, vec!["pw".to_string()]);
        let token_as_user = hidden_on_a_command_line("https://ghtok123@h/v1");
        assert!(
            token_as_user.contains(&"ghtok123".to_string()),
            "{token_as_user:?}"
        );
    }

    #[test]
    fn the_path_goes_before_the_base_urls_query() {
        let url = endpoint("https://h/openai/v1/?api-version=1", "chat/completions").unwrap();
        assert_eq!(
            url.as_str(),
            "https://h/openai/v1/chat/completions?api-version=1"
        );
        let e = endpoint("ftp://alice:pw@h/", "x").unwrap_err().to_string();
        assert!(e.contains("ftp://h/") && !e.contains("pw"), "{e}");
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(" 1.5 ", now),
            Some(Duration::from_millis(1500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), None);
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("NaN", now), None);
        assert_eq!(parse_retry_after("99999999", now), Some(MAX_RETRY_AFTER));
    }

    #[test]
    fn errors_are_classified_the_same_for_every_provider() {
        use crate::ErrorClass::*;
        let http = |status: u16, body: &str| BackendError::Http {
            status,
            body: body.into(),
        };
        assert_eq!(http(500, "").class(), Transient);
        assert_eq!(http(529, "overloaded").class(), Transient);
        assert_eq!(http(429, "").class(), RateLimited);
        assert_eq!(http(401, "bad key").class(), Permanent);
        // Only 408, 409, 429 and 5xx among the statuses are worth another try.
        for status in [408, 409, 500, 502, 503, 504] {
            assert_eq!(http(status, "").class(), Transient, "{status}");
        }
        for status in [400, 401, 403, 404, 405, 410, 413, 415, 422, 425, 451] {
            assert_eq!(http(status, "").class(), Permanent, "{status}");
        }
        assert_eq!(
            BackendError::AgentFailed("exit status: 3".into()).class(),
            Permanent
        );
        assert_eq!(
            BackendError::Process("broken pipe".into()).class(),
            Transient
        );
        assert_eq!(
            http(400, "This model's maximum context length is 4096 tokens").class(),
            ContextLength
        );
        assert_eq!(
            http(400, r#"{"error":{"code":"context_length_exceeded"}}"#).class(),
            ContextLength
        );
        assert_eq!(
            http(400, "prompt is too long: 210000 tokens").class(),
            ContextLength
        );
        assert_eq!(http(400, "temperature must be <= 2").class(), Permanent);
        assert_eq!(
            http(
                400,
                "The decoder prompt (length 5000) is longer than the maximum model length of 4096"
            )
            .class(),
            ContextLength
        );
        // Out of credit (OpenAI): a 429 that waiting cannot fix.
        let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert_eq!(http(429, quota).class(), Permanent);
        let out_of_credit = BackendError::RateLimited {
            retry_after: Some(Duration::from_secs(3)),
            body: quota.into(),
        };
        assert_eq!(out_of_credit.class(), Permanent);
        assert_eq!(BackendError::Transport("reset".into()).class(), Transient);
        assert_eq!(BackendError::Timeout.class(), Transient);
        assert_eq!(
            BackendError::TimeLimit("the call's budget".into()).class(),
            Transient
        );
        assert_eq!(BackendError::Config("x".into()).class(), Permanent);
        assert_eq!(BackendError::Cancelled.class(), Cancelled);
        let limited = BackendError::RateLimited {
            retry_after: Some(Duration::from_secs(3)),
            body: String::new(),
        };
        assert_eq!(limited.class(), RateLimited);
        let retried = BackendError::Retried {
            attempts: Vec::new(),
            last: Box::new(limited),
        };
        assert_eq!(retried.class(), RateLimited);
        assert_eq!(retried.retry_after(), Some(Duration::from_secs(3)));
    }

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncate("héllo", 2), "h… (6 bytes in all)");
        assert_eq!(truncate("hello", 10), "hello");
    }
}
