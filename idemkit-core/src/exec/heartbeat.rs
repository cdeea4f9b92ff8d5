//! The blocking executor's heartbeat: one thread per executor, started on first need,
//! renewing the lease of every run in progress when it falls due.
//!
//! A blocking operation cannot be interrupted, so a renewal that fails only marks its
//! run's [`Lease`](crate::Lease) lost; the run then stores nothing. The thread sleeps on
//! a condition variable until the earliest renewal is due, and exits when the executor
//! (every clone of it) is dropped: dropping joins it, so no thread outlives its executor.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::backend::BlockingBackend;
use crate::exec::decide::{Beat, LeaseTracker};
use crate::token::ClaimToken;

/// One run whose lease the thread renews.
struct Renewal {
    key: Arc<str>,
    token: ClaimToken,
    lease_ttl: Duration,
    interval: Duration,
    lease: LeaseTracker,
    /// The run's [`Lease`](crate::Lease) flag, set when a renewal fails.
    lost: Arc<AtomicBool>,
    /// When the next renewal is due, by real time; its entry in the queue.
    due: Instant,
}

#[derive(Default)]
struct State {
    /// Renewals by due time; the id breaks ties and finds the run.
    queue: BTreeSet<(Instant, u64)>,
    runs: HashMap<u64, Renewal>,
    next_id: u64,
    shutdown: bool,
}

/// What the executor and its thread share.
#[derive(Default)]
struct Schedule {
    state: Mutex<State>,
    /// Signalled when a renewal is added (it may be due before the one slept on) and on
    /// shutdown.
    changed: Condvar,
}

/// The heartbeat of one blocking executor: a schedule of renewals and, once the first
/// run registers, the thread that performs them.
pub(crate) struct Heartbeats<B: BlockingBackend> {
    schedule: Arc<Schedule>,
    backend: Arc<B>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// A run's place in the schedule; dropping it stops renewing that run.
pub(crate) struct Registration<'a> {
    schedule: &'a Schedule,
    id: u64,
}

impl<B: BlockingBackend> Heartbeats<B> {
    /// No thread yet: it starts with the first registration.
    pub(crate) fn new(backend: Arc<B>) -> Heartbeats<B> {
        Heartbeats {
            schedule: Arc::default(),
            backend,
            thread: Mutex::new(None),
        }
    }

    /// Renews `token`'s lease on `key` every `interval` (real time) until the returned
    /// registration is dropped, and sets `lost` once the lease is lost (`lease` judges
    /// each renewal).
    ///
    /// If the OS refuses to start the thread, nothing renews the lease: a run that
    /// outlives it may then be taken over, and fencing refuses its result.
    pub(crate) fn register(
        &self,
        key: &str,
        token: &ClaimToken,
        interval: Duration,
        lease_ttl: Duration,
        lease: LeaseTracker,
        lost: Arc<AtomicBool>,
    ) -> Registration<'_> {
        let due = Instant::now().checked_add(interval);
        let mut state = self.schedule.state.lock();
        let id = state.next_id;
        state.next_id += 1;
        // An interval too long to represent never falls due: nothing to schedule.
        if let Some(due) = due {
            state.queue.insert((due, id));
            state.runs.insert(
                id,
                Renewal {
                    key: key.into(),
                    token: token.clone(),
                    lease_ttl,
                    interval,
                    lease,
                    lost,
                    due,
                },
            );
            drop(state);
            self.ensure_thread();
            self.schedule.changed.notify_one();
        }
        Registration {
            schedule: &self.schedule,
            id,
        }
    }

    fn ensure_thread(&self) {
        let mut thread = self.thread.lock();
        if thread.is_none() {
            let schedule = Arc::clone(&self.schedule);
            let backend = self.backend.clone();
            *thread = std::thread::Builder::new()
                .name("idemkit-heartbeat".into())
                .spawn(move || beat(&schedule, &*backend))
                .ok();
        }
    }
}

/// The thread's loop: sleep until the earliest renewal is due, renew without holding the
/// lock, reschedule or mark lost, until shutdown.
fn beat<B: BlockingBackend + ?Sized>(schedule: &Schedule, backend: &B) {
    let mut state = schedule.state.lock();
    loop {
        if state.shutdown {
            return;
        }
        let Some(&(due, id)) = state.queue.first() else {
            schedule.changed.wait(&mut state);
            continue;
        };
        if Instant::now() < due {
            schedule.changed.wait_until(&mut state, due);
            continue;
        }
        state.queue.pop_first();
        let Some(run) = state.runs.get(&id) else {
            continue;
        };
        let (key, token, lease_ttl) = (Arc::clone(&run.key), run.token.clone(), run.lease_ttl);
        let (issued_at, renewed, now) = MutexGuard::unlocked(&mut state, || {
            let issued_at = backend.now();
            let renewed = backend.renew(&key, &token, lease_ttl);
            (issued_at, renewed, backend.now())
        });
        // The run may have finished (and deregistered) while the lock was released.
        let state = &mut *state;
        let Some(run) = state.runs.get_mut(&id) else {
            continue;
        };
        match run.lease.after_renew(renewed, issued_at, now) {
            Beat::Held => {
                if let Some(next) = Instant::now().checked_add(run.interval) {
                    run.due = next;
                    state.queue.insert((next, id));
                }
            }
            Beat::Lost => run.lost.store(true, Ordering::Release),
        }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut state = self.schedule.state.lock();
        if let Some(run) = state.runs.remove(&self.id) {
            state.queue.remove(&(run.due, self.id));
        }
    }
}

impl<B: BlockingBackend> Drop for Heartbeats<B> {
    fn drop(&mut self) {
        self.schedule.state.lock().shutdown = true;
        self.schedule.changed.notify_all();
        if let Some(thread) = self.thread.get_mut().take() {
            // The thread never panics on its own; if it did, there is nothing to add.
            let _ = thread.join();
        }
    }
}

impl<B: BlockingBackend> fmt::Debug for Heartbeats<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Heartbeats")
            .field("runs", &self.schedule.state.lock().runs.len())
            .field("started", &self.thread.lock().is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::Claim;
    use crate::memory::InMemoryBackend;

    const GENEROUS: Duration = Duration::from_secs(5);

    fn claim(backend: &InMemoryBackend, key: &str, lease: Duration) -> ClaimToken {
        match backend.claim(key, "fp", 1, lease).unwrap() {
            Claim::New(token) => token,
            other => panic!("expected a new claim, got {other:?}"),
        }
    }

    /// Polls `condition` every 5 ms for up to [`GENEROUS`].
    fn eventually(condition: impl Fn() -> bool) -> bool {
        let give_up = Instant::now() + GENEROUS;
        while Instant::now() < give_up {
            if condition() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        condition()
    }

    #[test]
    fn no_thread_starts_until_a_run_registers() {
        let heartbeats = Heartbeats::new(Arc::new(InMemoryBackend::new()));
        assert!(heartbeats.thread.lock().is_none());
        let token = ClaimToken::from_bytes([0; 16]);
        let lost = Arc::new(AtomicBool::new(false));
        let lease = LeaseTracker::new(Instant::now(), Duration::MAX);
        let forever = heartbeats.register("k", &token, Duration::MAX, Duration::MAX, lease, lost);
        assert!(heartbeats.thread.lock().is_none(), "nothing ever falls due");
        drop(forever);
    }

    #[test]
    fn renewals_extend_the_lease_and_the_thread_ends_with_its_executor() {
        let backend = InMemoryBackend::new();
        let lease = Duration::from_millis(300);
        let token = claim(&backend, "k", lease);
        let first_until = backend.get("k").unwrap().unwrap().lease_until();
        let heartbeats = Heartbeats::new(Arc::new(backend.clone()));
        let lost = Arc::new(AtomicBool::new(false));
        let registration = heartbeats.register(
            "k",
            &token,
            Duration::from_millis(20),
            lease,
            LeaseTracker::new(backend.now(), lease),
            Arc::clone(&lost),
        );
        assert!(eventually(|| backend
            .get("k")
            .unwrap()
            .unwrap()
            .lease_until()
            > first_until));
        assert!(!lost.load(Ordering::Acquire));
        drop(registration);
        assert!(heartbeats.schedule.state.lock().queue.is_empty());

        let schedule = Arc::downgrade(&heartbeats.schedule);
        drop(heartbeats);
        // Joined on drop: the thread's share of the schedule is gone with it.
        assert!(
            schedule.upgrade().is_none(),
            "the heartbeat thread outlived its executor"
        );
    }

    #[test]
    fn a_refused_renewal_marks_only_that_run_lost() {
        let backend = InMemoryBackend::new();
        let lease = Duration::from_secs(30);
        let heartbeats = Heartbeats::new(Arc::new(backend.clone()));
        let interval = Duration::from_millis(20);
        let tracker = || LeaseTracker::new(backend.now(), lease);
        let doomed_token = claim(&backend, "doomed", lease);
        let kept_token = claim(&backend, "kept", lease);
        let doomed = Arc::new(AtomicBool::new(false));
        let kept = Arc::new(AtomicBool::new(false));
        let _a = heartbeats.register(
            "doomed",
            &doomed_token,
            interval,
            lease,
            tracker(),
            doomed.clone(),
        );
        let _b = heartbeats.register(
            "kept",
            &kept_token,
            interval,
            lease,
            tracker(),
            kept.clone(),
        );
        assert!(backend.release("doomed", &doomed_token).unwrap());
        assert!(eventually(|| doomed.load(Ordering::Acquire)));
        // The other run is still renewed, and not lost.
        let seen = backend.get("kept").unwrap().unwrap().lease_until();
        assert!(eventually(|| backend
            .get("kept")
            .unwrap()
            .unwrap()
            .lease_until()
            > seen));
        assert!(!kept.load(Ordering::Acquire));
    }
}
