//! The integration tests of `moot-eval`, linked as one test binary (linking one binary per file
//! cost most of CI's build time): one module per area, so a test's name reads `module::test`.

mod bench;
mod fixtures;
mod shapes;
mod shared_data;
