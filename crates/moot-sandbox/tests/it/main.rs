//! The integration tests of `moot-sandbox`, linked as one test binary (one link, not
//! one per file): one module per area, so a test's name reads `module::test`.

mod channel;
mod forgery;
mod limits;
mod names;
mod readme;
mod sandbox;
