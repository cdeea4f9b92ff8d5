//! The conformance suite against `idemkit_core::InMemoryBackend` through its async trait,
//! with `idemkit_smol::AsyncIdempotency`, on smol's timer and smol.

use idemkit_smol::{AsyncIdempotency, Fingerprint, InMemoryBackend, Key, Response, SmolTimer};

idemkit_conformance::conformance_tests!(
    idemkit_conformance::targets::InMemorySmol;
    manual_time, exact_capacity, async_waits, purger
);

fn send<T: Send>(_: &T) {}

#[test]
fn the_executor_is_send_and_sync_and_its_run_can_be_spawned() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<AsyncIdempotency>();
    // Inferred from the backend, with no annotation.
    let executor = AsyncIdempotency::new(InMemoryBackend::builder().timer(SmolTimer).build());
    let (key, request) = (Key::new(["k"]), Fingerprint::new(["f"]));
    let run = {
        let executor = executor.clone();
        let (key, request) = (key.clone(), request.clone());
        async move {
            executor
                .run(&key, &request, || async {
                    smol::future::yield_now().await;
                    Ok::<_, std::io::Error>(Response::new(200, "spawned"))
                })
                .await
        }
    };
    send(&run);
    let outcome = smol::block_on(smol::spawn(run)).unwrap();
    assert_eq!(outcome.response.body, "spawned");
}
