//! [`BlockingHarness`]: the blocking [`Idempotency`] executor under test, its
//! background runs on threads.

use std::time::Duration;

use idemkit_core::{Error, Fingerprint, Idempotency, InMemoryBackend, Key, Policy};

use crate::executor::harness::{Events, Harness, Pending, RunResult, Setup, TestClock};
use crate::executor::op::{Op, play_blocking};

/// The blocking executor over the blocking in-memory backend.
pub struct BlockingHarness {
    executor: Idempotency<TestClock>,
    events: Events,
    observer_panics: bool,
}

impl BlockingHarness {
    fn over(
        backend: InMemoryBackend<TestClock>,
        policy: Policy,
        events: Events,
        observer_panics: bool,
    ) -> Result<BlockingHarness, Error> {
        let executor =
            Idempotency::with_policy(backend, policy)?.on_event(events.observer(observer_panics));
        Ok(BlockingHarness {
            executor,
            events,
            observer_panics,
        })
    }
}

impl Harness for BlockingHarness {
    const CANCELS: bool = false;

    fn try_build(setup: Setup) -> Result<BlockingHarness, Error> {
        let backend = InMemoryBackend::builder()
            .max_size(setup.max_size)
            .clock(setup.clock)
            .build();
        BlockingHarness::over(
            backend,
            setup.policy,
            Events::default(),
            setup.observer_panics,
        )
    }

    fn sibling(&self, policy: Policy) -> BlockingHarness {
        let backend = self.executor.backend().clone();
        BlockingHarness::over(backend, policy, self.events.clone(), self.observer_panics)
            .expect("the sibling's policy is valid")
    }

    fn policy(&self) -> &Policy {
        self.executor.policy()
    }

    fn backend(&self) -> &InMemoryBackend<TestClock> {
        self.executor.backend()
    }

    fn events(&self) -> Vec<idemkit_core::Event> {
        self.events.all()
    }

    fn run(&self, key: &Key, fingerprint: &Fingerprint, op: Op) -> RunResult {
        self.executor
            .run(key, fingerprint, |lease| play_blocking(op, lease))
    }

    fn spawn(&self, key: &Key, fingerprint: &Fingerprint, op: Op) -> Pending {
        let executor = self.executor.clone();
        let (key, fingerprint) = (key.clone(), fingerprint.clone());
        let thread = std::thread::spawn(move || {
            executor.run(&key, &fingerprint, |lease| play_blocking(op, lease))
        });
        Box::new(move || {
            thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    fn run_and_cancel_after(
        &self,
        _key: &Key,
        _fingerprint: &Fingerprint,
        _op: Op,
        _after: Duration,
    ) -> Option<()> {
        None
    }
}
