//! Figure 3 of the first round (BENCHMARKS.md): `Store` claim+complete on unique keys with
//! 1,000,000 records held against the same with 1,000 held (the workload of
//! `store_vs_baseline`).
//!
//! Goal: the throughput with a million held is at least 0.6 of that with a thousand:
//! nothing in a claim scans the store, so only cache misses should tell them apart.
//! Samples are timed in thread CPU time (see `support::thread_cpu_time`).

mod support;

use std::hint::black_box;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use idemkit_core::Store;
use support::{Keys, TICK};

fn claim_complete(c: &mut Criterion) {
    let mut group = c.benchmark_group("store_scaling");
    // A smoke run (`cargo test --benches`) only checks the workload, on a small store.
    let big = if support::measuring() {
        1_000_000
    } else {
        10_000
    };
    for held in [1_000, big] {
        let mut now = Instant::now();
        let mut store = Store::builder()
            .max_size(held + 16)
            .build()
            .expect("a store of its own");
        support::fill_store(&mut store, held, now);
        let mut keys = Keys::new("u-", 0);
        group.bench_function(BenchmarkId::new("held", held), |b| {
            b.iter_custom(|iters| {
                support::cpu_timed(&mut keys, iters, |key| {
                    now += TICK;
                    support::store_claim_complete(&mut store, key, now);
                })
            });
        });
        assert!(store.len() <= held + 1, "the store grew to {}", store.len());
        black_box(&store);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = claim_complete
}
criterion_main!(benches);
