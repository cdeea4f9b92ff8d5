//! [`Harness`]: what a vector needs from an executor, so each vector is written once
//! and run on the blocking, tokio and smol executors alike.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idemkit_core::{
    Clock, Error, Event, Fingerprint, InMemoryBackend, Key, ManualClock, Outcome, Policy, RunError,
};

use crate::executor::op::{Op, OpError};

/// What one run returns in these tests.
pub type RunResult = Result<Outcome, RunError<OpError>>;

/// A run started in the background; calling it waits for its result.
pub type Pending = Box<dyn FnOnce() -> RunResult + Send>;

/// The clock behind the backend's leases: the real one, or a [`ManualClock`] the vector
/// moves.
#[derive(Clone, Debug)]
pub enum TestClock {
    /// [`Instant::now`].
    Real,
    /// A clock that moves only when the vector advances it.
    Manual(ManualClock),
}

impl Clock for TestClock {
    fn now(&self) -> Instant {
        match self {
            TestClock::Real => Instant::now(),
            TestClock::Manual(clock) => clock.now(),
        }
    }
}

/// How a vector wants its executor built.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The executor's policy.
    pub policy: Policy,
    /// The backend's capacity.
    pub max_size: usize,
    /// The backend's clock.
    pub clock: TestClock,
    /// Whether the observer panics after recording each event.
    pub observer_panics: bool,
}

impl Setup {
    /// The default policy on a backend with the real clock.
    pub fn real() -> Setup {
        Setup {
            policy: Policy::default(),
            max_size: 10_000,
            clock: TestClock::Real,
            observer_panics: false,
        }
    }

    /// The default policy on a backend with a manual clock, and that clock.
    pub fn manual() -> (Setup, ManualClock) {
        let clock = ManualClock::new();
        let setup = Setup {
            clock: TestClock::Manual(clock.clone()),
            ..Setup::real()
        };
        (setup, clock)
    }

    /// This setup with `policy`.
    pub fn policy(self, policy: Policy) -> Setup {
        Setup { policy, ..self }
    }

    /// This setup with a backend of capacity `max_size`.
    pub fn max_size(self, max_size: usize) -> Setup {
        Setup { max_size, ..self }
    }

    /// This setup with an observer that panics on every event (after recording it).
    pub fn panicking_observer(self) -> Setup {
        Setup {
            observer_panics: true,
            ..self
        }
    }
}

/// The events an executor reported, in order.
#[derive(Clone, Debug, Default)]
pub struct Events(Arc<Mutex<Vec<Event>>>);

impl Events {
    /// The observer to install: records each event, then panics if told to.
    pub fn observer(&self, panics: bool) -> impl Fn(&Event) + Send + Sync + 'static {
        let events = self.clone();
        move |event: &Event| {
            events.0.lock().unwrap().push(event.clone());
            if panics {
                panic!("this observer panics on purpose");
            }
        }
    }

    /// Everything recorded so far.
    pub fn all(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }
}

/// One executor under test, driven from plain test code.
pub trait Harness: Sized + Send + Sync + 'static {
    /// Whether a lost lease cancels the running operation (async executors) rather than
    /// only telling it (the blocking executor's [`Lease::is_lost`](idemkit_core::Lease)).
    const CANCELS: bool;

    /// The executor `setup` describes, or the error its constructor returned.
    fn try_build(setup: Setup) -> Result<Self, Error>;

    /// The executor `setup` describes.
    fn build(setup: Setup) -> Self {
        Self::try_build(setup).expect("the setup's policy is valid")
    }

    /// Another executor over the same backend with `policy`, reporting to the same
    /// events.
    fn sibling(&self, policy: Policy) -> Self;

    /// The executor's policy.
    fn policy(&self) -> &Policy;

    /// The backend, through its blocking interface (the same store).
    fn backend(&self) -> &InMemoryBackend<TestClock>;

    /// The events reported so far.
    fn events(&self) -> Vec<Event>;

    /// Runs `op` for `key` and returns the result (a panic in `op` propagates).
    fn run(&self, key: &Key, fingerprint: &Fingerprint, op: Op) -> RunResult;

    /// Starts a run in the background.
    fn spawn(&self, key: &Key, fingerprint: &Fingerprint, op: Op) -> Pending;

    /// Starts a run and drops its future after `after` (async executors only; `None`
    /// for the blocking executor, whose runs cannot be dropped).
    fn run_and_cancel_after(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: Op,
        after: Duration,
    ) -> Option<()>;
}
