//! Two threads on one `InMemoryBackend` against one thread, measured against the
//! machine's own ceiling for the same work with nothing shared.
//!
//! Workload: claim+complete of unique keys on the system clock with a 1 ms TTL, each
//! thread its own keys (separate `String`s it makes before the sample is timed). On the
//! backend, both threads' records sit in the same shards and are purged by whichever
//! thread claims in that shard next. The ceiling: the same keys and work on a private
//! `parking_lot::Mutex<HashMap>` per thread (the FIFO baseline, drawing its tokens from
//! a private 4 KiB buffer of OS randomness as the backend does), so nothing at all is
//! shared; how much faster two of those run than one is as much as two threads can gain
//! on this machine for this kind of work.
//!
//! The workers are started once per measured function and kept for all its samples;
//! a sample runs from the release of all workers to the last one's finish (wall clock).
//! Figure: (backend, 1 thread / 2 threads) over (ceiling, 1 thread / 2 threads). Goal:
//! at least 0.9.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use idemkit_core::InMemoryBackend;
use support::fifo_baseline::{FifoBaseline, Tokens};
use support::{BACKEND_TTL, Keys};

/// What the workers do next: run this many operations each (keys from `first` on,
/// split by worker), or stop.
#[derive(Clone, Copy)]
enum Order {
    Run { iters: u64, first: u64 },
    Stop,
}

/// Workers that run operations in step with the measuring thread.
struct Workers {
    threads: u64,
    order: Mutex<Order>,
    /// Workers have their keys ready: the sample may start.
    ready: Barrier,
    /// The sample starts: everyone leaves this together.
    go: Barrier,
    /// Every worker has finished its share.
    done: Barrier,
}

impl Workers {
    fn new(threads: u64) -> Workers {
        let parties = threads as usize + 1;
        Workers {
            threads,
            order: Mutex::new(Order::Stop),
            ready: Barrier::new(parties),
            go: Barrier::new(parties),
            done: Barrier::new(parties),
        }
    }

    /// Worker `worker`'s loop: `operation` once per key of each sample's share.
    fn work(&self, worker: u64, mut operation: impl FnMut(&str)) {
        loop {
            self.ready.wait();
            let (iters, first) = match *self.order.lock().expect("order") {
                Order::Run { iters, first } => (iters, first),
                Order::Stop => return,
            };
            let share = iters / self.threads + u64::from(worker < iters % self.threads);
            let mut keys = Keys::new("u-", first + worker * iters);
            let batch = support::key_strings(&mut keys, share);
            self.go.wait();
            for key in &batch {
                operation(key);
            }
            self.done.wait();
            drop(batch);
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

/// Measures `name/threads` with `threads` workers, each running `operation` made for it
/// by `make` on its own thread.
fn measure<Op: FnMut(&str)>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    threads: u64,
    next_key: &AtomicU64,
    make: impl Fn() -> Op + Sync,
) {
    let workers = Workers::new(threads);
    std::thread::scope(|scope| {
        for worker in 0..threads {
            let (workers, make) = (&workers, &make);
            scope.spawn(move || workers.work(worker, make()));
        }
        c.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| {
                // Each worker's keys start at `first + worker * iters`: never reused.
                let first = next_key.fetch_add(iters * threads, Ordering::Relaxed);
                workers.sample(iters, first)
            });
        });
        workers.stop();
    });
}

fn threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("steady_threads");
    let next_key = AtomicU64::new(0);
    for threads in [1, 2] {
        measure(&mut group, "ceiling", threads, &next_key, || {
            // Made on the worker's own thread: its map, its FIFO, its buffer.
            let private = FifoBaseline::new(Tokens::Buffered);
            move |key: &str| private.claim_complete_now(key, BACKEND_TTL)
        });
        let backend = InMemoryBackend::builder().max_size(1_000_000).build();
        measure(&mut group, "backend", threads, &next_key, || {
            let backend = backend.clone();
            move |key: &str| support::backend_claim_complete_for(&backend, key, BACKEND_TTL)
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = threads
}
criterion_main!(benches);
