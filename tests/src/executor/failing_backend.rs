//! [`FailingBackend`]: a test double that wraps a real backend and makes chosen
//! operations fail on demand, so the executors' storage-error handling can be driven
//! without a real network.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idemkit_core::{Backend, Claim, ClaimToken, Error, Record, Response, Timer};

/// One of the operations of the backend traits that can fail (`get`, `now` and `timer`
/// never do here: the vectors read state through them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// [`Backend::claim`].
    Claim,
    /// [`Backend::complete`].
    Complete,
    /// [`Backend::release`].
    Release,
    /// [`Backend::renew`].
    Renew,
    /// [`Backend::wait_for_completion`].
    Wait,
}

impl Operation {
    const COUNT: usize = 5;

    fn index(self) -> usize {
        match self {
            Operation::Claim => 0,
            Operation::Complete => 1,
            Operation::Release => 2,
            Operation::Renew => 3,
            Operation::Wait => 4,
        }
    }
}

/// Which operations fail, and what happened to each so far; shared by every clone.
#[derive(Debug, Default)]
struct Switchboard {
    failing: [AtomicBool; Operation::COUNT],
    calls: [AtomicUsize; Operation::COUNT],
    failures: [AtomicUsize; Operation::COUNT],
}

/// A backend that forwards to `inner` through whichever trait it is driven by, except
/// that each operation switched on with [`fail`](FailingBackend::fail) returns a
/// [`Error::Storage`] instead, without reaching `inner`. Clones share the switches and
/// the counts.
#[derive(Clone, Debug)]
pub struct FailingBackend<B> {
    inner: B,
    switchboard: Arc<Switchboard>,
}

/// The source of every failure the double reports.
#[derive(Debug, thiserror::Error)]
#[error("the test double failed this operation on purpose")]
pub struct InjectedFailure;

impl<B> FailingBackend<B> {
    /// `inner`, with nothing failing yet.
    pub fn new(inner: B) -> FailingBackend<B> {
        FailingBackend {
            inner,
            switchboard: Arc::default(),
        }
    }

    /// The wrapped backend, to set up or inspect state behind the executor's back.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// From now on, `operation` fails.
    pub fn fail(&self, operation: Operation) {
        self.switchboard.failing[operation.index()].store(true, Ordering::SeqCst);
    }

    /// From now on, `operation` reaches the wrapped backend again.
    pub fn heal(&self, operation: Operation) {
        self.switchboard.failing[operation.index()].store(false, Ordering::SeqCst);
    }

    /// How many times `operation` was called, failed or not.
    pub fn calls(&self, operation: Operation) -> usize {
        self.switchboard.calls[operation.index()].load(Ordering::SeqCst)
    }

    /// How many times `operation` failed.
    pub fn failures(&self, operation: Operation) -> usize {
        self.switchboard.failures[operation.index()].load(Ordering::SeqCst)
    }

    /// Counts a call of `operation`; `Err` if it is to fail.
    fn enter(&self, operation: Operation) -> Result<(), Error> {
        let index = operation.index();
        self.switchboard.calls[index].fetch_add(1, Ordering::SeqCst);
        if self.switchboard.failing[index].load(Ordering::SeqCst) {
            self.switchboard.failures[index].fetch_add(1, Ordering::SeqCst);
            return Err(Error::storage(InjectedFailure));
        }
        Ok(())
    }
}

impl<B: Backend> Backend for FailingBackend<B> {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        self.enter(Operation::Claim)?;
        self.inner
            .claim(key, fingerprint, fingerprint_version, lease_ttl)
            .await
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        self.enter(Operation::Complete)?;
        self.inner
            .complete(key, token, response, expires_after)
            .await
    }

    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        self.enter(Operation::Release)?;
        self.inner.release(key, token).await
    }

    async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        self.enter(Operation::Renew)?;
        self.inner.renew(key, token, lease_ttl).await
    }

    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        self.enter(Operation::Wait)?;
        self.inner.wait_for_completion(key, timeout).await
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        self.inner.get(key).await
    }

    fn now(&self) -> Instant {
        Backend::now(&self.inner)
    }

    fn timer(&self) -> Arc<dyn Timer> {
        self.inner.timer()
    }
}
