//! The integration tests of `moot-eval`, linked as one test binary (one link, not
//! one per file): one module per area, so a test's name reads `module::test`.

mod bench;
mod fixtures;
mod shapes;
mod shared_data;
