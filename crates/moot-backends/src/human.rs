//! `human`: a person answers. The model puts each call's conversation to a [`HumanDesk`] (the
//! front end's way of reaching a person: the terminal of `moot ask`, [`TerminalDesk`]; the page
//! of `moot serve`, [`QueueDesk`])
//! and waits for the reply, at most its `answer_within`; the debate's own deadlines apply as to
//! any call. A person may abstain, which is recorded as a call without a response.
//!
//! A person is asked every time: their answers are never taken from the request cache or
//! shared between requests ([`Capabilities::person`]).

use std::fmt;
use std::io::{BufRead, Read, Write};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use moot_core::chat::{ChatMessage, Role};
use moot_core::redact::Redactor;

use crate::scripted::{count_message_words, word_counted};
use crate::{BackendError, Capabilities, Completion, CompletionRequest, LanguageModel};

/// The longest answer a person's reply may be: 64 KiB, a long essay (a judge's verdict is a few
/// lines).
pub const MAX_HUMAN_ANSWER_BYTES: usize = 64 << 10;

/// What a person is asked: by which agent, the conversation, and how long they have.
#[derive(Debug, Clone)]
pub struct HumanQuestion {
    /// The agent the person answers for (its id).
    pub agent: String,
    pub messages: Vec<ChatMessage>,
    pub answer_within: Duration,
}

/// A person's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HumanReply {
    Answer(String),
    /// The person chose not to answer.
    Abstain,
}

/// Where a person is asked: a front end's way of reaching one.
#[async_trait]
pub trait HumanDesk: Send + Sync + fmt::Debug {
    /// Puts `question` to a person and waits for the reply. The future is dropped when the
    /// call's time is up; a desk then stops waiting for that reply.
    async fn ask(&self, question: HumanQuestion) -> Result<HumanReply, BackendError>;
}

/// An agent a person answers for.
#[derive(Debug)]
pub struct HumanModel {
    id: String,
    desk: Arc<dyn HumanDesk>,
    answer_within: Duration,
}

impl HumanModel {
    pub fn new(id: impl Into<String>, desk: Arc<dyn HumanDesk>, answer_within: Duration) -> Self {
        HumanModel {
            id: id.into(),
            desk,
            answer_within,
        }
    }
}

#[async_trait]
impl LanguageModel for HumanModel {
    fn name(&self) -> String {
        format!("human:{}", self.id)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            person: true,
            ..Capabilities::default()
        }
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        // The person is told the time they really have: the debate's deadline when it comes
        // first.
        let within =
            crate::deadline::left().map_or(self.answer_within, |left| left.min(self.answer_within));
        let question = HumanQuestion {
            agent: self.id.clone(),
            messages: request.messages.clone(),
            answer_within: within,
        };
        match tokio::time::timeout(within, self.desk.ask(question)).await {
            Err(_) => Err(BackendError::TimeLimit(format!(
                "the person did not answer within {} s",
                within.as_secs()
            ))),
            Ok(Err(e)) => Err(e),
            Ok(Ok(HumanReply::Abstain)) => {
                Err(BackendError::AgentFailed("the person abstained".into()))
            }
            Ok(Ok(HumanReply::Answer(text))) if text.len() > MAX_HUMAN_ANSWER_BYTES => {
                Err(BackendError::Policy(format!(
                    "the person's answer is {} bytes, over the {MAX_HUMAN_ANSWER_BYTES} a reply may be",
                    text.len()
                )))
            }
            Ok(Ok(HumanReply::Answer(text))) => Ok(word_counted(
                text,
                count_message_words(&request.messages),
            )),
        }
    }
}

/// The line that ends a typed answer, and the line that abstains.
pub const END_LINE: &str = ".";
pub const ABSTAIN_LINE: &str = "abstain";

/// A person at the terminal: the question is written to stderr (secrets redacted, control
/// characters escaped, every line of it indented, so that no text in it can pass for moot's
/// own `===` frame lines), the answer read from stdin up to a line holding only `.`; a line
/// holding only `abstain` abstains. Questions are put one at a time, in the order asked.
#[derive(Debug)]
pub struct TerminalDesk {
    redactor: Arc<Redactor>,
    /// One question at a time: the lines typed belong to the question on the screen.
    turn: tokio::sync::Mutex<()>,
}

impl TerminalDesk {
    pub fn new(redactor: Arc<Redactor>) -> TerminalDesk {
        TerminalDesk {
            redactor,
            turn: tokio::sync::Mutex::new(()),
        }
    }

    fn show(&self, q: &HumanQuestion) {
        let mut text = format!(
            "\n=== moot asks you, as agent {} ===\n",
            moot_core::escape::terminal(&q.agent)
        );
        for m in &q.messages {
            let who = match m.role {
                Role::System => "instructions",
                Role::User => "question",
                Role::Assistant => "your earlier answer",
            };
            let redacted = self.redactor.redact(&m.content);
            let shown = moot_core::escape::terminal(&redacted);
            text.push_str(&format!("--- {who} ---\n{}\n", indented(&shown)));
        }
        text.push_str(&format!(
            "=== Type your answer, then a line with only \"{END_LINE}\". A line with only \
             \"{ABSTAIN_LINE}\" abstains. You have {} s. ===\n",
            q.answer_within.as_secs()
        ));
        let mut err = std::io::stderr().lock();
        // The terminal is the person's only way to see the question: a failed write shows up
        // as no answer, within the deadline.
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }
}

/// Every line of `text` after two spaces: moot's frame lines start at the margin, a question's
/// never do.
fn indented(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line typed on stdin.
#[derive(Debug, Clone, PartialEq)]
enum Typed {
    /// The line, without its end; bytes that are not UTF-8 are read as U+FFFD.
    Line(String),
    /// A line longer than an answer may be, dropped as it was read.
    TooLong,
}

/// The lines of `input`, each read only up to `limit` bytes (the rest of a longer line is read
/// and dropped, never held): a byte that is not UTF-8 spoils no line but its own character.
/// Stops at the end of input or a read error.
fn typed_lines(mut input: impl BufRead, limit: usize, mut each: impl FnMut(Typed) -> bool) {
    loop {
        let mut line = Vec::new();
        match (&mut input)
            .take(limit as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let ended = line.last() == Some(&b'\n');
        let typed = if !ended && line.len() > limit {
            // Drop the rest of the line, a bounded piece at a time.
            loop {
                let buf = match input.fill_buf() {
                    Ok([]) | Err(_) => break,
                    Ok(buf) => buf,
                };
                let (used, found) = match buf.iter().position(|&b| b == b'\n') {
                    Some(at) => (at + 1, true),
                    None => (buf.len(), false),
                };
                input.consume(used);
                if found {
                    break;
                }
            }
            Typed::TooLong
        } else {
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            Typed::Line(String::from_utf8_lossy(text).into_owned())
        };
        if !each(typed) {
            return;
        }
    }
}

/// Lines typed on stdin, read by one thread for the whole process (a read cannot be cancelled,
/// so a question whose time ran out leaves the thread waiting for the next line, which then
/// goes to the next question). `None` once stdin is closed.
fn stdin_lines() -> &'static tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<Typed>> {
    static LINES: OnceLock<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<Typed>>> =
        OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            typed_lines(stdin.lock(), MAX_HUMAN_ANSWER_BYTES, |line| {
                tx.send(line).is_ok()
            });
        });
        tokio::sync::Mutex::new(rx)
    })
}

#[async_trait]
impl HumanDesk for TerminalDesk {
    async fn ask(&self, question: HumanQuestion) -> Result<HumanReply, BackendError> {
        let _turn = self.turn.lock().await;
        self.show(&question);
        let mut lines = stdin_lines().lock().await;
        let mut answer = String::new();
        loop {
            match lines.recv().await {
                Some(Typed::TooLong) => {
                    return Err(BackendError::Policy(format!(
                        "a typed line is over the {MAX_HUMAN_ANSWER_BYTES} bytes a reply may be"
                    )))
                }
                Some(Typed::Line(line)) if line.trim() == END_LINE => break,
                Some(Typed::Line(line))
                    if line.trim() == ABSTAIN_LINE && answer.trim().is_empty() =>
                {
                    return Ok(HumanReply::Abstain)
                }
                Some(Typed::Line(line)) => {
                    if answer.len() + line.len() > MAX_HUMAN_ANSWER_BYTES {
                        return Err(BackendError::Policy(format!(
                            "the typed answer is over the {MAX_HUMAN_ANSWER_BYTES} bytes a reply may be"
                        )));
                    }
                    answer.push_str(&line);
                    answer.push('\n');
                }
                None if answer.trim().is_empty() => {
                    return Err(BackendError::AgentFailed(
                        "stdin closed before the person answered".into(),
                    ))
                }
                None => break,
            }
        }
        Ok(HumanReply::Answer(answer.trim_end().to_string()))
    }
}

/// A question waiting on [`QueueDesk`], as a page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// Its number on the desk (what a reply names).
    pub id: u64,
    pub agent: String,
    pub messages: Vec<ChatMessage>,
    /// Seconds left to answer it.
    pub seconds_left: u64,
}

struct Pending {
    question: HumanQuestion,
    asked: std::time::Instant,
    reply: tokio::sync::oneshot::Sender<HumanReply>,
}

/// Questions waiting for a person on a page (`moot serve`): each waits here until a reply
/// names it ([`QueueDesk::reply`]) or its call ends (answered, its time up, the debate
/// stopped), when it leaves.
#[derive(Default)]
pub struct QueueDesk {
    next: std::sync::atomic::AtomicU64,
    waiting: std::sync::Mutex<std::collections::BTreeMap<u64, Pending>>,
}

impl fmt::Debug for QueueDesk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QueueDesk({} waiting)", self.waiting().len())
    }
}

/// Why a reply was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("question {0} is not waiting: it was answered, or its time ran out")]
pub struct NotWaiting(pub u64);

impl QueueDesk {
    /// The questions waiting, oldest first.
    pub fn waiting(&self) -> Vec<Waiting> {
        let Ok(waiting) = self.waiting.lock() else {
            return Vec::new();
        };
        waiting.iter().map(|(&id, p)| shown(id, p)).collect()
    }

    /// Question `id`, while it waits.
    pub fn question(&self, id: u64) -> Option<Waiting> {
        let waiting = self.waiting.lock().ok()?;
        waiting.get(&id).map(|p| shown(id, p))
    }

    /// Answers question `id` (or abstains from it).
    pub fn reply(&self, id: u64, reply: HumanReply) -> Result<(), NotWaiting> {
        let pending = self
            .waiting
            .lock()
            .ok()
            .and_then(|mut w| w.remove(&id))
            .ok_or(NotWaiting(id))?;
        pending.reply.send(reply).map_err(|_| NotWaiting(id))
    }
}

fn shown(id: u64, p: &Pending) -> Waiting {
    Waiting {
        id,
        agent: p.question.agent.clone(),
        messages: p.question.messages.clone(),
        seconds_left: p
            .question
            .answer_within
            .saturating_sub(p.asked.elapsed())
            .as_secs(),
    }
}

/// Takes a question off the desk when its call ends, however it ends.
struct Leaves<'a>(&'a QueueDesk, u64);

impl Drop for Leaves<'_> {
    fn drop(&mut self) {
        if let Ok(mut w) = self.0.waiting.lock() {
            w.remove(&self.1);
        }
    }
}

#[async_trait]
impl HumanDesk for QueueDesk {
    async fn ask(&self, question: HumanQuestion) -> Result<HumanReply, BackendError> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.waiting
            .lock()
            .map_err(|_| BackendError::Model("the desk's list of questions is unusable".into()))?
            .insert(
                id,
                Pending {
                    question,
                    asked: std::time::Instant::now(),
                    reply: tx,
                },
            );
        let _leaves = Leaves(self, id);
        rx.await.map_err(|_| BackendError::Cancelled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(input: &[u8], limit: usize) -> Vec<Typed> {
        let mut out = Vec::new();
        typed_lines(input, limit, |t| {
            out.push(t);
            true
        });
        out
    }

    #[test]
    fn an_invalid_byte_spoils_only_its_own_character() {
        assert_eq!(
            typed(b"408 \xff\nFinal answer: 7\n.\n", 100),
            [
                Typed::Line("408 \u{fffd}".into()),
                Typed::Line("Final answer: 7".into()),
                Typed::Line(".".into())
            ]
        );
    }

    #[test]
    fn a_line_over_the_limit_is_dropped_as_it_is_read_and_the_next_one_kept() {
        let mut input = vec![b'x'; 10_000];
        input.extend_from_slice(b"\nnext\r\nlast");
        assert_eq!(
            typed(&input, 64),
            [
                Typed::TooLong,
                Typed::Line("next".into()),
                Typed::Line("last".into())
            ]
        );
        // A line of exactly the limit is a line.
        assert_eq!(typed(&[b'y'; 64], 64), [Typed::Line("y".repeat(64))]);
    }

    #[test]
    fn a_questions_lines_are_indented_past_the_frames() {
        assert_eq!(
            indented("=== moot asks you, as agent x ===\nok"),
            "  === moot asks you, as agent x ===\n  ok"
        );
    }

    /// A desk that replies as told, after a pause, and records the questions.
    #[derive(Debug)]
    struct Fixed(HumanReply, Duration, std::sync::Mutex<Vec<HumanQuestion>>);

    #[async_trait]
    impl HumanDesk for Fixed {
        async fn ask(&self, question: HumanQuestion) -> Result<HumanReply, BackendError> {
            if let Ok(mut q) = self.2.lock() {
                q.push(question);
            }
            tokio::time::sleep(self.1).await;
            Ok(self.0.clone())
        }
    }

    fn model(reply: HumanReply, pause: Duration, within: Duration) -> (HumanModel, Arc<Fixed>) {
        let desk = Arc::new(Fixed(reply, pause, Default::default()));
        (HumanModel::new("judge", desk.clone(), within), desk)
    }

    fn request() -> CompletionRequest {
        CompletionRequest::new(vec![ChatMessage::user("What is 17 * 24?")])
    }

    #[tokio::test(start_paused = true)]
    async fn a_persons_answer_is_the_completion() {
        let (m, desk) = model(
            HumanReply::Answer("Final answer: 408".into()),
            Duration::from_secs(30),
            Duration::from_secs(60),
        );
        let c = m.complete(request()).await.expect("answered");
        assert_eq!(c.text, "Final answer: 408");
        assert!(m.capabilities().person);
        let asked = desk.2.lock().unwrap();
        assert_eq!(asked[0].agent, "judge");
        assert_eq!(asked[0].messages[0].content, "What is 17 * 24?");
    }

    /// The first question waiting at `desk`, once one is (its call runs on another task).
    async fn first_waiting(desk: &QueueDesk) -> Waiting {
        loop {
            match desk.waiting().pop() {
                Some(w) => return w,
                None => tokio::task::yield_now().await,
            }
        }
    }

    /// Issue 57 item 3: the person is told the time they really have, the debate's deadline
    /// when it comes before the backend's own limit (the page said 300 s where 20 were left).
    #[tokio::test]
    async fn a_person_is_told_the_debates_deadline_when_it_comes_first() {
        let desk = Arc::new(QueueDesk::default());
        let m = HumanModel::new("judge", desk.clone(), Duration::from_secs(300));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let asking =
            tokio::spawn(
                async move { crate::deadline::scope(deadline, m.complete(request())).await },
            );
        let waiting = first_waiting(&desk).await;
        assert!(
            waiting.seconds_left <= 20 && waiting.seconds_left >= 19,
            "{}",
            waiting.seconds_left
        );
        desk.reply(waiting.id, HumanReply::Abstain).expect("taken");
        assert!(asking.await.unwrap().is_err());
        // Without a deadline, the backend's own limit.
        let m = HumanModel::new("judge", desk.clone(), Duration::from_secs(300));
        let asking = tokio::spawn(async move { m.complete(request()).await });
        let waiting = first_waiting(&desk).await;
        assert!(waiting.seconds_left >= 299, "{}", waiting.seconds_left);
        desk.reply(waiting.id, HumanReply::Abstain).expect("taken");
        assert!(asking.await.unwrap().is_err());
    }

    #[tokio::test]
    async fn a_question_waits_on_the_queue_desk_until_answered_and_leaves_when_its_call_ends() {
        let desk = Arc::new(QueueDesk::default());
        let m = HumanModel::new("judge", desk.clone(), Duration::from_secs(60));
        let asking = tokio::spawn(async move { m.complete(request()).await });
        let waiting = first_waiting(&desk).await;
        assert_eq!(waiting.agent, "judge");
        assert!(waiting.seconds_left <= 60 && waiting.seconds_left >= 59);
        assert_eq!(desk.question(waiting.id), Some(waiting.clone()));
        desk.reply(waiting.id, HumanReply::Answer("Final answer: 408".into()))
            .expect("taken");
        assert_eq!(asking.await.unwrap().unwrap().text, "Final answer: 408");
        assert!(desk.waiting().is_empty());
        assert_eq!(
            desk.reply(waiting.id, HumanReply::Abstain),
            Err(NotWaiting(waiting.id))
        );
        // A call that ends unanswered takes its question away.
        let m = HumanModel::new("judge", desk.clone(), Duration::from_millis(50));
        assert!(m.complete(request()).await.is_err());
        assert!(desk.waiting().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn abstaining_and_running_out_of_time_are_calls_without_a_response() {
        let (m, _) = model(HumanReply::Abstain, Duration::ZERO, Duration::from_secs(60));
        let e = m.complete(request()).await.unwrap_err();
        assert_eq!(e.to_string(), "agent failed: the person abstained");
        let (m, _) = model(
            HumanReply::Answer("late".into()),
            Duration::from_secs(120),
            Duration::from_secs(60),
        );
        let e = m.complete(request()).await.unwrap_err();
        assert!(e.to_string().contains("did not answer within 60 s"), "{e}");
        let (m, _) = model(
            HumanReply::Answer("x".repeat(MAX_HUMAN_ANSWER_BYTES + 1)),
            Duration::ZERO,
            Duration::from_secs(60),
        );
        assert!(matches!(
            m.complete(request()).await,
            Err(BackendError::Policy(_))
        ));
    }
}
