//! Figure 4 of issue 4: claim+complete throughput of two threads on distinct keys of one
//! `InMemoryBackend` against one thread doing the same work.
//!
//! Each sample splits its operations evenly over the threads, each with its own unique
//! keys; the time runs from the moment all threads are released to the moment the last
//! one finishes, so the figure is time per operation of the whole backend. The backend
//! holds 1,000 records, as in the other figures, and keeps its default shard count.
//! Goal: two threads at least 1.4x the throughput of one.

mod support;

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use idemkit_core::InMemoryBackend;
use support::{HELD, KeyBatch, Keys};

/// Runs `iters` claim+completes spread over `threads` threads and returns the wall time.
fn run(backend: &InMemoryBackend, threads: u64, iters: u64, next_key: &AtomicU64) -> Duration {
    let start = Barrier::new(threads as usize + 1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let share = iters / threads + u64::from(thread < iters % threads);
                let first = next_key.fetch_add(share, Ordering::Relaxed);
                let start = &start;
                scope.spawn(move || {
                    let batch = KeyBatch::new(&mut Keys::new("u-", first), share);
                    start.wait();
                    for key in batch.iter() {
                        support::backend_claim_complete(backend, key);
                    }
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        for worker in workers {
            worker.join().expect("a worker panicked");
        }
        began.elapsed()
    })
}

fn threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("backend_threads");
    let next_key = AtomicU64::new(0);
    for threads in [1, 2] {
        let backend = InMemoryBackend::new();
        support::fill_backend(&backend, HELD);
        group.bench_function(BenchmarkId::new("threads", threads), |b| {
            b.iter_custom(|iters| run(&backend, threads, iters, &next_key));
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
