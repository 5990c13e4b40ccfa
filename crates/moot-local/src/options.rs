//! How a [`crate::LocalModel`] is set up, and the sampling defaults of a request that sets
//! none.

use std::num::NonZeroUsize;

use crate::error::LocalError;

/// Default tokens generated when a request does not set `max_tokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 512;
/// Default sampling temperature when a request does not set one.
pub const DEFAULT_TEMPERATURE: f32 = 0.7;
/// llama.cpp's limit on sequences in one context.
pub const MAX_SEQUENCES: u32 = 256;
/// The environment variable that sets [`LocalOptions::threads`] for every model moot loads.
pub const THREADS_ENV: &str = "MOOT_LOCAL_THREADS";

/// How a [`LocalModel`] is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalOptions {
    /// Context length of each sequence, in tokens (prompt + generated). Capped at the model's
    /// training context; llama.cpp rounds it up to a multiple of 256.
    pub n_ctx: u32,
    /// Sequences (conversations and concurrent calls) the context holds.
    pub max_sequences: u32,
    /// CPU threads for decoding (OpenMP's). They wait for each other at every step by
    /// spinning first, then sleeping, so more threads than the cores free to them costs more
    /// than it gains; [`LocalOptions::with_env_threads`] lets the user say how many cores are
    /// theirs, and `GOMP_SPINCOUNT` how long a thread spins (docs/performance.md §5).
    pub threads: u32,
    /// Most tokens one decode step takes; long prompts are prefilled in chunks of this size.
    pub batch_size: u32,
    /// A request starts from the longest prefix of its prompt cached in any sequence (another
    /// agent's included), copied into its own, and a prompt another sequence is prefilling is
    /// waited for rather than computed twice. Off, a request reuses only its own sequence's
    /// cache, as llama.cpp's server does with a slot.
    pub share_prefixes: bool,
    /// One KV buffer for all sequences (llama.cpp's `kv_unified`): a copied prefix is shared
    /// cells, not a copy, but every token attends over the cells of all sequences. Off, each
    /// sequence has a stream of its own and a copy moves a whole stream's buffer.
    pub kv_unified: bool,
}

impl Default for LocalOptions {
    fn default() -> LocalOptions {
        LocalOptions {
            n_ctx: 4096,
            max_sequences: 8,
            threads: std::thread::available_parallelism()
                .map(NonZeroUsize::get)
                .map_or(4, |n| u32::try_from(n).unwrap_or(4)),
            batch_size: 512,
            share_prefixes: true,
            kv_unified: false,
        }
    }
}

impl LocalOptions {
    /// These options with [`THREADS_ENV`]'s thread count, when it is set: a positive integer,
    /// or an error naming the variable.
    pub fn with_env_threads(self) -> Result<LocalOptions, LocalError> {
        match std::env::var_os(THREADS_ENV) {
            None => Ok(self),
            Some(value) => Ok(LocalOptions {
                threads: parse_threads(&value.to_string_lossy())?,
                ..self
            }),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), LocalError> {
        let fail = |msg: String| Err(LocalError::InvalidOptions(msg));
        if self.n_ctx < 64 {
            return fail(format!("n_ctx must be at least 64 (got {})", self.n_ctx));
        }
        if self.max_sequences == 0 || self.max_sequences > MAX_SEQUENCES {
            return fail(format!(
                "max_sequences must be between 1 and {MAX_SEQUENCES} (got {})",
                self.max_sequences
            ));
        }
        if self.n_ctx.checked_mul(self.max_sequences).is_none() {
            return fail("n_ctx × max_sequences overflows".into());
        }
        if self.threads == 0 || i32::try_from(self.threads).is_err() {
            return fail(format!("threads must be positive (got {})", self.threads));
        }
        if self.batch_size < self.max_sequences + 1 || self.batch_size > 65_536 {
            return fail(format!(
                "batch_size must be between max_sequences + 1 and 65536 (got {})",
                self.batch_size
            ));
        }
        Ok(())
    }
}

/// A thread count as [`THREADS_ENV`] gives it.
fn parse_threads(value: &str) -> Result<u32, LocalError> {
    match value.trim().parse::<u32>() {
        Ok(n) if n > 0 && i32::try_from(n).is_ok() => Ok(n),
        _ => Err(LocalError::InvalidOptions(format!(
            "{THREADS_ENV} must be a positive whole number of threads (got {value:?})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_count_is_a_positive_whole_number() {
        assert_eq!(parse_threads("1").ok(), Some(1));
        assert_eq!(parse_threads(" 3 ").ok(), Some(3));
        for bad in ["0", "-1", "two", "", "1.5", "99999999999"] {
            let err = parse_threads(bad).expect_err(bad).to_string();
            assert!(err.contains(THREADS_ENV), "{err}");
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
    }
}
