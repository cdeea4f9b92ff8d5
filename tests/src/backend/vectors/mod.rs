//! The backend vectors: each is one generic async function, run against every target
//! that can run it by the macros in the crate root. Each can fail: it asserts on what
//! the backend returns.
//!
//! - [`claims`], [`waits`] and [`real_time`]: every backend.
//! - [`manual_clock`]: targets that run on a `ManualClock` ([`ManualTime`](crate::ManualTime)).
//! - [`capacity`]: targets that also keep an exact capacity
//!   ([`ExactCapacity`](crate::ExactCapacity)).
//! - [`cancellation`]: backends driven through their async trait.
//! - [`purger`]: targets with a purger ([`Purging`](crate::Purging)).

pub mod cancellation;
pub mod capacity;
pub mod claims;
pub mod manual_clock;
pub mod purger;
pub mod real_time;
pub mod waits;
