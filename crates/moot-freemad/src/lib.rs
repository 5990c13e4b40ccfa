//! freemad, the product moot's users come from, as moot reads and writes it: its transcript
//! written from a run in moot's store ([`transcript`]), and such files read back into moot's
//! records ([`import`]).

pub mod import;
pub mod transcript;
