//! [`SmolHarness`]: `idemkit_smol::Idempotency` under test, its background runs on
//! smol's global executor.

use std::time::Duration;

use futures_lite::FutureExt;
use idemkit_core::{Error, Event, Fingerprint, InMemoryBackend, Key, Policy};
use idemkit_smol::{Idempotency, SmolTimer};

use crate::executor::harness::{Events, Harness, Pending, RunResult, Setup, TestClock};
use crate::executor::op::{Op, OpError, play_async};

/// The smol backend the harness runs on.
type Backend = idemkit_core::AsyncInMemoryBackend<TestClock, SmolTimer>;

/// The smol executor over the smol in-memory backend.
pub struct SmolHarness {
    executor: Idempotency<Backend>,
    events: Events,
    observer_panics: bool,
}

async fn sleep(duration: Duration) {
    smol::Timer::after(duration).await;
}

fn play(op: Op) -> impl Future<Output = Result<idemkit_core::Response, OpError>> + Send {
    play_async(op, sleep)
}

impl SmolHarness {
    fn over(
        backend: Backend,
        policy: Policy,
        events: Events,
        observer_panics: bool,
    ) -> Result<SmolHarness, Error> {
        let executor =
            Idempotency::with_policy(backend, policy)?.on_event(events.observer(observer_panics));
        Ok(SmolHarness {
            executor,
            events,
            observer_panics,
        })
    }
}

impl Harness for SmolHarness {
    const CANCELS: bool = true;

    fn try_build(setup: Setup) -> Result<SmolHarness, Error> {
        let backend = idemkit_smol::Builder::with_clock(setup.clock)
            .max_size(setup.max_size)
            .build();
        SmolHarness::over(
            backend,
            setup.policy,
            Events::default(),
            setup.observer_panics,
        )
    }

    fn sibling(&self, policy: Policy) -> SmolHarness {
        SmolHarness::over(
            self.executor.backend().clone(),
            policy,
            self.events.clone(),
            self.observer_panics,
        )
        .expect("the sibling's policy is valid")
    }

    fn policy(&self) -> &Policy {
        self.executor.policy()
    }

    fn backend(&self) -> &InMemoryBackend<TestClock> {
        self.executor.backend().blocking()
    }

    fn events(&self) -> Vec<Event> {
        self.events.all()
    }

    fn run(&self, key: &Key, fingerprint: &Fingerprint, op: Op) -> RunResult {
        smol::block_on(self.executor.run(key, fingerprint, || play(op)))
    }

    fn spawn(&self, key: &Key, fingerprint: &Fingerprint, op: Op) -> Pending {
        let executor = self.executor.clone();
        let (key, fingerprint) = (key.clone(), fingerprint.clone());
        let task = smol::spawn(async move { executor.run(&key, &fingerprint, || play(op)).await });
        Box::new(move || smol::block_on(task))
    }

    fn run_and_cancel_after(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: Op,
        after: Duration,
    ) -> Option<()> {
        let run = async { Some(self.executor.run(key, fingerprint, || play(op)).await) };
        let timed_out = smol::block_on(run.or(async {
            sleep(after).await;
            None
        }))
        .is_none();
        assert!(timed_out, "the run finished before it could be cancelled");
        Some(())
    }
}
