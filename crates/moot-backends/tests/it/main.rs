//! The integration tests of `moot-backends`, linked as one test binary (one link, not
//! one per file): one module per area, so a test's name reads `module::test`.

mod anthropic_http;
mod cli;
mod common;
mod openai_http;
mod openai_llama;
