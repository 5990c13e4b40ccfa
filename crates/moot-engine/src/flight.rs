//! Single flight: a request the cache would answer, asked while the same request (the same
//! request key, on the same store) is already on its way to a model, waits for that call
//! instead of calling again, and is recorded as a cache hit.
//!
//! One registry serves the whole process, so concurrent debates of one benchmark, server or
//! worker share it. The first to ask a key leads: it looks the key up in the store's cache and
//! calls the model on a miss; whoever asks the same key meanwhile follows, waiting for the
//! leader's answer without taking a turn among its round's calls. The leader hands its answer
//! over once it is stored in the cache (see `RoundRun::flush`), and leaves the registry then,
//! so a later request finds the answer in the cache instead. A leader that ends without an
//! answer (its call failed, was cancelled with its round, or its answer could not be stored)
//! leaves the registry without one, and its followers join again: the first of them leads
//! and calls, the others follow it. A follower that is cancelled only stops waiting.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use moot_backends::Completion;
use moot_store::Store;
use tokio::sync::watch;

/// A request in flight: the store its debates record to (by address: a store outlives every
/// debate that borrows it, so no other store can have its address while one of its flights is
/// registered) and the request key (see [`crate::request_key`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FlightKey {
    store: usize,
    request: String,
}

/// A registered flight: which leader holds it, and where its answer will be.
struct Slot {
    leader: u64,
    answer: watch::Receiver<Option<Completion>>,
}

#[derive(Default)]
struct Registry {
    slots: HashMap<FlightKey, Slot>,
    /// The id the next leader gets.
    next: u64,
}

static FLIGHTS: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

/// The registry, locked. Nothing panics while it is held; were it poisoned anyway, its map is
/// still whole (each change is one insert or remove).
fn registry() -> std::sync::MutexGuard<'static, Registry> {
    FLIGHTS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What asking a request makes of its asker: the leader of its flight, or a follower.
pub(crate) enum Flight {
    Lead(Lead),
    Follow(Follow),
}

/// Joins the flight of `request_key` on `store`: leads it when none is registered, follows it
/// otherwise.
pub(crate) fn join(store: &dyn Store, request_key: &str) -> Flight {
    join_key(FlightKey {
        store: std::ptr::from_ref(store).cast::<()>().addr(),
        request: request_key.to_string(),
    })
}

fn join_key(key: FlightKey) -> Flight {
    let mut registry = registry();
    if let Some(slot) = registry.slots.get(&key) {
        return Flight::Follow(Follow {
            answer: slot.answer.clone(),
            key,
        });
    }
    let id = registry.next;
    registry.next = registry.next.wrapping_add(1);
    let (sender, receiver) = watch::channel(None);
    registry.slots.insert(
        key.clone(),
        Slot {
            leader: id,
            answer: receiver,
        },
    );
    Flight::Lead(Lead {
        key,
        id,
        answer: sender,
    })
}

/// The leader of a flight. Dropping it ends the flight: its followers get the answer it
/// handed over, or join again when it handed none.
pub(crate) struct Lead {
    key: FlightKey,
    id: u64,
    answer: watch::Sender<Option<Completion>>,
}

impl Lead {
    /// Hands `completion` to the followers, and ends the flight.
    pub(crate) fn answer(self, completion: Completion) {
        self.answer.send_replace(Some(completion));
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        // Out of the registry first: a follower woken by the sender's drop (below, after this
        // body) that joins again must not find this flight.
        let mut registry = registry();
        if registry
            .slots
            .get(&self.key)
            .is_some_and(|s| s.leader == self.id)
        {
            registry.slots.remove(&self.key);
        }
    }
}

/// A follower of a flight.
pub(crate) struct Follow {
    key: FlightKey,
    answer: watch::Receiver<Option<Completion>>,
}

impl Follow {
    /// The leader's answer; when the leader ended without one, the flight of the same key
    /// joined again (led by whichever of its followers comes first).
    pub(crate) async fn answer(mut self) -> Result<Completion, Flight> {
        // An error means the leader ended without an answer: one it handed over just before
        // it ended is still read.
        let answered = match self.answer.wait_for(Option::is_some).await {
            Ok(answer) => answer.clone(),
            Err(_) => None,
        };
        answered.ok_or_else(|| join_key(self.key))
    }
}

#[cfg(test)]
mod tests {
    use moot_backends::{Completion, FinishReason, Usage};
    use moot_store::MemoryStore;

    use super::{join, Flight, Follow, Lead};

    fn completion(text: &str) -> Completion {
        Completion {
            text: text.into(),
            usage: Usage::default(),
            logprobs: None,
            finish: FinishReason::Stop,
            retries: Vec::new(),
        }
    }

    fn lead(flight: Flight) -> Lead {
        match flight {
            Flight::Lead(l) => l,
            Flight::Follow(_) => panic!("expected to lead"),
        }
    }

    fn follow(flight: Flight) -> Follow {
        match flight {
            Flight::Follow(f) => f,
            Flight::Lead(_) => panic!("expected to follow"),
        }
    }

    #[tokio::test]
    async fn followers_get_the_leaders_answer_and_a_later_asker_leads_anew() {
        let store = MemoryStore::default();
        let leader = lead(join(&store, "k"));
        let first = follow(join(&store, "k"));
        let second = follow(join(&store, "k"));
        let waiting = tokio::spawn(first.answer());
        leader.answer(completion("408"));
        let got = waiting.await.unwrap().ok().unwrap();
        assert_eq!(got.text, "408");
        // Joined before the flight ended, waited for after: the answer is still there.
        assert_eq!(second.answer().await.ok().unwrap().text, "408");
        // The flight ended with its answer: the next asker leads (and reads the cache).
        lead(join(&store, "k"));
    }

    #[tokio::test]
    async fn a_leader_gone_without_an_answer_makes_its_first_returning_follower_lead() {
        let store = MemoryStore::default();
        let leader = lead(join(&store, "k"));
        let first = follow(join(&store, "k"));
        let second = follow(join(&store, "k"));
        drop(leader);
        let next = lead(first.answer().await.err().unwrap());
        let second = follow(second.answer().await.err().unwrap());
        next.answer(completion("7"));
        assert_eq!(second.answer().await.ok().unwrap().text, "7");
    }

    #[tokio::test]
    async fn a_dropped_follower_leaves_the_flight_to_the_others() {
        let store = MemoryStore::default();
        let leader = lead(join(&store, "k"));
        drop(follow(join(&store, "k")));
        let other = follow(join(&store, "k"));
        leader.answer(completion("1"));
        assert_eq!(other.answer().await.ok().unwrap().text, "1");
    }

    #[test]
    fn flights_are_per_store_and_per_key() {
        let (one, two) = (MemoryStore::default(), MemoryStore::default());
        let _a = lead(join(&one, "k"));
        let _b = lead(join(&two, "k"));
        let _c = lead(join(&one, "other"));
        follow(join(&one, "k"));
    }
}
