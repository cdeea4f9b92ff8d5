//! Figure 1 of the first round (BENCHMARKS.md): claim+complete on unique keys, the sans-IO
//! `Store` against the baseline, each holding 1,000 records.
//!
//! Both are given the same explicit `now`, advanced by one microsecond per operation,
//! and the same unique 18-byte keys, made before each sample is timed. Samples are timed
//! in thread CPU time (see `support::thread_cpu_time`).
//! The held count stays steady on both sides: the `Store` completes each fresh key with a
//! TTL of zero, so its next claim purges it through the deadline index (work the `Store`
//! really does); the baseline removes it with an explicit `HashMap::remove` under its
//! lock. Goal: the `Store` at least 2x the baseline's throughput.

mod support;

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use idemkit_core::Store;
use support::baseline::Baseline;
use support::{HELD, Keys, TICK};

fn claim_complete(c: &mut Criterion) {
    let mut group = c.benchmark_group("store_vs_baseline");

    let mut now = Instant::now();
    let mut store = Store::new();
    support::fill_store(&mut store, HELD, now);
    let mut keys = Keys::new("u-", 0);
    group.bench_function("store", |b| {
        b.iter_custom(|iters| {
            support::cpu_timed(&mut keys, iters, |key| {
                now += TICK;
                support::store_claim_complete(&mut store, key, now);
            })
        });
    });
    assert!(store.len() <= HELD + 1, "the store grew to {}", store.len());
    black_box(&store);

    let mut now = Instant::now();
    let baseline = Baseline::default();
    baseline.fill(HELD, now);
    let mut keys = Keys::new("u-", 0);
    group.bench_function("baseline", |b| {
        b.iter_custom(|iters| {
            support::cpu_timed(&mut keys, iters, |key| {
                now += TICK;
                baseline.claim_complete_remove(key, now);
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
