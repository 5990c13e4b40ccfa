//! The pages where a person answers for an agent (`backend = "human"`): `/people` lists the
//! questions the server's debates are waiting on, `/people/{id}` shows one (the whole
//! conversation, the debate so far in it, escaped by the templates) with a form to answer or
//! abstain. The run waits for the answer up to the agent's `answer_within` and the debate's
//! deadlines; the server's token and Origin rules apply as to every page.

use std::sync::Arc;

use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use minijinja::context;
use moot_app::service::{HumanReply, MAX_HUMAN_ANSWER_BYTES};
use serde::{Deserialize, Serialize};

use crate::app::App;
use crate::pages::{page_error, render};

#[derive(Serialize)]
struct Row {
    id: u64,
    agent: String,
    seconds_left: u64,
    question_short: String,
}

#[derive(Serialize)]
struct Message {
    role: &'static str,
    content: String,
}

/// `GET /people`: the questions waiting, oldest first.
pub async fn list(State(app): State<Arc<App>>) -> Response {
    let desk = app.runner.people();
    let rows: Vec<Row> = desk
        .as_ref()
        .map(|d| d.waiting())
        .unwrap_or_default()
        .into_iter()
        .map(|w| Row {
            id: w.id,
            question_short: moot_app::view::shorten(
                w.messages.last().map_or("", |m| m.content.as_str()),
                120,
            ),
            agent: w.agent,
            seconds_left: w.seconds_left,
        })
        .collect();
    render(
        &app,
        "people.html",
        context! { questions => rows, asks_people => desk.is_some() },
    )
}

/// `GET /people/{id}`: one waiting question and the form that answers it.
pub async fn show(State(app): State<Arc<App>>, Path(id): Path<u64>) -> Response {
    question_page(&app, id, None, "")
}

/// The question's page; after a refused reply, with why and the answer as it was typed (the
/// box's limit is counted in bytes by the server, which a browser's `maxlength`, counting
/// characters, cannot do: the answer is kept rather than lost).
fn question_page(app: &App, id: u64, error: Option<&str>, answer: &str) -> Response {
    let Some(w) = app.runner.people().and_then(|d| d.question(id)) else {
        return not_waiting(id);
    };
    let messages: Vec<Message> = w
        .messages
        .iter()
        .map(|m| Message {
            role: match m.role {
                moot_core::chat::Role::System => "instructions",
                moot_core::chat::Role::User => "question",
                moot_core::chat::Role::Assistant => "your earlier answer",
            },
            content: m.content.clone(),
        })
        .collect();
    render(
        app,
        "person.html",
        context! {
            id => w.id,
            agent => w.agent,
            seconds_left => w.seconds_left,
            messages => messages,
            error => error,
            answer => answer,
            max_bytes => MAX_HUMAN_ANSWER_BYTES,
        },
    )
}

fn not_waiting(id: u64) -> Response {
    page_error(
        StatusCode::NOT_FOUND,
        &format!("question {id} is not waiting: it was answered, or its time ran out"),
    )
}

#[derive(Deserialize)]
pub struct ReplyForm {
    #[serde(default)]
    answer: String,
    /// `answer` or `abstain`: the button pressed.
    action: String,
}

/// `POST /people/{id}`: the person's answer, or their abstention.
pub async fn reply(
    State(app): State<Arc<App>>,
    Path(id): Path<u64>,
    Form(form): Form<ReplyForm>,
) -> Response {
    let Some(desk) = app.runner.people() else {
        return not_waiting(id);
    };
    let reply = match form.action.as_str() {
        "abstain" => HumanReply::Abstain,
        "answer" if form.answer.trim().is_empty() => {
            return question_page(
                &app,
                id,
                Some("The answer is empty: write one, or abstain."),
                "",
            )
        }
        "answer" if form.answer.len() > MAX_HUMAN_ANSWER_BYTES => {
            return question_page(
                &app,
                id,
                Some(&format!(
                    "The answer is {} bytes, over the {MAX_HUMAN_ANSWER_BYTES} an answer may be.",
                    form.answer.len()
                )),
                &form.answer,
            )
        }
        "answer" => HumanReply::Answer(form.answer.replace("\r\n", "\n").trim_end().to_string()),
        other => {
            return page_error(
                StatusCode::BAD_REQUEST,
                &format!("action {other:?}: expected answer or abstain"),
            )
        }
    };
    match desk.reply(id, reply) {
        Ok(()) => Redirect::to("/people").into_response(),
        Err(e) => page_error(StatusCode::CONFLICT, &e.to_string()),
    }
}
