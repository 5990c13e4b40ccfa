//! What the command line shows while moot works, and what it prints at the end: one debate
//! (`debate`: `ask`, `resume`, `fork`), a benchmark (`bench`) and a worker (`work`).

pub mod bench;
pub mod debate;
pub mod meter;
pub mod work;
