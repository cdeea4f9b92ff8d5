//! One conformance suite for every idemkit backend and executor.
//!
//! Each vector is written once, as a generic async function over a [`Target`]: a backend
//! family with its executor, the [`Runtime`] that drives them, and a way to build the
//! backend with given [`Settings`] and clock. The [`backend`] vectors drive the backend
//! through [`ConformanceBackend`] (the blocking backend runs its blocking wait on an OS
//! thread); the [`executor`] vectors drive the executor through an
//! [`executor::Harness`] over such a backend.
//!
//! The integration tests instantiate every vector for every target with one macro call
//! each, so `cargo test --workspace` names every vector × target pair:
//!
//! ```text
//! idemkit_conformance::backend_tests!(idemkit_conformance::targets::Tokio);
//! idemkit_conformance::async_backend_tests!(idemkit_conformance::targets::Tokio);
//! idemkit_conformance::executor_tests!(idemkit_conformance::targets::Tokio);
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
pub use executor::ConformanceExecutor;
pub use runtime::Runtime;
pub use target::{AsyncTarget, Settings, Target};
pub use thread_task::{ThreadTask, on_thread};

/// Runs one vector on its target's runtime.
pub fn run<T: Target, F: Future>(vector: F) -> F::Output {
    <T::Runtime as Runtime>::block_on(vector)
}

/// Declares a `#[test]` per vector of the module `$crate::$path`, each running the
/// vector for the target named by an absolute path.
#[doc(hidden)]
#[macro_export]
macro_rules! __vector_tests {
    ($target:ty; $($path:ident)::+; $($vector:ident),* $(,)?) => {
        use $crate::$($path)::+ as __vectors;
        $(
            #[test]
            fn $vector() {
                $crate::run::<$target, _>(__vectors::$vector::<$target>());
            }
        )*
    };
}

/// Declares the backend vectors' tests, grouped in a module per vector module.
#[doc(hidden)]
#[macro_export]
macro_rules! __backend_vector_tests {
    ($target:ty; $($module:ident { $($vector:ident),* $(,)? })*) => {
        $(
            mod $module {
                $crate::__vector_tests! { $target; backend::vectors::$module; $($vector),* }
            }
        )*
    };
}

/// Declares one `#[test]` per vector every backend must pass, for the target named by an
/// absolute path, e.g. `backend_tests!(idemkit_conformance::targets::Blocking)`.
#[macro_export]
macro_rules! backend_tests {
    ($target:ty) => {
        $crate::__backend_vector_tests! { $target;
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
                a_waiter_follows_a_reclaim_to_the_new_claims_result,
            }
        }
    };
}

/// Declares one `#[test]` per vector only async backends have (dropped wait futures, the
/// purger), for the [`AsyncTarget`] named by an absolute path.
#[macro_export]
macro_rules! async_backend_tests {
    ($target:ty) => {
        $crate::__backend_vector_tests! { $target;
            cancellation {
                dropped_waits_do_not_block_or_leak,
            }
            purger {
                purger_drops_expired_records_of_an_idle_backend,
            }
        }
    };
}

/// Declares one `#[test]` per executor vector, for the target named by an absolute path,
/// e.g. `executor_tests!(idemkit_conformance::targets::Blocking)`.
#[macro_export]
macro_rules! executor_tests {
    ($target:ty) => {
        $crate::__vector_tests! { $target; executor::vectors;
            a_retry_replays_without_running_again,
            concurrent_duplicates_run_once,
            a_duplicate_mid_run_waits_and_replays,
            a_waiting_duplicate_runs_once_the_first_releases,
            a_waiting_duplicate_reclaims_a_lease_that_lapses,
            a_duplicate_that_waits_too_long_is_told_when_to_retry,
            another_request_with_the_key_is_refused,
            a_crashed_owner_is_reclaimed_after_its_lease,
            an_uncacheable_response_is_not_stored,
            an_error_releases_the_claim,
            a_panic_releases_the_claim,
            heartbeats_keep_a_slow_run_claimed,
            a_heartbeat_that_cannot_renew_loses_the_lease,
            a_run_taken_over_returns_its_response_unstored,
            a_full_store_fails_closed_or_open,
            every_run_reports_one_event_without_the_raw_key,
            a_panicking_observer_does_not_break_the_run,
            a_heartbeat_not_shorter_than_the_lease_is_refused,
            a_dropped_run_releases_its_claim,
        }
    };
}

/// The README's examples, compiled and run as doctests so the front page cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
