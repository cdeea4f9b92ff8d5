//! [`Idempotency`]: the run-once executor for blocking code, and the [`Lease`] its
//! operations hold.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::backend::BlockingBackend;
use crate::exec::heartbeat::Heartbeats;
use crate::exec::observer::Observer;
use crate::exec::outcome::{Event, Outcome, RunError};
use crate::exec::policy::Policy;
use crate::exec::run_loop::{Finished, Held, Ran, RunLoop, Step};
use crate::key::{Fingerprint, Key};
use crate::memory::InMemoryBackend;
use crate::response::Response;
use crate::token::ClaimToken;

/// Runs an operation once per key on a [`BlockingBackend`], and gives every duplicate
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
/// assert_eq!(retry.response.body, "charged");
/// assert_eq!(charges.load(Ordering::SeqCst), 1);
/// # Ok::<(), idemkit_core::RunError<std::io::Error>>(())
/// ```
pub struct Idempotency<B: BlockingBackend = InMemoryBackend> {
    inner: Arc<Inner<B>>,
    observer: Observer,
}

/// What clones share.
struct Inner<B: BlockingBackend> {
    backend: Arc<B>,
    policy: Policy,
    heartbeats: Heartbeats<B>,
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

impl<B: BlockingBackend> Idempotency<B> {
    /// An executor over `backend` with [`Policy::default`].
    pub fn new(backend: B) -> Idempotency<B> {
        Idempotency::build(backend, Policy::default(), Observer::default())
    }

    /// An executor over `backend` with `policy` (valid, as every built
    /// [`Policy`] is: see [`PolicyBuilder::build`](crate::PolicyBuilder::build)).
    pub fn with_policy(backend: B, policy: Policy) -> Idempotency<B> {
        Idempotency::build(backend, policy, Observer::default())
    }

    fn build(backend: B, policy: Policy, observer: Observer) -> Idempotency<B> {
        let backend = Arc::new(backend);
        Idempotency {
            inner: Arc::new(Inner {
                heartbeats: Heartbeats::new(Arc::clone(&backend)),
                backend,
                policy,
            }),
            observer,
        }
    }

    /// This executor, calling `f` with the [`Event`] of every run. A panic in `f` is
    /// caught and does not affect the run. Clones made before keep their observer.
    #[must_use]
    pub fn on_event(mut self, f: impl Fn(&Event) + Send + Sync + 'static) -> Idempotency<B> {
        self.observer = Observer::new(f);
        self
    }

    /// The backend the executor runs on.
    pub fn backend(&self) -> &B {
        &self.inner.backend
    }

    /// The executor's policy.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// Runs `op` once for `key`, or returns the result of the run that did.
    ///
    /// - The key is free, or its owner's lease lapsed: `op` runs, under a lease renewed
    ///   by the heartbeat. A cacheable response is stored and returned (`New` or
    ///   `Reclaimed`; `ReclaimedLoss` if another executor took the key over meanwhile,
    ///   in which case it is not stored). A response that is not cacheable is returned
    ///   and the claim released (`NotCached`). An error releases the claim and is
    ///   returned as [`RunError::HandlerFailed`]. A panic releases the claim and
    ///   continues.
    /// - The key holds this request's result: it is returned (`Replayed`), shared.
    /// - Another run of this request is in flight: this one waits for its result
    ///   (`ReplayedAfterWait`) for up to the policy's `wait_timeout` in total, and takes
    ///   the key over if that run releases it or its lease lapses; otherwise
    ///   [`RunError::InProgress`].
    /// - The key belongs to another fingerprint: [`RunError::PayloadMismatch`].
    /// - If the heartbeat could not renew the lease, the result is not stored:
    ///   [`RunError::LeaseLost`] (see [`Lease`]).
    /// - A backend failure is [`RunError::StorageFailed`], or under
    ///   [`OnStorageError::FailOpen`](crate::OnStorageError) runs `op` unprotected.
    ///
    /// Every run reports exactly one [`Event`] to the observer, a panicking one included.
    pub fn run<E>(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: impl FnOnce(&Lease) -> Result<Response, E>,
    ) -> Result<Outcome, RunError<E>> {
        let started = self.observer.start(Instant::now);
        let finished = self.execute(key.as_str(), fingerprint, op);
        let version = self.inner.policy.fingerprint_version();
        self.observer
            .finish(key, version, started, Instant::now, finished)
    }

    /// Performs the steps the run loop asks for until it is done.
    fn execute<E>(
        &self,
        key: &str,
        fingerprint: &Fingerprint,
        op: impl FnOnce(&Lease) -> Result<Response, E>,
    ) -> Finished<E> {
        let Inner {
            backend, policy, ..
        } = &*self.inner;
        let (mut run, mut step) = RunLoop::start(policy, fingerprint);
        let mut op = Some(op);
        loop {
            step = match step {
                Step::Claim => {
                    let issued_at = backend.now();
                    let claim = backend.claim(
                        key,
                        fingerprint.as_str(),
                        policy.fingerprint_version(),
                        policy.lease_ttl(),
                    );
                    run.claimed(claim, issued_at, Instant::now)
                }
                Step::Wait { timeout } => run.waited(backend.wait_for_completion(key, timeout)),
                Step::Run(held) => {
                    let op = op.take().expect("the run loop runs the operation once");
                    run.ran(self.run_op(key, held, op))
                }
                Step::Complete { token, response } => {
                    let stored = backend.complete(
                        key,
                        &token,
                        Arc::clone(&response),
                        policy.expires_after(),
                    );
                    run.completed(stored, response)
                }
                Step::Release { token } => {
                    // Refused or failed: the claim is already gone, or its lease lapses.
                    let _released = backend.release(key, &token);
                    run.released()
                }
                Step::Done(finished) => return finished,
            };
        }
    }

    /// Runs `op` under `held` (with its heartbeat), or without a claim.
    fn run_op<E>(
        &self,
        key: &str,
        held: Option<Held>,
        op: impl FnOnce(&Lease) -> Result<Response, E>,
    ) -> Ran<E> {
        let lost = Arc::new(AtomicBool::new(false));
        let Some(held) = held else {
            let lease = Lease { token: None, lost };
            return caught(|| op(&lease));
        };
        let lease = Lease {
            token: Some(held.token.clone()),
            lost: Arc::clone(&lost),
        };
        let heartbeat = held.interval.map(|interval| {
            self.inner.heartbeats.register(
                key,
                &held.token,
                interval,
                self.inner.policy.lease_ttl(),
                held.lease,
                lost,
            )
        });
        let ran = caught(|| op(&lease));
        // Stop renewing before settling: a completed or released claim cannot be renewed.
        drop(heartbeat);
        match ran {
            Ran::Returned(_) if lease.is_lost() => Ran::LeaseLost,
            ran => ran,
        }
    }
}

/// Runs `op`, catching its panic.
fn caught<E>(op: impl FnOnce() -> Result<Response, E>) -> Ran<E> {
    match catch_unwind(AssertUnwindSafe(op)) {
        Ok(result) => Ran::Returned(result),
        Err(panic) => Ran::Panicked(panic),
    }
}

impl<B: BlockingBackend> Clone for Idempotency<B> {
    fn clone(&self) -> Idempotency<B> {
        Idempotency {
            inner: Arc::clone(&self.inner),
            observer: self.observer.clone(),
        }
    }
}

impl<B: BlockingBackend + fmt::Debug> fmt::Debug for Idempotency<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotency")
            .field("backend", &self.inner.backend)
            .field("policy", &self.inner.policy)
            .field("observer", &self.observer)
            .field("heartbeats", &self.inner.heartbeats)
            .finish()
    }
}
