//! Eight threads race one idempotency key with the blocking backend: one runs the
//! operation, the others wait for its result or replay it. Checks its own invariants and
//! panics if one breaks.
//!
//! ```text
//! cargo run -p idemkit-core --example blocking
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use idemkit_core::BlockingBackend;
use idemkit_core::{Claim, Error, InMemoryBackend, Response};

const THREADS: usize = 8;
const KEY: &str = "charge-42";
const LEASE: Duration = Duration::from_secs(30);
const KEEP_RESULT: Duration = Duration::from_secs(3600);

/// One request carrying the key: run the operation if this thread wins the claim,
/// otherwise answer with the winner's result. Returns what it did and the response.
fn handle(
    backend: &InMemoryBackend,
    runs: &AtomicUsize,
    id: usize,
) -> Result<(&'static str, Response), Error> {
    match backend.claim(KEY, "amount=1000", 1, LEASE)? {
        Claim::New(token) | Claim::Reclaimed(token) => {
            runs.fetch_add(1, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(100)); // the operation itself
            let response = Response::new(200, format!("receipt from thread {id}"));
            let stored = backend
                .complete(KEY, &token, response.clone().into(), KEEP_RESULT)
                .unwrap();
            assert!(stored, "nobody else may take over a live lease");
            Ok(("ran the operation", response))
        }
        Claim::InFlight(_) => {
            let record = backend
                .wait_for_completion(KEY, Duration::from_secs(10))
                .unwrap()
                .expect("the run in flight completes well within 10 s");
            Ok(("waited, then replayed", record.response().cloned().unwrap()))
        }
        Claim::Completed(replay) => {
            // Every request here has the same fingerprint; with others, a replay that is
            // not `same_request()` must be refused (the executors do so).
            assert!(replay.same_request());
            Ok(("replayed", replay.response().clone()))
        }
    }
}

fn main() -> Result<(), Error> {
    let backend = InMemoryBackend::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(THREADS));

    let threads: Vec<_> = (0..THREADS)
        .map(|id| {
            let (backend, runs, start) = (backend.clone(), runs.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                let (what, response) = handle(&backend, &runs, id)?;
                println!(
                    "thread {id}: {what}: {}",
                    String::from_utf8_lossy(&response.body)
                );
                Ok::<_, Error>(response)
            })
        })
        .collect();
    let responses = threads
        .into_iter()
        .map(|thread| thread.join().expect("a request thread panicked"))
        .collect::<Result<Vec<_>, _>>()?;

    // A retry long after the fact is answered from the store too.
    let (what, late) = handle(&backend, &runs, THREADS)?;
    println!("a late retry: {what}");
    assert_eq!((what, &late), ("replayed", &responses[0]));

    assert_eq!(runs.load(Ordering::SeqCst), 1, "the operation ran once");
    assert!(
        responses.iter().all(|response| *response == responses[0]),
        "every thread answered with the same receipt"
    );
    println!(
        "the operation ran once; {} threads replayed its receipt",
        THREADS - 1
    );
    Ok(())
}
