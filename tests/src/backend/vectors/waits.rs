//! Waiting at scale and in the awkward cases: many waiters, abandoned waits, crashed
//! owners and releases.
//!
//! Where a vector checks that a wake-up came from the notification rather than the
//! backed-off re-read (50 ms doubling to 1 s), it runs on a backend whose timers never
//! fire ([`Target::build_frozen`]): nothing but the notification can end the wait, and
//! the vector's own limit, on the runtime's clock, fails it if none comes. A target that
//! cannot freeze its backend's timers gets the weaker check: its waiters first sit for
//! 800 ms, so their next re-read is at least 750 ms away, and only a notification wakes
//! them within the 500 ms these vectors allow.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idemkit_core::{Record, State};

use crate::backend::ConformanceBackend;
use crate::runtime::Runtime;
use crate::support::{
    FINGERPRINT, LONG, PATIENT, assert_watched, eventually, expect_new, expect_reclaimed, frozen,
    real, response,
};
use crate::target::{Settings, Target};

/// How long waiters sit before the event, on a backend whose timers are not frozen, so
/// that their re-reads have backed off past 750 ms.
pub(crate) const SETTLE: Duration = Duration::from_millis(800);

/// A backend for a vector that checks a wake-up: one whose timers never fire if the
/// target can build it (`true`), else one on real time (`false`).
pub(crate) fn wake_backend<T: Target>(settings: Settings) -> (T::Backend, bool) {
    match frozen::<T>(settings) {
        Some(backend) => (backend, true),
        None => (real::<T>(settings), false),
    }
}

/// Lets waiters that are parked sit until their next re-read is far off, unless their
/// backend's timers are `frozen` (they never re-read then).
pub(crate) async fn settle<T: Target>(frozen: bool) {
    if !frozen {
        T::Runtime::sleep(SETTLE).await;
    }
}

/// The most a notified waiter may take to return, on a noisy shared machine.
pub(crate) const PROMPT: Duration = Duration::from_millis(500);

/// Spawns `count` waiters on `key`, each returning its result and when it returned, and
/// waits until all have started and the key is watched.
pub(crate) async fn spawn_waiters<T: Target, B: ConformanceBackend>(
    backend: &B,
    key: &'static str,
    count: usize,
) -> Vec<impl std::future::Future<Output = (Option<Record>, Instant)> + use<T, B>> {
    let started = Arc::new(AtomicUsize::new(0));
    let waiters = (0..count)
        .map(|_| {
            let backend = backend.clone();
            let started = started.clone();
            T::Runtime::spawn(async move {
                started.fetch_add(1, Ordering::SeqCst);
                let record = within_patience::<T, _>(backend.wait_for_completion(key, PATIENT));
                (record.await, Instant::now())
            })
        })
        .collect();
    eventually::<T::Runtime>("every waiter has started", PATIENT, || {
        started.load(Ordering::SeqCst) == count
            && backend.watched_keys().is_none_or(|watched| watched >= 1)
    })
    .await;
    waiters
}

/// `wait`'s output, or a failure once [`PATIENT`] has passed on the runtime's clock: the
/// limit of a wait on a backend whose own timers may never fire.
pub(crate) async fn within_patience<T: Target, F: std::future::Future>(wait: F) -> F::Output {
    let limit = async {
        T::Runtime::sleep(PATIENT).await;
        panic!("no wake-up ended the wait within {PATIENT:?}");
    };
    futures_lite::future::or(wait, limit).await
}

/// 200 waiters on one key all wake on its one completion, promptly, each with the
/// completed record sharing the one stored response.
pub async fn two_hundred_waiters_all_wake_on_one_completion<T: Target>() {
    let (backend, frozen) = wake_backend::<T>(Settings::default());
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    let waiters = spawn_waiters::<T, _>(&backend, "k", 200).await;
    settle::<T>(frozen).await;

    let completed = Instant::now();
    assert!(
        backend
            .complete("k", &token, response("receipt"), LONG)
            .await
    );
    let stored = backend.get("k").await.unwrap();
    let stored = stored.shared_response().unwrap();
    let mut slowest = Duration::ZERO;
    for waiter in waiters {
        let (record, returned) = waiter.await;
        let record = record.expect("every waiter receives the record");
        assert_eq!(record.state(), State::Completed);
        assert_eq!(record.claim_token(), &token);
        assert!(Arc::ptr_eq(record.shared_response().unwrap(), stored));
        slowest = slowest.max(returned.saturating_duration_since(completed));
    }
    assert!(
        slowest < PROMPT,
        "the last waiter woke {slowest:?} after the completion"
    );
    assert_watched(&backend, 0);
}

/// Waits that time out leave no waiter entry behind and do not stop a remaining waiter on
/// the same key from being woken.
pub async fn abandoned_waits_do_not_block_or_leak<T: Target>() {
    let backend = real::<T>(Settings::default());
    let kept = expect_new(backend.claim("kept", FINGERPRINT, 1, LONG).await.unwrap());
    expect_new(backend.claim("lonely", FINGERPRINT, 1, LONG).await.unwrap());
    let remaining = spawn_waiters::<T, _>(&backend, "kept", 1).await;

    // Short waits, on the watched key and on one nobody else watches, all time out.
    let timeout = Duration::from_millis(100);
    let short: Vec<_> = ["kept", "lonely"]
        .into_iter()
        .cycle()
        .take(10)
        .map(|key| {
            let backend = backend.clone();
            T::Runtime::spawn(async move { backend.wait_for_completion(key, timeout).await })
        })
        .collect();
    for wait in short {
        assert!(
            wait.await.is_none(),
            "nothing completed; the wait timed out"
        );
    }
    assert_watched(&backend, 1);

    assert!(
        backend
            .complete("kept", &kept, response("kept"), LONG)
            .await
    );
    for waiter in remaining {
        let (record, _) = waiter.await;
        assert_eq!(record.unwrap().response(), Some(&response("kept")));
    }
    assert_watched(&backend, 0);
}

/// A wait on a claim whose owner crashed (it never completes or releases) returns `None`
/// once the lease lapses, not after the 30 s timeout; the key can then be reclaimed.
pub async fn wait_on_a_crashed_owner_returns_once_the_lease_lapses<T: Target>() {
    let backend = real::<T>(Settings::default());
    let lease = Duration::from_millis(300);
    let claimed = Instant::now();
    let crashed = expect_new(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());

    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let backend = backend.clone();
            T::Runtime::spawn(async move { backend.wait_for_completion("k", PATIENT).await })
        })
        .collect();
    for waiter in waiters {
        assert!(
            waiter.await.is_none(),
            "nothing completed the crashed claim"
        );
    }
    let elapsed = claimed.elapsed();
    assert!(
        elapsed >= lease,
        "returned after {elapsed:?}, before the lease lapsed"
    );
    assert!(
        elapsed < Duration::from_secs(10),
        "returned only after {elapsed:?}"
    );
    assert_watched(&backend, 0);

    let next = expect_reclaimed(backend.claim("k", FINGERPRINT, 1, lease).await.unwrap());
    assert_ne!(next, crashed);
}

/// A release wakes every waiter of the key at once with `None` (the caller may claim it
/// next), long before their 30 s timeout or their next poll.
pub async fn release_wakes_waiters_with_none_at_once<T: Target>() {
    let (backend, frozen) = wake_backend::<T>(Settings::default());
    let token = expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
    let waiters = spawn_waiters::<T, _>(&backend, "k", 5).await;
    settle::<T>(frozen).await;

    let released = Instant::now();
    assert!(backend.release("k", &token).await);
    for waiter in waiters {
        let (record, returned) = waiter.await;
        assert!(record.is_none(), "a released key has no result");
        let elapsed = returned.saturating_duration_since(released);
        assert!(
            elapsed < PROMPT,
            "a waiter woke {elapsed:?} after the release"
        );
    }
    assert_watched(&backend, 0);
    expect_new(backend.claim("k", FINGERPRINT, 1, LONG).await.unwrap());
}
