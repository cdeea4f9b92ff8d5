//! The run-once executor: claim a key, run the operation once under a renewed lease,
//! store its result, and give every duplicate that result.
//!
//! [`Idempotency`] runs blocking operations on any
//! [`BlockingBackend`](crate::BlockingBackend); [`AsyncIdempotency`] runs async ones on any
//! [`Backend`](crate::Backend). Both follow one run loop (`run_loop`), built on the pure
//! decisions in `decide`, and only perform the I/O it asks for:
//!
//! 1. A fresh key, or one whose owner's lease lapsed, runs the operation. A cacheable
//!    result is stored; one that is not is returned and the claim released; an error or
//!    a panic releases the claim.
//! 2. A completed key replays its stored result to the same request (same fingerprint
//!    and version) and refuses any other.
//! 3. An in-flight key refuses another request at once; the same request waits for the
//!    result, takes the key over if it is released or lapses, or is told to retry later.
//! 4. A heartbeat renews the lease while the operation runs; if it cannot, nothing is
//!    stored and the run reports a lost lease.
//! 5. A backend failure refuses the request, or runs it unprotected if the policy says
//!    so.
//! 6. Every run reports one [`Event`], with the hashed [`Key`](crate::Key), never the
//!    raw one.
//!
//! Fencing protects the stored result, not a side effect the operation already
//! performed after losing its lease: pass the key downstream on money paths.

mod async_exec;
mod blocking;
mod decide;
mod heartbeat;
mod observer;
mod outcome;
mod policy;
mod policy_builder;
mod run_loop;

pub use async_exec::AsyncIdempotency;
pub use blocking::{Idempotency, Lease};
pub use outcome::{Decision, Event, Outcome, RunError, Unstored};
pub use policy::{Heartbeat, OnStorageError, Policy};
pub use policy_builder::PolicyBuilder;
