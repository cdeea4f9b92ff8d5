//! Backends driven through their async trait: a `wait_for_completion` future dropped
//! mid-wait leaves nothing behind and blocks nobody.

use std::time::Duration;

use futures_lite::future;

use crate::backend::ConformanceBackend;
use crate::runtime::Runtime;
use crate::support::{
    FINGERPRINT, LONG, PATIENT, assert_watched, expect_new, real, response, until_watched,
};
use crate::target::{Settings, Target};

/// Waits raced against a short sleep and dropped when it wins, on a watched key and on a
/// key nobody else watches, leave only the remaining waiter's entry, and that waiter is
/// still woken by the completion.
pub async fn dropped_waits_do_not_block_or_leak<T: Target>() {
    let backend = real::<T>(Settings::default());
    let kept = expect_new(backend.claim("kept", FINGERPRINT, 1, LONG).await.unwrap());
    expect_new(backend.claim("lonely", FINGERPRINT, 1, LONG).await.unwrap());

    let remaining = {
        let backend = backend.clone();
        T::Runtime::spawn(async move { backend.wait_for_completion("kept", PATIENT).await })
    };
    until_watched::<T::Runtime, _>(&backend, 1).await;

    let dropped: Vec<_> = ["kept", "lonely"]
        .into_iter()
        .cycle()
        .take(10)
        .map(|key| {
            let backend = backend.clone();
            T::Runtime::spawn(async move {
                future::or(
                    async { Some(backend.wait_for_completion(key, PATIENT).await) },
                    async {
                        T::Runtime::sleep(Duration::from_millis(100)).await;
                        None
                    },
                )
                .await
            })
        })
        .collect();
    for wait in dropped {
        assert!(
            wait.await.is_none(),
            "the sleep wins; the wait is dropped mid-wait"
        );
    }
    assert_watched(&backend, 1);

    assert!(
        backend
            .complete("kept", &kept, response("kept"), LONG)
            .await
    );
    let record = remaining.await.expect("the remaining waiter still wakes");
    assert_eq!(record.response(), Some(&response("kept")));
    assert_watched(&backend, 0);
}
