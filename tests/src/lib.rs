//! One conformance suite for every idempotency backend and executor.
//!
//! Each vector is written once, as a generic async function over a [`Target`]: a backend
//! driven through `Backend` ([`backend::Async`]) or `BlockingBackend`
//! ([`backend::Blocking`]), its executor, and the [`Runtime`] that drives both. What a
//! target can do beyond the trait it declares by implementing [`ManualTime`],
//! [`ExactCapacity`] or [`Purging`], and by building its backend on a [`FrozenTimer`]
//! ([`Target::build_frozen`]); what the suite can count in its backend, by the functions
//! it gives [`backend::Async`] (`held_records`, `watched_keys`). After each vector,
//! [`Target::after_vector`] gets every backend the vector built. Each vector runs on
//! every target that can run it.
//!
//! A test file runs the suite for one target with one macro call, naming what the target
//! supports (see the repository's `tests/README.md`):
//!
//! ```text
//! idemkit_conformance::conformance_tests!(my_crate::MyTarget; manual_time, exact_capacity);
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod backend;
pub mod executor;
mod frozen;
pub mod mutex_map;
pub mod runner;
mod runtime;
pub mod runtimes;
pub mod support;
mod target;
pub mod targets;
mod teardown;
mod thread_task;

use std::future::Future;

pub use backend::ConformanceBackend;
pub use executor::ConformanceExecutor;
pub use frozen::FrozenTimer;
pub use runtime::Runtime;
pub use target::{ExactCapacity, ManualTime, Purging, Settings, Target};
pub use thread_task::{ThreadTask, on_thread};

/// Runs one vector on its target's runtime, then hands every backend it built to
/// [`Target::after_vector`], whether it passed or failed. A vector's panic is re-raised
/// after the teardown; a teardown's panic after a vector that passed fails it.
pub fn run<T: Target, F: Future>(vector: F) -> F::Output {
    let scope = teardown::Scope::default();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        <T::Runtime as Runtime>::block_on(scope.enter(vector))
    }));
    scope.finish(result.is_ok());
    result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
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

/// The vectors of each capability, listed once: both the `#[test]` macros and the
/// run-time [`runner`] read this list, each through a callback macro it names, called
/// once per module of vectors as `$callback! { args; module; path; vectors... }`.
#[doc(hidden)]
#[macro_export]
macro_rules! __group_vectors {
    (core; $callback:ident; $($args:tt)*) => {
        $crate::$callback! { $($args)*; claims; backend::vectors::claims;
            atomic_claim,
            duplicate_claim_is_in_flight_with_first_token,
            complete_then_replay,
            complete_with_wrong_token_is_refused,
            release_frees_the_key,
            renew_extends_only_the_holders_lease,
            concurrent_claims_give_exactly_one_new,
            waiter_receives_the_completed_record,
            wait_times_out_on_a_claim_that_never_completes,
        }
        $crate::$callback! { $($args)*; waits; backend::vectors::waits;
            two_hundred_waiters_all_wake_on_one_completion,
            abandoned_waits_do_not_block_or_leak,
            wait_on_a_crashed_owner_returns_once_the_lease_lapses,
            release_wakes_waiters_with_none_at_once,
        }
        $crate::$callback! { $($args)*; real_time; backend::vectors::real_time;
            a_lapsed_lease_is_reclaimed_and_its_owner_fenced_out,
            a_result_expires_after_its_ttl,
            a_lapsed_claim_is_kept_for_the_grace_then_dropped,
        }
        $crate::$callback! { $($args)*; executor; executor::vectors;
            a_retry_replays_without_running_again,
            concurrent_duplicates_run_once,
            a_duplicate_mid_run_waits_and_replays,
            a_waiting_duplicate_runs_once_the_first_releases,
            another_request_with_the_key_is_refused,
            an_uncacheable_response_is_not_stored,
            an_error_releases_the_claim,
            a_panic_releases_the_claim,
            a_panicking_cacheable_predicate_releases_and_reports_one_event,
            heartbeats_keep_a_slow_run_claimed,
            a_heartbeat_that_cannot_renew_loses_the_lease,
            every_run_reports_one_event_without_the_raw_key,
            a_panicking_observer_does_not_break_the_run,
            a_heartbeat_not_shorter_than_the_lease_is_refused,
            a_dropped_run_releases_its_claim,
        }
    };
    (manual_time; $callback:ident; $($args:tt)*) => {
        $crate::$callback! { $($args)*; manual_time; backend::vectors::manual_clock;
            records_carry_the_clocks_instants_exactly,
            expired_lease_is_reclaimed_with_new_token,
            reclaimed_owner_late_completion_is_refused,
            completed_record_past_its_ttl_claims_fresh,
            renew_keeps_a_short_lease_from_being_reclaimed,
            renew_with_wrong_token_is_refused,
            manual_clock_lapses_a_lease_for_waiters,
            manual_clock_ends_the_reclaim_grace,
            manual_clock_expires_a_result_from_its_completion,
            manual_clock_never_expires_duration_max,
            a_waiter_follows_a_reclaim_to_the_new_claims_result,
        }
        $crate::$callback! { $($args)*; manual_time_executor; executor::vectors;
            a_waiting_duplicate_reclaims_a_lease_that_lapses,
            a_duplicate_that_waits_too_long_is_told_when_to_retry,
            a_crashed_owner_is_reclaimed_after_its_lease,
            a_run_taken_over_returns_its_response_unstored,
        }
    };
    (exact_capacity; $callback:ident; $($args:tt)*) => {
        $crate::$callback! { $($args)*; exact_capacity; backend::vectors::capacity;
            full_store_refuses_new_keys_but_not_existing_ones,
            an_expired_record_frees_its_slot,
        }
        $crate::$callback! { $($args)*; exact_capacity_executor; executor::vectors;
            a_full_store_fails_closed_or_open,
        }
    };
    (async_waits; $callback:ident; $($args:tt)*) => {
        $crate::$callback! { $($args)*; async_waits; backend::vectors::cancellation;
            dropped_waits_do_not_block_or_leak,
        }
    };
    (purger; $callback:ident; $($args:tt)*) => {
        $crate::$callback! { $($args)*; purger; backend::vectors::purger;
            purger_drops_expired_records_of_an_idle_backend,
        }
    };
}

/// One module of `#[test]`s, a callback of `__group_vectors`.
#[doc(hidden)]
#[macro_export]
macro_rules! __test_module {
    ($target:ty; $module:ident; $($path:ident)::+; $($vector:ident),* $(,)?) => {
        mod $module {
            $crate::__vector_tests! { $target; $($path)::+; $($vector),* }
        }
    };
}

/// The vectors of one capability, as a module of tests.
#[doc(hidden)]
#[macro_export]
macro_rules! __group {
    ($group:ident; $target:ty) => {
        $crate::__group_vectors!($group; __test_module; $target);
    };
}

/// Declares one `#[test]` per vector that the target named by an absolute path can run:
/// every backend and executor vector that needs nothing beyond the traits, plus the
/// groups named after it:
///
/// - `manual_time`: the target implements [`ManualTime`];
/// - `exact_capacity`: it implements [`ManualTime`] and [`ExactCapacity`];
/// - `async_waits`: its backend is driven through the async trait, whose wait futures
///   can be dropped mid-wait;
/// - `purger`: it implements [`ManualTime`] and [`Purging`].
///
/// ```text
/// idemkit_conformance::conformance_tests!(idemkit_conformance::targets::InMemoryTokio;
///     manual_time, exact_capacity, async_waits, purger);
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($target:ty $(; $($group:ident),* $(,)?)?) => {
        $crate::__group!(core; $target);
        $($( $crate::__group!($group; $target); )*)?
    };
}

/// The README's examples, compiled and run as doctests so the front page cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
