//! Small text helpers for what moot prints (pure, shared by the binary and the libraries).

use std::fmt::Display;

/// A count and its noun, singular for exactly one: `plural(1, "agent")` is `"1 agent"`,
/// `plural(3, "agent")` is `"3 agents"`, `plural(0, "debate round")` is `"0 debate rounds"`.
pub fn plural<N>(n: N, noun: &str) -> String
where
    N: Display + PartialEq + From<u8> + Copy,
{
    format!("{n} {}", noun_for(n, noun))
}

/// The noun alone, in the form that goes with `n`: `noun_for(1, "agent")` is `"agent"`,
/// `noun_for(2, "memory")` is `"memories"` (for lists such as "agents 2, 3").
pub fn noun_for<N>(n: N, noun: &str) -> String
where
    N: PartialEq + From<u8> + Copy,
{
    if n == N::from(1) {
        noun.to_string()
    } else {
        plural_of(noun)
    }
}

/// The English plural of a noun (or of the last word of a phrase), by the regular rules:
/// "round" → "rounds", "memory" → "memories", "batch" → "batches".
pub fn plural_of(noun: &str) -> String {
    let vowel = |c: char| "aeiou".contains(c);
    let mut chars = noun.chars().rev();
    match (chars.next(), chars.next()) {
        (Some('y'), Some(before)) if !vowel(before) => format!("{}ies", &noun[..noun.len() - 1]),
        (Some('s' | 'x' | 'z'), _) => format!("{noun}es"),
        (Some('h'), Some('s' | 'c')) => format!("{noun}es"),
        _ => format!("{noun}s"),
    }
}

/// `n` with its digits grouped by threes: `2400` → `2,400` (how reports write counts).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits_by_three() {
        assert_eq!(
            [0, 7, 999, 1000, 2400, 1_234_567].map(thousands),
            ["0", "7", "999", "1,000", "2,400", "1,234,567"]
        );
    }

    #[test]
    fn one_is_singular_everything_else_plural() {
        assert_eq!(plural(1usize, "agent"), "1 agent");
        assert_eq!(plural(0usize, "agent"), "0 agents");
        assert_eq!(plural(3u64, "debate round"), "3 debate rounds");
        assert_eq!(plural(1u32, "model call"), "1 model call");
        assert_eq!(plural(2usize, "memory"), "2 memories");
        assert_eq!(plural(2usize, "day"), "2 days");
        assert_eq!(plural(2usize, "batch"), "2 batches");
        assert_eq!(plural(2usize, "bus"), "2 buses");
        assert_eq!(noun_for(1usize, "agent"), "agent");
        assert_eq!(noun_for(4usize, "agent"), "agents");
    }
}
