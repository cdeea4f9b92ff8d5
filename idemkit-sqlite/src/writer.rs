//! The async side's writes: one thread per backend runs them in turn, taken from a queue.
//!
//! A write must not run on an async executor's threads (it may wait for the disk's flush
//! or for another process's lock), and a hop to a blocking pool per write costs a wake-up
//! of a pool thread and then a turn on the write connection's mutex, contended by every
//! other pool thread holding a write. This thread instead wakes once for a burst of
//! queued writes and runs them back to back. A write queued runs even if the future that
//! queued it is dropped (the executor polls a dropped run's release once).

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use event_listener::Event;
use parking_lot::{Condvar, Mutex};

use crate::error::{Cause, SqliteError};

type Job = Box<dyn FnOnce() + Send + 'static>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    running: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    queued: Condvar,
}

/// The queue of one backend's async writes, and its thread (started on first use; it
/// ends once the backend is dropped and the queue is empty).
#[derive(Default)]
pub(crate) struct Writer {
    shared: Arc<Shared>,
}

impl Writer {
    /// Runs `work` on the writer thread and returns its output.
    pub(crate) async fn run<T, F>(&self, operation: &'static str, work: F) -> Result<T, SqliteError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let slot = Arc::new(Slot {
            value: Mutex::new(None),
            filled: Event::new(),
        });
        let filled = Arc::clone(&slot);
        let job: Job = Box::new(move || {
            // A panic is the waiting future's error, not the end of the thread (and of
            // every write queued behind it).
            let output = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            *filled.value.lock() = Some(output.map_err(|_| ()));
            filled.filled.notify(usize::MAX);
        });
        if !self.push(job) {
            return Err(SqliteError::new(
                operation,
                Cause::Other("the writer thread could not be started".to_owned()),
            ));
        }
        loop {
            let listener = slot.filled.listen();
            if let Some(output) = slot.value.lock().take() {
                return output.map_err(|()| {
                    SqliteError::new(operation, Cause::Other("the operation panicked".to_owned()))
                });
            }
            listener.await;
        }
    }

    /// Queues `job`, starting the thread if it is not running; false if it cannot start.
    fn push(&self, job: Job) -> bool {
        let mut queue = self.shared.queue.lock();
        queue.jobs.push_back(job);
        if !queue.running {
            let shared = Arc::downgrade(&self.shared);
            let spawned = std::thread::Builder::new()
                .name("idemkit-sqlite-writer".to_owned())
                .spawn(move || work_through(&shared));
            if spawned.is_err() {
                queue.jobs.pop_back();
                return false;
            }
            queue.running = true;
        }
        drop(queue);
        self.shared.queued.notify_one();
        true
    }
}

/// Where a job leaves its output (or that it panicked) for the future waiting on it.
struct Slot<T> {
    value: Mutex<Option<Result<T, ()>>>,
    filled: Event,
}

/// The writer thread: runs the queued jobs in turn, and parks while there are none. It
/// holds the queue weakly, so that a dropped backend ends it.
fn work_through(shared: &Weak<Shared>) {
    loop {
        let Some(strong) = shared.upgrade() else {
            return;
        };
        let jobs: Vec<Job> = {
            let mut queue = strong.queue.lock();
            if queue.jobs.is_empty() {
                // Woken by a new job, or now and then to see whether the backend is gone.
                strong
                    .queued
                    .wait_for(&mut queue, std::time::Duration::from_secs(1));
            }
            queue.jobs.drain(..).collect()
        };
        drop(strong);
        for job in jobs {
            job();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_in_order_on_one_thread_and_the_thread_ends_with_the_writer() {
        let writer = Writer::default();
        let results: Vec<(usize, std::thread::ThreadId)> = (0..20)
            .map(|n| {
                futures_lite::future::block_on(
                    writer.run("test", move || (n, std::thread::current().id())),
                )
                .unwrap()
            })
            .collect();
        assert!(results.iter().enumerate().all(|(i, (n, _))| i == *n));
        assert!(results.iter().all(|(_, id)| *id == results[0].1));
        assert_ne!(results[0].1, std::thread::current().id());
        let weak = Arc::downgrade(&writer.shared);
        drop(writer);
        // The thread holds the queue only while it looks at it: within a few seconds of
        // the writer's end, nothing holds it.
        for _ in 0..100 {
            if weak.upgrade().is_none() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the writer thread kept the queue alive");
    }

    #[test]
    fn a_panicking_job_is_its_callers_error_and_the_thread_goes_on() {
        let writer = Writer::default();
        let panicked = futures_lite::future::block_on(
            writer.run("test", || -> u8 { panic!("a job that panics") }),
        );
        assert!(panicked.unwrap_err().to_string().contains("panicked"));
        assert_eq!(
            futures_lite::future::block_on(writer.run("test", || 5)).unwrap(),
            5
        );
    }

    #[test]
    fn a_job_runs_even_if_its_future_is_dropped_after_one_poll() {
        let writer = Writer::default();
        let (sender, receiver) = std::sync::mpsc::channel();
        {
            let future = writer.run("test", move || sender.send(7).unwrap());
            let mut future = std::pin::pin!(future);
            let _ = futures_lite::future::block_on(futures_lite::future::poll_once(&mut future));
        }
        assert_eq!(
            receiver.recv_timeout(std::time::Duration::from_secs(10)),
            Ok(7)
        );
    }
}
