//! The JSON API the pages use: start a debate, list and read runs, follow a run's calls.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::Stream;
use moot_store::{CallCursor, RunFilter, RunStatus, StoreError};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::app::{App, LoadedRun, StartError, MAX_PAGE_CALLS, PAGE_CALLS};
use crate::feeds::{call_event, FedCall, Feeds};
use crate::links::{cursor_text, parse_cursor, run_href, PageQuery};
use moot_app::service::{DebateRequest, RunnerError};

/// An error as JSON `{"error": …}` with its status.
pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": message.into()}))).into_response()
}

pub(crate) fn store_error(e: StoreError) -> Response {
    match e {
        StoreError::RunNotFound(_) => error(StatusCode::NOT_FOUND, e.to_string()),
        other => error(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
    }
}

pub(crate) fn start_error(e: StartError) -> Response {
    match e {
        StartError::Busy(_) => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "5")],
            Json(json!({"error": e.to_string()})),
        )
            .into_response(),
        StartError::Runner(
            RunnerError::BadRequest(m) | RunnerError::BadParam { message: m, .. },
        ) => error(StatusCode::BAD_REQUEST, m),
        StartError::Runner(RunnerError::Internal(m)) => error(StatusCode::INTERNAL_SERVER_ERROR, m),
        StartError::Runner(RunnerError::Unavailable(m)) => {
            error(StatusCode::SERVICE_UNAVAILABLE, m)
        }
    }
}

/// `POST /api/runs {question, protocol?, rounds?, agents?, options?}` → 202 `{run_id}` at once.
pub async fn start(
    State(app): State<Arc<App>>,
    body: Result<Json<DebateRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let request = match body {
        Ok(Json(r)) => r,
        Err(e) => return error(e.status(), e.body_text()),
    };
    if request.question.trim().is_empty() {
        return error(StatusCode::BAD_REQUEST, "the question is empty");
    }
    match app.start(request).await {
        Ok(started) => (
            StatusCode::ACCEPTED,
            Json(json!({"run_id": started.run_id})),
        )
            .into_response(),
        Err(e) => start_error(e),
    }
}

/// The runs list's query: filters and a page (from 1).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListQuery {
    pub protocol: Option<String>,
    pub answer: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub page: Option<u32>,
}

pub const PAGE_SIZE: u32 = 50;

impl ListQuery {
    pub fn filter(&self) -> RunFilter {
        let keep = |s: &Option<String>| s.clone().filter(|s| !s.trim().is_empty());
        RunFilter {
            protocol: keep(&self.protocol),
            answer: keep(&self.answer),
            from: keep(&self.from),
            to: keep(&self.to),
            outside_benches: false,
            // A page past any count is empty, never page 1 again (no wrapping).
            offset: self
                .page
                .unwrap_or(1)
                .saturating_sub(1)
                .saturating_mul(PAGE_SIZE),
            // One more than a page, to know whether a next page exists.
            limit: PAGE_SIZE + 1,
        }
    }
}

/// `GET /api/runs?protocol=&answer=&from=&to=&page=`: runs newest first, without their
/// configurations.
pub async fn list(State(app): State<Arc<App>>, Query(q): Query<ListQuery>) -> Response {
    match app.store.list_runs(&q.filter()).await {
        Ok(mut runs) => {
            let more = runs.len() > PAGE_SIZE as usize;
            runs.truncate(PAGE_SIZE as usize);
            let runs: Vec<Value> = runs.iter().map(run_summary).collect();
            Json(json!({"runs": runs, "more": more})).into_response()
        }
        Err(e) => store_error(e),
    }
}

fn run_summary(r: &moot_store::RunRecord) -> Value {
    json!({
        "id": r.id, "created_at": r.created_at, "question": r.question,
        "protocol": r.protocol, "rule": r.rule, "status": r.shown_status(),
        "answer": r.answer, "finished_at": r.finished_at,
    })
}

/// `GET /api/runs/ID[?after=&limit=]` or `GET /api/runs/ID/events` (run ids may hold slashes).
pub async fn run_path(
    State(app): State<Arc<App>>,
    Path(path): Path<String>,
    Query(page): Query<PageQuery>,
) -> Response {
    match path.strip_suffix("/events") {
        Some(id) => match events(app, id.to_string()).await {
            Ok(sse) => sse.into_response(),
            Err(r) => r,
        },
        None => transcript(app, path, page).await,
    }
}

/// `GET /api/runs/ID`: the run (without its configuration), a page of its calls in the order
/// they were written (`?limit=`, at most [`MAX_PAGE_CALLS`], and about [`crate::app::PAGE_BYTES`]
/// in all) with
/// `next`, the link to the page after it (`null` on the last), its decisions and checks, the
/// view the run page draws of this page's calls, and its lineage (the run it was forked from,
/// its forks).
async fn transcript(app: Arc<App>, id: String, page: PageQuery) -> Response {
    let after = match parse_cursor(page.after.as_deref()) {
        Ok(after) => after,
        Err(m) => return error(StatusCode::BAD_REQUEST, m),
    };
    let limit = page.limit.unwrap_or(PAGE_CALLS).clamp(1, MAX_PAGE_CALLS);
    let loaded = async {
        let run = app.load_run(&id, &after, limit).await?;
        let forks = app
            .store
            .forks_of(&id, moot_app::run_records::MAX_FORKS_SHOWN)
            .await?;
        Ok::<_, moot_store::StoreError>((run, forks))
    };
    match loaded.await {
        Ok((loaded, forks)) => {
            let LoadedRun {
                run,
                calls,
                decisions,
                checks,
            } = loaded;
            let view = moot_app::view::run_view(&run, &calls.calls, &decisions, &checks);
            let next = calls.next.as_ref().map(|c| {
                format!(
                    "{}?after={}&limit={limit}",
                    run_href("/api/runs/", &id),
                    cursor_text(c)
                )
            });
            Json(json!({
                "run": run_summary(&run),
                "calls": calls.calls,
                "next": next,
                "decisions": decisions.iter().map(|d| &d.decision).collect::<Vec<_>>(),
                "validations": checks,
                "view": view,
                "lineage": moot_app::view::lineage(&run, &forks),
            }))
            .into_response()
        }
        Err(e) => store_error(e),
    }
}

/// `GET /api/runs/ID/events`: an `event: call` per call (those already stored come first, then
/// each new one as it is recorded, in the order they were written), then an `event: done` with
/// the run's status (`done`, `failed`, or `interrupted` when its process is gone) and answer.
///
/// A follower reads what is already stored itself, one call at a time from where it stands (a
/// store cursor), so catching up on a large run costs one call's memory; then it listens to the
/// run's feed, which reads new calls once for every follower (see `feeds`).
async fn events(
    app: Arc<App>,
    id: String,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Response> {
    app.store.run(&id).await.map_err(store_error)?;
    /// What the follower does next.
    enum Step {
        /// Read the store from the cursor (joining the feed once nothing is left).
        CatchUp,
        /// Take the feed's calls.
        Listen,
        /// Nothing more.
        Done,
    }
    struct Follow {
        app: Arc<App>,
        id: String,
        cursor: CallCursor,
        feed: Option<broadcast::Receiver<Arc<FedCall>>>,
        step: Step,
        /// Its place among the followers: told to end when newer ones need it.
        place: crate::followers::Following,
    }
    let place = app.followers.join();
    let state = Follow {
        app,
        id,
        cursor: CallCursor::start(),
        feed: None,
        step: Step::CatchUp,
        place,
    };
    let stream = futures::stream::unfold(state, |mut f| async move {
        let failed = |f: &mut Follow, e: StoreError| {
            f.step = Step::Done;
            let text = f.app.redactor.redact(&e.to_string()).into_owned();
            Event::default().event("error").data(text)
        };
        loop {
            if !matches!(f.step, Step::Done) && f.place.shed.told() {
                f.step = Step::Done;
                let event = Event::default().event("error").data(crate::followers::SHED);
                return Some((Ok(event), f));
            }
            match f.step {
                Step::Done => return None,
                Step::CatchUp => {
                    match f.app.store.calls_after(&f.id, &f.cursor, 1).await {
                        Ok(mut next) => {
                            if let Some((cursor, call)) = next.pop() {
                                f.cursor = cursor;
                                let event = Event::default()
                                    .event("call")
                                    .data(call_event(&f.app.redactor, &call));
                                return Some((Ok(event), f));
                            }
                        }
                        Err(e) => {
                            let event = failed(&mut f, e);
                            return Some((Ok(event), f));
                        }
                    }
                    if f.feed.is_some() {
                        f.step = Step::Listen;
                        continue;
                    }
                    // Nothing more stored: is the run over?
                    let run = match f.app.store.run(&f.id).await {
                        Ok(run) => run,
                        Err(e) => {
                            let event = failed(&mut f, e);
                            return Some((Ok(event), f));
                        }
                    };
                    if run.status == RunStatus::Running && !run.interrupted() {
                        // Listen from here, and read once more what came before listening.
                        f.feed = Some(Feeds::listen(&f.app.feeds, &f.id, &f.cursor));
                        continue;
                    }
                    // A finished run writes no more calls, but may have written some between
                    // the read above and this one: read again before saying it is done.
                    match f.app.store.calls_after(&f.id, &f.cursor, 1).await {
                        Ok(next) if !next.is_empty() => continue,
                        Ok(_) => {}
                        Err(e) => {
                            let event = failed(&mut f, e);
                            return Some((Ok(event), f));
                        }
                    }
                    f.step = Step::Done;
                    let done = json!({"run_id": run.id, "status": run.shown_status(), "answer": run.answer, "rule": run.rule});
                    let event = Event::default()
                        .event("done")
                        .data(crate::redaction::json_text(&f.app.redactor, done));
                    return Some((Ok(event), f));
                }
                Step::Listen => {
                    let Some(feed) = f.feed.as_mut() else {
                        f.step = Step::CatchUp;
                        continue;
                    };
                    let shed = f.place.shed.clone();
                    let received = tokio::select! {
                        received = feed.recv() => received,
                        // Told to end while waiting for the run's next call.
                        () = shed.wait() => continue,
                    };
                    match received {
                        Ok(call) => {
                            if call.cursor <= f.cursor {
                                continue;
                            }
                            f.cursor = call.cursor.clone();
                            let event = Event::default().event("call").data(call.event.as_str());
                            return Some((Ok(event), f));
                        }
                        // Fell behind: what it missed is in the store.
                        Err(broadcast::error::RecvError::Lagged(_)) => f.step = Step::CatchUp,
                        // The feed ended (its run did, or could not be read): read what is
                        // left, and how the run ended, from the store.
                        Err(broadcast::error::RecvError::Closed) => {
                            f.feed = None;
                            f.step = Step::CatchUp;
                        }
                    }
                }
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
