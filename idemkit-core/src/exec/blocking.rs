//! [`Idempotency`]: the run-once executor for blocking code, and the [`Lease`] its
//! operations hold.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::blocking::InMemoryBackend;
use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::exec::decide::{self, AfterWait, Next, Settle, StorageFailed};
use crate::exec::heartbeat::Heartbeats;
use crate::exec::observer::{Finished, Observer};
use crate::exec::outcome::{Decision, Event, Outcome, RunError};
use crate::exec::policy::Policy;
use crate::key::{Fingerprint, Key};
use crate::record::Response;
use crate::token::ClaimToken;
use crate::wait::{deadline_after, remaining};

/// Runs an operation once per key on an [`InMemoryBackend`], and gives every duplicate
/// the first result.
///
/// [`run`](Idempotency::run) claims the key; the first caller runs the operation while a
/// heartbeat renews its lease, and stores a cacheable result; a retry replays it, a
/// duplicate that arrives mid-run waits for it, and a request that reuses the key with
/// another fingerprint is refused. Clones share the backend, the policy, the observer
/// and one heartbeat thread, started on the first run that needs it and stopped when the
/// last clone is dropped.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use idemkit_core::{Decision, Fingerprint, Idempotency, InMemoryBackend, Key, Response};
///
/// let idempotency = Idempotency::new(InMemoryBackend::new());
/// let key = Key::new(["tenant-7", "client-key-8c1f"]);
/// let request = Fingerprint::new(["POST", "/charges", "amount=100"]);
/// let charges = AtomicUsize::new(0);
/// let charge = |_lease: &idemkit_core::Lease| {
///     charges.fetch_add(1, Ordering::SeqCst);
///     Ok::<_, std::io::Error>(Response::new(201, "charged"))
/// };
///
/// let first = idempotency.run(&key, &request, charge)?;
/// let retry = idempotency.run(&key, &request, charge)?;
/// assert_eq!((first.decision, retry.decision), (Decision::New, Decision::Replayed));
/// assert_eq!(retry.response.body, b"charged");
/// assert_eq!(charges.load(Ordering::SeqCst), 1);
/// # Ok::<(), idemkit_core::RunError<std::io::Error>>(())
/// ```
pub struct Idempotency<C: Clock = SystemClock> {
    backend: InMemoryBackend<C>,
    policy: Policy,
    observer: Observer,
    heartbeats: Arc<Heartbeats<C>>,
}

/// The claim an operation runs under, as the blocking executor hands it to the
/// operation.
///
/// A blocking operation cannot be interrupted: if its heartbeat fails to renew the lease
/// (the claim was released, or another executor took the key over), the executor marks
/// the lease lost and, when the operation returns, stores nothing and answers
/// [`RunError::LeaseLost`]. An operation with a side effect that must not happen twice
/// should check [`Lease::is_lost`] just before it, and pass the key downstream where it
/// can (fencing protects the stored result, not an effect already performed).
#[derive(Debug)]
pub struct Lease {
    token: Option<ClaimToken>,
    lost: Arc<AtomicBool>,
}

impl Lease {
    fn held(token: ClaimToken) -> Lease {
        Lease {
            token: Some(token),
            lost: Arc::new(AtomicBool::new(false)),
        }
    }

    fn unprotected() -> Lease {
        Lease {
            token: None,
            lost: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether the heartbeat failed to renew this lease: the operation's result will not
    /// be stored, and another executor may run the key.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// The claim's fencing token; `None` when the operation runs without a claim (a
    /// storage failure under [`OnStorageError::FailOpen`](crate::OnStorageError)).
    pub fn token(&self) -> Option<&ClaimToken> {
        self.token.as_ref()
    }
}

/// Releases the claim unless disarmed: on an early return and while a panic unwinds, so
/// a retry is not locked out for a whole lease.
struct ClaimGuard<'a, C: Clock> {
    backend: &'a InMemoryBackend<C>,
    key: &'a str,
    token: Option<&'a ClaimToken>,
}

impl<C: Clock> ClaimGuard<'_, C> {
    /// The claim is settled elsewhere (completed): do not release it.
    fn disarm(mut self) {
        self.token = None;
    }
}

impl<C: Clock> Drop for ClaimGuard<'_, C> {
    fn drop(&mut self) {
        if let Some(token) = self.token {
            // Refused only if the claim is already gone or another's: nothing to undo.
            let _released = self.backend.release(self.key, token);
        }
    }
}

impl<C: Clock> Idempotency<C> {
    /// An executor over `backend` with [`Policy::default`].
    pub fn new(backend: InMemoryBackend<C>) -> Idempotency<C> {
        Idempotency {
            heartbeats: Arc::new(Heartbeats::new(backend.clone())),
            backend,
            policy: Policy::default(),
            observer: Observer::default(),
        }
    }

    /// An executor over `backend` with `policy`, refused with [`Error::InvalidPolicy`] if
    /// the policy cannot work (see [`Policy::validate`]).
    pub fn with_policy(
        backend: InMemoryBackend<C>,
        policy: Policy,
    ) -> Result<Idempotency<C>, Error> {
        policy.validate()?;
        Ok(Idempotency {
            policy,
            ..Idempotency::new(backend)
        })
    }

    /// This executor, calling `f` with the [`Event`] of every run. A panic in `f` is
    /// caught and does not affect the run.
    #[must_use]
    pub fn on_event(mut self, f: impl Fn(&Event) + Send + Sync + 'static) -> Idempotency<C> {
        self.observer = Observer::new(f);
        self
    }

    /// The backend the executor runs on.
    pub fn backend(&self) -> &InMemoryBackend<C> {
        &self.backend
    }

    /// The executor's policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Runs `op` once for `key`, or returns the result of the run that did.
    ///
    /// - The key is free, or its owner's lease lapsed: `op` runs, under a lease renewed
    ///   by the heartbeat. A cacheable response is stored and returned (`New` or
    ///   `Reclaimed`; `ReclaimedLoss` if another executor took the key over meanwhile,
    ///   in which case it is not stored). A response that is not cacheable is returned
    ///   and the claim released (`NotCached`). An error releases the claim and is
    ///   returned as [`RunError::Handler`]. A panic releases the claim and continues.
    /// - The key holds this request's result: it is returned (`Replayed`), shared.
    /// - Another run of this request is in flight: this one waits for its result
    ///   (`ReplayedAfterWait`) for up to the policy's `wait_timeout` in total, and takes
    ///   the key over if that run releases it or its lease lapses; otherwise
    ///   [`RunError::InProgress`].
    /// - The key belongs to another fingerprint: [`RunError::PayloadMismatch`].
    /// - If the heartbeat could not renew the lease, the result is not stored:
    ///   [`RunError::LeaseLost`] (see [`Lease`]).
    /// - A backend failure is [`RunError::Storage`], or under
    ///   [`OnStorageError::FailOpen`](crate::OnStorageError) runs `op` unprotected.
    ///
    /// Every run reports exactly one [`Event`] to the observer, a panicking one included.
    pub fn run<E>(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: impl FnOnce(&Lease) -> Result<Response, E>,
    ) -> Result<Outcome, RunError<E>> {
        let started = Instant::now();
        let finished = self.execute(key, fingerprint, op);
        self.observer.finish(
            key,
            self.policy.fingerprint_version,
            started.elapsed(),
            finished,
        )
    }

    /// Claims, waits and replays until this run has a result; the operation's panic, if
    /// any, comes back as `Err` once its claim is released.
    fn execute<E>(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: impl FnOnce(&Lease) -> Result<Response, E>,
    ) -> Finished<E> {
        let policy = &self.policy;
        let version = policy.fingerprint_version;
        let deadline = deadline_after(Instant::now(), policy.wait_timeout);
        let mut waited = false;
        loop {
            let claim = match self.backend.claim(
                key.as_str(),
                fingerprint.as_str(),
                version,
                policy.lease_ttl,
            ) {
                Ok(claim) => claim,
                Err(error) => {
                    return match decide::storage_failed(error, policy.on_storage_error) {
                        StorageFailed::Refuse(refusal) => Ok(Err(refusal)),
                        StorageFailed::RunUnprotected => {
                            catch_unwind(AssertUnwindSafe(|| op(&Lease::unprotected())))
                                .map(decide::unprotected)
                        }
                    };
                }
            };
            let lease_until = match decide::on_claim(claim, fingerprint, version, waited) {
                Next::Run { token, decision } => {
                    return self.run_claimed(key.as_str(), token, decision, op);
                }
                Next::Replay(outcome) => return Ok(Ok(outcome)),
                Next::Refuse => return Ok(Err(RunError::PayloadMismatch)),
                Next::Wait { lease_until } => lease_until,
            };
            let left = remaining(deadline, Instant::now());
            if left.is_zero() {
                let retry_after = decide::retry_after(lease_until, self.backend.clock().now());
                return Ok(Err(RunError::InProgress { retry_after }));
            }
            waited = true;
            let completed = self.backend.wait_for_completion(key.as_str(), left);
            match decide::after_wait(completed, fingerprint, version) {
                AfterWait::Replay(outcome) => return Ok(Ok(outcome)),
                AfterWait::Refuse => return Ok(Err(RunError::PayloadMismatch)),
                AfterWait::ClaimAgain => {}
            }
        }
    }

    /// Runs `op` under the claim `token` holds, with the heartbeat, and settles it.
    fn run_claimed<E>(
        &self,
        key: &str,
        token: ClaimToken,
        ran: Decision,
        op: impl FnOnce(&Lease) -> Result<Response, E>,
    ) -> Finished<E> {
        let policy = &self.policy;
        let lease = Lease::held(token.clone());
        let guard = ClaimGuard {
            backend: &self.backend,
            key,
            token: Some(&token),
        };
        let heartbeat = policy.heartbeat_interval().map(|interval| {
            let lost = Arc::clone(&lease.lost);
            self.heartbeats
                .register(key, &token, interval, policy.lease_ttl, lost)
        });
        let result = catch_unwind(AssertUnwindSafe(|| op(&lease)));
        // Stop renewing before settling: a completed or released claim cannot be renewed.
        drop(heartbeat);
        // On a panic, the guard releases the claim on its way out.
        let result = result?;
        Ok(
            match decide::settle(result, policy.cacheable, lease.is_lost()) {
                Settle::Store(response) => {
                    // The caller's copy; the store keeps its own, shared by every replay.
                    let returned = Arc::new(response.clone());
                    let stored = self
                        .backend
                        .complete(key, &token, response, policy.expires_after);
                    guard.disarm();
                    decide::after_complete(Ok(stored), returned, ran, policy.on_storage_error)
                }
                // The guard releases the claim: a retry runs again.
                Settle::Release(outcome) => Ok(outcome),
                Settle::Fail(error) => Err(error),
            },
        )
    }
}

impl<C: Clock> Clone for Idempotency<C> {
    fn clone(&self) -> Idempotency<C> {
        Idempotency {
            backend: self.backend.clone(),
            policy: self.policy.clone(),
            observer: self.observer.clone(),
            heartbeats: Arc::clone(&self.heartbeats),
        }
    }
}

impl<C: Clock> fmt::Debug for Idempotency<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotency")
            .field("backend", &self.backend)
            .field("policy", &self.policy)
            .field("observer", &self.observer)
            .field("heartbeats", &self.heartbeats)
            .finish()
    }
}
