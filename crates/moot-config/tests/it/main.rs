//! The integration tests of `moot-config`, linked as one test binary (one link, not
//! one per file): one module per area, so a test's name reads `module::test`.

mod freemad_examples;
mod stored_agents;
