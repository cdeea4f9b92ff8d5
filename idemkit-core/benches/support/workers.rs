//! Long-lived worker threads that run a sample's operations in step with the measuring
//! thread, for the multi-thread figures.
//!
//! The workers are started once per measured function and kept for all its samples (a
//! thread started per sample would add its start-up, and a fresh allocator cache, to
//! every sample). Each sample splits its operations evenly over the workers, each with
//! its own unique keys made before the sample is timed; the time runs from the moment
//! all workers are released to the moment the last one finishes.

use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use super::Keys;

/// What the workers do next: run this many operations in all (keys from `first` on,
/// split by worker), or stop.
#[derive(Clone, Copy)]
enum Order {
    Run { iters: u64, first: u64 },
    Stop,
}

/// Workers that run operations in step with the measuring thread.
pub struct Workers {
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
    /// Room for `threads` workers and the measuring thread.
    pub fn new(threads: u64) -> Workers {
        let parties = threads as usize + 1;
        Workers {
            threads,
            order: Mutex::new(Order::Stop),
            ready: Barrier::new(parties),
            go: Barrier::new(parties),
            done: Barrier::new(parties),
        }
    }

    /// Worker `worker`'s loop, until [`Workers::stop`]: for each sample, `batch` makes its
    /// share of keys (untimed), then `run` works through them (timed). The batch is
    /// dropped after the sample ends, so freeing it is not timed either.
    pub fn work<B>(
        &self,
        worker: u64,
        mut batch: impl FnMut(&mut Keys, u64) -> B,
        mut run: impl FnMut(&B),
    ) {
        loop {
            self.ready.wait();
            let (iters, first) = match *self.order.lock().expect("order") {
                Order::Run { iters, first } => (iters, first),
                Order::Stop => return,
            };
            let share = iters / self.threads + u64::from(worker < iters % self.threads);
            let keys = batch(&mut Keys::new("u-", first + worker * iters), share);
            self.go.wait();
            run(&keys);
            self.done.wait();
            drop(keys);
        }
    }

    /// Runs one sample of `iters` operations, keys from `first` on, and returns its wall
    /// time.
    pub fn sample(&self, iters: u64, first: u64) -> Duration {
        *self.order.lock().expect("order") = Order::Run { iters, first };
        self.ready.wait();
        self.go.wait();
        let began = Instant::now();
        self.done.wait();
        began.elapsed()
    }

    /// Ends every worker's loop.
    pub fn stop(&self) {
        *self.order.lock().expect("order") = Order::Stop;
        self.ready.wait();
    }
}
