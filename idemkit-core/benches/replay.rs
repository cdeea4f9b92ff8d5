//! Figure 5 of the first round (BENCHMARKS.md): a replay (a claim of a completed key) of a
//! 1 MiB body against one of a 10-byte body, on the sans-IO `Store`.
//!
//! A replay hands out a `Completed` that shares the stored response (no `Record`, no copy
//! of the key, the fingerprint or the body), so the body's size should not matter. Samples are timed in thread CPU time (see
//! `support::thread_cpu_time`). Goal: the 1 MiB replay's throughput at least 0.9 of the
//! 10-byte's.

mod support;

use std::hint::black_box;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use idemkit_core::{Claim, Response, Store};
use support::{FINGERPRINT, HELD, HELD_TTL, LEASE};

fn replay(c: &mut Criterion) {
    let mut group = c.benchmark_group("replay");
    let now = Instant::now();
    let mut store = Store::new();
    support::fill_store(&mut store, HELD, now);
    for (name, size) in [("10B", 10), ("1MiB", 1 << 20)] {
        let key = format!("r-{name}");
        let Claim::New(token) = store.claim(&key, FINGERPRINT, 1, LEASE, now).unwrap() else {
            panic!("{key} was not new");
        };
        let body = vec![b'x'; size];
        assert!(store.complete(&key, &token, Response::new(200, body), HELD_TTL, now));
        group.bench_function(BenchmarkId::new("body", name), |b| {
            b.iter_custom(|iters| {
                let start = support::thread_cpu_time();
                for _ in 0..iters {
                    match store.claim(&key, FINGERPRINT, 1, LEASE, now) {
                        Ok(Claim::Completed(replay)) => drop(black_box(replay)),
                        other => panic!("expected a replay, got {other:?}"),
                    }
                }
                support::thread_cpu_time() - start
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = replay
}
criterion_main!(benches);
