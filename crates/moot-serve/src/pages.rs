//! The pages: server-rendered HTML (minijinja, which escapes every value in `.html` templates,
//! so a response holding `<script>` shows as text), one small script for live updates, one
//! style sheet. No build step.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Form, Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use minijinja::context;
use moot_store::StoreError;
use serde::{Deserialize, Serialize};

use crate::api::{ListQuery, PAGE_SIZE};
use crate::app::{App, LoadedRun, StartError, MAX_PAGE_CALLS, PAGE_CALLS};
use crate::links::{cursor_text, parse_cursor, percent_encode, run_href, PageQuery};
use moot_app::service::{AgentsChoice, DebateRequest, RunnerError};
use moot_app::view::{shorten, RunView};

pub(crate) fn render(app: &App, name: &str, ctx: minijinja::Value) -> Response {
    let ctx = crate::redaction::redact_context(&app.redactor, ctx);
    match app.templates.get_template(name).and_then(|t| t.render(ctx)) {
        Ok(html) => Html(html).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("rendering {name}: {e}"),
        )
            .into_response(),
    }
}

pub(crate) fn page_error(status: StatusCode, message: &str) -> Response {
    // Plain text: nothing in it is read as HTML.
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{message}\n"),
    )
        .into_response()
}

pub(crate) fn store_page_error(e: StoreError) -> Response {
    match e {
        StoreError::RunNotFound(_) => page_error(StatusCode::NOT_FOUND, &e.to_string()),
        other => page_error(StatusCode::INTERNAL_SERVER_ERROR, &other.to_string()),
    }
}

#[derive(Serialize)]
struct RunRow {
    id: String,
    created_at: String,
    protocol: String,
    question_short: String,
    answer_short: String,
    status: String,
}

/// `GET /`: runs newest first, filtered and paged.
pub async fn runs(State(app): State<Arc<App>>, Query(q): Query<ListQuery>) -> Response {
    let mut runs = match app.store.list_runs(&q.filter()).await {
        Ok(r) => r,
        Err(e) => return store_page_error(e),
    };
    let more = runs.len() > PAGE_SIZE as usize;
    runs.truncate(PAGE_SIZE as usize);
    let rows: Vec<RunRow> = runs
        .iter()
        .map(|r| RunRow {
            id: r.id.clone(),
            created_at: r.created_at.clone(),
            protocol: r.protocol.clone(),
            question_short: shorten(&r.question, 90),
            answer_short: r.answer.as_deref().map_or("—".into(), |a| shorten(a, 40)),
            status: r.shown_status().into(),
        })
        .collect();
    let mut kept = Vec::new();
    for (k, v) in [
        ("protocol", &q.protocol),
        ("answer", &q.answer),
        ("from", &q.from),
        ("to", &q.to),
    ] {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
            kept.push(format!("{k}={}", percent_encode(v)));
        }
    }
    let protocols: Vec<&str> = moot_core::protocol::PROTOCOLS
        .iter()
        .map(|p| p.name)
        .collect();
    render(
        &app,
        "runs.html",
        context! {
            runs => rows,
            more => more,
            page => q.page.unwrap_or(1).max(1),
            protocols => protocols,
            query => context! { protocol => q.protocol, answer => q.answer, from => q.from, to => q.to },
            query_string => kept.join("&"),
        },
    )
}

/// `GET /runs/ID[?after=CURSOR]`: the run, drawn from a page of its calls (as
/// `/api/runs/ID` pages them); a run with more links to its later calls.
pub async fn run(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(page): Query<PageQuery>,
) -> Response {
    let after = match parse_cursor(page.after.as_deref()) {
        Ok(after) => after,
        Err(m) => return page_error(StatusCode::BAD_REQUEST, &m),
    };
    let paged = page.after.as_deref().is_some_and(|a| !a.is_empty());
    let limit = page.limit.unwrap_or(PAGE_CALLS).clamp(1, MAX_PAGE_CALLS);
    let LoadedRun {
        run,
        calls,
        decisions,
        checks,
    } = match app.load_run(&id, &after, limit).await {
        Ok(x) => x,
        Err(e) => return store_page_error(e),
    };
    let forks = match app
        .store
        .forks_of(&id, moot_app::run_records::MAX_FORKS_SHOWN)
        .await
    {
        Ok(forks) => forks,
        Err(e) => return store_page_error(e),
    };
    let lineage = moot_app::view::lineage(&run, &forks);
    let v = moot_app::view::run_view(&run, &calls.calls, &decisions, &checks);
    let topology = topology_svg(&v);
    let here = run_href("/runs/", &id);
    let next = calls
        .next
        .as_ref()
        .map(|c| format!("{here}?after={}&limit={limit}", cursor_text(c)));
    render(
        &app,
        "run.html",
        context! {
            v => v, topology => topology, lineage => lineage,
            page => context! { next => next, first => paged.then_some(here), shown => calls.calls.len() },
        },
    )
}

/// Who read whom in the last round, as an SVG: agents on a circle, an arrow from each agent to
/// every peer it read. Built from numbers and escaped ids only.
fn topology_svg(v: &RunView) -> String {
    let n = v.agents.len();
    if n == 0 {
        return "<p class=\"empty\">No calls yet.</p>".into();
    }
    let last = v.edges.iter().map(|e| e.0).max();
    let edges: Vec<(u32, u32)> = v
        .edges
        .iter()
        .filter(|e| Some(e.0) == last)
        .map(|e| (e.1, e.2))
        .collect();
    let (size, radius) = (320.0_f64, 120.0_f64);
    let at = |i: usize| {
        let angle = std::f64::consts::TAU * i as f64 / n as f64 - std::f64::consts::FRAC_PI_2;
        (
            size / 2.0 + radius * angle.cos(),
            size / 2.0 + radius * angle.sin(),
        )
    };
    let mut svg = format!(
        "<svg class=\"topology\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{size}\" height=\"{size}\" viewBox=\"0 0 {size} {size}\" role=\"img\" aria-label=\"who read whom\"><defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#6b7280\"/></marker></defs>"
    );
    for (reader, peer) in &edges {
        let ((x1, y1), (x2, y2)) = (at(*peer as usize), at(*reader as usize));
        // Stop short of the circle: arrows point from the read agent to the reader.
        let (dx, dy) = (x2 - x1, y2 - y1);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let (ux, uy) = (dx / len, dy / len);
        svg.push_str(&format!(
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#9ca3af\" marker-end=\"url(#arrow)\"/>",
            x1 + ux * 18.0,
            y1 + uy * 18.0,
            x2 - ux * 18.0,
            y2 - uy * 18.0
        ));
    }
    for (i, a) in v.agents.iter().enumerate() {
        let (x, y) = at(i);
        svg.push_str(&format!(
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"16\" fill=\"#dbeafe\" stroke=\"#1d4ed8\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{}</text>",
            y + 4.0,
            escape(&shorten(&a.agent_id, 8))
        ));
    }
    svg.push_str("</svg>");
    if edges.is_empty() {
        svg.push_str("<p class=\"hint\">No agent read another in the last round.</p>");
    } else {
        svg.push_str("<p class=\"hint\">The last round: an arrow from each agent to every agent that read it.</p>");
    }
    svg
}

/// HTML-escapes text placed into markup built here.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
pub struct NewForm {
    #[serde(default)]
    question: String,
    #[serde(default)]
    protocol: Option<String>,
    #[serde(default)]
    agents: Option<String>,
    #[serde(default)]
    rounds: Option<String>,
    #[serde(default)]
    options: Option<String>,
    /// Configured agents ticked on the form (their ids); when any is, they debate.
    #[serde(default)]
    pick: Vec<String>,
}

impl NewForm {
    /// The form's fields; `pick` repeats once per ticked agent, which a plain struct cannot
    /// read.
    fn from_pairs(pairs: Vec<(String, String)>) -> NewForm {
        let mut form = NewForm::default();
        for (k, v) in pairs {
            match k.as_str() {
                "question" => form.question = v,
                "protocol" => form.protocol = Some(v),
                "agents" => form.agents = Some(v),
                "rounds" => form.rounds = Some(v),
                "options" => form.options = Some(v),
                "pick" => form.pick.push(v),
                _ => {}
            }
        }
        form
    }
}

fn new_page(app: &App, form: &NewForm, error: Option<String>) -> Response {
    let protocols: Vec<minijinja::Value> = moot_core::protocol::PROTOCOLS
        .iter()
        .map(|p| context! { name => p.name, summary => p.summary })
        .collect();
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let mut r = render(
        app,
        "new.html",
        context! { protocols => protocols, team => app.runner.team(), form => form, error => error },
    );
    if r.status() == StatusCode::OK {
        *r.status_mut() = status;
    }
    r
}

/// `GET /new`.
pub async fn new_form(State(app): State<Arc<App>>) -> Response {
    new_page(&app, &NewForm::default(), None)
}

/// The form as a debate request, or what is wrong with it.
fn request_of(form: &NewForm) -> Result<DebateRequest, String> {
    let number = |field: &str, v: &Option<String>| -> Result<Option<usize>, String> {
        match v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| format!("{field}: {v:?} is not a whole number")),
        }
    };
    let mut options = BTreeMap::new();
    for line in form.options.as_deref().unwrap_or("").lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("options: {line:?} is not KEY=VALUE"))?;
        options.insert(k.trim().to_string(), v.trim().to_string());
    }
    if form.question.trim().is_empty() {
        return Err("the question is empty".into());
    }
    Ok(DebateRequest {
        question: form.question.clone(),
        protocol: form.protocol.clone().filter(|p| !p.is_empty()),
        rounds: number("rounds", &form.rounds)?,
        agents: if form.pick.is_empty() {
            number("agents", &form.agents)?.map(AgentsChoice::Count)
        } else {
            Some(AgentsChoice::Ids(form.pick.clone()))
        },
        options,
        model: None,
        sampling: Default::default(),
    })
}

/// `POST /new`: starts the debate and opens its page, which follows it live.
pub async fn new_submit(
    State(app): State<Arc<App>>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let form = NewForm::from_pairs(pairs);
    let request = match request_of(&form) {
        Ok(r) => r,
        Err(m) => return new_page(&app, &form, Some(m)),
    };
    match app.start(request).await {
        Ok(started) => Redirect::to(&format!("/runs/{}", started.run_id)).into_response(),
        Err(StartError::Busy(n)) => {
            let mut r = new_page(&app, &form, Some(StartError::Busy(n).to_string()));
            *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
            r
        }
        Err(StartError::Runner(
            RunnerError::BadRequest(m) | RunnerError::BadParam { message: m, .. },
        )) => new_page(&app, &form, Some(m)),
        Err(StartError::Runner(RunnerError::Internal(m))) => {
            let mut r = new_page(&app, &form, Some(m));
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r
        }
        Err(StartError::Runner(RunnerError::Unavailable(m))) => {
            let mut r = new_page(&app, &form, Some(m));
            *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
            r
        }
    }
}

/// `GET /config`.
pub async fn config_form(State(app): State<Arc<App>>) -> Response {
    render(&app, "config.html", context! {})
}

#[derive(Debug, Deserialize)]
pub struct ConfigForm {
    #[serde(default)]
    text: String,
}

/// `POST /config`: checks the pasted configuration, keeping the text in the form.
pub async fn config_submit(State(app): State<Arc<App>>, Form(form): Form<ConfigForm>) -> Response {
    let (result, error) = match app.runner.check_config(&form.text) {
        Ok(summary) => (Some(summary), None),
        Err(e) => (None, Some(e)),
    };
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let mut r = render(
        &app,
        "config.html",
        context! { text => form.text, result => result, error => error },
    );
    if r.status() == StatusCode::OK {
        *r.status_mut() = status;
    }
    r
}

pub async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../static/moot.js"),
    )
        .into_response()
}

pub async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../static/moot.css"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses() {
        let env = crate::templates::templates();
        for name in [
            "runs.html",
            "run.html",
            "new.html",
            "config.html",
            "benches.html",
            "bench.html",
        ] {
            assert!(env.get_template(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn the_form_reads_numbers_and_options() {
        let form = NewForm {
            question: "q".into(),
            protocol: Some("som".into()),
            agents: Some("3".into()),
            rounds: Some(" ".into()),
            options: Some("topology=ring\n\nk = 2".into()),
            pick: vec![],
        };
        let r = request_of(&form).unwrap();
        assert_eq!(r.agents, Some(AgentsChoice::Count(3)));
        let picked = NewForm::from_pairs(vec![
            ("question".into(), "q".into()),
            ("agents".into(), "3".into()),
            ("pick".into(), "a".into()),
            ("pick".into(), "c".into()),
        ]);
        assert_eq!(
            request_of(&picked).unwrap().agents,
            Some(AgentsChoice::Ids(vec!["a".into(), "c".into()]))
        );
        assert_eq!(r.rounds, None);
        assert_eq!(r.options["k"], "2");
        let bad = NewForm {
            agents: Some("three".into()),
            ..form.clone()
        };
        assert!(request_of(&bad).unwrap_err().contains("agents"));
        let bad = NewForm {
            options: Some("ring".into()),
            ..form
        };
        assert!(request_of(&bad).unwrap_err().contains("KEY=VALUE"));
    }

    #[test]
    fn escaping_and_query_encoding() {
        assert_eq!(
            escape("<img onerror=\"x\">&"),
            "&lt;img onerror=&quot;x&quot;&gt;&amp;"
        );
        assert_eq!(percent_encode("a b&c"), "a%20b%26c");
    }
}
