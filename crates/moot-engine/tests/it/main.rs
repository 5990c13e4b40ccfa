//! The integration tests of `moot-engine`, linked as one test binary (linking one binary per file
//! cost most of CI's build time): one module per area, so a test's name reads `module::test`.

mod engine;
mod flights;
mod forks;
mod mechanisms;
