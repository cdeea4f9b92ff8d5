//! Targets with a purger: `run_purger` drops an idle backend's expired records.

use std::time::Duration;

use crate::backend::ConformanceBackend;
use crate::runtime::Runtime;
use crate::support::{FINGERPRINT, assert_len, eventually, expect_new, len_is, manual, response};
use crate::target::{ManualTime, Purging, Settings};

/// With the purger running and no claims arriving, an expired result and a crashed claim
/// past its grace are dropped (`len()` reaches 0) within seconds of expiring, and
/// nothing is dropped before it expires.
pub async fn purger_drops_expired_records_of_an_idle_backend<T: ManualTime + Purging>() {
    let grace = Duration::from_secs(1);
    let (backend, clock) = manual::<T>(Settings::default().reclaim_grace(grace));
    let ttl = Duration::from_secs(1);
    let token = expect_new(backend.claim("done", FINGERPRINT, 1, ttl).await.unwrap());
    assert!(backend.complete("done", &token, response("r"), ttl).await);
    expect_new(backend.claim("crashed", FINGERPRINT, 1, ttl).await.unwrap());
    assert_len(&backend, 2);

    // Spawned, as a user would: a purger that never yields would starve a vector that
    // raced it on one task, where here it only fails the check.
    let purger = {
        let backend = backend.clone();
        T::Runtime::spawn(async move { T::run_purger(&backend).await })
    };
    T::Runtime::sleep(Duration::from_millis(100)).await;
    assert_len(&backend, 2);
    clock.advance(ttl + grace + Duration::from_nanos(1));
    eventually::<T::Runtime>(
        "the purger dropped both records",
        Duration::from_secs(3),
        || len_is(&backend, 0),
    )
    .await;
    // Dropping the handle cancels (smol) or detaches it until the runtime ends (tokio).
    drop(purger);
}
