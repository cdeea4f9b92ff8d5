//! [`AsyncIdempotency`]: the run-once executor for async code, over any [`Backend`] and
//! any runtime's [`Timer`].

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Waker};

use futures_lite::FutureExt;

use crate::error::Error;
use crate::exec::backend::Backend;
use crate::exec::decide::{self, AfterWait, Beat, LeaseTracker, Next, Settle, StorageFailed};
use crate::exec::observer::{Finished, Observer};
use crate::exec::outcome::{Decision, Event, Outcome, RunError};
use crate::exec::policy::Policy;
use crate::key::{Fingerprint, Key};
use crate::record::Response;
use crate::token::ClaimToken;
use crate::wait::{Timer, deadline_after, remaining};

/// Runs an operation once per key on a [`Backend`], and gives every duplicate the first
/// result: the async twin of [`Idempotency`](crate::Idempotency), with the same rules.
///
/// `idemkit_tokio::Idempotency` and `idemkit_smol::Idempotency` are this type with their
/// runtime's timer. The timer measures waits and latency and paces the heartbeat; leases
/// are judged by the backend.
///
/// The heartbeat runs inside each run's own future, raced against the operation's: no
/// task is spawned, and when a renewal fails the operation's future is dropped, so the
/// operation is cancelled at its next await point.
pub struct AsyncIdempotency<B: Backend, T: Timer> {
    backend: B,
    policy: Policy,
    observer: Observer,
    timer: T,
}

/// How the race between an operation and its heartbeat ended.
enum Race<R> {
    /// The operation returned (or panicked) first.
    Finished(R),
    /// A renewal failed first; the operation's future was dropped.
    Lost,
}

/// Releases the claim unless disarmed. Its `Drop` runs when a panic unwinds or when the
/// run's future is dropped mid-operation (cancelled): it cannot wait there, so it polls
/// the release once and gives up if that does not finish it. The in-memory backends
/// finish on the first poll; for others the lease lapses on its own.
struct ClaimGuard<'a, B: Backend> {
    backend: &'a B,
    key: &'a str,
    token: Option<&'a ClaimToken>,
}

impl<B: Backend> ClaimGuard<'_, B> {
    /// Releases the claim (best effort: a refusal or failure means there is nothing left
    /// to release, or the lease will lapse).
    async fn release(mut self) {
        if let Some(token) = self.token {
            let _released = self.backend.release(self.key, token).await;
            self.token = None;
        }
    }

    /// The claim was settled: do not release it.
    fn disarm(mut self) {
        self.token = None;
    }
}

impl<B: Backend> Drop for ClaimGuard<'_, B> {
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            let release = pin!(self.backend.release(self.key, token));
            let _ = release.poll(&mut Context::from_waker(Waker::noop()));
        }
    }
}

impl<B: Backend, T: Timer + Default> AsyncIdempotency<B, T> {
    /// An executor over `backend` with [`Policy::default`].
    pub fn new(backend: B) -> AsyncIdempotency<B, T> {
        AsyncIdempotency {
            backend,
            policy: Policy::default(),
            observer: Observer::default(),
            timer: T::default(),
        }
    }

    /// An executor over `backend` with `policy`, refused with [`Error::InvalidPolicy`] if
    /// the policy cannot work (see [`Policy::validate`]).
    pub fn with_policy(backend: B, policy: Policy) -> Result<AsyncIdempotency<B, T>, Error> {
        AsyncIdempotency::with_timer(backend, policy, T::default())
    }
}

impl<B: Backend, T: Timer> AsyncIdempotency<B, T> {
    /// An executor over `backend` with `policy`, on `timer`.
    pub fn with_timer(
        backend: B,
        policy: Policy,
        timer: T,
    ) -> Result<AsyncIdempotency<B, T>, Error> {
        policy.validate()?;
        Ok(AsyncIdempotency {
            backend,
            policy,
            observer: Observer::default(),
            timer,
        })
    }

    /// This executor, calling `f` with the [`Event`] of every run. A panic in `f` is
    /// caught and does not affect the run.
    #[must_use]
    pub fn on_event(mut self, f: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.observer = Observer::new(f);
        self
    }

    /// The backend the executor runs on.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The executor's policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The timer that measures waits and latency and paces the heartbeat.
    pub fn timer(&self) -> &T {
        &self.timer
    }

    /// Runs `op` once for `key`, or returns the result of the run that did: the rules of
    /// [`Idempotency::run`](crate::Idempotency::run), with two differences.
    ///
    /// - A failed renewal drops the operation's future (cancelling it at its next await
    ///   point), releases the claim and returns [`RunError::LeaseLost`].
    /// - If this future is itself dropped while the operation runs, the claim is released
    ///   without waiting: the release is polled once, which is enough for the in-memory
    ///   backends; with others the lease lapses instead. A dropped run reports no event.
    ///
    /// The future is `Send` whenever `op`, its future and its error are, so it can be
    /// spawned.
    pub async fn run<E, F, Fut>(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: F,
    ) -> Result<Outcome, RunError<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Response, E>>,
    {
        let started = self.timer.now();
        let finished = self.execute(key, fingerprint, op).await;
        let latency = self.timer.now().saturating_duration_since(started);
        self.observer
            .finish(key, self.policy.fingerprint_version, latency, finished)
    }

    /// Claims, waits and replays until this run has a result; the operation's panic, if
    /// any, comes back as `Err` once its claim is released.
    async fn execute<E, F, Fut>(&self, key: &Key, fingerprint: &Fingerprint, op: F) -> Finished<E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Response, E>>,
    {
        let policy = &self.policy;
        let version = policy.fingerprint_version;
        let deadline = deadline_after(self.timer.now(), policy.wait_timeout);
        let mut waited = false;
        loop {
            let claimed = self
                .backend
                .claim(
                    key.as_str(),
                    fingerprint.as_str(),
                    version,
                    policy.lease_ttl,
                )
                .await;
            let claim = match claimed {
                Ok(claim) => claim,
                Err(error) => return self.storage_failed(error, op).await,
            };
            let lease_until = match decide::on_claim(claim, fingerprint, version, waited) {
                Next::Run { token, decision } => {
                    return self.run_claimed(key.as_str(), token, decision, op).await;
                }
                Next::Replay(outcome) => return Ok(Ok(outcome)),
                Next::Refuse => return Ok(Err(RunError::PayloadMismatch)),
                Next::Wait { lease_until } => lease_until,
            };
            let left = remaining(deadline, self.timer.now());
            if left.is_zero() {
                let retry_after = decide::retry_after(lease_until, self.backend.now());
                return Ok(Err(RunError::InProgress { retry_after }));
            }
            waited = true;
            let completed = match self.backend.wait_for_completion(key.as_str(), left).await {
                Ok(completed) => completed,
                Err(error) => return self.storage_failed(error, op).await,
            };
            match decide::after_wait(completed, fingerprint, version) {
                AfterWait::Replay(outcome) => return Ok(Ok(outcome)),
                AfterWait::Refuse => return Ok(Err(RunError::PayloadMismatch)),
                AfterWait::ClaimAgain => {}
            }
        }
    }

    /// Rule 5: refuse, or run `op` without a claim.
    async fn storage_failed<E, F, Fut>(&self, error: Error, op: F) -> Finished<E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Response, E>>,
    {
        match decide::storage_failed(error, self.policy.on_storage_error) {
            StorageFailed::Refuse(refusal) => Ok(Err(refusal)),
            // `op()` is called inside the caught future, so a panic before its first
            // await is caught as well.
            StorageFailed::RunUnprotected => AssertUnwindSafe(async { op().await })
                .catch_unwind()
                .await
                .map(decide::unprotected),
        }
    }

    /// Runs `op` under the claim `token` holds, raced against its heartbeat, and settles
    /// it.
    async fn run_claimed<E, F, Fut>(
        &self,
        key: &str,
        token: ClaimToken,
        ran: Decision,
        op: F,
    ) -> Finished<E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Response, E>>,
    {
        let policy = &self.policy;
        let guard = ClaimGuard {
            backend: &self.backend,
            key,
            token: Some(&token),
        };
        // `op()` is called inside the caught future: a closure that panics before
        // returning its future is a panicking operation too (released, one event).
        let operation =
            async { Race::Finished(AssertUnwindSafe(async { op().await }).catch_unwind().await) };
        let heartbeat = async {
            self.heartbeat(key, &token).await;
            Race::Lost
        };
        // The operation is polled first, so a result ready at the same time as a failed
        // renewal wins; otherwise the loser's future is dropped here.
        let result = match futures_lite::future::or(operation, heartbeat).await {
            Race::Finished(Ok(result)) => result,
            Race::Finished(Err(panic)) => {
                guard.release().await;
                return Err(panic);
            }
            Race::Lost => {
                guard.release().await;
                return Ok(Err(RunError::LeaseLost));
            }
        };
        Ok(match decide::settle(result, policy.cacheable, false) {
            Settle::Store(response) => {
                // The caller's copy; the store keeps its own, shared by every replay.
                let returned = Arc::new(response.clone());
                let stored = self
                    .backend
                    .complete(key, &token, response, policy.expires_after)
                    .await;
                guard.disarm();
                decide::after_complete(stored, returned, ran, policy.on_storage_error)
            }
            Settle::Release(outcome) => {
                guard.release().await;
                Ok(outcome)
            }
            Settle::Fail(error) => {
                guard.release().await;
                Err(error)
            }
        })
    }

    /// Renews the lease every heartbeat interval; returns only once it is lost (never,
    /// with [`Heartbeat::Off`](crate::Heartbeat::Off)).
    async fn heartbeat(&self, key: &str, token: &ClaimToken) {
        let Some(interval) = self.policy.heartbeat_interval() else {
            return std::future::pending().await;
        };
        let lease_ttl = self.policy.lease_ttl;
        let mut lease = LeaseTracker::new(self.backend.now(), lease_ttl);
        loop {
            self.timer.sleep(interval).await;
            let issued_at = self.backend.now();
            let renewed = self.backend.renew(key, token, lease_ttl).await;
            if lease.after_renew(renewed, issued_at, self.backend.now()) == Beat::Lost {
                return;
            }
        }
    }
}

impl<B: Backend + Clone, T: Timer> Clone for AsyncIdempotency<B, T> {
    fn clone(&self) -> Self {
        AsyncIdempotency {
            backend: self.backend.clone(),
            policy: self.policy.clone(),
            observer: self.observer.clone(),
            timer: self.timer.clone(),
        }
    }
}

impl<B: Backend + fmt::Debug, T: Timer + fmt::Debug> fmt::Debug for AsyncIdempotency<B, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncIdempotency")
            .field("backend", &self.backend)
            .field("policy", &self.policy)
            .field("observer", &self.observer)
            .field("timer", &self.timer)
            .finish()
    }
}
