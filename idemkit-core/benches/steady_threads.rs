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
//!
//! The shared-store ceiling, `shared/1` and `shared/2`: the limit a key-addressed shared
//! store can reach on this machine. 64 bare `parking_lot::Mutex`es, each around the FIFO
//! baseline's `HashMap` and FIFO (each on cache lines of its own), shared by the threads,
//! every key hashed to its shard; each thread draws its tokens from a 4 KiB buffer of its
//! own, as the backend does. The threads work on their own keys, yet their records sit
//! in the same shards, and each purges what the other completed there: the sharing a
//! key-addressed store cannot avoid (whichever thread retries a key must find it), with
//! nothing else on top. Figure beside the first: two threads on one backend as a share
//! of two threads on the shared ceiling (`shared/2` time over `backend/2` time). Goal: at
//! least 0.9.
//!
//! Two more measurements say where the limit is: `private/2`, two threads each on a
//! backend of its own (the same code, nothing shared: how it scales when no cache line
//! moves between cores), and `line_handoff`, the round trip of one cache line between
//! two threads (each waits for the other's write to an atomic, then writes it): what
//! every line of a shard costs when the other core wrote it last.

mod support;

use std::hash::BuildHasher;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use idemkit_core::InMemoryBackend;
use support::BACKEND_TTL;
use support::fifo_baseline::{FifoBaseline, ThreadTokens, Tokens};
use support::workers::Workers;

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
            scope.spawn(move || {
                let mut operation = make();
                workers.work(worker, support::key_strings, |batch: &Vec<String>| {
                    for key in batch {
                        operation(key);
                    }
                });
            });
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
    for threads in [1, 2] {
        let shared = SharedCeiling::new();
        measure(&mut group, "shared", threads, &next_key, || {
            // The thread's own token buffer; the shards are the ones all threads share.
            let mut tokens = ThreadTokens::new();
            let shared = &shared;
            move |key: &str| shared.claim_complete_now(key, tokens.next())
        });
    }
    measure(&mut group, "private", 2, &next_key, || {
        // Made on the worker's own thread, and used by it alone.
        let backend = InMemoryBackend::builder().max_size(1_000_000).build();
        move |key: &str| support::backend_claim_complete_for(&backend, key, BACKEND_TTL)
    });
    group.bench_function("line_handoff", |b| b.iter_custom(line_handoff));
    group.finish();
}

/// The shared-store ceiling: [`SHARDS`] FIFO baselines, each on cache lines of its own,
/// a key's shard picked by hashing it.
struct SharedCeiling {
    hasher: std::collections::hash_map::RandomState,
    shards: Box<[Padded<FifoBaseline>]>,
}

/// As many shards as the backend has by default.
const SHARDS: usize = 64;

/// A value alone on its cache lines (two lines: the adjacent-line prefetcher pairs them).
#[repr(align(128))]
struct Padded<T>(T);

impl SharedCeiling {
    fn new() -> SharedCeiling {
        SharedCeiling {
            hasher: std::collections::hash_map::RandomState::new(),
            shards: (0..SHARDS)
                .map(|_| Padded(FifoBaseline::new(Tokens::Given)))
                .collect(),
        }
    }

    /// The baseline's claim+complete of `key` on the system clock with `token`, in the
    /// key's shard.
    fn claim_complete_now(&self, key: &str, token: [u8; 16]) {
        let shard = self.hasher.hash_one(key) as usize % SHARDS;
        self.shards[shard]
            .0
            .claim_complete_now_given(key, BACKEND_TTL, token);
    }
}

/// Round trips of one cache line between two threads: each waits for the other's write
/// of an atomic counter, then writes it. Returns `iters` times the time of one round trip
/// in the fastest of [`CHUNKS`] chunks of round trips: a chunk during which either thread
/// was preempted by another job on this shared machine measures the scheduler, not the
/// line.
fn line_handoff(iters: u64) -> Duration {
    const CHUNKS: u64 = 20;
    let per_chunk = iters.div_ceil(CHUNKS).max(1);
    let counter = AtomicU64::new(0);
    let wait_for = |value: u64| {
        let mut spins = 0u32;
        while counter.load(Ordering::Acquire) != value {
            spins += 1;
            if spins.is_multiple_of(4096) {
                // The other thread is probably not running: let it.
                std::thread::yield_now();
            }
            spin_loop();
        }
    };
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for round in 0..CHUNKS * per_chunk {
                wait_for(2 * round + 1);
                counter.store(2 * round + 2, Ordering::Release);
            }
        });
        let mut fastest = Duration::MAX;
        for chunk in 0..CHUNKS {
            let began = Instant::now();
            for round in chunk * per_chunk..(chunk + 1) * per_chunk {
                wait_for(2 * round);
                counter.store(2 * round + 1, Ordering::Release);
            }
            wait_for(2 * (chunk + 1) * per_chunk);
            fastest = fastest.min(began.elapsed());
        }
        fastest / per_chunk as u32 * iters as u32
    })
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = threads
}
criterion_main!(benches);
