//! The README's claims, tested: README.md is read at test time and every command line of its
//! shell blocks is checked, so a README command added without a test, or one that a change
//! breaks, fails here.
//!
//! - Each `moot …` line (a usage synopsis, an example, a `$ moot …` with its output) names only
//!   subcommands and flags that `moot … --help` lists. So does each `moot …` the prose quotes.
//! - A `moot` line that can run does run, against the binary, in order, in one temporary folder
//!   with its own store: its optional `[…]` groups dropped, its placeholders filled from
//!   [`FILLS`], and adapted by the rules of [`Bench::adapt`] so that it needs no model and no network
//!   (simulated agents, or agents on a fake OpenAI-compatible server). It must succeed, and
//!   print what the README shows after a `$` line. A line that still holds a placeholder or an
//!   alternative (`--rule majority-last|free-mad|…`) is a synopsis and is only flag-checked;
//!   one that could run but must not is in [`MOOT_SKIPS`], with the reason.
//! - A line running another program is in [`OTHER_SKIPS`], with the reason and the tests that
//!   cover it; one that is in neither list fails the test.
//! - Every file and folder of the repository the README names exists, and the benchmark debate
//!   id form it gives (`moot show NAME/PROTOCOL/ITEM-ID`) opens a real benchmark's debate.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::fake_openai::FakeOpenAi;
use common::Env;

/// Placeholders a runnable line may hold, and what they become. `RUN` is the debate the last
/// `moot ask` made; `BENCH` and `NAME` a simulated benchmark made before the README's lines.
const FILLS: &[(&str, &str)] = &[
    ("RUN", "the last `moot ask`'s run id"),
    ("BENCH", BENCH),
    ("NAME", BENCH),
    ("R", "1"),
    ("A", "2"),
    ("M", "expert"),
];

/// The benchmark `BENCH` and `NAME` stand for: arithmetic items under `som` and `cot`, `--sim`.
const BENCH: &str = "arith";

/// The gold answer `--sim` needs for each question a README `moot ask` line asks.
const GOLDS: &[(&str, &str)] = &[(
    "Is the Pacific larger than the Atlantic? Answer yes or no.",
    "yes",
)];

/// Configurations the README's lines name as the reader's own (written by `moot config example`
/// or by hand): a runnable line gets a team of three agents on a fake OpenAI-compatible server
/// instead. Any other `--config` must be a file of the repository.
const CONFIG_STANDINS: &[&str] = &["moot.toml", "team.toml", "agents.toml"];

/// `moot` lines that could run but must not, by subcommand, with the reason.
const MOOT_SKIPS: &[(&str, &str)] = &[(
    "model pull",
    "downloads a model from PyPI (491 MB for the default); the real-model tests pull theirs \
     (ask_local, scripts/test) and the model cache's fetch and verification are tested in \
     crates/moot-backends",
)];

/// Programs other than `moot` the README's shell blocks run, each with why it is not run here
/// and what runs it instead. A program that is a path of the repository must exist.
const OTHER_SKIPS: &[(&str, &str)] = &[
    (
        "scripts/ask",
        "installs packages and pulls the real model; ask_local's tests run the same debate on it \
         (scripts/test)",
    ),
    ("scripts/test", "the whole suite, this test among it"),
    ("cargo", "fmt, clippy and the test suite: what .ci/run runs"),
    (
        "scripts/module-cycles",
        "a repository check that .ci/run runs",
    ),
    (
        "scripts/fuzz",
        "fuzzing runs on its own schedule; .ci/run compiles the targets (scripts/fuzz --check)",
    ),
    (
        "scripts/python-tests",
        "builds the wheel and runs its pytest suite; .ci/run runs it",
    ),
    (".ci/run", "CI itself"),
    (
        "export",
        "sets MOOT_STORE to a PostgreSQL URL; the lines after it run on a SQLite store here, and \
         cli_work's and cli_store's tests run them on a real PostgreSQL",
    ),
    (
        "python3",
        "the wheel's venv; scripts/python-tests builds and installs the wheel so",
    ),
    (
        ".venv/bin/maturin",
        "the wheel's build; scripts/python-tests builds it so",
    ),
    (
        ".venv/bin/pip",
        "the wheel's install; scripts/python-tests installs it so",
    ),
    (
        "inspect",
        "needs inspect-ai; crates/moot-py/tests/test_inspect.py runs a real `inspect eval`",
    ),
    (
        "lm_eval",
        "needs lm-eval, which pulls torch; tried by hand, as the README says",
    ),
];

/// Top-level folders of the repository: a word of the README that starts with one of them
/// names a file or folder that must exist.
const ROOTS: &[&str] = &[
    ".ci/",
    "crates/",
    "datasets/",
    "deploy/",
    "docs/",
    "examples/",
    "experiments/",
    "fuzz/",
    "results/",
    "scripts/",
    "third_party/",
];

/// Shell block languages whose lines are commands.
const SHELL: &[&str] = &["sh", "bash", "shell", "console"];

/// The most items a runnable `moot bench` line benchmarks here.
const LIMIT: u64 = 3;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository")
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).expect("README.md")
}

// ---------------------------------------------------------------------------------------------
// Shell words

/// One word of a command line, as a shell reads it (quotes removed); `quoted` when any of it
/// was quoted (then `|`, `>`, `[` in it are text).
#[derive(Clone, Debug, PartialEq)]
struct Word {
    text: String,
    quoted: bool,
}

/// The shell words of `text` (lines joined by newlines), comments left out; `None` while a
/// quote is open (the command goes on on the next line).
fn words(text: &str) -> Option<Vec<Word>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut current: Option<Word> = None;
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => out.extend(current.take()),
            '#' if current.is_none() => {
                // A comment, to the end of its line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => out.extend(current.take()),
                Some(c) => push(&mut current, c, false),
            },
            '\'' | '"' => {
                let word = current.get_or_insert(Word {
                    text: String::new(),
                    quoted: true,
                });
                word.quoted = true;
                loop {
                    match chars.next() {
                        None => return None,
                        Some(q) if q == c => break,
                        Some('\\') if c == '"' => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => word.text.push(e),
                            Some(e) => {
                                word.text.push('\\');
                                word.text.push(e);
                            }
                            None => return None,
                        },
                        Some(x) => word.text.push(x),
                    }
                }
            }
            c => push(&mut current, c, false),
        }
    }
    out.extend(current);
    Some(out)
}

fn push(current: &mut Option<Word>, c: char, quoted: bool) {
    current
        .get_or_insert(Word {
            text: String::new(),
            quoted,
        })
        .text
        .push(c);
}

// ---------------------------------------------------------------------------------------------
// The README's command lines

/// A command line of the README.
#[derive(Clone, Debug)]
struct Line {
    /// Its first line in README.md (1-based).
    at: usize,
    /// As written, its lines joined by newlines.
    text: String,
    /// The output the README shows after a `$ ` command.
    shown: Vec<String>,
    /// Quoted in prose (`moot …` in backticks) rather than a shell block's line.
    inline: bool,
}

impl Line {
    fn words(&self) -> Vec<Word> {
        words(&self.text).unwrap_or_else(|| panic!("README.md:{}: an open quote", self.at))
    }
}

/// Every command line of the README's shell blocks: `\`-continued lines and indented
/// continuation lines (usage synopses) joined, `$ ` prompts taken off and what follows them
/// kept as their output.
fn shell_lines(readme: &str) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    let mut fence: Option<(String, bool)> = None; // (language, a `$ ` prompt seen)
    let mut open = false; // the last line goes on (a `\`, or an open quote)
    let mut block_start = 0; // the first line of this block, in `lines`
    for (i, raw) in readme.lines().enumerate() {
        let t = raw.trim_start();
        if let Some(lang) = t.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some((lang.trim().to_string(), false)),
            };
            open = false;
            block_start = lines.len();
            continue;
        }
        let Some((lang, prompt)) = fence.as_mut() else {
            continue;
        };
        if !SHELL.contains(&lang.as_str()) {
            continue;
        }
        let continues = open
            || (!*prompt
                && !t.is_empty()
                && !t.starts_with('#')
                && raw.starts_with(char::is_whitespace)
                && lines.len() > block_start);
        if continues {
            let last = lines.last_mut().expect("a line to continue");
            last.text.push('\n');
            last.text.push_str(raw);
        } else if let Some(command) = t.strip_prefix("$ ") {
            *prompt = true;
            lines.push(Line {
                at: i + 1,
                text: command.to_string(),
                shown: vec![],
                inline: false,
            });
        } else if *prompt {
            if let Some(last) = lines.last_mut() {
                last.shown.push(raw.to_string());
            }
            continue;
        } else if t.is_empty() || t.starts_with('#') {
            continue;
        } else {
            lines.push(Line {
                at: i + 1,
                text: raw.to_string(),
                shown: vec![],
                inline: false,
            });
        }
        let last = lines.last().expect("a line");
        let physical = last.text.lines().last().unwrap_or("");
        open = words(&last.text).is_none() || strip_comment(physical).trim_end().ends_with('\\');
    }
    lines
}

/// `line` without its shell comment (a `#` starting a word outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return &line[..i],
            _ => {}
        }
        previous = c;
    }
    line
}

/// The README's code spans outside its code blocks (white space folded), each with its line.
fn prose_spans(readme: &str) -> Vec<(String, usize)> {
    // The prose, with the line each character is on.
    let mut prose: Vec<(char, usize)> = Vec::new();
    let mut fenced = false;
    for (i, raw) in readme.lines().enumerate() {
        if raw.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            prose.extend(raw.chars().map(|c| (c, i + 1)));
            prose.push((' ', i + 1));
        }
    }
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(open) = prose[at..].iter().position(|&(c, _)| c == '`') {
        let start = at + open + 1;
        let Some(len) = prose[start..].iter().position(|&(c, _)| c == '`') else {
            break;
        };
        let span: String = prose[start..start + len].iter().map(|&(c, _)| c).collect();
        at = start + len + 1;
        if len > 0 {
            let folded = span.split_whitespace().collect::<Vec<_>>().join(" ");
            out.push((folded, prose[start].1));
        }
    }
    out
}

/// Every `moot SUBCOMMAND …` the README quotes in backticks outside its code blocks.
fn inline_lines(readme: &str) -> Vec<Line> {
    prose_spans(readme)
        .into_iter()
        .filter(|(span, _)| {
            let mut parts = span.split_whitespace();
            parts.next() == Some("moot")
                && parts
                    .next()
                    .is_some_and(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        })
        .map(|(text, at)| Line {
            at,
            text,
            shown: vec![],
            inline: true,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// What `moot … --help` says

#[derive(Clone, Debug, Default)]
struct Help {
    flags: BTreeSet<String>,
    commands: BTreeSet<String>,
    /// A subcommand is required (`Usage: moot config <COMMAND>`).
    needs_command: bool,
}

/// `moot PATH… --help`, parsed: its flags (with their visible aliases) and subcommands.
fn help(cache: &mut HashMap<Vec<String>, Help>, path: &[String]) -> Help {
    if let Some(h) = cache.get(path) {
        return h.clone();
    }
    let out = Command::new(assert_cmd::cargo::cargo_bin("moot"))
        .args(path)
        .arg("--help")
        .output()
        .expect("moot --help");
    assert!(
        out.status.success(),
        "moot {} --help failed",
        path.join(" ")
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut h = Help::default();
    let mut section = "";
    for line in text.lines() {
        if let Some(usage) = line.strip_prefix("Usage: ") {
            h.needs_command = usage.contains("<COMMAND>") && !usage.contains("[COMMAND]");
            continue;
        }
        if !line.starts_with(' ') && line.ends_with(':') {
            section = line;
            continue;
        }
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if section == "Commands:" && indent <= 4 {
            if let Some(name) = t.split_whitespace().next() {
                h.commands.insert(name.to_string());
            }
        }
        if t.starts_with('-') && indent < 8 {
            for token in t.split_whitespace() {
                let token = token.trim_end_matches(',');
                if !token.starts_with('-') {
                    break;
                }
                h.flags
                    .insert(token.split(['=', '[']).next().unwrap().to_string());
            }
        }
        if let Some(at) = t.find("aliases: ") {
            let rest = &t[at + "aliases: ".len()..];
            for alias in rest.split([',', ']', ' ']).filter(|a| a.starts_with('-')) {
                h.flags.insert(alias.to_string());
            }
        }
    }
    cache.insert(path.to_vec(), h.clone());
    h
}

// ---------------------------------------------------------------------------------------------
// Reading a `moot` line

/// A `moot` command of a line: its subcommand path and the words after it.
#[derive(Clone, Debug)]
struct MootCommand {
    path: Vec<String>,
    args: Vec<Word>,
}

/// The pieces of a shell line: programs joined by `|`, `>`, `&`, `&&` (outside `[…]` and
/// `(…)` groups, where `|` separates alternatives).
fn pipeline(words: &[Word]) -> Vec<(Vec<Word>, Option<String>)> {
    let mut pieces = vec![(Vec::new(), None)];
    let mut depth = 0i32;
    for w in words {
        if !w.quoted {
            depth += w.text.matches(['[', '(']).count() as i32;
            depth -= w.text.matches([']', ')']).count() as i32;
        }
        let operator = !w.quoted && ["|", ">", "&", "&&", ";"].contains(&w.text.as_str());
        if operator && depth <= 0 {
            pieces.last_mut().unwrap().1 = Some(w.text.clone());
            pieces.push((Vec::new(), None));
        } else {
            pieces.last_mut().unwrap().0.push(w.clone());
        }
    }
    pieces.retain(|(p, op)| !p.is_empty() || op.is_some());
    pieces
}

/// The program a piece of a line runs: its first word after `NAME=value` assignments.
fn program(piece: &[Word]) -> Option<&str> {
    piece
        .iter()
        .find(|w| w.quoted || !w.text.contains('=') || w.text.starts_with('-'))
        .map(|w| w.text.as_str())
}

/// The subcommand path of `moot ARGS…`, checked against `--help`: each word names a subcommand
/// of the one before while it has subcommands; one naming none where one is required fails.
fn resolve(cache: &mut HashMap<Vec<String>, Help>, args: &[Word]) -> Result<MootCommand, String> {
    let mut path: Vec<String> = Vec::new();
    let mut rest = args;
    loop {
        let h = help(cache, &path);
        let Some(w) = rest.first() else {
            if h.needs_command || path.is_empty() {
                return Err(format!("`moot {}` needs a subcommand", path.join(" ")));
            }
            break;
        };
        if !w.quoted && h.commands.contains(&w.text) {
            path.push(w.text.clone());
            rest = &rest[1..];
        } else if h.needs_command || path.is_empty() {
            return Err(format!(
                "`moot {}` has no subcommand {:?} (it has {:?})",
                path.join(" "),
                w.text,
                h.commands
            ));
        } else {
            break;
        }
    }
    Ok(MootCommand {
        path,
        args: rest.to_vec(),
    })
}

/// The flags `args` names that `moot PATH --help` does not list.
fn unknown_flags(help: &Help, args: &[Word]) -> Vec<String> {
    args.iter()
        .filter(|w| !w.quoted)
        .map(|w| {
            w.text
                .trim_start_matches(['[', '('])
                .trim_end_matches([']', ')', '…', ','])
        })
        .filter(|t| {
            t.starts_with('-') && t.len() > 1 && !t[1..].starts_with(|c: char| c.is_ascii_digit())
        })
        .map(|t| t.split('=').next().unwrap().to_string())
        .filter(|f| !help.flags.contains(f))
        .collect()
}

/// A segment of a word that is a placeholder: capitals, digits, `-` and `_`, starting with a
/// capital (`RUN`, `ITEM-ID`, `R`).
fn is_placeholder(segment: &str) -> bool {
    segment.starts_with(|c: char| c.is_ascii_uppercase())
        && segment
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn segments(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .filter(|s| !s.is_empty())
}

/// The forms of `args` that run: optional `[…]` groups dropped, placeholders filled (one form
/// per alternative of a `RUN|BENCH` word); `Err` with why when a placeholder, alternative or
/// group is left (a synopsis).
fn runnable_forms(
    args: &[Word],
    fills: &BTreeMap<String, String>,
) -> Result<Vec<Vec<Word>>, String> {
    // Optional groups out.
    let mut kept = Vec::new();
    let mut depth = 0i32;
    for w in args {
        if w.quoted {
            if depth == 0 {
                kept.push(w.clone());
            }
            continue;
        }
        let opens = w.text.matches('[').count() as i32;
        let closes = w.text.matches(']').count() as i32;
        if depth == 0 && opens == 0 {
            kept.push(w.clone());
        }
        depth += opens - closes;
    }
    let mut forms: Vec<Vec<Word>> = vec![Vec::new()];
    for w in kept {
        if w.quoted {
            if is_placeholder(&w.text) {
                return Err(format!("placeholder {:?}", w.text));
            }
            forms.iter_mut().for_each(|f| f.push(w.clone()));
            continue;
        }
        // (An elided URL, `postgres://…`, is replaced as it is run.)
        if !w.text.contains("://") && w.text.contains(['…', '(', ')', '<', '>']) {
            return Err(format!("{:?} is not a literal word", w.text));
        }
        let alternatives: Vec<&str> = w.text.split('|').collect();
        let mut filled = Vec::new();
        for alternative in &alternatives {
            let mut text = String::new();
            let mut rest = *alternative;
            // Fill each placeholder segment in place.
            while let Some(segment) = segments(rest).next() {
                let at = rest.find(segment).unwrap();
                text.push_str(&rest[..at]);
                if is_placeholder(segment) {
                    match fills.get(segment) {
                        Some(value) => text.push_str(value),
                        None => return Err(format!("placeholder {segment}")),
                    }
                } else {
                    text.push_str(segment);
                }
                rest = &rest[at + segment.len()..];
            }
            text.push_str(rest);
            filled.push(text);
        }
        if alternatives.len() > 1 && !alternatives.iter().all(|a| fills.contains_key(*a)) {
            return Err(format!("alternatives {:?}", w.text));
        }
        forms = forms
            .into_iter()
            .flat_map(|f| {
                filled.iter().map(move |text| {
                    let mut f = f.clone();
                    f.push(Word {
                        text: text.clone(),
                        quoted: false,
                    });
                    f
                })
            })
            .collect();
    }
    Ok(forms)
}

// ---------------------------------------------------------------------------------------------
// Running a line

/// What the README's lines run in: one folder, one store, a simulated benchmark, a fake model
/// server and a team on it.
struct Bench {
    env: Env,
    fills: BTreeMap<String, String>,
    team: PathBuf,
    data_dir: Option<PathBuf>,
    arith: String,
    /// What `RUN`, `BENCH` and `NAME` are for `moot regrade`: a simulated HumanEval benchmark
    /// and its debate.
    code: BTreeMap<String, String>,
    outs: usize,
    /// What each run line was adapted by, for the failure messages and the log.
    log: Vec<String>,
    _model: FakeOpenAi,
}

impl Bench {
    fn new() -> Bench {
        let env = Env::new();
        let model = FakeOpenAi::start(std::time::Duration::ZERO);
        let team = env.write("fake-team.toml", &model.team(3, 1));
        common::arith_bench(&env, 3);
        let arith = common::arith_dataset(&env, 4);
        let data_dir = std::env::var_os("MOOT_DATA_DIR")
            .map(PathBuf::from)
            .or_else(|| Some(repo().join("../shared/data")))
            .filter(|d| d.join("gsm8k").is_dir());
        let mut fills: BTreeMap<String, String> = FILLS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        // A debate for `RUN` until the README's own `moot ask` makes one.
        let out = env.stdout(&["ask", "What is 6 * 7?", "--sim", "--gold", "42", "--json"]);
        let run: serde_json::Value = serde_json::from_str(&out).unwrap();
        fills.insert("RUN".into(), run["run_id"].as_str().unwrap().to_string());
        env.stdout(&[
            "bench",
            "--sim",
            "--dataset",
            "humaneval",
            "--limit",
            "1",
            "--protocol",
            "som",
            "--name",
            "code",
        ]);
        let report = env.stdout(&["report", "code", "--format", "jsonl"]);
        let debate: serde_json::Value =
            serde_json::from_str(report.lines().next().unwrap()).unwrap();
        let code = BTreeMap::from([
            (
                "RUN".to_string(),
                debate["run_id"].as_str().unwrap().to_string(),
            ),
            ("BENCH".to_string(), "code".to_string()),
            ("NAME".to_string(), "code".to_string()),
        ]);
        Bench {
            env,
            fills,
            code,
            team,
            data_dir,
            arith,
            outs: 0,
            log: Vec::new(),
            _model: model,
        }
    }

    fn dir(&self) -> &Path {
        self.env.dir.path()
    }

    /// `args` (a `moot` command's words after its subcommand path) adapted to run here: each
    /// rule applied is said in the returned notes.
    fn adapt(&mut self, path: &[String], args: Vec<Word>, notes: &mut Vec<String>) -> Vec<String> {
        let sub = path.join(" ");
        let mut out: Vec<String> = Vec::new();
        let mut stand_in_team = false;
        let mut i = 0;
        while i < args.len() {
            let w = &args[i].text;
            let value = args.get(i + 1).map(|v| v.text.clone());
            match (w.as_str(), value) {
                ("--config", Some(v)) => {
                    i += 1;
                    out.push(w.clone());
                    if CONFIG_STANDINS.contains(&v.as_str()) {
                        notes.push(format!("--config {v} → agents on a fake OpenAI server"));
                        stand_in_team = true;
                        out.push(self.team.display().to_string());
                    } else if repo().join(&v).is_file() {
                        out.push(repo().join(&v).display().to_string());
                    } else {
                        panic!(
                            "`moot {sub}` names the configuration {v}, which is neither a file \
                             of the repository nor one of the reader's own ({CONFIG_STANDINS:?})"
                        );
                    }
                }
                ("--out", Some(v)) => {
                    i += 1;
                    self.outs += 1;
                    let dir = self.dir().join(format!("out-{}", self.outs));
                    notes.push(format!("--out {v} → a fresh folder"));
                    out.extend([w.clone(), dir.display().to_string()]);
                }
                ("--port", Some(v)) => {
                    i += 1;
                    notes.push(format!("--port {v} → --port 0"));
                    out.extend([w.clone(), "0".into()]);
                }
                ("--limit", Some(v)) => {
                    i += 1;
                    let n: u64 = v.parse().expect("--limit N");
                    if n > LIMIT {
                        notes.push(format!("--limit {v} → --limit {LIMIT}"));
                    }
                    out.extend([w.clone(), n.min(LIMIT).to_string()]);
                }
                ("--dataset", Some(v)) => {
                    i += 1;
                    out.push(w.clone());
                    out.push(self.dataset(&v, notes));
                }
                ("moot.db", _) => {
                    notes.push("moot.db → this test's store".into());
                    out.push(self.env.store().display().to_string());
                }
                (url, _) if url.starts_with("postgres://") => {
                    notes.push(format!("{url} → a SQLite file (cli_store runs PostgreSQL)"));
                    out.push(self.dir().join("copy.db").display().to_string());
                }
                (word, _) => out.push(self.repo_path(word)),
            }
            i += 1;
        }
        if sub == "serve" && !out.iter().any(|w| w == "--port") {
            notes.push("--port 0 added".into());
            out.extend(["--port".into(), "0".into()]);
        }
        let builds_a_team = (sub == "ask" || sub == "bench")
            && !stand_in_team
            && !out.iter().any(|w| w == "--fork-of" || w == "--sim");
        if builds_a_team {
            notes.push("--sim added".into());
            out.push("--sim".into());
            if sub == "ask" {
                let question = out.first().expect("a question");
                let gold = GOLDS
                    .iter()
                    .find(|(q, _)| q == question)
                    .unwrap_or_else(|| {
                        panic!("the README asks {question:?}: add its gold answer to GOLDS")
                    })
                    .1;
                out.extend(["--gold".into(), gold.into()]);
            }
        }
        if sub == "import" {
            for folder in out.clone().iter().filter(|w| w.ends_with('/')) {
                self.transcripts(folder);
                notes.push(format!("{folder} made: a freemad transcript of RUN"));
            }
        }
        out
    }

    /// A `--dataset` of the README, as it runs here: a built-in one from the shared data when
    /// it is there, else the arithmetic items; a file's path in the repository made absolute.
    fn dataset(&self, spec: &str, notes: &mut Vec<String>) -> String {
        for kind in ["jsonl:", "csv:", "parquet:"] {
            if let Some(rest) = spec.strip_prefix(kind) {
                let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
                let path = self.repo_path(path);
                return format!("{kind}{path}?{query}");
            }
        }
        if spec == "humaneval" || self.data_dir.is_some() {
            return spec.to_string();
        }
        notes.push(format!(
            "--dataset {spec} → arithmetic items (no shared data here)"
        ));
        self.arith.clone()
    }

    /// `word`, made absolute when it is a path of the repository.
    fn repo_path(&self, word: &str) -> String {
        if ROOTS.iter().any(|r| word.starts_with(r)) && repo().join(word).exists() {
            repo().join(word).display().to_string()
        } else {
            word.to_string()
        }
    }

    /// Marks `run` interrupted before its last round, as a crash leaves it: running, no live
    /// owner, its last round's calls and its decisions not stored.
    fn interrupt(&self, run: &str) {
        common::sqlite_exec(
            &self.env.store(),
            &format!(
                "UPDATE runs SET status = 'running', answer = NULL, finished_at = NULL, heartbeat_ms = NULL, owner = NULL WHERE id = '{run}';
                 DELETE FROM calls WHERE run_id = '{run}' AND round = (SELECT MAX(round) FROM calls WHERE run_id = '{run}');
                 DELETE FROM decisions WHERE run_id = '{run}';"
            ),
        );
    }

    /// A folder `folder` (in the test's folder) holding RUN's freemad transcript.
    fn transcripts(&self, folder: &str) {
        let dir = self.dir().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let transcript = self
            .env
            .stdout(&["show", &self.fills["RUN"], "--format", "freemad"]);
        std::fs::write(dir.join("transcript-1.json"), transcript).unwrap();
    }

    /// Runs `moot PATH ARGS` in the test's folder; its stdout, failing with what the README
    /// line was when it does not succeed.
    fn run(
        &mut self,
        line: &Line,
        path: &[String],
        args: &[String],
        stdin: Option<String>,
    ) -> String {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("moot"));
        cmd.current_dir(self.dir())
            .env("MOOT_STORE", self.env.store())
            .env_remove("MOOT_MODEL_DIR")
            .args(path)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &self.data_dir {
            cmd.env("MOOT_DATA_DIR", dir);
        }
        let mut child = cmd.spawn().expect("start moot");
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "README.md:{}: {}\nran as: moot {} {}\nfailed ({}):\n{stdout}\n{stderr}",
            line.at,
            line.text,
            path.join(" "),
            args.join(" "),
            out.status
        );
        if path == ["ask"] {
            if let Some(id) = stderr.lines().find_map(|l| l.strip_prefix("run ")) {
                self.fills.insert("RUN".into(), id.trim().to_string());
            }
        }
        stdout
    }

    /// Starts `moot serve ARGS`, waits for its first line, asks its `/health`, and stops it.
    fn serve(&self, line: &Line, args: &[String]) {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("moot"))
            .current_dir(self.dir())
            .env("MOOT_STORE", self.env.store())
            .env_remove("MOOT_SERVE_TOKEN")
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start moot serve");
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let url = first
            .trim()
            .strip_prefix("moot serve: http://")
            .map(str::to_string);
        let health = url.as_deref().map(|addr| {
            let mut s = std::net::TcpStream::connect(addr).expect("connect to moot serve");
            write!(
                s,
                "GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut response = String::new();
            s.read_to_string(&mut response).unwrap();
            response
        });
        let _ = child.kill();
        let _ = child.wait();
        let health = health.unwrap_or_else(|| {
            panic!(
                "README.md:{}: {}\nfirst line: {first:?}",
                line.at, line.text
            )
        });
        assert!(
            health.starts_with("HTTP/1.1 200"),
            "README.md:{}: {}\n/health: {health}",
            line.at,
            line.text
        );
    }
}

/// What became of a README line.
#[derive(Debug, PartialEq)]
enum Fate {
    Ran(usize),
    Synopsis(String),
    Skipped(&'static str),
}

/// Checks and runs one shell line; what became of it.
fn check_line(bench: &mut Bench, cache: &mut HashMap<Vec<String>, Help>, line: &Line) -> Fate {
    let words = line.words();
    let pieces = pipeline(&words);
    let moot_at = pieces
        .iter()
        .position(|(piece, _)| program(piece) == Some("moot"));
    let Some(moot_at) = moot_at else {
        let program = program(&pieces[0].0).unwrap_or("");
        let reason = OTHER_SKIPS
            .iter()
            .find(|(p, _)| *p == program)
            .unwrap_or_else(|| {
                panic!(
                    "README.md:{}: {}\nruns {program:?}, which this test neither runs nor skips: \
                     run it, or add it to OTHER_SKIPS with the reason",
                    line.at, line.text
                )
            })
            .1;
        if ROOTS.iter().any(|r| program.starts_with(r)) {
            let path = repo().join(program);
            let executable = std::fs::metadata(&path)
                .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0)
                .unwrap_or(false);
            assert!(
                executable,
                "README.md:{}: {program} is not an executable of the repository",
                line.at
            );
        }
        return Fate::Skipped(reason);
    };
    let (piece, operator) = &pieces[moot_at];
    let skip = piece.iter().position(|w| w.text == "moot").unwrap() + 1;
    let command = resolve(cache, &piece[skip..])
        .unwrap_or_else(|e| panic!("README.md:{}: {}\n{e}", line.at, line.text));
    let h = help(cache, &command.path);
    let unknown = unknown_flags(&h, &command.args);
    assert!(
        unknown.is_empty(),
        "README.md:{}: {}\n`moot {} --help` lists no {unknown:?} (it lists {:?})",
        line.at,
        line.text,
        command.path.join(" "),
        h.flags
    );
    if line.inline {
        return Fate::Synopsis("quoted in prose: flags checked".into());
    }
    let sub = command.path.join(" ");
    if let Some((_, reason)) = MOOT_SKIPS.iter().find(|(p, _)| *p == sub) {
        return Fate::Skipped(reason);
    }
    let mut fills = bench.fills.clone();
    if sub == "regrade" {
        // Regrading needs programs and tests: a benchmark of HumanEval and one of its debates.
        fills.extend(bench.code.clone());
    }
    let forms = match runnable_forms(&command.args, &fills) {
        Ok(forms) => forms,
        Err(why) => return Fate::Synopsis(why),
    };
    // What goes into moot: an `echo '…' |` before it.
    let stdin = (moot_at > 0).then(|| {
        let (before, op) = &pieces[moot_at - 1];
        assert_eq!(op.as_deref(), Some("|"), "README.md:{}", line.at);
        assert_eq!(
            program(before),
            Some("echo"),
            "README.md:{}: only `echo … |` is read",
            line.at
        );
        before[1..]
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
            + "\n"
    });
    for form in &forms {
        let mut notes = Vec::new();
        if sub == "resume" && form.first().map(|w| &w.text) == fills.get("RUN") {
            bench.interrupt(&fills["RUN"]);
            notes.push("RUN interrupted first, as a crash before its last round leaves it".into());
        }
        let args = bench.adapt(&command.path, form.clone(), &mut notes);
        if sub == "serve" {
            bench.serve(line, &args);
        } else {
            let stdout = bench.run(line, &command.path, &args, stdin.clone());
            match (operator.as_deref(), pieces.get(moot_at + 1)) {
                (Some(">"), Some((target, _))) => {
                    let file = bench.dir().join(&target[0].text);
                    std::fs::write(&file, &stdout).unwrap();
                    if file.extension().is_some_and(|e| e == "toml") {
                        bench.run(
                            line,
                            &["config".into(), "check".into()],
                            &[file.display().to_string()],
                            None,
                        );
                        notes.push(format!("{} checked by moot config check", target[0].text));
                    }
                }
                (None | Some("&"), _) => {}
                (op, _) => panic!("README.md:{}: {op:?} after moot is not run here", line.at),
            }
            shows(line, &stdout);
        }
        bench.log.push(format!(
            "README.md:{}: moot {sub} {}{}",
            line.at,
            args.join(" "),
            if notes.is_empty() {
                String::new()
            } else {
                format!("  [{}]", notes.join("; "))
            }
        ));
    }
    Fate::Ran(forms.len())
}

/// The output the README shows after a `$` line is what the line prints: the same text, or
/// for a table the same header row.
fn shows(line: &Line, stdout: &str) {
    let shown: Vec<&str> = line
        .shown
        .iter()
        .map(|s| s.trim_end())
        .filter(|s| !s.is_empty())
        .collect();
    let Some(first) = shown.first() else { return };
    if first.starts_with('|') {
        let header = stdout.lines().find(|l| {
            l.starts_with("| protocol") || l.split('|').nth(1) == first.split('|').nth(1)
        });
        assert_eq!(
            header.map(str::trim_end),
            Some(*first),
            "README.md:{}: the table's header is not what it prints:\n{stdout}",
            line.at
        );
    } else {
        assert_eq!(
            stdout.trim_end(),
            shown.join("\n"),
            "README.md:{}: {} prints other than the README shows",
            line.at,
            line.text
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The tests

#[test]
fn every_readme_command_line_names_real_flags_and_runs() {
    let readme = readme();
    let mut cache = HashMap::new();
    let mut bench = Bench::new();
    let mut fates = Vec::new();
    for line in shell_lines(&readme)
        .iter()
        .chain(inline_lines(&readme).iter())
    {
        let fate = check_line(&mut bench, &mut cache, line);
        fates.push((line.at, line.text.replace('\n', " "), fate));
    }
    for (at, text, fate) in &fates {
        eprintln!("README.md:{at}: {fate:?}: {text}");
    }
    for entry in &bench.log {
        eprintln!("{entry}");
    }
    // The extraction found the README's lines: a README whose blocks this test stopped reading
    // would pass everything.
    let ran: usize = fates
        .iter()
        .map(|(_, _, f)| if let Fate::Ran(n) = f { *n } else { 0 })
        .sum();
    assert!(ran >= 20, "only {ran} runs");
    // Every exception is used: an entry no line needs any more is taken out.
    for (program, _) in OTHER_SKIPS {
        assert!(
            fates.iter().any(|(_, t, _)| program_of(t) == *program),
            "OTHER_SKIPS names {program}, which no README line runs"
        );
    }
}

fn program_of(text: &str) -> &str {
    text.split_whitespace().next().unwrap_or("")
}

/// A shell line's word-splitting, continuation and classification, on a made-up README.
#[test]
fn readme_lines_are_joined_split_and_told_apart_from_synopses() {
    let readme = "```sh\n\
        moot ask \"Q # not a comment\" --rounds 2   # a comment\n\
        moot serve [--port 8001]\n\
        \x20          [--allow-host NAME]…\n\
        moot bench --dataset d \\\n\
        \x20  --limit 2\n\
        ```\n\
        ```sh\n\
        $ echo 'a\n\
        b' | moot extract --kind numeric\n\
        {\"answer\":\"1\"}\n\
        ```\n";
    let lines = shell_lines(readme);
    let texts: Vec<Vec<String>> = lines
        .iter()
        .map(|l| l.words().into_iter().map(|w| w.text).collect())
        .collect();
    assert_eq!(
        texts,
        vec![
            vec!["moot", "ask", "Q # not a comment", "--rounds", "2"],
            vec![
                "moot",
                "serve",
                "[--port",
                "8001]",
                "[--allow-host",
                "NAME]…"
            ],
            vec!["moot", "bench", "--dataset", "d", "--limit", "2"],
            vec!["echo", "a\nb", "|", "moot", "extract", "--kind", "numeric"],
        ]
    );
    assert_eq!(lines[3].shown, vec!["{\"answer\":\"1\"}"]);
    let fills: BTreeMap<String, String> = [
        ("RUN".to_string(), "r1".to_string()),
        ("BENCH".into(), "b".into()),
    ]
    .into();
    let w = |s: &str| words(s).unwrap();
    assert_eq!(
        runnable_forms(&w("RUN|BENCH --config moot.toml"), &fills)
            .unwrap()
            .len(),
        2
    );
    assert!(runnable_forms(&w("--rule majority-last|all"), &fills).is_err());
    assert!(runnable_forms(&w("\"QUESTION\" [--sim]"), &fills).is_err());
    assert_eq!(
        runnable_forms(
            &w("NAME [--json] [-o KEY=VALUE]…"),
            &BTreeMap::from([("NAME".into(), "n".into())])
        )
        .unwrap(),
        vec![vec![Word {
            text: "n".into(),
            quoted: false
        }]]
    );
}

#[test]
fn every_file_the_readme_names_exists() {
    let readme = readme();
    let root = repo();
    let mut missing = Vec::new();
    let mut named = 0;
    for (i, line) in readme.lines().enumerate() {
        // Links: [text](path) and ![alt](path).
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split('#').next().unwrap();
            if !target.is_empty() && !target.contains("://") {
                named += 1;
                if !root.join(target).exists() {
                    missing.push(format!("README.md:{}: {target}", i + 1));
                }
            }
            rest = &after[end..];
        }
        // Paths under the repository's folders, in prose and in commands.
        for token in line.split(|c: char| c.is_whitespace() || "`()[],;:\"'?".contains(c)) {
            let token = token.trim_end_matches(['.', '…']);
            let names_a_file =
                ROOTS.iter().any(|r| token.starts_with(r)) && !token.contains(['<', '*', '{']);
            if !names_a_file {
                continue;
            }
            named += 1;
            if !root.join(token).exists() {
                missing.push(format!("README.md:{}: {token}", i + 1));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the README names files that do not exist:\n{}",
        missing.join("\n")
    );
    assert!(named >= 40, "only {named} paths found");
}

/// The README's benchmark debate id (`moot show NAME/PROTOCOL/ITEM-ID`, one form wherever it
/// is given) is the id `moot bench` stores, with the item's id as the README says it is made
/// (a file's stem and the record's number when the file has no id field), and `moot show` opens
/// that debate by it.
#[test]
fn a_benchmark_debate_opens_by_the_id_form_the_readme_gives() {
    let readme = readme();
    let forms: BTreeSet<String> = prose_spans(&readme)
        .iter()
        .flat_map(|(span, _)| span.split_whitespace())
        .filter(|w| w.starts_with("NAME/PROTOCOL/"))
        .map(str::to_string)
        .collect();
    assert_eq!(forms.len(), 1, "the README gives the id as {forms:?}");
    let form = forms.first().unwrap();
    let env = Env::new();
    let items = env.write(
        "items.jsonl",
        "{\"q\": \"What is 2 * 7?\", \"a\": 14}\n{\"q\": \"What is 3 * 7?\", \"a\": 21}\n",
    );
    let dataset = format!("jsonl:{}?kind=numeric&question=q&answer=a", items.display());
    env.stdout(&[
        "bench",
        "--sim",
        "--dataset",
        &dataset,
        "--protocol",
        "som",
        "--name",
        "b",
    ]);
    let report = env.stdout(&["report", "b", "--format", "jsonl"]);
    let mut seen = Vec::new();
    for line in report.lines() {
        let debate: serde_json::Value = serde_json::from_str(line).unwrap();
        let item = debate["item_id"].as_str().unwrap();
        let id = form
            .replace("NAME", "b")
            .replace("PROTOCOL", "som")
            .replace("ITEM-ID", item);
        assert_eq!(debate["run_id"], id.as_str(), "{line}");
        let shown = env.stdout(&["show", &id]);
        assert!(shown.starts_with(&format!("# Run {id}\n")), "{shown}");
        assert!(
            shown.contains(&format!("benchmark `b` item `{item}`")),
            "{shown}"
        );
        seen.push(item.to_string());
    }
    seen.sort();
    assert_eq!(seen, ["items/0", "items/1"]);
}
