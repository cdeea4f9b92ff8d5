//! The conformance suite against `idemkit_core::InMemoryBackend` through its async trait,
//! with `idemkit_tokio::AsyncIdempotency`, on tokio's timer and a multi-thread tokio runtime;
//! and tokio's paused time driving it.

use std::time::{Duration, Instant};

use idemkit_tokio::{
    AsyncIdempotency, Backend, Claim, Fingerprint, InMemoryBackend, Key, Response, ThreadTimer,
    TokioTimer,
};

idemkit_conformance::conformance_tests!(
    idemkit_conformance::targets::InMemoryTokio;
    manual_time, exact_capacity, async_waits, purger
);

/// With tokio's clock paused, `tokio::time::advance` lapses a lease and expires a result
/// of a backend built on `TokioTimer`, and a 10 s wait times out on the paused timer
/// without 10 s of real time passing.
#[tokio::test(start_paused = true)]
async fn paused_time_drives_leases_ttls_and_wait_timeouts() {
    let real_start = Instant::now();
    let backend = InMemoryBackend::builder().timer(TokioTimer).build();
    let lease = Duration::from_secs(30);

    let Claim::New(first) = backend.claim("lease", "fp", 1, lease).await.unwrap() else {
        panic!("a free key claims New");
    };
    tokio::time::advance(lease).await;
    assert!(matches!(
        backend.claim("lease", "fp", 1, lease).await.unwrap(),
        Claim::InFlight(_)
    ));
    tokio::time::advance(Duration::from_millis(1)).await;
    match backend.claim("lease", "fp", 1, lease).await.unwrap() {
        Claim::Reclaimed(next) => assert_ne!(next, first),
        other => panic!("expected Reclaimed after the lease, got {other:?}"),
    }

    let Claim::New(token) = backend.claim("ttl", "fp", 1, lease).await.unwrap() else {
        panic!("a free key claims New");
    };
    let ttl = Duration::from_secs(60);
    assert!(
        backend
            .complete("ttl", &token, Response::new(200, "ok").into(), ttl)
            .await
            .unwrap()
    );
    tokio::time::advance(ttl).await;
    assert!(
        backend.get("ttl").await.unwrap().is_some(),
        "a result lives through its TTL"
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(
        backend.get("ttl").await.unwrap().is_none(),
        "and is gone after it"
    );

    let Claim::New(_held) = backend
        .claim("held", "fp", 1, Duration::from_secs(3600))
        .await
        .unwrap()
    else {
        panic!("a free key claims New");
    };
    let paused_start = tokio::time::Instant::now();
    let wait = Duration::from_secs(10);
    assert!(
        backend
            .wait_for_completion("held", wait)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        paused_start.elapsed() >= wait,
        "the wait ran its 10 s of tokio time"
    );
    let real = real_start.elapsed();
    assert!(real < Duration::from_secs(1), "took {real:?} of real time");
}

fn send<T: Send>(_: &T) {}

#[test]
fn the_executor_is_send_and_sync_and_its_run_future_is_send() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<AsyncIdempotency>();
    // Inferred from the backend, with no annotation.
    let executor = AsyncIdempotency::new(InMemoryBackend::new());
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
    assert_eq!(outcome.response.body, "ok");
}

/// The one in-memory type serves blocking threads and async tasks at once: a thread
/// blocked in a wait is woken by a task's completion, and a task waiting is woken by a
/// thread's, on one instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_serves_threads_and_tasks_at_once() {
    let backend = InMemoryBackend::builder().timer(ThreadTimer).build();
    let lease = Duration::from_secs(30);
    let Ok(Claim::New(from_task)) = backend.claim("task-completes", "fp", 1, lease).await else {
        panic!("new");
    };
    let Ok(Claim::New(from_thread)) = backend.claim("thread-completes", "fp", 1, lease).await
    else {
        panic!("new");
    };
    let blocked = {
        let backend = backend.clone();
        std::thread::spawn(move || {
            idemkit_tokio::BlockingBackend::wait_for_completion(
                &backend,
                "task-completes",
                Duration::from_secs(30),
            )
            .unwrap()
        })
    };
    let waiting = {
        let backend = backend.clone();
        tokio::spawn(async move {
            backend
                .wait_for_completion("thread-completes", Duration::from_secs(30))
                .await
                .unwrap()
        })
    };
    while backend.watched_keys() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        backend
            .complete(
                "task-completes",
                &from_task,
                Response::new(200, "t").into(),
                lease
            )
            .await
            .unwrap()
    );
    {
        let backend = backend.clone();
        std::thread::spawn(move || {
            let response = Response::new(200, "h").into();
            let stored = idemkit_tokio::BlockingBackend::complete(
                &backend,
                "thread-completes",
                &from_thread,
                response,
                lease,
            );
            assert!(stored.unwrap());
        })
        .join()
        .unwrap();
    }
    let woken_thread = blocked
        .join()
        .unwrap()
        .expect("the thread's wait ends with the record");
    assert_eq!(woken_thread.response().unwrap().body, "t");
    let woken_task = waiting
        .await
        .unwrap()
        .expect("the task's wait ends with the record");
    assert_eq!(woken_task.response().unwrap().body, "h");
    assert_eq!(backend.watched_keys(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_can_be_spawned() {
    let executor = AsyncIdempotency::new(InMemoryBackend::builder().timer(TokioTimer).build());
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
    assert_eq!(task.await.unwrap().unwrap().response.body, "spawned");
    let replay = executor
        .run(&key, &request, || async {
            Ok::<_, std::io::Error>(Response::new(200, "again"))
        })
        .await
        .unwrap();
    assert_eq!(replay.response.body, "spawned");
}
