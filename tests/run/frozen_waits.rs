//! The wake vectors cannot pass by a timer: on a backend whose timers are frozen, a
//! backend that never sends the notification fails them (its waiters would otherwise
//! have been rescued by a re-read), and the same backend with its notification passes.

use idemkit_conformance::backend::Async;
use idemkit_conformance::backend::vectors::{manual_clock, waits};
use idemkit_conformance::mutex_map::MutexMap;
use idemkit_conformance::runtimes::TokioRuntime;
use idemkit_conformance::{FrozenTimer, ManualTime, Settings, Target};
use idemkit_core::{AsyncIdempotency, ManualClock};

/// `MutexMap` without its wake-ups, on frozen timers when the vector asks for them.
struct Silent;

fn silent(settings: Settings) -> MutexMap {
    MutexMap::new(settings.max_size, settings.reclaim_grace).without_wakeups()
}

impl Target for Silent {
    type Runtime = TokioRuntime;
    type Backend = Async<MutexMap>;
    type Executor = AsyncIdempotency<MutexMap>;

    fn build(settings: Settings) -> Async<MutexMap> {
        Async::new(silent(settings))
    }

    fn build_frozen(settings: Settings) -> Option<Async<MutexMap>> {
        Some(Async::new(silent(settings).on_timer(FrozenTimer)))
    }
}

impl ManualTime for Silent {
    fn build_on(settings: Settings, clock: ManualClock) -> Async<MutexMap> {
        Async::new(silent(settings).on_clock(clock))
    }

    fn build_frozen_on(settings: Settings, clock: ManualClock) -> Option<Async<MutexMap>> {
        Some(Async::new(
            silent(settings).on_clock(clock).on_timer(FrozenTimer),
        ))
    }
}

/// Runs `vector` for [`Silent`] and returns its failure message.
fn failure_of(vector: impl std::future::Future<Output = ()>) -> String {
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        idemkit_conformance::run::<Silent, _>(vector)
    }));
    let panic = failed.expect_err("a backend without wake-ups fails a wake vector");
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

#[test]
fn a_completion_that_wakes_nobody_fails_the_vector() {
    let message = failure_of(waits::two_hundred_waiters_all_wake_on_one_completion::<
        Silent,
    >());
    assert!(message.contains("no wake-up ended the wait"), "{message}");
}

#[test]
fn a_release_that_wakes_nobody_fails_the_vector() {
    let message = failure_of(waits::release_wakes_waiters_with_none_at_once::<Silent>());
    assert!(message.contains("no wake-up ended the wait"), "{message}");
}

#[test]
fn a_reclaim_that_wakes_nobody_fails_the_vector() {
    let message =
        failure_of(manual_clock::a_waiter_follows_a_reclaim_to_the_new_claims_result::<Silent>());
    assert!(message.contains("no wake-up ended the wait"), "{message}");
}
