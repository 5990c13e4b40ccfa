//! Which sequence slot a request runs in, and where its prompt's cached prefix comes from.
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

/// What another slot's cache offers a new prompt, in leading tokens of that prompt (each already
/// capped by [`reusable_prefix`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Offer {
    pub slot: usize,
    /// In the slot's cache now: a copy can start from them.
    pub cached: usize,
    /// In the prompt the slot is running (0 when it runs none): once that prompt is prefilled,
    /// the slot's cache holds this many.
    pub planned: usize,
}

/// Where a request's prompt prefix comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The target slot's own cache (possibly nothing of it).
    Own,
    /// A copy of the first `tokens` cached tokens of another slot.
    Copy { slot: usize, tokens: usize },
    /// Another slot is prefilling a longer shared prefix right now: start once it has, rather
    /// than compute the same tokens twice (identical round-0 prompts are prefilled once).
    Wait,
}

/// Picks the source of a prompt's prefix: the target slot's own `own` tokens, a copy of the
/// longest prefix cached in another slot, or waiting for one being prefilled. A copy or a wait
/// must gain at least `min_gain` tokens over the best alternative: a copy is not free (with
/// split KV streams it copies a whole stream), and a wait delays the request.
pub(crate) fn prefix_source(own: usize, offers: &[Offer], min_gain: usize) -> Source {
    let min_gain = min_gain.max(1);
    // The longest cached offer; on ties the first, so the choice is deterministic.
    let best =
        offers
            .iter()
            .filter(|o| o.cached >= own + min_gain)
            .fold(None::<&Offer>, |best, o| match best {
                Some(b) if b.cached >= o.cached => Some(b),
                _ => Some(o),
            });
    let now = best.map_or(own, |o| o.cached);
    if offers.iter().any(|o| o.planned >= now + min_gain) {
        return Source::Wait;
    }
    match best {
        Some(o) => Source::Copy {
            slot: o.slot,
            tokens: o.cached,
        },
        None => Source::Own,
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

    fn offer(slot: usize, cached: usize, planned: usize) -> Offer {
        Offer {
            slot,
            cached,
            planned,
        }
    }

    #[test]
    fn the_longest_cached_prefix_is_copied_when_it_beats_the_own_cache() {
        let offers = [offer(1, 40, 0), offer(2, 90, 0), offer(3, 90, 0)];
        assert_eq!(
            prefix_source(10, &offers, 8),
            Source::Copy {
                slot: 2,
                tokens: 90
            }
        );
        // Not worth a copy: the own cache is nearly as long.
        assert_eq!(prefix_source(85, &offers, 8), Source::Own);
        assert_eq!(prefix_source(0, &[], 8), Source::Own);
    }

    #[test]
    fn a_prefix_being_prefilled_elsewhere_is_waited_for() {
        // Round 0: another agent started the same prompt a step ago.
        assert_eq!(prefix_source(0, &[offer(1, 3, 200)], 8), Source::Wait);
        // Once it is cached, it is copied.
        assert_eq!(
            prefix_source(0, &[offer(1, 200, 200)], 8),
            Source::Copy {
                slot: 1,
                tokens: 200
            }
        );
        // A small gain is not worth waiting for.
        assert_eq!(prefix_source(100, &[offer(1, 0, 104)], 8), Source::Own);
        // Nor is a prefix already cached elsewhere about as long.
        assert_eq!(
            prefix_source(0, &[offer(1, 0, 104), offer(2, 100, 0)], 8),
            Source::Copy {
                slot: 2,
                tokens: 100
            }
        );
    }

    proptest::proptest! {
        #[test]
        fn a_copy_always_gains_and_never_loses_to_a_wait(
            own in 0usize..300,
            raw in proptest::collection::vec((0usize..300, 0usize..300), 0..6),
            min_gain in 0usize..40,
        ) {
            let offers: Vec<Offer> = raw
                .iter()
                .enumerate()
                .map(|(slot, &(cached, planned))| offer(slot, cached, planned))
                .collect();
            match prefix_source(own, &offers, min_gain) {
                Source::Own => {
                    proptest::prop_assert!(offers.iter().all(|o| o.cached < own + min_gain.max(1)));
                }
                Source::Copy { slot, tokens } => {
                    proptest::prop_assert_eq!(offers[slot].cached, tokens);
                    proptest::prop_assert!(tokens >= own + min_gain.max(1));
                    proptest::prop_assert!(offers.iter().all(|o| o.cached <= tokens));
                    proptest::prop_assert!(offers.iter().all(|o| o.planned < tokens + min_gain.max(1)));
                }
                Source::Wait => {
                    let now = offers.iter().map(|o| o.cached).max().unwrap_or(0).max(own);
                    proptest::prop_assert!(offers.iter().any(|o| o.planned > now));
                }
            }
        }
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
