//! The time a call must end by, when the debate that asks it has one (its round's hard stop):
//! set by the engine around each call, read by a backend that waits on someone and tells them
//! how long they have (a person, `human`). Without it, a person was told the backend's own
//! limit while the debate's hard deadline could end the call first.

use std::future::Future;
use std::time::{Duration, Instant};

tokio::task_local! {
    static CALL_DEADLINE: Instant;
}

/// Runs `call` with `deadline` as the time it must end by.
pub async fn scope<F: Future>(deadline: Instant, call: F) -> F::Output {
    CALL_DEADLINE.scope(deadline, call).await
}

/// How long the call being run has left, if its debate set a deadline.
pub fn left() -> Option<Duration> {
    CALL_DEADLINE
        .try_with(|deadline| deadline.saturating_duration_since(Instant::now()))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_in_scope_sees_its_time_left_and_one_outside_sees_none() {
        assert_eq!(left(), None);
        let deadline = Instant::now() + Duration::from_secs(60);
        let seen = scope(deadline, async { left() }).await.unwrap();
        assert!(seen <= Duration::from_secs(60) && seen > Duration::from_secs(50));
        let past = scope(Instant::now(), async { left() }).await;
        assert_eq!(past, Some(Duration::ZERO));
    }
}
