//! The integration tests of `moot-serve`, linked as one test binary (one link, not
//! one per file): one module per area, so a test's name reads `module::test`.

mod common;
mod requests;
mod slowloris;
