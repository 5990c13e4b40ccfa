//! Which sequence slot a request runs in, and how much of a slot's cache it can keep.
//!
//! Pure policy, kept apart from llama.cpp so it can be tested without a model.

/// What the scheduler knows about one slot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotView<'a> {
    /// The conversation whose KV cache the slot holds, if any.
    pub conversation: Option<&'a str>,
    /// A request is running in the slot.
    pub busy: bool,
    /// Logical time of the slot's last use (larger is more recent).
    pub last_used: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// The conversation's own slot: its cache may be reused.
    Reuse(usize),
    /// A slot whose content belongs to nobody (or to an evicted conversation): clear it first.
    Fresh(usize),
    /// Nothing available now (every slot busy, or the conversation's slot is busy).
    Wait,
}

/// Picks a slot for a request of `conversation`.
///
/// A conversation goes back to its own slot (waiting while that slot is busy: one conversation runs
/// one call at a time). Anything else takes a slot no conversation holds, and when there is none,
/// evicts the least-recently-used idle conversation.
pub(crate) fn choose_slot(slots: &[SlotView<'_>], conversation: Option<&str>) -> Choice {
    if let Some(name) = conversation {
        if let Some((i, slot)) = slots
            .iter()
            .enumerate()
            .find(|(_, s)| s.conversation == Some(name))
        {
            return if slot.busy {
                Choice::Wait
            } else {
                Choice::Reuse(i)
            };
        }
    }
    let least_recent = |want_conversation: bool| {
        slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.busy && s.conversation.is_some() == want_conversation)
            .min_by_key(|(_, s)| s.last_used)
            .map(|(i, _)| i)
    };
    match least_recent(false).or_else(|| least_recent(true)) {
        Some(i) => Choice::Fresh(i),
        None => Choice::Wait,
    }
}

/// How many leading tokens of `cached` a new `prompt` can keep: their common prefix, but never
/// the whole prompt, since at least one prompt token must be decoded to get the logits the first
/// generated token is sampled from.
pub(crate) fn reusable_prefix<T: PartialEq>(cached: &[T], prompt: &[T]) -> usize {
    let common = cached
        .iter()
        .zip(prompt)
        .take_while(|(a, b)| a == b)
        .count();
    if common == prompt.len() {
        common.saturating_sub(1)
    } else {
        common
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(conversation: Option<&str>, busy: bool, last_used: u64) -> SlotView<'_> {
        SlotView {
            conversation,
            busy,
            last_used,
        }
    }

    #[test]
    fn a_conversation_returns_to_its_slot() {
        let slots = [view(None, false, 0), view(Some("a"), false, 5)];
        assert_eq!(choose_slot(&slots, Some("a")), Choice::Reuse(1));
    }

    #[test]
    fn a_busy_conversation_waits_even_with_free_slots() {
        let slots = [view(None, false, 0), view(Some("a"), true, 5)];
        assert_eq!(choose_slot(&slots, Some("a")), Choice::Wait);
        assert_eq!(choose_slot(&slots, Some("b")), Choice::Fresh(0));
        assert_eq!(choose_slot(&slots, None), Choice::Fresh(0));
    }

    #[test]
    fn free_slots_go_before_evicting_a_conversation() {
        let slots = [
            view(Some("a"), false, 1),
            view(None, false, 9),
            view(None, false, 3),
        ];
        assert_eq!(choose_slot(&slots, Some("b")), Choice::Fresh(2));
    }

    #[test]
    fn the_least_recently_used_idle_conversation_is_evicted() {
        let slots = [
            view(Some("a"), false, 7),
            view(Some("b"), true, 1),
            view(Some("c"), false, 4),
        ];
        assert_eq!(choose_slot(&slots, Some("d")), Choice::Fresh(2));
        assert_eq!(choose_slot(&slots, None), Choice::Fresh(2));
    }

    #[test]
    fn everything_busy_means_wait() {
        let slots = [view(Some("a"), true, 7), view(None, true, 4)];
        assert_eq!(choose_slot(&slots, Some("d")), Choice::Wait);
        assert_eq!(choose_slot(&slots, None), Choice::Wait);
    }

    #[test]
    fn prefix_reuse() {
        assert_eq!(reusable_prefix(&[1, 2, 3], &[1, 2, 3, 4, 5]), 3);
        assert_eq!(reusable_prefix(&[1, 2, 9, 9], &[1, 2, 3, 4]), 2);
        assert_eq!(reusable_prefix::<i32>(&[], &[1, 2]), 0);
        // A prompt entirely in the cache still decodes its last token.
        assert_eq!(reusable_prefix(&[1, 2, 3, 4], &[1, 2, 3]), 2);
        assert_eq!(reusable_prefix(&[1, 2, 3], &[1, 2, 3]), 2);
        assert_eq!(reusable_prefix(&[1], &[1]), 0);
    }
}
