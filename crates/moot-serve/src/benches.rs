//! The benchmark pages: every benchmark with its progress, and one benchmark's report (as
//! `moot report` writes it, plots included) with a link from each item to its debate.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use minijinja::context;
use moot_store::{BenchRecord, StoreError};
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};
use serde::{Deserialize, Serialize};

use crate::app::App;
use crate::links::percent_encode;
use crate::pages::{page_error, render, store_page_error};
use crate::reports::{ReportError, RETRY_AFTER_SECS};
use crate::standings::{first_line, Progress, Standing};
use moot_app::service::BenchReport;

#[derive(Debug, Clone, Serialize)]
struct BenchRow {
    name: String,
    created_at: String,
    dataset: String,
    protocols: String,
    progress: Progress,
}

#[derive(Debug, Clone, Serialize)]
struct ItemRow {
    protocol: String,
    item_id: String,
    run_id: String,
    status: String,
    answer: String,
    gold: String,
    /// `Some` once the report graded it.
    correct: Option<bool>,
}

/// Benchmark `bench`'s standing, shared with every request for a moment (see `standings`).
async fn standing(app: &App, bench: &BenchRecord) -> Result<Arc<Standing>, Response> {
    // Stored numbers are data: a limit near u64::MAX must not overflow.
    let planned = bench
        .limit
        .map(|l| l.saturating_mul(bench.protocols.len() as u64));
    app.standings
        .get(&bench.name, planned)
        .await
        .map_err(|e| page_error(StatusCode::INTERNAL_SERVER_ERROR, &e))
}

/// A report that could not be had, as a page.
fn report_error(e: ReportError) -> Response {
    match e {
        ReportError::Busy(_) => {
            let mut r = page_error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
            r
        }
        ReportError::NotFound(m) => page_error(StatusCode::NOT_FOUND, &m),
        ReportError::Internal(m) => page_error(StatusCode::INTERNAL_SERVER_ERROR, &m),
    }
}

/// `GET /benches`.
pub async fn list(State(app): State<Arc<App>>) -> Response {
    let benches = match app.store.list_benches().await {
        Ok(b) => b,
        Err(e) => return store_page_error(e),
    };
    let mut rows = Vec::new();
    for b in &benches {
        match standing(&app, b).await {
            Ok(standing) => rows.push(BenchRow {
                name: b.name.clone(),
                created_at: b.created_at.clone(),
                dataset: b.dataset.clone(),
                protocols: b.protocols.join(", "),
                progress: standing.progress.clone(),
            }),
            Err(r) => return r,
        }
    }
    render(&app, "benches.html", context! { benches => rows })
}

/// The benchmark `name`, where it stands, and its report (made once per state, see
/// `reports`).
async fn bench_and_report(
    app: &App,
    name: &str,
) -> Result<(BenchRecord, Arc<Standing>, Option<Arc<BenchReport>>), Response> {
    let bench = match app.store.bench(name).await {
        Ok(b) => b,
        Err(StoreError::BenchNotFound(_)) => {
            return Err(page_error(
                StatusCode::NOT_FOUND,
                &format!("no benchmark named {name:?}"),
            ))
        }
        Err(e) => return Err(store_page_error(e)),
    };
    let standing = standing(app, &bench).await?;
    let report = app
        .reports
        .get(name, standing.state)
        .await
        .map_err(report_error)?;
    Ok((bench, standing, report))
}

/// The items a benchmark's page shows at once; `?page=N` shows the others.
pub const ITEMS_PAGE: usize = 200;

/// `?page=N` (from 1) of a benchmark's items.
#[derive(Debug, Deserialize)]
pub struct ItemsQuery {
    pub page: Option<usize>,
}

/// `GET /benches/NAME[?page=N]`: where it stands, its report, and a page of its items.
pub async fn show(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    Query(query): Query<ItemsQuery>,
) -> Response {
    let (bench, standing, report) = match bench_and_report(&app, &name).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let graded: HashMap<&str, bool> = report
        .as_ref()
        .map(|r| r.graded.iter().map(|(run, c)| (run.as_str(), *c)).collect())
        .unwrap_or_default();
    let pages = standing.rows.len().div_ceil(ITEMS_PAGE).max(1);
    let page = query.page.unwrap_or(1).clamp(1, pages);
    let items: Vec<ItemRow> = standing
        .rows
        .iter()
        .skip((page - 1) * ITEMS_PAGE)
        .take(ITEMS_PAGE)
        .map(|row| ItemRow {
            correct: graded.get(row.link.run_id.as_str()).copied(),
            protocol: row.link.protocol.clone(),
            item_id: row.link.item_id.clone(),
            status: row.status.as_str().into(),
            answer: row.answer.clone().unwrap_or_else(|| "—".into()),
            gold: first_line(&row.link.gold),
            run_id: row.link.run_id.clone(),
        })
        .collect();
    let report_html = report
        .as_ref()
        .map(|r| markdown_html(&r.markdown, &format!("/benches/{}/", percent_encode(&name))));
    let here = format!("/benches/{}", percent_encode(&name));
    render(
        &app,
        "bench.html",
        context! {
            bench => context! { name => bench.name, dataset => bench.dataset, protocols => bench.protocols.join(", "), created_at => bench.created_at, seed => bench.seed, limit => bench.limit },
            progress => standing.progress.clone(),
            items => items,
            pager => context! {
                page => page,
                pages => pages,
                first => (page - 1) * ITEMS_PAGE + 1,
                last => ((page - 1) * ITEMS_PAGE + ITEMS_PAGE).min(standing.rows.len()),
                total => standing.rows.len(),
                previous => (page > 1).then(|| format!("{here}?page={}", page - 1)),
                next => (page < pages).then(|| format!("{here}?page={}", page + 1)),
            },
            report => report_html,
        },
    )
}

/// `GET /benches/NAME/plots/FILE`: one of the report's plots.
pub async fn plot(
    State(app): State<Arc<App>>,
    Path((name, file)): Path<(String, String)>,
) -> Response {
    match bench_and_report(&app, &name).await {
        Ok((_, _, Some(r))) => match r.plots.iter().find(|(f, _)| *f == file) {
            Some((_, svg)) => {
                ([(header::CONTENT_TYPE, "image/svg+xml")], svg.clone()).into_response()
            }
            None => page_error(StatusCode::NOT_FOUND, &format!("no plot {file:?}")),
        },
        Ok((_, _, None)) => page_error(StatusCode::NOT_FOUND, "no debate has finished yet"),
        Err(r) => r,
    }
}

/// A report's Markdown as HTML. Raw HTML in it (a question or answer quoted in a table) becomes
/// text, and relative image links are resolved against `base`.
pub fn markdown_html(markdown: &str, base: &str) -> String {
    let parser = Parser::new_ext(markdown, Options::ENABLE_TABLES).map(|event| match event {
        Event::Html(t) | Event::InlineHtml(t) => Event::Text(t),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) if !dest_url.starts_with('/') && !dest_url.contains(':') => Event::Start(Tag::Image {
            link_type,
            dest_url: CowStr::from(format!("{base}{dest_url}")),
            title,
            id,
        }),
        // Only web and relative links: a `javascript:` link in a name or question goes nowhere.
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let safe = !dest_url.contains(':')
                || dest_url.starts_with("http://")
                || dest_url.starts_with("https://");
            Event::Start(Tag::Link {
                link_type,
                dest_url: if safe { dest_url } else { CowStr::from("#") },
                title,
                id,
            })
        }
        other => other,
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, parser);
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_render_without_raw_html() {
        let md = "| protocol | answer |\n|---|---|\n| som | <script>x</script> |\n\n![plot](plots/a.svg)\n";
        let html = markdown_html(md, "/benches/b/");
        assert!(html.contains("<table>"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(html.contains("src=\"/benches/b/plots/a.svg\""), "{html}");
        assert_eq!(percent_encode("a b/c"), "a%20b%2Fc");
        let html = markdown_html(
            "Benchmark [x](javascript:alert(1)) and [y](https://example.org)",
            "/",
        );
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("href=\"https://example.org\""), "{html}");
    }
}
