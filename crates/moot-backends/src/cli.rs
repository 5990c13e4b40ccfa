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
//! - its processes end with its call: every process it starts, setsid and double-forked ones
//!   included, is killed with SIGKILL when the call ends — on cancellation (the future dropped,
//!   e.g. at a deadline), on an error, after a normal exit (what the command left running gets
//!   [`EXIT_GRACE`] to end by itself, and its answer is read at once, whoever still holds its
//!   stdout), at [`kill_live_agents`] (moot's SIGINT and SIGTERM), and when moot dies, even by
//!   SIGKILL. Each agent runs below a subreaper of its own that holds its whole process tree
//!   (see the `reap` module), in a PID namespace of its own where the machine allows it; the
//!   agent runs in a session of its own, without moot's terminal, so it cannot type into the
//!   user's shell and a terminal's Ctrl-C reaches moot, which decides.

mod reap;

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
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

/// After the command exits, how long what it started may live on (to finish writing its output)
/// before it is killed; and, once all of that has ended, how long its output may stay open (only
/// a process outside its tree that was handed the pipe can hold it) before the call gives up.
pub const EXIT_GRACE: Duration = Duration::from_millis(200);

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

/// Owns a running agent: the reaper moot spawned (the agent runs below it) and the lifeline
/// that keeps the reaper waiting. Dropping it closes the lifeline: the reaper kills everything
/// below it and exits (tokio collects it).
struct AgentGuard {
    child: tokio::process::Child,
    /// The reaper's pid, as listed in [`LIVE_REAPERS`].
    reaper: Option<libc::pid_t>,
    lifeline: Option<OwnedFd>,
}

/// The reapers of the agents running now, so that a signal that ends moot can end their agents
/// first ([`kill_live_agents`]).
static LIVE_REAPERS: std::sync::Mutex<std::collections::BTreeSet<libc::pid_t>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

fn live_reapers() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<libc::pid_t>> {
    // A panic while the set was held leaves it as it was: still the right set.
    LIVE_REAPERS.lock().unwrap_or_else(|e| e.into_inner())
}

impl AgentGuard {
    fn new(child: tokio::process::Child, lifeline: OwnedFd) -> AgentGuard {
        let reaper = child.id().and_then(|pid| libc::pid_t::try_from(pid).ok());
        if let Some(pid) = reaper {
            live_reapers().insert(pid);
        }
        AgentGuard {
            child,
            reaper,
            lifeline: Some(lifeline),
        }
    }
}

impl Drop for AgentGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.reaper {
            live_reapers().remove(&pid);
        }
        // The reaper reads end of file: it kills every process below it and exits. It is never
        // killed itself before them: the ones that left the agent's group would go to init.
        drop(self.lifeline.take());
        // Collect the reaper if it is already gone; otherwise tokio does in the background.
        if let (Ok(Some(_)), Some(group)) = (self.child.try_wait(), self.reaper) {
            // Gone, it ended everything below it, unless something killed it from outside (the
            // agent can, where it has no PID namespace of its own: it is its child). Then what is left in the agent's group (the reaper
            // led it) is killed here; whatever had left the group is beyond reach.
            // SAFETY: killpg takes plain integers; an empty group fails with ESRCH, harmlessly.
            unsafe {
                libc::killpg(group, libc::SIGKILL);
            }
        }
    }
}

/// Kills every agent running now and everything each started, setsid descendants included
/// (SIGKILL: they end at once). For a signal handler that is about to end moot; each reaper
/// then sees its agent gone and exits, and moot's exit would end them too.
pub fn kill_live_agents() {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let reapers: Vec<libc::pid_t> = live_reapers().iter().copied().collect();
    for reaper in reapers {
        // Listed but already collected, its pid could be another process's by now: only a
        // child of moot's is a reaper of moot's.
        if reap::parent_of(reaper) == Some(me) {
            reap::kill_below(reaper);
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

        // The agent must not read moot's keys from its memory or environment.
        moot_proc::seal().map_err(|e| {
            BackendError::Process(format!(
                "cannot start {command:?}: cannot keep it out of moot's memory: {e}"
            ))
        })?;
        let (lifeline, keep) = reap::lifeline().map_err(|e| {
            BackendError::Process(format!(
                "cannot start {command:?}: a pipe for its reaper: {e}"
            ))
        })?;
        let mut cmd = tokio::process::Command::new(command);
        if let Some(dir) = &self.config.working_dir {
            cmd.current_dir(dir);
        }
        cmd.args(self.config.arguments(request.mode))
            .env_clear()
            .envs(self.child_env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let lifeline_fd = lifeline.as_raw_fd();
        // Where the machine can give an agent namespaces of its own, it gets them or does not
        // run; where it cannot, that is said once.
        let isolated_only = moot_proc::namespace_gap().is_none();
        if let Some(gap) = moot_proc::namespace_gap_once() {
            eprintln!("moot: warning: {gap}");
        }
        // Built here, before the fork: the child only installs it.
        let refusal = moot_proc::Refusal::for_agents();
        // SAFETY: split_off_reaper makes only async-signal-safe system calls, on the stack and
        // on memory it maps or that was built before the fork; the descriptor it keeps stays
        // open until spawn returns.
        unsafe {
            cmd.pre_exec(move || {
                reap::split_off_reaper(lifeline_fd, EXIT_GRACE, isolated_only, refusal)
            });
        }
        // Spawning (fork and exec) blocks for a millisecond or more on a busy machine. On the
        // blocking pool, a round's agents start side by side instead of one after another on
        // the thread that runs the debate, which would push the last agent's start, and so
        // the round, back by the sum of the others' spawns. The agent is guarded from the
        // moment it exists: a call cancelled during its spawn ends it when the result is
        // dropped.
        let spawned = tokio::task::spawn_blocking(move || {
            let child = cmd.spawn();
            drop(lifeline); // the reaper has its copy
            child.map(|child| AgentGuard::new(child, keep))
        })
        .await
        .map_err(|e| BackendError::Process(format!("cannot start {command:?}: {e}")))?;
        let mut guard = spawned.map_err(|e| {
            // Namespaces of the agent's own could not be made where they could at start: the
            // user's allowance of them is used up (by another program, for a while), not the
            // configuration wrong.
            if isolated_only && e.raw_os_error() == Some(libc::ENOSPC) {
                return BackendError::Process(format!(
                    "cannot start {command:?}: no namespace of its own can be made now (this \
                     user's allowance, sysctl user.max_user_namespaces, is used up), and moot \
                     starts no agent without one on this machine"
                ));
            }
            let message = if isolated_only && e.kind() != io::ErrorKind::NotFound {
                format!(
                    "cannot start {command:?}: {e} (or cannot give it a PID namespace of its \
                     own, without which moot does not start an agent on this machine)"
                )
            } else {
                format!("cannot start {command:?}: {e}")
            };
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
            .stdin
            .take()
            .ok_or_else(|| pipe_missing("stdin"))?;
        let stdout = guard
            .child
            .stdout
            .take()
            .ok_or_else(|| pipe_missing("stdout"))?;
        let stderr = guard
            .child
            .stderr
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
        // The reaper exits when the agent has, and all it started has ended (or been killed
        // after EXIT_GRACE): the status is the agent's.
        let first = tokio::select! {
            out = &mut io => First::Output(out),
            status = guard.child.wait() => First::Exit(status),
        };
        let (out, err, status) = match first {
            First::Output(out) => {
                let ((), out, err) = out?;
                let status = guard.child.wait().await;
                (out, err, status)
            }
            First::Exit(status) => {
                // Every process of the agent's has ended: the pipes are at their end as soon as
                // the kernel has closed them. Only one outside its tree, handed a descriptor,
                // could hold them longer.
                let output = tokio::time::timeout(EXIT_GRACE, &mut io)
                    .await
                    .map_err(|_| {
                        // Only an agent that broke out (killed its reaper, or handed its pipe
                        // to a stranger) gets here: asking it again would repeat that.
                        BackendError::AgentFailed(format!(
                            "{command:?} exited, but its output is still held open by a process outside it (did it kill the process it runs below?)"
                        ))
                    })?;
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
