//! One module per subcommand.

pub mod decide;
pub mod extract;
