//! Why a dataset name was not understood ([`SpecError`]), and the names close to a mistyped one.
//! Apart from `spec.rs` so that the loaders the registry lists can raise it without importing
//! the parser that reads the registry (imports run one way).

/// Why a dataset name was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("unknown dataset `{name}`{}; valid names: {forms}", suggest(.close))]
    UnknownDataset {
        name: String,
        close: Vec<String>,
        /// Every accepted name form ([`crate::spec::name_forms`]).
        forms: String,
    },
    /// A part of a long list (an MMLU subject, a BBH task) that is not in it.
    #[error("unknown {noun} `{part}`{}", list_or_all(.close, .valid))]
    UnknownPart {
        noun: &'static str,
        part: String,
        close: Vec<String>,
        valid: &'static [&'static str],
    },
    #[error("`{dataset}` has no variant `{variant}`; valid: {}", .valid.join(", "))]
    UnknownVariant {
        dataset: &'static str,
        variant: String,
        valid: Vec<String>,
    },
    #[error("`{dataset}` needs a variant: {}", .valid.join(", "))]
    MissingVariant {
        dataset: &'static str,
        valid: Vec<String>,
    },
    #[error("`{spec}`: {problem}")]
    Generic { spec: String, problem: String },
}

fn suggest(close: &[String]) -> String {
    if close.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", close.join(", "))
    }
}

fn list_or_all(close: &[String], all: &[&str]) -> String {
    if close.is_empty() {
        format!("; valid: {}", all.join(", "))
    } else {
        format!("; close names: {}", close.join(", "))
    }
}

/// Names close to `query`: containing it (or contained in it), or within a small edit distance;
/// nearest first, at most eight.
pub(crate) fn close_names(query: &str, candidates: &[&str]) -> Vec<String> {
    let q = query.to_lowercase().replace('-', "_");
    let mut scored: Vec<(usize, &str)> = candidates
        .iter()
        .filter_map(|&c| {
            let c_norm = c.replace('-', "_");
            let d = levenshtein(&q, &c_norm);
            let contains = q.len() >= 3 && (c_norm.contains(&q) || q.contains(&c_norm));
            (contains || d <= (q.len() / 4).max(2)).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(8)
        .map(|(_, c)| c.to_string())
        .collect()
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("same", "same"), 0);
    }
}
