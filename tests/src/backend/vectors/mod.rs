//! The backend vectors: each is one generic async function, run against every target by
//! the macros in the crate root. Each can fail: it asserts on what the backend returns.

pub mod cancellation;
pub mod capacity;
pub mod manual_clock;
pub mod purger;
pub mod reference;
pub mod waits;
