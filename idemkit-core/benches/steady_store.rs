//! The sans-IO `Store` against the FIFO baseline at steady state, holding 1,000 and
//! 1,000,000 records.
//!
//! "Steady state": every key is claimed and completed with a TTL that lapses exactly as
//! many operations later as records are held, so once that many operations have run
//! (before anything is timed), every claim also pays for one expiry: the `Store` purges
//! the due record through its deadline index, the baseline pops it from its FIFO and
//! removes it from its map. Both are given the same explicit `now`, advanced by one
//! microsecond per operation, and the same unique 18-byte keys, each a separate `String`
//! made before the sample is timed. Samples are timed in thread CPU time (see
//! `support::thread_cpu_time`). Goal: the `Store` at least 2x the baseline's throughput
//! at both sizes.

mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use idemkit_core::Store;
use support::fifo_baseline::{FifoBaseline, Tokens};
use support::{Keys, TICK};

/// Runs `operation` at `now`, advanced by [`TICK`] first, once per key of a fresh batch
/// of `iters`, and returns the thread CPU time the loop took.
fn cpu_timed(
    keys: &mut Keys,
    iters: u64,
    now: &mut Instant,
    mut operation: impl FnMut(&str, Instant),
) -> Duration {
    support::cpu_timed_strings(keys, iters, |key| {
        *now += TICK;
        operation(key, *now);
    })
}

fn steady(c: &mut Criterion) {
    let mut group = c.benchmark_group("steady_store");
    // A smoke run (`cargo test --benches`) only checks the workload, on small stores.
    let big = if support::measuring() {
        1_000_000
    } else {
        10_000
    };
    for held in [1_000, big] {
        let ttl = support::steady_ttl(held);
        {
            let mut now = Instant::now();
            let mut store = Store::builder()
                .max_size(held + 16)
                .build()
                .expect("a store of its own");
            let mut keys = Keys::new("u-", 0);
            cpu_timed(&mut keys, held as u64, &mut now, |key, now| {
                support::store_claim_complete_for(&mut store, key, ttl, now);
            });
            assert_eq!(store.len(), held);
            group.bench_function(BenchmarkId::new("store", held), |b| {
                b.iter_custom(|iters| {
                    cpu_timed(&mut keys, iters, &mut now, |key, now| {
                        support::store_claim_complete_for(&mut store, key, ttl, now);
                    })
                });
            });
            assert_eq!(store.len(), held, "the store holds what it did");
            black_box(&store);
        }
        {
            let mut now = Instant::now();
            let baseline = FifoBaseline::new(Tokens::PerClaim);
            let mut keys = Keys::new("u-", 0);
            cpu_timed(&mut keys, held as u64, &mut now, |key, now| {
                baseline.claim_complete(key, ttl, now);
            });
            group.bench_function(BenchmarkId::new("baseline", held), |b| {
                b.iter_custom(|iters| {
                    cpu_timed(&mut keys, iters, &mut now, |key, now| {
                        baseline.claim_complete(key, ttl, now);
                    })
                });
            });
            assert_eq!(baseline.len(), held, "the baseline holds what it did");
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = steady
}
criterion_main!(benches);
