//! [`FailingBackend`]: a test double that wraps a real [`Backend`] and makes chosen
//! operations fail on demand, so the executor's storage-error handling (issue 5 rule 5)
//! can be driven without a real network or a full store.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idemkit_core::{Backend, Claim, ClaimToken, Error, Record, Response};

/// One of the five operations of [`Backend`] (`now` cannot fail).
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

/// A [`Backend`] that forwards to `inner`, except that each operation switched on with
/// [`fail`](FailingBackend::fail) returns [`FailingBackend::ERROR`] instead, without
/// reaching `inner`. Clones share the switches and the counts.
#[derive(Clone, Debug)]
pub struct FailingBackend<B> {
    inner: B,
    switchboard: Arc<Switchboard>,
}

impl<B: Backend> FailingBackend<B> {
    /// The error a failing operation returns: `Full` with a capacity no real in-memory
    /// store reports for a key it could claim, so it is recognisably this double's.
    pub const ERROR: Error = Error::Full { max_size: 0 };

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
            return Err(Self::ERROR);
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
        response: Response,
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

    fn now(&self) -> Instant {
        self.inner.now()
    }
}
