//! Words for a shell: hints that name a command (`moot resume RUN`, `moot work NAME`) quote
//! what they name, so the hint can be pasted as it is whatever the name holds.

/// `word` as the shell reads it back: quoted when it holds anything but plain characters. A
/// NUL, which no shell word can hold, is shown escaped.
pub fn shell_word(word: &str) -> String {
    shlex::try_quote(word)
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| format!("{word:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_and_others_are_quoted() {
        assert_eq!(shell_word("bench-1"), "bench-1");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("a\0b"), "\"a\\0b\"");
    }
}
