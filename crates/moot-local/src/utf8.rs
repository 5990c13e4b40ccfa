//! Turning a stream of token byte pieces into text.
//!
//! A token's piece can end in the middle of a multi-byte UTF-8 character (byte-level BPE splits
//! emoji and CJK characters across tokens), so bytes are held back until the character is
//! complete. Bytes that can never form a character become U+FFFD.

#[derive(Debug, Default)]
pub(crate) struct Utf8Accumulator {
    text: String,
    held: Vec<u8>,
}

impl Utf8Accumulator {
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.held.extend_from_slice(bytes);
        loop {
            match std::str::from_utf8(&self.held) {
                Ok(s) => {
                    self.text.push_str(s);
                    self.held.clear();
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // The prefix is valid by construction; the lossy call cannot replace anything.
                    self.text
                        .push_str(&String::from_utf8_lossy(&self.held[..valid]));
                    match e.error_len() {
                        // An incomplete character at the end: wait for the next piece.
                        None => {
                            self.held.drain(..valid);
                            return;
                        }
                        Some(bad) => {
                            self.text.push(char::REPLACEMENT_CHARACTER);
                            self.held.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// The text so far, without any incomplete trailing character.
    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The whole text; an incomplete trailing character becomes U+FFFD.
    pub(crate) fn finish(mut self) -> String {
        if !self.held.is_empty() {
            self.text.push_str(&String::from_utf8_lossy(&self.held));
        }
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_characters_are_joined() {
        let s = "héllo → 世界 🦀!";
        let bytes = s.as_bytes();
        // Feed one byte at a time: every split point is exercised.
        let mut acc = Utf8Accumulator::default();
        for b in bytes {
            acc.push(std::slice::from_ref(b));
            assert!(s.starts_with(acc.text()));
        }
        assert_eq!(acc.finish(), s);
    }

    #[test]
    fn held_bytes_wait_for_the_rest() {
        let crab = "🦀".as_bytes();
        let mut acc = Utf8Accumulator::default();
        acc.push(b"a");
        acc.push(&crab[..2]);
        assert_eq!(acc.text(), "a");
        acc.push(&crab[2..]);
        assert_eq!(acc.text(), "a🦀");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut acc = Utf8Accumulator::default();
        acc.push(b"ok\xff\xfeyes");
        assert_eq!(acc.text(), "ok\u{fffd}\u{fffd}yes");
        acc.push(&"é".as_bytes()[..1]);
        assert_eq!(acc.finish(), "ok\u{fffd}\u{fffd}yes\u{fffd}");
    }
}
