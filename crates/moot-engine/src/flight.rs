//! Single flight: a request the cache would answer, asked while the same request (the same
//! request key, on the same store) is already on its way to a model, waits for that call
//! instead of calling again, and is recorded as a cache hit.
//!
//! One registry serves the whole process, so concurrent debates of one benchmark, server or
//! worker share it. The first to ask a key leads its flight: it looks the key up in the store's
//! cache and calls the model on a miss; whoever asks the same key meanwhile follows, waiting
//! for the leader's answer without taking a turn among its round's calls. The leader hands its
//! answer over once it is stored in the cache (see `RoundRun::flush`), and the flight leaves
//! the registry then, so a later request finds the answer in the cache instead. A leader that
//! ends without an answer (its call failed, was cancelled with its round, or its answer could
//! not be stored) leaves the flight to its followers: the first of them to wake leads and
//! calls, the others wait for it. The flight stays registered until it is answered or nobody
//! is left in it, so a request is never asked twice at once. A follower that is cancelled
//! only stops waiting.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

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

/// Where a flight is. Changed only with the registry locked, so that a flight's state and its
/// place in the registry change together.
#[derive(Default)]
struct State {
    /// The leader's answer, once handed over.
    answer: Option<Completion>,
    /// Whether someone leads the flight (is asking the model).
    led: bool,
    /// Followers waiting for the answer.
    followers: usize,
}

/// One flight, shared by its leader and followers (who wait for changes of its state).
type Shared = Arc<watch::Sender<State>>;

static FLIGHTS: LazyLock<Mutex<HashMap<FlightKey, Shared>>> = LazyLock::new(Mutex::default);

/// The registry, locked. Nothing panics while it is held; were it poisoned anyway, its map is
/// still whole (each change is one insert or remove).
fn registry() -> MutexGuard<'static, HashMap<FlightKey, Shared>> {
    FLIGHTS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes `shared` out of the registry, if it is still the flight registered under `key`.
fn unregister(registry: &mut HashMap<FlightKey, Shared>, key: &FlightKey, shared: &Shared) {
    if registry.get(key).is_some_and(|s| Arc::ptr_eq(s, shared)) {
        registry.remove(key);
    }
}

/// What asking a request makes of its asker: the leader of its flight, or a follower.
pub(crate) enum Flight {
    Lead(Lead),
    Follow(Follow),
}

/// Joins the flight of `request_key` on `store`: leads it when none is registered (or its
/// leader left it), follows it otherwise.
pub(crate) fn join(store: &dyn Store, request_key: &str) -> Flight {
    let key = FlightKey {
        store: std::ptr::from_ref(store).cast::<()>().addr(),
        request: request_key.to_string(),
    };
    let mut registry = registry();
    let Some(shared) = registry.get(&key).cloned() else {
        let shared = Arc::new(watch::Sender::new(State {
            led: true,
            ..State::default()
        }));
        registry.insert(key.clone(), shared.clone());
        return Flight::Lead(Lead { key, shared });
    };
    let mut leads = false;
    shared.send_modify(|s| {
        leads = !s.led;
        if leads {
            s.led = true;
        } else {
            s.followers += 1;
        }
    });
    if leads {
        return Flight::Lead(Lead { key, shared });
    }
    Flight::Follow(Follow {
        answer: shared.subscribe(),
        key,
        shared,
        following: true,
    })
}

/// The leader of a flight. Dropped without handing over an answer, it leaves the flight to
/// its followers.
pub(crate) struct Lead {
    key: FlightKey,
    shared: Shared,
}

impl Lead {
    /// Hands `completion` to the followers; the flight ends.
    pub(crate) fn answer(self, completion: Completion) {
        let mut registry = registry();
        self.shared.send_modify(|s| s.answer = Some(completion));
        unregister(&mut registry, &self.key, &self.shared);
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        let mut registry = registry();
        if self.shared.borrow().answer.is_some() {
            return;
        }
        let mut alone = false;
        self.shared.send_modify(|s| {
            s.led = false;
            alone = s.followers == 0;
        });
        if alone {
            unregister(&mut registry, &self.key, &self.shared);
        }
    }
}

/// A follower of a flight.
pub(crate) struct Follow {
    key: FlightKey,
    shared: Shared,
    answer: watch::Receiver<State>,
    /// Still counted among the flight's followers (not since it came to lead).
    following: bool,
}

impl Follow {
    /// The leader's answer; or, when the leader left without one and this follower is the
    /// first to notice, the lead of the flight.
    pub(crate) async fn answer(mut self) -> Result<Completion, Lead> {
        loop {
            {
                let _locked = registry();
                let state = self.answer.borrow_and_update();
                if let Some(c) = &state.answer {
                    return Ok(c.clone());
                }
                if !state.led {
                    drop(state);
                    // Still registered: a flight with followers stays until it is answered.
                    self.shared.send_modify(|s| {
                        s.led = true;
                        s.followers = s.followers.saturating_sub(1);
                    });
                    self.following = false;
                    return Err(Lead {
                        key: self.key.clone(),
                        shared: self.shared.clone(),
                    });
                }
            }
            // Never closed: this follower holds the flight's sender too.
            let _ = self.answer.changed().await;
        }
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        if !self.following {
            return;
        }
        let mut registry = registry();
        let mut last = false;
        self.shared.send_modify(|s| {
            s.followers = s.followers.saturating_sub(1);
            last = s.followers == 0 && !s.led && s.answer.is_none();
        });
        if last {
            unregister(&mut registry, &self.key, &self.shared);
        }
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
        assert_eq!(waiting.await.unwrap().ok().unwrap().text, "408");
        // Joined before the flight ended, waited for after: the answer is still there.
        assert_eq!(second.answer().await.ok().unwrap().text, "408");
        // The flight ended with its answer: the next asker leads (and reads the cache).
        lead(join(&store, "k"));
    }

    #[tokio::test]
    async fn a_leader_gone_without_an_answer_leaves_the_flight_to_one_follower() {
        let store = MemoryStore::default();
        let leader = lead(join(&store, "k"));
        let first = follow(join(&store, "k"));
        let second = tokio::spawn(follow(join(&store, "k")).answer());
        drop(leader);
        let next = first.answer().await.err().unwrap();
        // The flight is still registered, led again: a newcomer follows it too.
        let newcomer = follow(join(&store, "k"));
        next.answer(completion("7"));
        assert_eq!(second.await.unwrap().ok().unwrap().text, "7");
        assert_eq!(newcomer.answer().await.ok().unwrap().text, "7");
    }

    #[tokio::test]
    async fn a_flight_nobody_is_left_in_is_unregistered() {
        let store = MemoryStore::default();
        // The leader leaves, then its one follower (cancelled before it noticed).
        let leader = lead(join(&store, "k"));
        let follower = follow(join(&store, "k"));
        drop(leader);
        drop(follower);
        // The follower leaves, then the leader.
        let leader = lead(join(&store, "k"));
        drop(follow(join(&store, "k")));
        drop(leader);
        lead(join(&store, "k"));
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
