//! The runtime a backend runs on is the one it was given, or the default the features
//! name, never whichever happens to poll it: built outside any runtime, it runs on a
//! tokio runtime of its own; given smol, on smol; given a tokio handle from a plain
//! thread, on that runtime. Each then serves blocking callers from plain threads.

mod support;

use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{Backend, BlockingBackend, Claim, Response};
use idemkit_postgres::PostgresBackend;
use support::Scratch;

const LONG: Duration = Duration::from_secs(60);

/// The names of this process's threads.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
                .map(|name| name.trim().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Claims, completes and replays one key through the blocking trait, from a plain thread.
fn round_trip(backend: &PostgresBackend, key: &str) {
    let Claim::New(token) = BlockingBackend::claim(backend, key, "fp", 1, LONG).unwrap() else {
        panic!("a fresh key claims New");
    };
    let response = Arc::new(Response::new(201, "made"));
    assert!(BlockingBackend::complete(backend, key, &token, response, LONG).unwrap());
    let record = BlockingBackend::get(backend, key)
        .unwrap()
        .expect("completed");
    assert_eq!(record.response().unwrap().body, "made");
}

#[cfg(feature = "tokio")]
#[test]
fn built_outside_any_runtime_it_runs_on_a_tokio_runtime_of_its_own() {
    let Some(scratch) = Scratch::new("runtime_own") else {
        return;
    };
    assert!(tokio::runtime::Handle::try_current().is_err());
    let backend = scratch.builder().build_blocking().unwrap();
    assert!(
        thread_names().iter().any(|name| name == "idemkit-postgre"),
        "its own runtime's worker runs: {:?}",
        thread_names()
    );
    round_trip(&backend, "own");
    // Its time limits and background work run there too: an async caller on no runtime
    // at all (a plain executor) is served.
    let record = futures_lite::future::block_on(Backend::get(&backend, "own")).unwrap();
    assert!(record.is_some());
}

#[cfg(feature = "smol")]
#[test]
fn given_smol_it_serves_blocking_and_smol_callers() {
    let Some(scratch) = Scratch::new("runtime_smol") else {
        return;
    };
    let backend = scratch
        .builder()
        .runtime(idemkit_postgres::SmolRuntime)
        .build_blocking()
        .unwrap();
    round_trip(&backend, "smol");
    let record = smol::block_on(Backend::get(&backend, "smol")).unwrap();
    assert!(record.is_some());
}

#[cfg(feature = "tokio")]
#[test]
fn given_a_tokio_handle_a_plain_thread_builds_and_runs_on_that_runtime() {
    let Some(scratch) = Scratch::new("runtime_handle") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("the-app-runtime")
        .enable_all()
        .build()
        .unwrap();
    let backend = std::thread::spawn({
        let handle = runtime.handle().clone();
        let builder = scratch
            .builder()
            .runtime(idemkit_postgres::TokioRuntime::from(handle));
        move || builder.build_blocking().unwrap()
    })
    .join()
    .unwrap();
    std::thread::spawn({
        let backend = backend.clone();
        move || round_trip(&backend, "handle")
    })
    .join()
    .unwrap();
    // An async caller on that runtime shares it.
    let record = runtime.block_on(Backend::get(&backend, "handle")).unwrap();
    assert!(record.is_some());
}
