//! The executor vectors on `idemkit_tokio::Idempotency`.

use idemkit_tokio::{Fingerprint, Idempotency, InMemoryBackend, Key, Response};

idemkit_conformance::executor_tests!(idemkit_conformance::targets::Tokio);

fn send<T: Send>(_: &T) {}

#[test]
fn the_executor_is_send_and_sync_and_its_run_future_is_send() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Idempotency>();
    // Inferred from the backend, with no annotation.
    let executor = Idempotency::new(InMemoryBackend::new());
    let (key, request) = (Key::new(["k"]), Fingerprint::new(["f"]));
    let run = executor.run(&key, &request, || async {
        Ok::<_, std::io::Error>(Response::new(200, "ok"))
    });
    send(&run);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let outcome = runtime.block_on(run).unwrap();
    assert_eq!(outcome.response.body, b"ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_can_be_spawned() {
    let executor = Idempotency::new(InMemoryBackend::new());
    let (key, request) = (Key::new(["k"]), Fingerprint::new(["f"]));
    let task = tokio::spawn({
        let executor = executor.clone();
        let (key, request) = (key.clone(), request.clone());
        async move {
            executor
                .run(&key, &request, || async {
                    tokio::task::yield_now().await;
                    Ok::<_, std::io::Error>(Response::new(200, "spawned"))
                })
                .await
        }
    });
    assert_eq!(task.await.unwrap().unwrap().response.body, b"spawned");
    let replay = executor
        .run(&key, &request, || async {
            Ok::<_, std::io::Error>(Response::new(200, "again"))
        })
        .await
        .unwrap();
    assert_eq!(replay.response.body, b"spawned");
}
