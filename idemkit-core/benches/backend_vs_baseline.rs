//! Figure 2 of the first round (BENCHMARKS.md): claim+complete on unique keys through the
//! blocking `InMemoryBackend`, one thread, against the baseline, each holding 1,000
//! records.
//!
//! Both read the system clock for their claim and their complete, as a real backend
//! must. The backend completes each fresh key with a TTL of zero, so a later claim on
//! the same shard purges it (at most one such record waits per shard); the baseline
//! removes it explicitly. Samples are timed in thread CPU time (see
//! `support::thread_cpu_time`). Goal: the backend at least 1.5x the baseline's
//! throughput.

mod support;

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use idemkit_core::{InMemoryBackend, Response};
use support::baseline::Baseline;
use support::{BODY, FINGERPRINT, HELD, Keys, LEASE};

fn claim_complete(c: &mut Criterion) {
    let mut group = c.benchmark_group("backend_vs_baseline");

    let backend = InMemoryBackend::new();
    support::fill_backend(&backend, HELD);
    let mut keys = Keys::new("u-", 0);
    group.bench_function("backend", |b| {
        b.iter_custom(|iters| {
            support::cpu_timed(&mut keys, iters, |key| {
                support::backend_claim_complete(&backend, key);
            })
        });
    });
    // Each shard (at most 512) may still hold the one record its last claim completed.
    assert!(
        backend.len() <= HELD + 512,
        "the backend grew to {}",
        backend.len()
    );

    let baseline = Baseline::default();
    baseline.fill(HELD, Instant::now());
    let mut keys = Keys::new("u-", 0);
    group.bench_function("baseline", |b| {
        b.iter_custom(|iters| {
            support::cpu_timed(&mut keys, iters, |key| {
                let token = baseline
                    .claim(key, FINGERPRINT, 1, LEASE, Instant::now())
                    .expect("key is new");
                let body = Response::new(200, BODY);
                assert!(baseline.complete(key, &token, body, Duration::ZERO, Instant::now()));
                assert!(baseline.remove(key));
            })
        });
    });
    assert_eq!(baseline.len(), HELD);

    group.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = claim_complete
}
criterion_main!(benches);
