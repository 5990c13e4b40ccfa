//! One module per subcommand.

pub mod ask;
pub mod bench;
pub mod config;
pub mod decide;
pub mod extract;
pub mod fork;
pub mod health;
pub mod import;
pub mod list;
pub mod model;
pub mod regrade;
pub mod report;
pub mod resume;
pub mod serve;
pub mod show;
pub mod store;
pub mod sweep;
pub mod work;
