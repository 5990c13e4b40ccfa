//! What every bench file shares: a short criterion configuration, so that the whole
//! `cargo bench -p moot-core` (about fifty benches) stays within two minutes on a two-core
//! machine.

use std::time::Duration;

use criterion::Criterion;

/// Ten samples over 1.5 s after half a second of warm-up: enough to compare a bench with the
/// baseline of its group in the same run, not to detect changes of a few percent.
pub fn quick() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(10)
        // The default 100,000 bootstrap resamples cost more time than ten samples are worth.
        .nresamples(10_000)
}
