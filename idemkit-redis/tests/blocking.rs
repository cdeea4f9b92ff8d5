//! Blocking calls from plain threads (no runtime context at all), on each runtime the
//! crate is compiled with: a tokio runtime the backend owns, a tokio runtime the caller
//! gives, and smol. Calls answer, wake each other, and time out by the command timeout
//! when the server is frozen; none hangs.

mod support;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use idemkit_core::{BlockingBackend, Claim, Response};
use idemkit_redis::RedisBackend;
use redis_harness::RedisServer;
use support::{LEASE, builder, is_timeout, server, until_working_blocking};

/// Far beyond the test's command timeout (500 ms), far below a hang.
const PROMPT: Duration = Duration::from_secs(10);

/// Asserts the calling thread is a plain one: what the blocking calls are made from.
fn plain_thread() {
    assert!(
        tokio::runtime::Handle::try_current().is_err(),
        "a blocking test thread must have no tokio context"
    );
}

/// Claims, waits, completes and replays from several plain threads, then freezes the
/// server and checks every call ends by the command timeout.
fn blocking_calls_work_from_plain_threads(backend: &RedisBackend, server: &RedisServer) {
    plain_thread();
    until_working_blocking(backend);

    // Threads with keys of their own, all at once.
    let start = Arc::new(Barrier::new(4));
    let workers: Vec<_> = (0..4)
        .map(|n| {
            let (backend, start) = (backend.clone(), start.clone());
            thread::spawn(move || {
                plain_thread();
                start.wait();
                let key = format!("own-{n}");
                let Claim::New(token) = backend.claim(&key, "fp", 1, LEASE).unwrap() else {
                    panic!("a fresh key is new");
                };
                let response = Arc::new(Response::new(200, format!("done {n}")));
                assert!(backend.complete(&key, &token, response, LEASE).unwrap());
                let record = BlockingBackend::get(&backend, &key).unwrap().unwrap();
                assert_eq!(record.response().unwrap().body, format!("done {n}"));
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }

    // One thread waits for the key another completes: woken, not timed out.
    let Claim::New(token) = BlockingBackend::claim(backend, "shared", "fp", 1, LEASE).unwrap()
    else {
        panic!("a fresh key is new");
    };
    let waiter = {
        let backend = backend.clone();
        thread::spawn(move || {
            plain_thread();
            let asked = Instant::now();
            let record = backend.wait_for_completion("shared", PROMPT * 3).unwrap();
            (record, asked.elapsed())
        })
    };
    thread::sleep(Duration::from_millis(200));
    let response = Arc::new(Response::new(201, "shared"));
    assert!(BlockingBackend::complete(backend, "shared", &token, response, LEASE).unwrap());
    let (record, waited) = waiter.join().unwrap();
    assert_eq!(record.unwrap().response().unwrap().body, "shared");
    assert!(
        waited < PROMPT,
        "the waiter was woken, not timed out: {waited:?}"
    );

    // A frozen server: each call ends with a timeout by the command timeout.
    server.pause().unwrap();
    let asked = Instant::now();
    let claimed = BlockingBackend::claim(backend, "frozen", "fp", 1, LEASE);
    let took = asked.elapsed();
    assert!(
        matches!(&claimed, Err(error) if is_timeout(error)),
        "{claimed:?}"
    );
    assert!(
        took < PROMPT,
        "the claim ended by the command timeout: {took:?}"
    );
    let asked = Instant::now();
    let read = BlockingBackend::get(backend, "shared");
    assert!(matches!(&read, Err(error) if is_timeout(error)), "{read:?}");
    assert!(asked.elapsed() < PROMPT);
    server.resume().unwrap();
    until_working_blocking(backend);
}

#[cfg(feature = "tokio")]
#[test]
fn on_a_tokio_runtime_the_backend_owns() {
    let Some(server) = server() else { return };
    plain_thread();
    let backend = builder(&server.url(), "owned").build_blocking().unwrap();
    blocking_calls_work_from_plain_threads(&backend, &server);
    // Dropped on a plain thread, it shuts its runtime down without a panic.
    drop(backend);
}

#[cfg(feature = "tokio")]
#[test]
fn on_a_tokio_runtime_given_to_it() {
    let Some(server) = server() else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let backend = builder(&server.url(), "given")
        .runtime(idemkit_redis::TokioRuntime::from(runtime.handle().clone()))
        .build_blocking()
        .unwrap();
    blocking_calls_work_from_plain_threads(&backend, &server);
}

#[cfg(feature = "smol")]
#[test]
fn on_smol() {
    let Some(server) = server() else { return };
    let backend = builder(&server.url(), "smol")
        .runtime(idemkit_redis::SmolRuntime)
        .build_blocking()
        .unwrap();
    blocking_calls_work_from_plain_threads(&backend, &server);
}

/// A backend owned by a test that ends inside tokio: its own runtime is shut down from
/// an async context without the panic a plain drop of a tokio runtime would give.
#[cfg(feature = "tokio")]
#[test]
fn a_backend_that_owns_its_runtime_may_be_dropped_inside_another() {
    let Some(server) = server() else { return };
    let backend = builder(&server.url(), "drop").build_blocking().unwrap();
    until_working_blocking(&backend);
    let other = tokio::runtime::Runtime::new().unwrap();
    other.block_on(async move { drop(backend) });
}

/// With both runtimes compiled in, `.runtime(SmolRuntime)` puts the connections on smol
/// even when the backend is built and used inside a tokio runtime (where the `redis`
/// crate, left to itself, would pick tokio): once that tokio runtime is gone, the
/// backend still works from plain threads.
#[cfg(all(feature = "tokio", feature = "smol"))]
#[test]
fn smol_chosen_inside_tokio_does_not_depend_on_tokio() {
    let Some(server) = server() else { return };
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let backend = tokio.block_on(async {
        let backend = builder(&server.url(), "smol-in-tokio")
            .runtime(idemkit_redis::SmolRuntime)
            .build()
            .await
            .unwrap();
        support::until_working(&backend).await;
        backend
    });
    drop(tokio);
    blocking_calls_work_from_plain_threads(&backend, &server);
}

/// The same the other way round: `.runtime(TokioRuntime)` given inside smol's
/// `block_on`, then smol's caller gone, the backend works from plain threads.
#[cfg(all(feature = "tokio", feature = "smol"))]
#[test]
fn tokio_chosen_inside_smol_works_from_plain_threads() {
    let Some(server) = server() else { return };
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let handle = tokio.handle().clone();
    let backend = smol::block_on(async {
        builder(&server.url(), "tokio-in-smol")
            .runtime(idemkit_redis::TokioRuntime::from(handle))
            .build()
            .await
            .unwrap()
    });
    blocking_calls_work_from_plain_threads(&backend, &server);
}
