//! The event-stream followers of runs, capped below the connection cap: each holds a
//! connection for as long as its run lasts, so without a cap of their own enough followers of
//! one live run would hold every connection and `/health` and ordinary requests would be
//! refused. Past the cap the oldest follower is told to end (its stream says why and closes),
//! so the newest clients are served and no client holds a place forever.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

/// Why a follower's stream ended early, as its last event says.
pub const SHED: &str =
    "too many followers: this stream was closed for a newer one; reconnect to go on";

/// Every follower now, oldest first.
#[derive(Debug)]
pub struct Followers {
    cap: usize,
    next: AtomicU64,
    live: Mutex<BTreeMap<u64, Arc<Shed>>>,
}

/// The signal that ends one follower.
#[derive(Debug, Default)]
pub struct Shed {
    told: AtomicBool,
    notify: Notify,
}

impl Shed {
    /// Whether this follower was told to end.
    pub fn told(&self) -> bool {
        self.told.load(Ordering::SeqCst)
    }

    /// Waits until this follower is told to end.
    pub async fn wait(&self) {
        // `notify_one` keeps a permit when nobody waits yet, so no telling is lost.
        while !self.told() {
            self.notify.notified().await;
        }
    }

    fn tell(&self) {
        self.told.store(true, Ordering::SeqCst);
        self.notify.notify_one();
    }
}

/// A follower's place: it leaves when dropped (its stream ended or its client went away).
#[derive(Debug)]
pub struct Following {
    id: u64,
    pub shed: Arc<Shed>,
    followers: Arc<Followers>,
}

impl Drop for Following {
    fn drop(&mut self) {
        self.followers.live().remove(&self.id);
    }
}

impl Followers {
    /// At most `cap` followers at once (at least one).
    pub fn new(cap: usize) -> Arc<Followers> {
        Arc::new(Followers {
            cap: cap.max(1),
            next: AtomicU64::new(0),
            live: Mutex::default(),
        })
    }

    fn live(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Shed>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many follow now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.live().len()
    }

    /// A new follower's place; at the cap, the oldest follower is told to end and leaves.
    pub fn join(self: &Arc<Self>) -> Following {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let shed = Arc::new(Shed::default());
        let mut live = self.live();
        while live.len() >= self.cap {
            let Some((_, oldest)) = live.pop_first() else {
                break;
            };
            oldest.tell();
        }
        live.insert(id, shed.clone());
        Following {
            id,
            shed,
            followers: self.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_cap_the_oldest_follower_is_told_to_end() {
        let followers = Followers::new(2);
        let first = followers.join();
        let second = followers.join();
        assert_eq!(followers.len(), 2);
        let third = followers.join();
        assert!(first.shed.told() && !second.shed.told() && !third.shed.told());
        assert_eq!(followers.len(), 2);
        // The told follower's wait ends at once.
        first.shed.wait().await;
        drop(second);
        assert_eq!(followers.len(), 1);
        let _fourth = followers.join();
        assert!(!third.shed.told());
        drop(first);
        assert_eq!(followers.len(), 2);
    }
}
