//! Reducing raw gold fields to answer text.

/// The number after the last `####` of a GSM8K-style solution, thousands separators removed
/// (`"… #### 1,600"` → `"1600"`); `None` when there is no `####` or nothing after it.
pub(crate) fn after_hashes(solution: &str) -> Option<String> {
    let (_, tail) = solution.rsplit_once("####")?;
    let n = tail.trim().replace(',', "");
    (!n.is_empty()).then_some(n)
}

/// The contents of the last `\boxed{…}` (or `\fbox{…}`), read as answer extraction reads it.
pub(crate) fn last_boxed(text: &str) -> Option<&str> {
    moot_core::answer::last_boxed(text)
}

/// The letter of a BBH option target: `"(B)"` → `'B'`.
pub(crate) fn paren_letter(target: &str) -> Option<char> {
    let inner = target.trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut chars = inner.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_uppercase() => Some(c),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes() {
        assert_eq!(after_hashes("a\nb\n#### 18").as_deref(), Some("18"));
        assert_eq!(after_hashes("#### 1,450,000").as_deref(), Some("1450000"));
        assert_eq!(after_hashes("#### -3 ").as_deref(), Some("-3"));
        assert_eq!(after_hashes("x #### 2 #### 5").as_deref(), Some("5"));
        assert_eq!(after_hashes("no marker 18"), None);
        assert_eq!(after_hashes("#### "), None);
    }

    #[test]
    fn boxed() {
        assert_eq!(last_boxed(r"so $\boxed{2}$."), Some("2"));
        assert_eq!(
            last_boxed(r"$x=\boxed{\dfrac{9}{7}}$ and then \boxed{\frac{1}{2}}"),
            Some(r"\frac{1}{2}")
        );
        assert_eq!(last_boxed(r"\boxed {\{1,2\}}"), Some(r"\{1,2\}"));
        assert_eq!(last_boxed(r"\fbox{7}"), Some("7"));
        assert_eq!(last_boxed(r"\boxed{3} then cut \boxed{4"), Some("3"));
        assert_eq!(last_boxed("no box"), None);
        assert_eq!(last_boxed(r"\boxed"), None);
    }

    #[test]
    fn letters() {
        assert_eq!(paren_letter("(B)"), Some('B'));
        assert_eq!(paren_letter(" (Q) "), Some('Q'));
        assert_eq!(paren_letter("B"), None);
        assert_eq!(paren_letter("(b)"), None);
        assert_eq!(paren_letter("(AB)"), None);
        assert_eq!(paren_letter("Monsters, Inc"), None);
    }
}
