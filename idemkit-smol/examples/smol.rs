//! Eight smol tasks race one idempotency key: one runs the operation, the others wait for
//! its result or replay it. Checks its own invariants and panics if one breaks.
//!
//! ```text
//! cargo run -p idemkit-smol --example smol
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idemkit_smol::{Backend, Claim, Error, InMemoryBackend, Response, SmolTimer};

const TASKS: usize = 8;
const KEY: &str = "charge-42";
const LEASE: Duration = Duration::from_secs(30);
const KEEP_RESULT: Duration = Duration::from_secs(3600);

/// One request carrying the key: run the operation if this task wins the claim,
/// otherwise answer with the winner's result. Returns what it did and the response.
async fn handle(
    backend: &InMemoryBackend,
    runs: &AtomicUsize,
    id: usize,
) -> Result<(&'static str, Response), Error> {
    // The in-memory backend's operations never block: each is ready when first polled.
    match backend.claim(KEY, "amount=1000", 1, LEASE).await? {
        Claim::New(token) | Claim::Reclaimed(token) => {
            runs.fetch_add(1, Ordering::SeqCst);
            smol::Timer::after(Duration::from_millis(100)).await; // the operation itself
            let response = Response::new(200, format!("receipt from task {id}"));
            let stored = backend.complete(KEY, &token, response.clone().into(), KEEP_RESULT);
            assert!(stored.await?, "nobody else may take over a live lease");
            Ok(("ran the operation", response))
        }
        Claim::InFlight(_) => {
            let record = backend
                .wait_for_completion(KEY, Duration::from_secs(10))
                .await?
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
    smol::block_on(async {
        let backend = InMemoryBackend::builder().timer(SmolTimer).build();
        let runs = Arc::new(AtomicUsize::new(0));

        let tasks: Vec<_> = (0..TASKS)
            .map(|id| {
                let (backend, runs) = (backend.clone(), runs.clone());
                smol::spawn(async move {
                    let (what, response) = handle(&backend, &runs, id).await?;
                    println!(
                        "task {id}: {what}: {}",
                        String::from_utf8_lossy(&response.body)
                    );
                    Ok::<_, Error>(response)
                })
            })
            .collect();
        let mut responses = Vec::new();
        for task in tasks {
            responses.push(task.await?);
        }

        // A retry long after the fact is answered from the store too.
        let (what, late) = handle(&backend, &runs, TASKS).await?;
        println!("a late retry: {what}");
        assert_eq!((what, &late), ("replayed", &responses[0]));

        assert_eq!(runs.load(Ordering::SeqCst), 1, "the operation ran once");
        assert!(
            responses.iter().all(|response| *response == responses[0]),
            "every task answered with the same receipt"
        );
        println!(
            "the operation ran once; {} tasks replayed its receipt",
            TASKS - 1
        );
        Ok(())
    })
}
