//! docs/architecture.md is the map of record, and these checks keep it true (issue 33): every
//! subcommand of `moot` (nested ones too) is named in it as `moot NAME`, every crate under
//! `crates/` has a row in its crate table, its dependency listing and layers are the ones the
//! crates' manifests declare, every repository path it names exists, and every section of it that
//! a doc comment points to ("see docs/architecture.md, Storage") is a heading of it.
//!
//! Paths are written from the repository root. A backticked token is taken for a path when it is
//! made of path characters only (letters, digits, `_ . -` and `/`) and either has a `/` and a
//! known file extension, ends in `/`, or starts with a top-level folder of the repository; a
//! token with a placeholder (`crates/moot-core/src/protocol/<name>.rs`) has its folder before
//! the placeholder checked; a bare file name (`round_table.rs`) must be some file's name. Tokens
//! starting with `/` (routes) or `../` (beside the checkout) are not repository paths.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use assert_cmd::Command;

const DOC: &str = "docs/architecture.md";

/// The repository's top-level folders that a path may start with.
const TOP_FOLDERS: [&str; 9] = [
    "crates",
    "docs",
    "scripts",
    "fuzz",
    "deploy",
    "examples",
    "experiments",
    "results",
    ".ci",
];

/// File extensions that make a token with a `/` a path (or a bare token a file name).
const EXTENSIONS: [&str; 15] = [
    "rs", "md", "toml", "sql", "py", "html", "css", "js", "json", "jsonl", "csv", "sh", "yaml",
    "yml", "lock",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn doc() -> String {
    let path = root().join(DOC);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The doc without its fenced code blocks, and the fenced blocks' texts.
fn split_fences(doc: &str) -> (String, Vec<String>) {
    let (mut prose, mut blocks) = (String::new(), Vec::new());
    let mut block: Option<String> = None;
    for line in doc.lines() {
        match (&mut block, line.trim_start().starts_with("```")) {
            (None, true) => block = Some(String::new()),
            (Some(_), true) => blocks.extend(block.take()),
            (Some(b), false) => {
                b.push_str(line);
                b.push('\n');
            }
            (None, false) => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    (prose, blocks)
}

/// The inline code spans of `prose` (single backticks; a span may wrap onto the next line).
fn code_spans(prose: &str) -> Vec<String> {
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// The subcommands a `--help` lists under "Commands:", without clap's `help`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        // A name is indented by two spaces; its description's further lines by more.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

fn help(args: &[&str]) -> String {
    let out = Command::cargo_bin("moot")
        .unwrap()
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "moot {args:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// Every subcommand as its words (`["store", "copy"]`), nested ones after their parent.
fn every_subcommand() -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut open = vec![Vec::<String>::new()];
    while let Some(words) = open.pop() {
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        for name in subcommands(&help(&args)) {
            let mut child = words.clone();
            child.push(name);
            found.push(child.clone());
            open.push(child);
        }
    }
    found.sort();
    found
}

/// The crate folders under `crates/`, each with its manifest.
fn crates() -> BTreeMap<String, toml::Table> {
    let mut crates = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let manifest = dir.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest).unwrap();
        let table: toml::Table =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        crates.insert(name, table);
    }
    crates
}

/// The workspace crates `manifest` lists under `[dependencies]` (dev- and build-dependencies
/// are not the architecture's).
fn workspace_deps(manifest: &toml::Table, names: &BTreeSet<String>) -> BTreeSet<String> {
    manifest
        .get("dependencies")
        .and_then(toml::Value::as_table)
        .map(|deps| {
            deps.keys()
                .filter(|k| names.contains(*k))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The fenced block that follows the first line of the doc's prose containing `marker`.
fn block_after(doc: &str, marker: &str) -> String {
    let at = doc
        .find(marker)
        .unwrap_or_else(|| panic!("{DOC} has no {marker:?}"));
    let rest = &doc[at..];
    let open = rest.find("```").expect("a fenced block follows") + 3;
    let body = &rest[open..];
    let body = &body[body.find('\n').unwrap_or(0)..];
    body[..body.find("```").expect("the block is closed")].to_string()
}

/// The entries of the dependency block: each crate with the workspace crates its line names
/// (a line starting with a space continues the entry above it).
fn listed_deps(block: &str, names: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut listed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| !w.is_empty());
        if !line.starts_with(' ') {
            let name = words.next().unwrap_or_default().to_string();
            assert!(
                names.contains(&name),
                "dependency block: {name:?} is not a crate"
            );
            assert!(
                listed.insert(name.clone(), BTreeSet::new()).is_none(),
                "dependency block: {name} is listed twice"
            );
            current = Some(name);
        }
        let entry = current.as_ref().expect("the block starts with a crate");
        let deps = listed.get_mut(entry).expect("entry inserted above");
        deps.extend(words.filter(|w| names.contains(*w)).map(str::to_string));
    }
    listed
}

#[test]
fn every_subcommand_is_named_in_the_doc() {
    let spans = code_spans(&split_fences(&doc()).0);
    let all = every_subcommand();
    assert!(
        all.len() >= 15,
        "moot --help lists few subcommands: {all:?}"
    );
    let missing: Vec<String> = all
        .iter()
        .map(|words| format!("moot {}", words.join(" ")))
        .filter(|command| {
            !spans
                .iter()
                .any(|s| s == command || s.starts_with(&format!("{command} ")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "{DOC} never names these subcommands in backticks: {missing:?}"
    );
}

#[test]
fn every_crate_has_a_row_in_the_crate_table() {
    let doc = doc();
    let missing: Vec<String> = crates()
        .into_keys()
        .filter(|name| !doc.lines().any(|l| l.starts_with(&format!("| `{name}` |"))))
        .collect();
    assert!(
        missing.is_empty(),
        "{DOC}'s crate table lacks these crates: {missing:?}"
    );
}

#[test]
fn the_dependency_block_is_the_manifests() {
    let crates = crates();
    let names: BTreeSet<String> = crates.keys().cloned().collect();
    let listed = listed_deps(
        &block_after(&doc(), "Dependencies inside the workspace"),
        &names,
    );
    let declared: BTreeMap<String, BTreeSet<String>> = crates
        .iter()
        .map(|(name, manifest)| (name.clone(), workspace_deps(manifest, &names)))
        .collect();
    let differing: Vec<String> = declared
        .keys()
        .chain(listed.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|name| listed.get(*name) != declared.get(*name))
        .map(|name| {
            format!(
                "{name}: the doc lists {:?}, its Cargo.toml declares {:?}",
                listed.get(name),
                declared.get(name)
            )
        })
        .collect();
    assert!(
        differing.is_empty(),
        "{DOC}'s dependency block against the crates' [dependencies]: {differing:#?}"
    );
}

#[test]
fn each_crate_sits_above_the_crates_it_depends_on() {
    let crates = crates();
    let names: BTreeSet<String> = crates.keys().cloned().collect();
    let mut layer_of = BTreeMap::new();
    for line in block_after(&doc(), "By layer").lines() {
        let mut words = line.split_whitespace();
        let Some(layer) = words.next().and_then(|w| w.parse::<u32>().ok()) else {
            continue;
        };
        for name in words {
            assert!(names.contains(name), "layers: {name:?} is not a crate");
            assert!(
                layer_of.insert(name.to_string(), layer).is_none(),
                "layers: {name} is listed twice"
            );
        }
    }
    assert_eq!(
        layer_of.keys().cloned().collect::<BTreeSet<_>>(),
        names,
        "the layers list every crate once"
    );
    for (name, manifest) in &crates {
        for dep in workspace_deps(manifest, &names) {
            assert!(
                layer_of[&dep] < layer_of[name],
                "{name} (layer {}) depends on {dep} (layer {}): not a lower layer",
                layer_of[name],
                layer_of[&dep]
            );
        }
    }
}

/// What a backticked token says about the repository: a path to check, a bare file name, or
/// nothing.
#[derive(Debug, PartialEq, Eq)]
enum Named {
    Path(String),
    FileName(String),
    Nothing,
}

fn is_path_text(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c))
}

fn has_extension(s: &str) -> bool {
    s.rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext))
}

fn named(token: &str) -> Named {
    if token.starts_with('/') || token.starts_with("../") {
        return Named::Nothing;
    }
    // A placeholder: the folder before it must exist.
    if let Some(at) = token.find('<') {
        let folder = &token[..token[..at].rfind('/').map_or(0, |i| i + 1)];
        return if folder.contains('/') && is_path_text(folder) && named(folder) != Named::Nothing {
            Named::Path(folder.to_string())
        } else {
            Named::Nothing
        };
    }
    if !is_path_text(token) {
        return Named::Nothing;
    }
    if !token.contains('/') {
        return if has_extension(token) && !token.starts_with('.') {
            Named::FileName(token.to_string())
        } else {
            Named::Nothing
        };
    }
    let first = token.split('/').next().unwrap_or_default();
    if has_extension(token) || token.ends_with('/') || TOP_FOLDERS.contains(&first) {
        Named::Path(token.to_string())
    } else {
        Named::Nothing
    }
}

/// The names of every file under the repository's top-level folders and at its root.
fn file_names() -> BTreeSet<String> {
    fn walk(dir: &Path, names: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                if name != "target" && name != ".git" {
                    walk(&path, names);
                }
            } else {
                names.insert(name);
            }
        }
    }
    let mut names = BTreeSet::new();
    for top in TOP_FOLDERS {
        walk(&root().join(top), &mut names);
    }
    for entry in std::fs::read_dir(root()).unwrap().flatten() {
        if entry.path().is_file() {
            names.insert(entry.file_name().to_string_lossy().to_string());
        }
    }
    names
}

#[test]
fn the_path_reading_tells_paths_from_other_tokens() {
    let path = |s: &str| Named::Path(s.to_string());
    assert_eq!(
        named("crates/moot-app/src/prepare.rs"),
        path("crates/moot-app/src/prepare.rs")
    );
    assert_eq!(
        named("crates/moot-store/migrations/"),
        path("crates/moot-store/migrations/")
    );
    assert_eq!(named("crates/moot"), path("crates/moot"));
    assert_eq!(named("openai/dialect.rs"), path("openai/dialect.rs"));
    assert_eq!(
        named("crates/moot-core/src/protocol/<name>.rs"),
        path("crates/moot-core/src/protocol/")
    );
    assert_eq!(
        named("round_table.rs"),
        Named::FileName("round_table.rs".into())
    );
    for other in [
        "/runs/{*id}",
        "../shared/data/<folder>/",
        "<bench>/<protocol>/<item id>",
        "judge:2",
        "moot_core::protocol::Protocol",
        "text/plain",
        "yes/no",
        "gsm-ranges:level4/42",
        "Store::cache_get",
        "moot.db",
        "moot show RUN",
        ".ci",
    ] {
        assert_eq!(named(other), Named::Nothing, "{other}");
    }
}

#[test]
fn every_path_the_doc_names_exists() {
    let root = root();
    let names = file_names();
    let mut missing = BTreeSet::new();
    for token in code_spans(&split_fences(&doc()).0) {
        match named(&token) {
            Named::Path(p) => {
                let found = root.join(&p);
                let exists = if p.ends_with('/') {
                    found.is_dir()
                } else {
                    found.exists()
                };
                if !exists {
                    missing.insert(p);
                }
            }
            Named::FileName(n) => {
                if !names.contains(&n) {
                    missing.insert(n);
                }
            }
            Named::Nothing => {}
        }
    }
    assert!(
        missing.is_empty(),
        "{DOC} names paths that do not exist (paths are written from the repository root): {missing:?}"
    );
}

/// The sections doc comments point to: "see docs/architecture.md, Storage" (or "…, Trajectory
/// and Decision rules"), in every Rust file of the crates.
fn sections_pointed_to() -> BTreeMap<String, BTreeSet<String>> {
    fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if entry.file_name() != "target" {
                    rust_files(&path, files);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    // Built in two parts so that this line is not a pointer itself.
    let marker = concat!("docs/architecture.md", ", ");
    let mut pointed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        if !text.contains("docs/architecture.md") {
            continue;
        }
        // Comments joined into one line, so that a pointer may wrap.
        let joined: Vec<&str> = text
            .lines()
            .map(|l| {
                l.trim_start()
                    .trim_start_matches("//!")
                    .trim_start_matches("///")
                    .trim_start_matches("//")
                    .trim()
            })
            .collect();
        let joined = joined.join(" ");
        for (at, _) in joined.match_indices(marker) {
            let rest = &joined[at + marker.len()..];
            let end = rest.find([')', ';', '.', '"']).unwrap_or(rest.len());
            for section in rest[..end].split(" and ") {
                pointed
                    .entry(section.trim().to_string())
                    .or_default()
                    .insert(
                        file.strip_prefix(root())
                            .unwrap_or(&file)
                            .display()
                            .to_string(),
                    );
            }
        }
    }
    pointed
}

#[test]
fn every_section_a_doc_comment_points_to_is_a_heading() {
    let doc = doc();
    let headings: BTreeSet<&str> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(str::trim)
        .collect();
    let pointed = sections_pointed_to();
    assert!(!pointed.is_empty(), "no doc comment points to {DOC}");
    let broken: Vec<String> = pointed
        .iter()
        .filter(|(section, _)| !headings.contains(section.as_str()))
        .map(|(section, files)| format!("{section:?} (from {files:?})"))
        .collect();
    assert!(
        broken.is_empty(),
        "doc comments point to sections {DOC} does not have: {broken:?}"
    );
}

/// Runs `scripts/module-cycles` on a crate source folder made of `files` (name, text).
fn module_cycles_on(files: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = std::process::Command::new(root().join("scripts/module-cycles"))
        .arg(dir.path())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn the_cycle_check_finds_a_ring_of_three_modules_and_passes_a_chain() {
    let lib = "mod a;\nmod b;\nmod c;\n";
    let (ok, out) = module_cycles_on(&[
        ("lib.rs", lib),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "use crate::c::C;\npub struct B;\n"),
        ("c.rs", "use crate::a::A;\npub struct C;\n"),
    ]);
    assert!(!ok, "a ring of three passed: {out}");
    assert!(
        out.contains("3 modules import each other: a -> b -> c -> a"),
        "{out}"
    );

    let (ok, out) = module_cycles_on(&[
        ("lib.rs", lib),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "use crate::c::C;\npub struct B;\n"),
        ("c.rs", "pub struct C;\n"),
    ]);
    assert!(ok, "a chain was called a cycle: {out}");
    assert!(out.contains("0 cycle(s) of imports"), "{out}");
}

/// Every `.rs` file below `dir`, with its text.
fn rust_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            found.push((path, text));
        }
    }
    found
}

/// Whether `text` defines `name`: as an item (`fn`, `struct`, `enum`, `trait`, `type`,
/// `const`, `static`, `mod`, a macro), a field or enum variant (a line starting with the name
/// and `:`, `(`, `{` or `,`), or a re-export (`pub use …name…`).
fn defines(text: &str, name: &str) -> bool {
    let keywords = [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "const ",
        "static ",
        "mod ",
        "macro_rules! ",
        "async fn ",
    ];
    let word_end = |rest: &str| {
        rest.chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    };
    text.lines().any(|line| {
        let mut l = line.trim_start();
        for prefix in ["pub(crate) ", "pub(super) ", "pub "] {
            l = l.strip_prefix(prefix).unwrap_or(l);
        }
        let item = keywords.iter().any(|k| {
            l.strip_prefix(k)
                .and_then(|rest| rest.strip_prefix(name))
                .is_some_and(word_end)
        });
        let member = l.strip_prefix(name).is_some_and(|rest| {
            let rest = rest.trim_start();
            rest.is_empty() || rest.starts_with([':', '(', '{', ','])
        }) && !l.starts_with("//");
        let reexport = l.starts_with("use ")
            && line.trim_start().starts_with("pub")
            && l.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == name);
        item || member || reexport
    })
}

/// The files a path's leading segments name inside a crate's `src`: `a::b` → `src/a/b.rs` or
/// `src/a/b/mod.rs` (and what is below `src/a/b/`), as far as such files exist; the whole crate
/// when the first segment names no file.
fn files_of_module<'f>(
    src: &Path,
    segments: &[&str],
    all: &'f [(PathBuf, String)],
) -> Vec<&'f (PathBuf, String)> {
    let mut dir = src.to_path_buf();
    let mut scope = None;
    for segment in segments {
        let file = dir.join(format!("{segment}.rs"));
        let folder = dir.join(segment);
        if file.exists() || folder.join("mod.rs").exists() {
            scope = Some((file, folder.clone()));
            dir = folder;
        } else {
            break;
        }
    }
    match scope {
        None => all.iter().filter(|(p, _)| p.starts_with(src)).collect(),
        Some((file, folder)) => all
            .iter()
            .filter(|(p, _)| *p == file || p.starts_with(&folder))
            .collect(),
    }
}

/// Rust paths the doc names in backticks (`moot_app::stored::admit`, `Store::record_batch`,
/// `agents::build`), each cut at its first `(`, `<`, `!` or space.
fn rust_paths_named(doc: &str) -> BTreeSet<String> {
    let (prose, _) = split_fences(doc);
    code_spans(&prose)
        .into_iter()
        .filter_map(|span| {
            let cut = span
                .split(['(', '<', '!', ' ', '{'])
                .next()
                .unwrap_or("")
                .to_string();
            let segments: Vec<&str> = cut.split("::").collect();
            let is_path = segments.len() >= 2
                && segments.iter().all(|s| {
                    !s.is_empty()
                        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
                        && !s.starts_with(|c: char| c.is_ascii_digit())
                });
            is_path.then_some(cut)
        })
        .collect()
}

#[test]
fn every_rust_item_the_doc_names_is_defined_where_it_says() {
    let root = root();
    let all = rust_files(&root.join("crates"));
    let sources: Vec<(PathBuf, String)> = all
        .into_iter()
        .filter(|(p, _)| p.components().any(|c| c.as_os_str() == "src"))
        .collect();
    let mut missing = Vec::new();
    for path in rust_paths_named(&doc()) {
        let segments: Vec<&str> = path.split("::").collect();
        let (head, name) = (segments[0], segments[segments.len() - 1]);
        if ["sqlx", "std", "tokio", "serde", "axum"].contains(&head) {
            continue;
        }
        let scope: Vec<&(PathBuf, String)> = if let Some(krate) = head.strip_prefix("moot_") {
            let src = root.join(format!("crates/moot-{}/src", krate.replace('_', "-")));
            files_of_module(&src, &segments[1..segments.len() - 1], &sources)
        } else if head == "crate" || head.starts_with(|c: char| c.is_ascii_lowercase()) {
            // A module path from inside some crate (`agents::build`, `crate::queries`): the
            // module's files in whichever crate has them.
            let modules = if head == "crate" {
                &segments[1..segments.len() - 1]
            } else {
                &segments[..segments.len() - 1]
            };
            let crates: Vec<PathBuf> = sources
                .iter()
                .filter_map(|(p, _)| {
                    let rel = p.strip_prefix(root.join("crates")).ok()?;
                    Some(root.join("crates").join(rel.iter().next()?).join("src"))
                })
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            crates
                .iter()
                .filter(|src| {
                    modules.is_empty()
                        || src.join(format!("{}.rs", modules[0])).exists()
                        || src.join(modules[0]).join("mod.rs").exists()
                })
                .flat_map(|src| files_of_module(src, modules, &sources))
                .collect()
        } else {
            // `Type::member`: a crate that defines the type defines the member too.
            let owners: BTreeSet<PathBuf> = sources
                .iter()
                .filter(|(_, text)| defines(text, head))
                .filter_map(|(p, _)| {
                    let rel = p.strip_prefix(root.join("crates")).ok()?;
                    Some(root.join("crates").join(rel.iter().next()?))
                })
                .collect();
            sources
                .iter()
                .filter(|(p, _)| owners.iter().any(|o| p.starts_with(o)))
                .collect()
        };
        if !scope.iter().any(|(_, text)| defines(text, name)) {
            missing.push(path);
        }
    }
    assert!(
        missing.is_empty(),
        "{DOC} names Rust items that are not defined where it says: {missing:?}"
    );
}
