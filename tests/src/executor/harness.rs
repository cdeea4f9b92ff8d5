//! [`Harness`]: one executor of a [`Target`] under test, over a fresh backend of that
//! target, with the events it reported; and [`Setup`], how a vector wants it configured.

use std::future::Future;
use std::sync::{Arc, Mutex};

use futures_lite::future;
use idemkit_core::{Error, Event, Fingerprint, Key, ManualClock, Policy, PolicyBuilder};

use crate::executor::conformance_executor::{ConformanceExecutor, RunResult};
use crate::executor::op::Op;
use crate::runtime::Runtime;
use crate::target::{ManualTime, Settings, Target};

/// How a vector wants its executor built.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// The backend's settings (the in-memory backend's defaults unless changed).
    pub settings: Settings,
    /// The executor's policy.
    pub policy: Policy,
    /// Whether the observer panics after recording each event.
    pub observer_panics: bool,
}

impl Setup {
    /// This setup with `policy`.
    #[must_use]
    pub fn policy(self, policy: Policy) -> Setup {
        Setup { policy, ..self }
    }

    /// This setup with its policy changed by `change` (which must leave it valid).
    #[must_use]
    pub fn with_policy(self, change: impl FnOnce(PolicyBuilder) -> PolicyBuilder) -> Setup {
        let policy = change(self.policy.to_builder())
            .build()
            .expect("a vector's policy is valid");
        self.policy(policy)
    }

    /// This setup with a backend of capacity `max_size`.
    #[must_use]
    pub fn max_size(self, max_size: usize) -> Setup {
        Setup {
            settings: self.settings.max_size(max_size),
            ..self
        }
    }

    /// This setup with an observer that panics on every event (after recording it).
    #[must_use]
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

/// An executor of target `T` set up as `setup`, over a fresh backend on a
/// [`ManualClock`], and the clock to move it.
pub fn manual<T: ManualTime>(setup: Setup) -> (Harness<T>, ManualClock) {
    let clock = ManualClock::new();
    let backend = crate::support::manual_on::<T>(setup.settings, clock.clone());
    let harness = Harness::over(backend, setup).expect("the setup's policy is valid");
    (harness, clock)
}

/// An executor of target `T` set up as `setup`, over a fresh backend on real time.
pub fn real<T: Target>(setup: Setup) -> Harness<T> {
    try_real::<T>(setup).expect("the setup's policy is valid")
}

/// [`real`], or the error the executor's constructor returned.
pub fn try_real<T: Target>(setup: Setup) -> Result<Harness<T>, Error> {
    Harness::over(crate::support::real::<T>(setup.settings), setup)
}

/// One executor of target `T`, driven from a vector on the target's runtime.
pub struct Harness<T: Target> {
    backend: T::Backend,
    executor: T::Executor,
    events: Events,
    observer_panics: bool,
}

impl<T: Target> Harness<T> {
    /// An executor over `backend`, with the policy and observer `setup` asks for.
    fn over(backend: T::Backend, setup: Setup) -> Result<Harness<T>, Error> {
        Harness::reporting_to(
            backend,
            setup.policy,
            Events::default(),
            setup.observer_panics,
        )
    }

    fn reporting_to(
        backend: T::Backend,
        policy: Policy,
        events: Events,
        observer_panics: bool,
    ) -> Result<Harness<T>, Error> {
        let executor = T::Executor::with_policy(backend.clone(), policy)
            .on_event(events.observer(observer_panics));
        Ok(Harness {
            backend,
            executor,
            events,
            observer_panics,
        })
    }

    /// Whether a lost lease cancels the running operation rather than only telling it
    /// (see [`ConformanceExecutor::CANCELS`]).
    pub fn cancels(&self) -> bool {
        T::Executor::CANCELS
    }

    /// Another executor over the same backend with `policy`, reporting to the same
    /// events.
    pub fn sibling(&self, policy: Policy) -> Harness<T> {
        let backend = self.backend.clone();
        Harness::reporting_to(backend, policy, self.events.clone(), self.observer_panics)
            .expect("the sibling's policy is valid")
    }

    /// The executor's policy.
    pub fn policy(&self) -> &Policy {
        self.executor.policy()
    }

    /// The backend the executor runs over.
    pub fn backend(&self) -> T::Backend {
        self.backend.clone()
    }

    /// The events reported so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.all()
    }

    /// Runs `op` for `key` and returns the result (a panic in `op` propagates).
    pub fn run(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: Op,
    ) -> impl Future<Output = RunResult> + Send {
        self.executor.run(key, fingerprint, op)
    }

    /// Starts a run beside the vector, on the target's runtime; await it for its result.
    pub fn spawn(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: Op,
    ) -> impl Future<Output = RunResult> + Send + 'static {
        let executor = self.executor.clone();
        let (key, fingerprint) = (key.clone(), fingerprint.clone());
        T::Runtime::spawn(async move { executor.run(&key, &fingerprint, op).await })
    }

    /// Starts a run and drops its future as soon as `ready` holds (checked every few
    /// milliseconds, for at most [`PATIENT`](crate::support::PATIENT)), checking that it
    /// had not finished by then. `None` for an executor whose runs cannot be dropped (the
    /// blocking one, whose run blocks whatever polls it).
    pub async fn run_and_cancel_once(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: Op,
        ready: impl Fn() -> bool,
    ) -> Option<()> {
        if !self.cancels() {
            return None;
        }
        let run = async { Some(self.run(key, fingerprint, op).await) };
        let cancelled = future::or(run, async {
            crate::support::eventually::<T::Runtime>(
                "the run reaches the point to cancel it at",
                crate::support::PATIENT,
                ready,
            )
            .await;
            None
        })
        .await
        .is_none();
        assert!(cancelled, "the run finished before it could be cancelled");
        Some(())
    }
}
