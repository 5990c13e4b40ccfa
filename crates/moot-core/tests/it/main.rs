//! The integration tests of `moot-core`, linked as one test binary (one link, not
//! one per file): one module per area, so a test's name reads `module::test`.

mod judged;
mod layout;
mod properties;
mod protocols;
mod response_table;
