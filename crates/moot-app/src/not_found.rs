//! A name the store does not hold. Every command that looks a run or a benchmark up by name
//! (`show`, `decide --run`, `report`, `resume`, `fork`, `regrade`, `bench status`, `list
//! --bench`) fails with one [`NotFound`]; the front end that knows which store it opened
//! words it with [`described`]: the store it looked in and the names there close to the one
//! given.

use std::fmt;

use moot_store::{RunFilter, Store};

/// What a name was looked up as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sought {
    Run,
    Bench,
    /// A run, else a benchmark (`resume`, `regrade`).
    RunOrBench,
}

impl Sought {
    fn noun(self) -> &'static str {
        match self {
            Sought::Run => "run",
            Sought::Bench => "benchmark",
            Sought::RunOrBench => "run or benchmark",
        }
    }
}

/// `name` is not in the store as what was `sought`: the user's to fix (see
/// [`crate::error::kind_of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    pub sought: Sought,
    pub name: String,
}

impl NotFound {
    pub fn run(name: &str) -> NotFound {
        NotFound {
            sought: Sought::Run,
            name: name.to_string(),
        }
    }

    pub fn bench(name: &str) -> NotFound {
        NotFound {
            sought: Sought::Bench,
            name: name.to_string(),
        }
    }

    pub fn run_or_bench(name: &str) -> NotFound {
        NotFound {
            sought: Sought::RunOrBench,
            name: name.to_string(),
        }
    }
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no {} named {:?} in the store",
            self.sought.noun(),
            self.name
        )
    }
}

impl std::error::Error for NotFound {}

/// The most runs whose ids are compared with a name not found: the newest ones. A store of
/// millions of runs is not read whole to word an error.
pub const RUNS_COMPARED: u32 = 20_000;

/// The most close names suggested.
pub const SUGGESTED: usize = 3;

/// `not_found` in the words a user reads: the store it looked in (`store_shown`: its path, or
/// its URL without a password) and up to [`SUGGESTED`] names of the kind sought close to the
/// one given. A store that cannot be listed only loses the suggestions.
pub async fn described(store: &dyn Store, store_shown: &str, not_found: &NotFound) -> String {
    let mut names: Vec<String> = Vec::new();
    if not_found.sought != Sought::Bench {
        let mut offset = 0;
        while offset < RUNS_COMPARED {
            let page = RunFilter {
                offset,
                ..RunFilter::newest(1_000.min(RUNS_COMPARED - offset))
            };
            let Ok(runs) = store.list_runs(&page).await else {
                break;
            };
            let read = runs.len() as u32;
            names.extend(runs.into_iter().map(|r| r.id));
            if read < page.limit {
                break;
            }
            offset += read;
        }
    }
    if not_found.sought != Sought::Run {
        if let Ok(benches) = store.list_benches().await {
            names.extend(benches.into_iter().map(|b| b.name));
        }
    }
    let close = close_names(&not_found.name, names.iter().map(String::as_str));
    let mut said = format!(
        "no {} named {:?} in the store {store_shown}",
        not_found.sought.noun(),
        not_found.name
    );
    if !close.is_empty() {
        said.push_str(&format!("; did you mean {}?", or_list(&close)));
    }
    said
}

/// `a`, `a or b`, `a, b or c`.
/// `a`, `a or b`, `a, b or c`: each name as it would be typed in a shell (quoted when it holds
/// a space, a comma or anything a shell reads), so that a stored name cannot blur the list.
fn or_list(names: &[String]) -> String {
    let typed: Vec<String> = names.iter().map(|n| crate::shell::shell_word(n)).collect();
    match typed.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The names among `candidates` close to `name`, closest first (at most [`SUGGESTED`]): those
/// it begins (a run id cut short), and those a few edits away (a typo: at most a quarter of
/// its length, at least one, at most three), without regard to case.
pub fn close_names<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Vec<String> {
    let given = name.to_lowercase();
    let reach = (given.chars().count() / 4).clamp(1, 3);
    let mut close: Vec<(usize, &str)> = candidates
        .filter(|c| *c != name)
        .filter_map(|c| {
            let lower = c.to_lowercase();
            let distance = if given.chars().count() >= 2 && lower.starts_with(&given) {
                0
            } else {
                strsim::osa_distance(&given, &lower)
            };
            (distance <= reach).then_some((distance, c))
        })
        .collect();
    close.sort();
    close.dedup();
    close
        .into_iter()
        .take(SUGGESTED)
        .map(|(_, c)| c.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_a_cut_short_id_and_another_case_are_close_and_a_stranger_is_not() {
        let names = ["arith", "gsm8k-small", "r1765000000000ab12", "other"];
        let close = |n: &str| close_names(n, names.iter().copied());
        assert_eq!(close("arith2"), ["arith"]);
        assert_eq!(close("ARITH"), ["arith"]);
        assert_eq!(close("r1765000000000"), ["r1765000000000ab12"]);
        assert_eq!(close("r1765000000000ab13"), ["r1765000000000ab12"]);
        assert!(close("zzzzzz").is_empty());
    }

    #[tokio::test]
    async fn the_description_names_the_store_and_the_close_names_of_the_kind_sought() {
        let store = moot_store::MemoryStore::default();
        let mut run = moot_store::RunRecord {
            id: "arith".into(),
            created_at: "t".into(),
            question: "q".into(),
            protocol: "som".into(),
            rule: "majority-last".into(),
            spec: serde_json::json!({}),
            config: serde_json::json!({}),
            status: moot_store::RunStatus::Running,
            answer: None,
            finished_at: None,
            silent_ms: None,
            owner: None,
            fork: None,
        };
        store.create_run(&run).await.unwrap();
        run.id = "other".into();
        store.create_run(&run).await.unwrap();
        let said = described(&store, "/s/moot.db", &NotFound::run("arith2")).await;
        assert_eq!(
            said,
            "no run named \"arith2\" in the store /s/moot.db; did you mean arith?"
        );
        // A benchmark is not suggested for a run, nor a run for a benchmark.
        let said = described(&store, "/s/moot.db", &NotFound::bench("arith2")).await;
        assert_eq!(
            said,
            "no benchmark named \"arith2\" in the store /s/moot.db"
        );
    }
}
