//! The blocking `InMemoryBackend` against the FIFO baseline at steady state, one thread,
//! on the system clock.
//!
//! Every key is claimed and completed with a 1 ms TTL, so each holds what 1 ms of
//! operations makes (a few thousand records) and every claim also pays, on average, for
//! one expiry: the backend purges through its shards' deadline indexes, the baseline
//! pops its FIFO. Both read the system clock for their claim and their complete, as a
//! real backend must. Keys are unique 18-byte `String`s made before the sample is timed.
//! Samples are timed in thread CPU time (see `support::thread_cpu_time`). Goal: the
//! backend at least 1.5x the baseline's throughput.

mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use idemkit_core::InMemoryBackend;
use support::fifo_baseline::{FifoBaseline, Tokens};
use support::{BACKEND_TTL, Keys};

fn steady(c: &mut Criterion) {
    let mut group = c.benchmark_group("steady_backend");

    let backend = InMemoryBackend::builder().max_size(1_000_000).build();
    let mut keys = Keys::new("u-", 0);
    group.bench_function("backend", |b| {
        b.iter_custom(|iters| {
            support::cpu_timed_strings(&mut keys, iters, |key| {
                support::backend_claim_complete_for(&backend, key, BACKEND_TTL);
            })
        });
    });
    drop(backend);

    let baseline = FifoBaseline::new(Tokens::PerClaim);
    let mut keys = Keys::new("u-", 0);
    group.bench_function("baseline", |b| {
        b.iter_custom(|iters| {
            support::cpu_timed_strings(&mut keys, iters, |key| {
                baseline.claim_complete_now(key, BACKEND_TTL);
            })
        });
    });

    group.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = steady
}
criterion_main!(benches);
