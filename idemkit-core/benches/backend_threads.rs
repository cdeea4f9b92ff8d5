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
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use idemkit_core::InMemoryBackend;
use support::{HELD, KeyBatch, Keys};

/// What the workers do next: run this many operations each (keys from `first` on,
/// split by worker), or stop.
#[derive(Clone, Copy)]
enum Order {
    Run { iters: u64, first: u64 },
    Stop,
}

/// Workers that run claim+completes on `backend` in step with the measuring thread.
struct Workers<'a> {
    threads: u64,
    order: &'a Mutex<Order>,
    /// Workers have their keys ready: the sample may start.
    ready: &'a Barrier,
    /// The sample starts: everyone leaves this together.
    go: &'a Barrier,
    /// Every worker has finished its share.
    done: &'a Barrier,
}

impl Workers<'_> {
    fn work(&self, backend: &InMemoryBackend, worker: u64) {
        loop {
            self.ready.wait();
            let (iters, first) = match *self.order.lock().expect("order") {
                Order::Run { iters, first } => (iters, first),
                Order::Stop => return,
            };
            let share = iters / self.threads + u64::from(worker < iters % self.threads);
            let batch = KeyBatch::new(&mut Keys::new("u-", first + worker * iters), share);
            self.go.wait();
            for key in batch.iter() {
                support::backend_claim_complete(backend, key);
            }
            self.done.wait();
        }
    }

    /// Runs one sample of `iters` operations and returns its wall time.
    fn sample(&self, iters: u64, first: u64) -> Duration {
        *self.order.lock().expect("order") = Order::Run { iters, first };
        self.ready.wait();
        self.go.wait();
        let began = Instant::now();
        self.done.wait();
        began.elapsed()
    }

    fn stop(&self) {
        *self.order.lock().expect("order") = Order::Stop;
        self.ready.wait();
    }
}

fn threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("backend_threads");
    let next_key = AtomicU64::new(0);
    for threads in [1, 2] {
        let backend = InMemoryBackend::new();
        support::fill_backend(&backend, HELD);
        let order = Mutex::new(Order::Stop);
        let (ready, go, done) = (
            Barrier::new(threads as usize + 1),
            Barrier::new(threads as usize + 1),
            Barrier::new(threads as usize + 1),
        );
        let workers = Workers {
            threads,
            order: &order,
            ready: &ready,
            go: &go,
            done: &done,
        };
        std::thread::scope(|scope| {
            for worker in 0..threads {
                let (workers, backend) = (&workers, &backend);
                scope.spawn(move || workers.work(backend, worker));
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
