//! Figure 4 of the first round (BENCHMARKS.md): claim+complete throughput of two threads on
//! distinct keys of one `InMemoryBackend` against one thread doing the same work.
//!
//! The workers are started once per measured function and kept for all its samples (a
//! thread started per sample would add its start-up, and a fresh allocator cache, to
//! every sample). Each sample splits its operations evenly over the workers, each with
//! its own unique keys, made before the sample is timed; the time runs from the moment
//! all workers are released to the moment the last one finishes, so the figure is time
//! per operation of the whole backend. The backend holds 1,000 records, as in the other
//! figures, and keeps its default shard count. Goal: two threads at least 1.4x the
//! throughput of one.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use idemkit_core::InMemoryBackend;
use support::workers::Workers;
use support::{HELD, KeyBatch};

fn threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("backend_threads");
    let next_key = AtomicU64::new(0);
    for threads in [1, 2] {
        let backend = InMemoryBackend::new();
        support::fill_backend(&backend, HELD);
        let workers = Workers::new(threads);
        std::thread::scope(|scope| {
            for worker in 0..threads {
                let (workers, backend) = (&workers, &backend);
                scope.spawn(move || {
                    workers.work(worker, KeyBatch::new, |batch| {
                        for key in batch.iter() {
                            support::backend_claim_complete(backend, key);
                        }
                    });
                });
            }
            group.bench_function(BenchmarkId::new("threads", threads), |b| {
                b.iter_custom(|iters| {
                    // Each worker's keys start at `first + worker * iters`: never reused.
                    let first = next_key.fetch_add(iters * threads, Ordering::Relaxed);
                    workers.sample(iters, first)
                });
            });
            workers.stop();
        });
        assert!(
            backend.len() <= HELD + 512,
            "the backend grew to {}",
            backend.len()
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = threads
}
criterion_main!(benches);
