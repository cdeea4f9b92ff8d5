//! [`ThreadTimer`]: real-time sleeps for any executor, woken by one helper thread.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::rt::{Clock, Runtime, Sleep, Task, Timer};

/// The default timer: real time ([`Instant::now`]), with sleeps woken by one helper
/// thread per process.
///
/// It needs no runtime: a sleep registers its waker with the helper thread, which wakes
/// it when due, so it works under tokio, smol, any other executor, or
/// `futures_lite::future::block_on`. The thread starts with the first sleep that has to
/// wait and serves every `ThreadTimer` of the process; a dropped sleep leaves nothing
/// behind. In tests that move tokio's paused clock, use `idemkit-tokio`'s `TokioTimer`
/// instead, whose sleeps follow that clock.
///
/// ```
/// use std::time::{Duration, Instant};
/// use idemkit_core::{ThreadTimer, Timer};
///
/// let start = Instant::now();
/// futures_lite::future::block_on(ThreadTimer.sleep(Duration::from_millis(20)));
/// assert!(start.elapsed() >= Duration::from_millis(20));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadTimer;

impl Clock for ThreadTimer {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

impl Timer for ThreadTimer {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(ThreadSleep {
            // Too long to represent: never due.
            deadline: Instant::now().checked_add(duration),
            registered: None,
        })
    }
}

/// Each task runs on a thread of its own, driven by `futures_lite::future::block_on`:
/// background work in this library is rare (a release nobody waits for), so a pool would
/// cost more than it saves. If the OS refuses the thread, the task runs on the caller's.
impl Runtime for ThreadTimer {
    fn spawn(&self, task: Task) {
        let slot = std::sync::Arc::new(Mutex::new(Some(task)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("idemkit-task".into())
            .spawn(move || {
                if let Some(task) = theirs.lock().take() {
                    futures_lite::future::block_on(task);
                }
            });
        if spawned.is_err()
            && let Some(task) = slot.lock().take()
        {
            futures_lite::future::block_on(task);
        }
    }
}

/// The sleepers of the process, by deadline (the id tells two equal deadlines apart).
#[derive(Default)]
struct Sleepers {
    due: BTreeMap<(Instant, u64), Waker>,
    next_id: u64,
    /// Whether the helper thread runs; if the OS refused to start it, sleeps end at once
    /// (a waiter then re-reads early, which is wasteful but never hangs).
    thread: Option<bool>,
}

struct Wheel {
    sleepers: Mutex<Sleepers>,
    /// Signalled when a sleeper is due before the one the thread sleeps until.
    earlier: Condvar,
}

fn wheel() -> &'static Wheel {
    static WHEEL: OnceLock<Wheel> = OnceLock::new();
    WHEEL.get_or_init(|| Wheel {
        sleepers: Mutex::new(Sleepers::default()),
        earlier: Condvar::new(),
    })
}

/// The helper thread: wakes every sleeper whose deadline passed, then sleeps until the
/// next deadline or until an earlier one is registered. It serves the process for its
/// whole life, as async-io's reactor thread does.
fn run(wheel: &'static Wheel) {
    let mut sleepers = wheel.sleepers.lock();
    loop {
        let now = Instant::now();
        let mut woken = Vec::new();
        while let Some(entry) = sleepers.due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            woken.push(entry.remove());
        }
        if !woken.is_empty() {
            // Wake outside the lock: a waker may poll, and the poll registers again.
            parking_lot::MutexGuard::unlocked(&mut sleepers, || {
                woken.into_iter().for_each(Waker::wake)
            });
            continue;
        }
        match sleepers.due.first_key_value() {
            Some((&(deadline, _), _)) => {
                wheel.earlier.wait_until(&mut sleepers, deadline);
            }
            None => wheel.earlier.wait(&mut sleepers),
        }
    }
}

/// One sleep on the helper thread.
struct ThreadSleep {
    deadline: Option<Instant>,
    /// The key of this sleep's waker in the wheel, once registered.
    registered: Option<(Instant, u64)>,
}

impl Future for ThreadSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(deadline) = self.deadline else {
            return Poll::Pending;
        };
        let wheel = wheel();
        let mut sleepers = wheel.sleepers.lock();
        if Instant::now() >= deadline {
            if let Some(key) = self.registered.take() {
                sleepers.due.remove(&key);
            }
            return Poll::Ready(());
        }
        if let Some(key) = self.registered {
            match sleepers.due.get_mut(&key) {
                Some(waker) => waker.clone_from(cx.waker()),
                // The thread woke it, but it is polled a hair early: register again.
                None => self.registered = None,
            }
        }
        if self.registered.is_none() {
            if sleepers.thread.is_none() {
                let started = std::thread::Builder::new()
                    .name("idemkit-timer".into())
                    .spawn(move || run(wheel))
                    .is_ok();
                sleepers.thread = Some(started);
            }
            if sleepers.thread == Some(false) {
                return Poll::Ready(());
            }
            let key = (deadline, sleepers.next_id);
            sleepers.next_id += 1;
            let earliest = sleepers
                .due
                .first_key_value()
                .is_none_or(|(first, _)| key < *first);
            sleepers.due.insert(key, cx.waker().clone());
            self.registered = Some(key);
            if earliest {
                wheel.earlier.notify_one();
            }
        }
        Poll::Pending
    }
}

impl Drop for ThreadSleep {
    fn drop(&mut self) {
        if let Some(key) = self.registered.take() {
            wheel().sleepers.lock().due.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_registered(key: (Instant, u64)) -> bool {
        wheel().sleepers.lock().due.contains_key(&key)
    }

    fn sleep_for(duration: Duration) -> Pin<Box<ThreadSleep>> {
        Box::pin(ThreadSleep {
            deadline: Instant::now().checked_add(duration),
            registered: None,
        })
    }

    #[test]
    fn sleeps_end_in_deadline_order_whatever_order_they_started_in() {
        let order = std::sync::Mutex::new(Vec::new());
        futures_lite::future::block_on(async {
            let sleep = |ms: u64| {
                let order = &order;
                async move {
                    ThreadTimer.sleep(Duration::from_millis(ms)).await;
                    order.lock().unwrap().push(ms);
                }
            };
            let three = futures_lite::future::zip(sleep(120), sleep(40));
            futures_lite::future::zip(three, sleep(80)).await;
        });
        assert_eq!(*order.lock().unwrap(), [40, 80, 120]);
    }

    #[test]
    fn a_dropped_sleep_leaves_nothing_registered() {
        let mut sleep = sleep_for(Duration::from_secs(3600));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        let key = sleep.registered.expect("a pending sleep is registered");
        assert!(is_registered(key));
        // Polled again: still one registration, the same one.
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        assert_eq!(sleep.registered, Some(key));
        drop(sleep);
        assert!(!is_registered(key));
    }

    #[test]
    fn an_unrepresentable_sleep_never_ends_and_registers_nothing() {
        let mut sleep = sleep_for(Duration::MAX);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        assert_eq!(sleep.registered, None);
    }

    #[test]
    fn a_finished_sleep_deregisters() {
        let mut sleep = sleep_for(Duration::from_millis(10));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        let key = sleep.registered.expect("registered");
        std::thread::sleep(Duration::from_millis(30));
        assert!(sleep.as_mut().poll(&mut cx).is_ready());
        assert!(!is_registered(key));
    }
}
