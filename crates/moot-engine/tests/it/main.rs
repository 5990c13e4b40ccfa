//! The integration tests of `moot-engine`, linked as one test binary (one link, not
//! one per file): one module per area, so a test's name reads `module::test`.

mod engine;
mod flights;
mod forks;
mod mechanisms;
