//! [`TokioHarness`]: `idemkit_tokio::Idempotency` under test, on a multi-thread runtime.

use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{Error, Event, Fingerprint, InMemoryBackend, Key, Policy};
use idemkit_tokio::{Idempotency, TokioTimer};
use tokio::runtime::Runtime;

use crate::executor::harness::{Events, Harness, Pending, RunResult, Setup, TestClock};
use crate::executor::op::{Op, play_async};

/// The tokio backend the harness runs on.
type Backend = idemkit_core::AsyncInMemoryBackend<TestClock, TokioTimer>;

/// The tokio executor over the tokio in-memory backend, on its own runtime.
pub struct TokioHarness {
    runtime: Arc<Runtime>,
    executor: Idempotency<Backend>,
    events: Events,
    observer_panics: bool,
}

fn play(
    op: Op,
) -> impl Future<Output = Result<idemkit_core::Response, crate::executor::op::OpError>> + Send {
    play_async(op, tokio::time::sleep)
}

impl TokioHarness {
    fn over(
        runtime: Arc<Runtime>,
        backend: Backend,
        policy: Policy,
        events: Events,
        observer_panics: bool,
    ) -> Result<TokioHarness, Error> {
        let executor =
            Idempotency::with_policy(backend, policy)?.on_event(events.observer(observer_panics));
        Ok(TokioHarness {
            runtime,
            executor,
            events,
            observer_panics,
        })
    }
}

impl Harness for TokioHarness {
    const CANCELS: bool = true;

    fn try_build(setup: Setup) -> Result<TokioHarness, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .expect("a tokio runtime");
        let backend = idemkit_tokio::Builder::with_clock(setup.clock)
            .max_size(setup.max_size)
            .build();
        TokioHarness::over(
            Arc::new(runtime),
            backend,
            setup.policy,
            Events::default(),
            setup.observer_panics,
        )
    }

    fn sibling(&self, policy: Policy) -> TokioHarness {
        TokioHarness::over(
            Arc::clone(&self.runtime),
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
        self.runtime
            .block_on(self.executor.run(key, fingerprint, || play(op)))
    }

    fn spawn(&self, key: &Key, fingerprint: &Fingerprint, op: Op) -> Pending {
        let executor = self.executor.clone();
        let (key, fingerprint) = (key.clone(), fingerprint.clone());
        let task = self
            .runtime
            .spawn(async move { executor.run(&key, &fingerprint, || play(op)).await });
        let runtime = Arc::clone(&self.runtime);
        Box::new(move || {
            runtime
                .block_on(task)
                .unwrap_or_else(|error| std::panic::resume_unwind(error.into_panic()))
        })
    }

    fn run_and_cancel_after(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: Op,
        after: Duration,
    ) -> Option<()> {
        let run = self.executor.run(key, fingerprint, || play(op));
        let timed_out = self
            .runtime
            .block_on(async { tokio::time::timeout(after, run).await.is_err() });
        assert!(timed_out, "the run finished before it could be cancelled");
        Some(())
    }
}
