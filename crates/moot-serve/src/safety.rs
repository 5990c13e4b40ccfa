//! What keeps the server safe to run: where it may listen, who may use it, and the headers and
//! limits on every response and request.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use moot_core::redact::Redactor;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::app::App;
use crate::error::ServeError;
use crate::hosts::HostCheck;

/// Scripts and styles come only from this server; nothing may be framed, posted elsewhere or
/// loaded from another origin. Model text is escaped by the templates; this stops what an
/// escaping slip would let through.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The cookie a browser keeps the token in after opening `/?token=…` once.
pub const TOKEN_COOKIE: &str = "moot_token";

/// A server reachable from other machines runs debates on this one's models and keys: it needs
/// a token.
pub fn check_binding(host: IpAddr, token: Option<&str>) -> Result<(), ServeError> {
    if host.is_loopback() {
        return Ok(());
    }
    match token {
        Some(t) if !t.trim().is_empty() => Ok(()),
        _ => Err(ServeError::Refused(format!(
            "refusing to listen on {host} without a token: anyone who can reach it could run debates on this machine's models and API keys and read every stored run. Give --token (or MOOT_SERVE_TOKEN), or listen on 127.0.0.1"
        ))),
    }
}

/// With a token, a request needs it as `Authorization: Bearer TOKEN` (or the cookie a browser
/// got from `/?token=TOKEN`, which this sets and redirects away from).
pub async fn require_token(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let Some(token) = app.token.as_deref() else {
        return next.run(request).await;
    };
    // Auth schemes are case-insensitive (RFC 9110 §11.1): `bearer TOKEN` is as good.
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    let cookie = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == TOKEN_COOKIE)
        .map(|(_, v)| v);
    if bearer.is_some_and(|b| same(b, token)) || cookie.is_some_and(|c| same(c, token)) {
        return next.run(request).await;
    }
    // A browser opening the link with the token once: keep it in a cookie, drop it from the URL.
    let query_token = request.uri().query().and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == "token")
            .map(|(_, v)| v.to_string())
    });
    if request.method() == axum::http::Method::GET {
        if let Some(t) = query_token.filter(|t| same(t, token)) {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::SEE_OTHER;
            // One leading slash: `//evil.example/` would send the browser to another site.
            let path = format!("/{}", request.uri().path().trim_start_matches(['/', '\\']));
            if let Ok(v) = HeaderValue::from_str(&path) {
                response.headers_mut().insert(header::LOCATION, v);
            }
            if let Ok(v) = HeaderValue::from_str(&format!(
                "{TOKEN_COOKIE}={t}; HttpOnly; SameSite=Strict; Path=/"
            )) {
                response.headers_mut().insert(header::SET_COOKIE, v);
            }
            return response;
        }
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "this server needs its token: Authorization: Bearer TOKEN (or open /?token=TOKEN once in a browser)\n",
    )
        .into_response()
}

/// Refuses a request whose `Host` does not name this server (403), or that has no `Host` the
/// server can read — none, more than one, not text, not an authority (400): what it cannot read
/// it cannot check. A request line in absolute form (`GET http://NAME/…`) must name this
/// server too. Refuses a request that changes something (any method but GET, HEAD and OPTIONS)
/// sent by a page of another origin: its `Origin` is not this server's (or is `null` without
/// the browser's `Sec-Fetch-Site: same-origin`, as a page's own form is posted under the
/// no-referrer policy), or its `Sec-Fetch-Site` says cross-site or same-site. Clients that send
/// neither (curl, OpenAI clients) are not browsers on another site and pass.
pub async fn check_host_and_origin(
    State(app): State<Arc<App>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let mut hosts = headers.get_all(header::HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (None, _) => {
            return unreadable("a request needs a Host header naming this server\n".into())
        }
        (Some(_), Some(_)) => {
            return unreadable("a request may have one Host header, not more\n".into())
        }
        (Some(value), None) => match value.to_str() {
            Ok(host) => host,
            Err(_) => return unreadable("the Host header is not readable text\n".into()),
        },
    };
    let named = std::iter::once(host.to_string())
        .chain(request.uri().authority().map(|a| a.as_str().to_string()));
    for authority in named {
        match app.hosts.check(&authority) {
            HostCheck::Served => {}
            HostCheck::Malformed => {
                return unreadable(format!(
                    "the host {authority:?} is not a host name with an optional port\n"
                ))
            }
            HostCheck::Foreign(name) => {
                return refuse(format!(
                    "this server does not answer to the name {name:?}; start it with --allow-host NAME to serve that name\n"
                ))
            }
        }
    }
    let changes = !matches!(
        *request.method(),
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
    );
    if changes {
        let fetch_site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase);
        if fetch_site
            .as_deref()
            .is_some_and(|s| s != "same-origin" && s != "none")
        {
            return refuse("requests from other sites may not change anything here\n".into());
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            // Under this server's `Referrer-Policy: no-referrer` a browser sends `Origin: null`
            // with a page's own form; its `Sec-Fetch-Site: same-origin`, which no page can set,
            // says the form is this server's.
            let own_form =
                origin.as_bytes() == b"null" && fetch_site.as_deref() == Some("same-origin");
            let same = own_form
                || origin
                    .to_str()
                    .ok()
                    .and_then(|o| o.split_once("://"))
                    .map(|(_, rest)| rest.split('/').next().unwrap_or(""))
                    .is_some_and(|authority| authority.eq_ignore_ascii_case(host.trim()));
            if !same {
                return refuse("requests from other sites may not change anything here\n".into());
            }
        }
    }
    next.run(request).await
}

fn unreadable(message: String) -> Response {
    (StatusCode::BAD_REQUEST, message).into_response()
}

fn refuse(message: String) -> Response {
    (StatusCode::FORBIDDEN, message).into_response()
}

/// Compares without stopping at the first different byte, so timing does not tell how much of
/// a guess was right.
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The headers every response carries, the request body cap, and the redactor every whole
/// response passes (`redaction`).
pub fn harden<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    max_body: usize,
    redactor: Arc<Redactor>,
) -> Router<S> {
    router
        .layer(axum::middleware::from_fn_with_state(
            redactor,
            crate::redaction::redact_bodies,
        ))
        .layer(RequestBodyLimitLayer::new(max_body))
        .layer(SetResponseHeaderLayer::overriding(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_goes_without_a_token() {
        assert!(check_binding("127.0.0.1".parse().unwrap(), None).is_ok());
        assert!(check_binding("::1".parse().unwrap(), None).is_ok());
        let err = check_binding("0.0.0.0".parse().unwrap(), None).unwrap_err();
        assert!(err.to_string().contains("--token"), "{err}");
        assert!(check_binding("0.0.0.0".parse().unwrap(), Some(" ")).is_err());
        assert!(check_binding("0.0.0.0".parse().unwrap(), Some("s3cret")).is_ok());
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "abcd"));
    }
}
