//! The executor suite (issue 5): every vector in [`vectors`], run on the blocking, tokio
//! and smol executors through a [`Harness`](harness::Harness) each.
//!
//! A test file runs them all with one line, `executor_vectors!(SomeHarness);`.

pub mod blocking_harness;
pub mod harness;
pub mod op;
pub mod smol_harness;
pub mod tokio_harness;
pub mod vectors;

/// Generates one `#[test]` per executor vector for the given harness type.
#[macro_export]
macro_rules! executor_vectors {
    ($harness:ty) => {
        $crate::executor_vectors!(@tests $harness;
            a_retry_replays_without_running_again,
            concurrent_duplicates_run_once,
            a_duplicate_mid_run_waits_and_replays,
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
        );
    };
    (@tests $harness:ty; $($vector:ident),+ $(,)?) => {
        $(
            #[test]
            fn $vector() {
                $crate::executor::vectors::$vector::<$harness>();
            }
        )+
    };
}
