//! `cli`: an agent behind a command line, following freemad's agent CLI contract.
//!
//! The command runs as `command args… MODE after_mode…` (MODE is `generate` or `critique`,
//! from [`CompletionRequest::mode`], and can be left out; see [`CliConfig::arguments`]), reads
//! the prompt on stdin and answers on stdout, usually as
//!
//! ```text
//! SOLUTION:
//! …
//! REASONING:
//! …
//! ```
//!
//! The completion text is the whole of stdout, trimmed; [`parse_sections`] splits it when the
//! caller wants the parts (an answer without markers is fine too).
//!
//! Running other people's programs is guarded:
//! - the command must be on an allow-list (same string, or the same file once resolved through
//!   `PATH` and symlinks), checked before anything is spawned;
//! - it is executed directly, never through a shell;
//! - its environment is emptied except `PATH`, `HOME`, `LANG` and the variables listed in
//!   [`CliConfig::env_allow`];
//! - the prompt on stdin is capped ([`CliConfig::max_input_bytes`]), and so are stdout and
//!   stderr each; past the output cap the call fails and the process is killed;
//! - it runs in a configurable working directory;
//! - it runs in its own process group, and the whole group (grandchildren included) is killed
//!   with SIGKILL when the call ends: on cancellation (the future dropped, e.g. at a deadline),
//!   on an error, and after a normal exit (anything the command left running in its group).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use process_wrap::tokio::{ProcessGroup, TokioChildWrapper, TokioCommandWrap};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::scripted::{count_words, word_counted};
use crate::{
    BackendError, Capabilities, ChatMessage, Completion, CompletionRequest, LanguageModel, Role,
};

/// Default cap on each of stdout and stderr: 1 MiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;

/// Variables every agent process gets (when this process has them).
pub const BASE_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];

/// How many trailing bytes of stderr an exit-status error carries.
const STDERR_TAIL: usize = 500;

/// After the command exits, how long its output may stay open (held by something it started)
/// before the rest of its group is killed.
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// Which environment a `cli` agent gets (`security.cli_env`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CliEnv {
    /// [`BASE_ENV`] and the variables `env_allow` names, nothing else: an agent sees no secret
    /// it was not given (moot's own configurations).
    #[default]
    Clear,
    /// moot's whole environment, as freemad passes it: agent CLIs authenticated by environment
    /// variables work as they did under freemad (freemad configurations).
    Inherit,
}

impl CliEnv {
    pub fn as_str(self) -> &'static str {
        match self {
            CliEnv::Clear => "clear",
            CliEnv::Inherit => "inherit",
        }
    }

    /// What an agent gets under this policy, in words (`moot health`).
    pub fn describe(self, allow: &[String]) -> String {
        match self {
            CliEnv::Inherit => "inherit: cli agents get moot's whole environment".to_string(),
            CliEnv::Clear if allow.is_empty() => {
                format!("clear: cli agents get {} only", BASE_ENV.join(", "))
            }
            CliEnv::Clear => format!(
                "clear: cli agents get {} and {} only",
                BASE_ENV.join(", "),
                allow.join(", ")
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliConfig {
    /// The program: a name looked up on `PATH`, or a path.
    pub command: String,
    /// Arguments before the mode argument.
    pub args: Vec<String>,
    /// Whether the mode (`generate` / `critique`) is passed as an argument after `args`
    /// (freemad's `cli_mode_arg`; moot's own `cli` agents always get it).
    pub mode_arg: bool,
    /// Arguments after the mode argument (freemad's flags, `--key value` pairs and positional
    /// arguments).
    pub args_after_mode: Vec<String>,
    /// Commands that may be run. `command` must equal one of them, or resolve to the same file.
    pub allowed_commands: Vec<String>,
    /// Cap on each of stdout and stderr, in bytes.
    pub max_output_bytes: usize,
    /// Which environment the agent gets.
    pub env: CliEnv,
    /// Environment variables passed through besides [`BASE_ENV`] (with [`CliEnv::Clear`]).
    pub env_allow: Vec<String>,
    /// Cap on the prompt sent on stdin, in bytes (freemad's `max_requirement_size`); a longer
    /// prompt is refused before anything is spawned.
    pub max_input_bytes: usize,
    /// The directory the command runs in (`None`: this process's).
    pub working_dir: Option<PathBuf>,
}

/// Default cap on the prompt: 1 MiB.
pub const DEFAULT_MAX_INPUT_BYTES: usize = 1 << 20;

impl CliConfig {
    /// A config with an empty allow-list (so nothing runs until commands are listed), the
    /// default output cap and no extra variables.
    pub fn new(command: impl Into<String>, args: Vec<String>) -> CliConfig {
        CliConfig {
            command: command.into(),
            args,
            mode_arg: true,
            args_after_mode: Vec::new(),
            allowed_commands: Vec::new(),
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            env: CliEnv::Clear,
            env_allow: Vec::new(),
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
            working_dir: None,
        }
    }
}

impl CliConfig {
    /// Every argument after the program, for a call in `mode`: `args`, the mode word when
    /// [`CliConfig::mode_arg`], then `args_after_mode`.
    pub fn arguments(&self, mode: moot_core::chat::CallMode) -> Vec<String> {
        let mut argv = self.args.clone();
        if self.mode_arg {
            argv.push(mode.as_str().to_string());
        }
        argv.extend(self.args_after_mode.iter().cloned());
        argv
    }
}

/// The sections of an agent's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentSections {
    pub solution: Option<String>,
    pub reasoning: Option<String>,
}

#[derive(Clone, Copy)]
enum Section {
    Solution,
    Reasoning,
}

/// The marker a line starts, and the rest of that line. Tolerates markdown decoration
/// (`## SOLUTION:`, `**REASONING:**`); the marker itself must be upper case.
fn marker(line: &str) -> Option<(Section, &str)> {
    let bare = line.trim_start_matches(|c: char| c.is_whitespace() || c == '#' || c == '*');
    let (section, rest) = if let Some(rest) = bare.strip_prefix("SOLUTION:") {
        (Section::Solution, rest)
    } else if let Some(rest) = bare.strip_prefix("REASONING:") {
        (Section::Reasoning, rest)
    } else {
        return None;
    };
    Some((section, rest.trim_start_matches('*')))
}

/// Splits an agent's output at `SOLUTION:` / `REASONING:` lines. A section runs to the next
/// marker; text before the first marker belongs to neither; when a marker repeats, the later
/// section wins (a revised answer); empty sections count as absent.
pub fn parse_sections(text: &str) -> AgentSections {
    let mut out = AgentSections::default();
    let mut current: Option<(Section, String)> = None;
    let close = |section: Option<(Section, String)>, out: &mut AgentSections| {
        if let Some((kind, body)) = section {
            let body = body.trim();
            if !body.is_empty() {
                let slot = match kind {
                    Section::Solution => &mut out.solution,
                    Section::Reasoning => &mut out.reasoning,
                };
                *slot = Some(body.to_string());
            }
        }
    };
    for line in text.lines() {
        match marker(line) {
            Some((kind, rest)) => {
                close(current.take(), &mut out);
                let mut body = rest.to_string();
                body.push('\n');
                current = Some((kind, body));
            }
            None => {
                if let Some((_, body)) = current.as_mut() {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    close(current, &mut out);
    out
}

/// The prompt as plain text: system messages first, then the user/assistant turns in order,
/// each under a `### Role` header.
pub fn render_prompt(messages: &[ChatMessage]) -> String {
    let header = |role: Role| match role {
        Role::System => "### System",
        Role::User => "### User",
        Role::Assistant => "### Assistant",
    };
    let system = messages.iter().filter(|m| m.role == Role::System);
    let turns = messages.iter().filter(|m| m.role != Role::System);
    let mut text = String::new();
    for m in system.chain(turns) {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(header(m.role));
        text.push('\n');
        text.push_str(m.content.trim_end());
        text.push('\n');
    }
    text
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The file a command names: a path (with a `/`) as is, a bare name through `path_var` the way
/// the spawned process would find it; canonicalised (symlinks resolved). `None` when there is
/// no such executable.
fn resolve(command: &str, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if command.is_empty() {
        return None;
    }
    if command.contains('/') {
        let path = Path::new(command);
        return is_executable_file(path)
            .then(|| std::fs::canonicalize(path).ok())
            .flatten();
    }
    std::env::split_paths(path_var?)
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable_file(candidate))
        .and_then(|found| std::fs::canonicalize(found).ok())
}

/// Whether `command` is on the allow-list: the same string, or the same executable file.
pub fn is_allowed(command: &str, allowed: &[String]) -> bool {
    if command.is_empty() {
        return false;
    }
    if allowed.iter().any(|a| a == command) {
        return true;
    }
    let path_var = std::env::var_os("PATH");
    let Some(target) = resolve(command, path_var.as_deref()) else {
        return false;
    };
    allowed
        .iter()
        .filter_map(|a| resolve(a, path_var.as_deref()))
        .any(|p| p == target)
}

/// An agent CLI as a [`LanguageModel`].
///
/// Usage is approximate: the CLI reports no token counts, so input and output tokens are counted
/// as whitespace-separated words (of the rendered prompt and of the answer) with
/// [`count_words`], and `processed_input_tokens` is `None`.
#[derive(Debug, Clone)]
pub struct CliModel {
    config: CliConfig,
}

impl CliModel {
    /// Checks the config; a command that is not allowed is refused here, before anything runs.
    pub fn new(config: CliConfig) -> Result<CliModel, BackendError> {
        if config.command.trim().is_empty() {
            return Err(BackendError::Config("the agent command is empty".into()));
        }
        if !is_allowed(&config.command, &config.allowed_commands) {
            return Err(BackendError::Config(format!(
                "agent command {:?} is not in the allowed commands [{}]",
                config.command,
                config.allowed_commands.join(", ")
            )));
        }
        if config.max_output_bytes == 0 {
            return Err(BackendError::Config(
                "max_output_bytes must be at least 1".into(),
            ));
        }
        if let Some(dir) = &config.working_dir {
            if !dir.is_dir() {
                return Err(BackendError::Config(format!(
                    "working_dir {} is not a directory",
                    dir.display()
                )));
            }
        }
        if let Some(bad) = config
            .env_allow
            .iter()
            .find(|v| v.is_empty() || v.contains('=') || v.contains('\0'))
        {
            return Err(BackendError::Config(format!(
                "env_allow: {bad:?} is not a variable name"
            )));
        }
        Ok(CliModel { config })
    }

    pub fn config(&self) -> &CliConfig {
        &self.config
    }

    /// The environment the agent gets: all of this process's with [`CliEnv::Inherit`];
    /// otherwise [`BASE_ENV`] and `env_allow`, as far as they are set here.
    fn child_env(&self) -> Vec<(String, OsString)> {
        if self.config.env == CliEnv::Inherit {
            return std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
                .collect();
        }
        let mut names: Vec<&str> = BASE_ENV.to_vec();
        for name in &self.config.env_allow {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        names
            .into_iter()
            .filter_map(|n| std::env::var_os(n).map(|v| (n.to_string(), v)))
            .collect()
    }
}

/// Owns the spawned group; dropping it kills every process still in the group.
struct GroupGuard {
    child: Box<dyn TokioChildWrapper>,
    /// The group's id (its leader's pid), as listed in [`LIVE_GROUPS`].
    group: Option<i32>,
}

/// The process groups of the agents running now, so that a signal that ends moot can end them
/// first ([`kill_live_agents`]): each agent runs in a group of its own, which neither a
/// terminal's Ctrl-C nor moot's own death reaches.
static LIVE_GROUPS: std::sync::Mutex<std::collections::BTreeSet<i32>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

fn live_groups() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<i32>> {
    // A panic while the set was held leaves it as it was: still the right set.
    LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

impl GroupGuard {
    fn new(child: Box<dyn TokioChildWrapper>) -> GroupGuard {
        let group = child.id().and_then(|pid| i32::try_from(pid).ok());
        if let Some(g) = group {
            live_groups().insert(g);
        }
        GroupGuard { child, group }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // SIGKILL to the whole group; fails harmlessly (ESRCH) when it is already empty.
        let _ = self.child.start_kill();
        // Reap the leader if it is already gone; otherwise tokio reaps it in the background.
        let _ = self.child.try_wait();
        if let Some(g) = self.group {
            live_groups().remove(&g);
        }
    }
}

/// Kills the process group of every agent running now (SIGKILL: the agent, and anything it
/// started, ends at once). For a signal handler that is about to end moot.
pub fn kill_live_agents() {
    for &group in live_groups().iter() {
        // SAFETY: killpg takes plain integers; an empty group fails with ESRCH, harmlessly.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }
}

/// Reads to end of stream, failing as soon as more than `cap` bytes arrive.
async fn read_capped<R: AsyncRead + Unpin>(
    reader: R,
    cap: usize,
    what: &str,
) -> Result<Vec<u8>, BackendError> {
    let mut buf = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(limit)
        .read_to_end(&mut buf)
        .await
        .map_err(|e| BackendError::Process(format!("reading the agent's {what}: {e}")))?;
    if buf.len() > cap {
        return Err(BackendError::Policy(format!(
            "{what} output exceeds {cap} bytes (security.cli_max_output_bytes)"
        )));
    }
    Ok(buf)
}

/// The last `n` bytes of `bytes` as text (from a character boundary).
fn tail(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end();
    let mut start = text.len().saturating_sub(n);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

fn pipe_missing(name: &str) -> BackendError {
    BackendError::Process(format!("the agent's {name} was not captured"))
}

#[async_trait]
impl LanguageModel for CliModel {
    fn name(&self) -> String {
        format!("cli:{}", self.config.command)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        let prompt = render_prompt(&request.messages);
        if prompt.len() > self.config.max_input_bytes {
            return Err(BackendError::Policy(format!(
                "the prompt is {} bytes, over the agent's input cap of {} (security.cli_max_input_bytes)",
                prompt.len(),
                self.config.max_input_bytes
            )));
        }
        let input_tokens = count_words(&prompt);
        let command = &self.config.command;

        let mut wrap = TokioCommandWrap::with_new(command, |c| {
            if let Some(dir) = &self.config.working_dir {
                c.current_dir(dir);
            }
            c.args(self.config.arguments(request.mode))
                .env_clear()
                .envs(self.child_env())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
        });
        wrap.wrap(ProcessGroup::leader());
        // Spawning (fork and exec) blocks for a millisecond or more on a busy machine. On the
        // blocking pool, a round's agents start side by side instead of one after another on
        // the thread that runs the debate, which would push the last agent's start, and so
        // the round, back by the sum of the others' spawns. The group is guarded from the
        // moment it exists: a call cancelled during its spawn kills it when the result is
        // dropped.
        let spawned = tokio::task::spawn_blocking(move || wrap.spawn().map(GroupGuard::new))
            .await
            .map_err(|e| BackendError::Process(format!("cannot start {command:?}: {e}")))?;
        let mut guard = spawned.map_err(|e| {
            let message = format!("cannot start {command:?}: {e}");
            match e.kind() {
                // No such program, or not executable: the configuration is wrong, and asking
                // again cannot help.
                io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => {
                    BackendError::Config(message)
                }
                _ => BackendError::Process(message),
            }
        })?;
        let stdin = guard
            .child
            .stdin()
            .take()
            .ok_or_else(|| pipe_missing("stdin"))?;
        let stdout = guard
            .child
            .stdout()
            .take()
            .ok_or_else(|| pipe_missing("stdout"))?;
        let stderr = guard
            .child
            .stderr()
            .take()
            .ok_or_else(|| pipe_missing("stderr"))?;

        let cap = self.config.max_output_bytes;
        let feed = async move {
            let mut stdin = stdin;
            match stdin.write_all(prompt.as_bytes()).await {
                Ok(()) => {}
                // An agent may answer without reading all of its input.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
                Err(e) => {
                    return Err(BackendError::Process(format!(
                        "writing the prompt to the agent: {e}"
                    )))
                }
            }
            drop(stdin); // end of input
            Ok(())
        };
        let io = async move {
            tokio::try_join!(
                feed,
                read_capped(stdout, cap, "stdout"),
                read_capped(stderr, cap, "stderr")
            )
        };
        let mut io = std::pin::pin!(io);

        enum First {
            Output(Result<((), Vec<u8>, Vec<u8>), BackendError>),
            Exit(io::Result<ExitStatus>),
        }
        let first = {
            let exit = Box::into_pin(guard.child.wait());
            tokio::select! {
                out = &mut io => First::Output(out),
                status = exit => First::Exit(status),
            }
        };
        let (out, err, status) = match first {
            First::Output(out) => {
                let ((), out, err) = out?;
                let status = Box::into_pin(guard.child.wait()).await;
                (out, err, status)
            }
            First::Exit(status) => {
                let output = match tokio::time::timeout(EXIT_GRACE, &mut io).await {
                    Ok(output) => output,
                    Err(_) => {
                        // Something the agent started still holds its output: end it.
                        let _ = guard.child.start_kill();
                        io.await
                    }
                };
                let ((), out, err) = output?;
                (out, err, status)
            }
        };
        let status =
            status.map_err(|e| BackendError::Process(format!("waiting for {command:?}: {e}")))?;
        drop(guard);
        if !status.success() {
            return Err(BackendError::AgentFailed(format!(
                "{command:?} failed ({status}); stderr: {}",
                tail(&err, STDERR_TAIL)
            )));
        }
        let text = String::from_utf8_lossy(&out).trim().to_string();
        Ok(word_counted(text, input_tokens))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_word_goes_between_the_two_argument_lists_or_nowhere() {
        use moot_core::chat::CallMode;
        let mut c = CliConfig::new("agent", vec!["exec".into()]);
        c.args_after_mode = vec!["--model".into(), "m 1".into(), "-".into()];
        assert_eq!(
            c.arguments(CallMode::Critique),
            ["exec", "critique", "--model", "m 1", "-"]
        );
        c.mode_arg = false;
        assert_eq!(
            c.arguments(CallMode::Generate),
            ["exec", "--model", "m 1", "-"]
        );
        assert_eq!(
            CliConfig::new("agent", vec![]).arguments(CallMode::Generate),
            ["generate"]
        );
    }

    #[test]
    fn sections() {
        let s = parse_sections("SOLUTION:\n42\n\nREASONING:\nsix times seven\n");
        assert_eq!(s.solution.as_deref(), Some("42"));
        assert_eq!(s.reasoning.as_deref(), Some("six times seven"));

        let s = parse_sections("Let me think.\n**SOLUTION:** x = 3\nmore\n## REASONING:\nbecause");
        assert_eq!(s.solution.as_deref(), Some("x = 3\nmore"));
        assert_eq!(s.reasoning.as_deref(), Some("because"));

        // Repeated marker: the later one wins; empty sections are absent.
        let s = parse_sections("SOLUTION: 1\nSOLUTION: 2\nREASONING:\n");
        assert_eq!(
            s,
            AgentSections {
                solution: Some("2".into()),
                reasoning: None
            }
        );
        assert_eq!(parse_sections("just an answer"), AgentSections::default());
        // Lower-case words are not markers.
        assert_eq!(parse_sections("solution: 3").solution, None);
    }

    #[test]
    fn prompt_puts_system_first() {
        let text = render_prompt(&[
            ChatMessage::user("Q1"),
            ChatMessage::system("Be careful.\n"),
            ChatMessage::assistant("A1"),
            ChatMessage::user("Q2"),
        ]);
        assert_eq!(
            text,
            "### System\nBe careful.\n\n### User\nQ1\n\n### Assistant\nA1\n\n### User\nQ2\n"
        );
        assert_eq!(render_prompt(&[]), "");
    }

    #[test]
    fn allow_list() {
        assert!(is_allowed("claude", &["claude".into()]));
        assert!(!is_allowed("claude", &["codex".into()]));
        assert!(!is_allowed("", &["".into()]));
        // `sh` and its resolved path are the same command.
        let sh = resolve("sh", std::env::var_os("PATH").as_deref()).expect("sh on PATH");
        let sh = sh.to_string_lossy().to_string();
        assert!(is_allowed(&sh, &["sh".into()]));
        assert!(is_allowed("sh", std::slice::from_ref(&sh)));
        assert!(!is_allowed(&sh, &["cat".into()]));
        // A path that does not exist is only allowed by its exact string.
        assert!(!is_allowed("/nonexistent/sh", &["sh".into()]));
    }

    #[test]
    fn config_checks() {
        let err = CliModel::new(CliConfig {
            allowed_commands: vec!["codex".into()],
            ..CliConfig::new("claude", vec![])
        })
        .unwrap_err();
        assert!(matches!(&err, BackendError::Config(m) if m.contains("not in the allowed")));
        // The allow-list starts empty: nothing runs until it is listed.
        assert!(CliModel::new(CliConfig::new("sh", vec![])).is_err());
        let sh = || CliConfig {
            allowed_commands: vec!["sh".into()],
            ..CliConfig::new("sh", vec![])
        };
        assert!(CliModel::new(CliConfig {
            command: " ".into(),
            ..sh()
        })
        .is_err());
        assert!(CliModel::new(CliConfig {
            max_output_bytes: 0,
            ..sh()
        })
        .is_err());
        assert!(CliModel::new(CliConfig {
            env_allow: vec!["A=B".into()],
            ..sh()
        })
        .is_err());
        let m = CliModel::new(sh()).unwrap();
        assert_eq!(m.name(), "cli:sh");
        assert_eq!(m.capabilities(), Capabilities::default());
    }

    #[test]
    fn stderr_tail() {
        assert_eq!(tail(b"abc\n", 500), "abc");
        assert_eq!(tail("xxé".as_bytes(), 1), "");
        assert_eq!(tail(b"0123456789", 3), "789");
    }
}
