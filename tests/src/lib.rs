//! One conformance suite for every idemkit backend and executor.
//!
//! Each vector in [`backend::vectors`] is written once, as a generic async function over a
//! [`Target`]: a backend family, the [`Runtime`] that drives it, and a way to build it with
//! given [`Settings`] and clock. The backends are driven through [`ConformanceBackend`],
//! which the blocking backend implements by running its blocking wait on an OS thread.
//!
//! The integration tests instantiate every vector for every target with one macro call
//! each, so `cargo test --workspace` names every vector × backend pair:
//!
//! ```text
//! idemkit_conformance::conformance_tests!(idemkit_conformance::targets::Tokio);
//! idemkit_conformance::async_conformance_tests!(idemkit_conformance::targets::Tokio);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod executor;
mod runtime;
pub mod runtimes;
pub mod support;
mod target;
pub mod targets;
mod thread_task;

use std::future::Future;

pub use backend::ConformanceBackend;
pub use runtime::Runtime;
pub use target::{AsyncTarget, Settings, Target};
pub use thread_task::{ThreadTask, on_thread};

/// Runs one vector on its target's runtime.
pub fn run<T: Target, F: Future>(vector: F) -> F::Output {
    <T::Runtime as Runtime>::block_on(vector)
}

/// Declares a `#[test]` per vector, grouped in a module per vector module. The target
/// must be named by an absolute path (it is used inside the generated modules).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_vectors {
    ($target:ty; $($module:ident { $($vector:ident),* $(,)? })*) => {
        $(
            mod $module {
                $(
                    #[test]
                    fn $vector() {
                        $crate::run::<$target, _>($crate::backend::vectors::$module::$vector::<$target>());
                    }
                )*
            }
        )*
    };
}

/// Declares one `#[test]` per vector every backend must pass, for the target named by an
/// absolute path, e.g. `conformance_tests!(idemkit_conformance::targets::Blocking)`.
#[macro_export]
macro_rules! conformance_tests {
    ($target:ty) => {
        $crate::__conformance_vectors! { $target;
            reference {
                atomic_claim,
                duplicate_claim_is_in_flight_with_first_token,
                complete_then_replay,
                complete_with_wrong_token_is_refused,
                release_frees_the_key,
                expired_lease_is_reclaimed_with_new_token,
                reclaimed_owner_late_completion_is_refused,
                concurrent_claims_give_exactly_one_new,
                waiter_receives_the_completed_record,
                wait_times_out_on_a_claim_that_never_completes,
                completed_record_past_its_ttl_claims_fresh,
                renew_keeps_a_short_lease_from_being_reclaimed,
                renew_with_wrong_token_is_refused,
            }
            capacity {
                full_store_refuses_new_keys_but_not_existing_ones,
                an_expired_record_frees_its_slot,
            }
            manual_clock {
                manual_clock_lapses_a_lease_for_waiters,
                manual_clock_ends_the_reclaim_grace,
                manual_clock_expires_a_result_from_its_completion,
                manual_clock_never_expires_duration_max,
            }
            waits {
                two_hundred_waiters_all_wake_on_one_completion,
                abandoned_waits_do_not_block_or_leak,
                wait_on_a_crashed_owner_returns_once_the_lease_lapses,
                release_wakes_waiters_with_none_at_once,
            }
        }
    };
}

/// Declares one `#[test]` per vector only async backends have (dropped wait futures, the
/// purger), for the [`AsyncTarget`] named by an absolute path.
#[macro_export]
macro_rules! async_conformance_tests {
    ($target:ty) => {
        $crate::__conformance_vectors! { $target;
            cancellation {
                dropped_waits_do_not_block_or_leak,
            }
            purger {
                purger_drops_expired_records_of_an_idle_backend,
            }
        }
    };
}

/// The README's examples, compiled and run as doctests so the front page cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
