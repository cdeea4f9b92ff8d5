//! [`ConformanceExecutor`]: the one executor API the suite drives, implemented by the
//! blocking executor and the async one.

use std::future::Future;
use std::sync::Arc;

use idemkit_core::{
    AsyncIdempotency, Backend, Event, Fingerprint, Idempotency, Key, Outcome, Policy, RunError,
};

use crate::backend::{Async, Blocking, ConformanceBackend};
use crate::executor::op::{Op, OpError, play_async, play_blocking};

/// What one run returns in these tests.
pub type RunResult = Result<Outcome, RunError<OpError>>;

/// An executor as the suite sees it: async-shaped, so one vector fits every executor.
/// Clones share one backend and observer.
///
/// The blocking executor's run happens inline when polled (so it blocks whatever polls
/// it: spawn it to run it beside the vector); an async executor's run is its own future.
pub trait ConformanceExecutor: Clone + Send + Sync + 'static {
    /// The backend it runs over.
    type Backend: ConformanceBackend;

    /// Whether a lost lease cancels the running operation (async executors) rather than
    /// only telling it (the blocking executor's [`Lease::is_lost`](idemkit_core::Lease)).
    const CANCELS: bool;

    /// An executor over `backend` with `policy`.
    fn with_policy(backend: Self::Backend, policy: Policy) -> Self;

    /// This executor, reporting every run's event to `observer`.
    fn on_event(self, observer: impl Fn(&Event) + Send + Sync + 'static) -> Self;

    /// The executor's policy.
    fn policy(&self) -> &Policy;

    /// Runs `op` for `key` (a panic in `op` propagates).
    fn run(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: Op,
    ) -> impl Future<Output = RunResult> + Send;
}

impl<B: Backend> ConformanceExecutor for Idempotency<Arc<B>> {
    type Backend = Blocking<B>;

    const CANCELS: bool = false;

    fn with_policy(backend: Blocking<B>, policy: Policy) -> Self {
        Idempotency::with_policy(Arc::clone(backend.backend()), policy)
    }

    fn on_event(self, observer: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        Idempotency::on_event(self, observer)
    }

    fn policy(&self) -> &Policy {
        Idempotency::policy(self)
    }

    async fn run(&self, key: &Key, fingerprint: &Fingerprint, op: Op) -> RunResult {
        Idempotency::run(self, key, fingerprint, |lease| play_blocking(op, lease))
    }
}

impl<B: Backend + Clone> ConformanceExecutor for AsyncIdempotency<B> {
    type Backend = Async<B>;

    const CANCELS: bool = true;

    fn with_policy(backend: Async<B>, policy: Policy) -> Self {
        AsyncIdempotency::with_policy(backend.into_parts().0, policy)
    }

    fn on_event(self, observer: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        AsyncIdempotency::on_event(self, observer)
    }

    fn policy(&self) -> &Policy {
        AsyncIdempotency::policy(self)
    }

    fn run(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: Op,
    ) -> impl Future<Output = RunResult> + Send {
        // The operation sleeps on the backend's timer, so on its runtime.
        let timer = AsyncIdempotency::backend(self).timer();
        AsyncIdempotency::run(self, key, fingerprint, move || play_async(op, timer))
    }
}
