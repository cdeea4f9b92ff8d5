//! One binary, its backend chosen at run time: `choose_backend memory` or
//! `choose_backend mutex-map` (the backend written outside the core).
//!
//! The choice is made once, at start-up, from the command line as a service would from
//! its configuration. Either backend goes to the same async executor and to the same
//! blocking executor as a `DynBackend`; nothing else in the program is generic. It runs one operation three times on each executor, checks
//! that it ran once and was replayed twice, and prints one line per executor.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idemkit_conformance::mutex_map::MutexMap;
use idemkit_core::{
    AsyncIdempotency, Decision, DynBackend, Fingerprint, Idempotency, InMemoryBackend, Key,
    Response, Store,
};

/// The backend named by `name`, for async code and for blocking code (one store each).
fn backends(name: &str) -> Result<(DynBackend, DynBackend), String> {
    match name {
        "memory" => Ok((
            DynBackend::new(InMemoryBackend::new()),
            DynBackend::new(InMemoryBackend::new()),
        )),
        "mutex-map" => {
            let map = || MutexMap::new(Store::DEFAULT_MAX_SIZE, Duration::from_secs(60));
            Ok((DynBackend::new(map()), DynBackend::new(map())))
        }
        other => Err(format!(
            "unknown backend {other:?}: expected `memory` or `mutex-map`"
        )),
    }
}

/// Three runs of one operation: how many times it ran, and the decisions.
fn tally(decisions: &[Decision], runs: usize) -> String {
    format!("ran {runs} time(s); decisions {decisions:?}")
}

fn main() {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "memory".to_owned());
    let (async_backend, blocking_backend) = match backends(&name) {
        Ok(backends) => backends,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(2);
        }
    };
    let (key, request) = (
        Key::new(["charge-1"]),
        Fingerprint::new(["POST", "/charges"]),
    );

    let executor = AsyncIdempotency::new(async_backend);
    let runs = AtomicUsize::new(0);
    let decisions: Vec<Decision> = futures_lite::future::block_on(async {
        let mut decisions = Vec::new();
        for _ in 0..3 {
            let outcome = executor
                .run(&key, &request, || async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Infallible>(Response::new(201, "charged"))
                })
                .await
                .expect("the run succeeds");
            decisions.push(outcome.decision);
        }
        decisions
    });
    println!(
        "{name} async: {}",
        tally(&decisions, runs.load(Ordering::SeqCst))
    );

    let executor = Idempotency::new(blocking_backend);
    let runs = AtomicUsize::new(0);
    let decisions: Vec<Decision> = (0..3)
        .map(|_| {
            executor
                .run(&key, &request, |_lease| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Infallible>(Response::new(201, "charged"))
                })
                .expect("the run succeeds")
                .decision
        })
        .collect();
    println!(
        "{name} blocking: {}",
        tally(&decisions, runs.load(Ordering::SeqCst))
    );
}
