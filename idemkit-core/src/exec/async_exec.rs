//! [`AsyncIdempotency`]: the run-once executor for async code, over any [`Backend`].

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures_lite::FutureExt;

use crate::backend::Backend;
use crate::exec::decide::Beat;
use crate::exec::observer::Observer;
use crate::exec::outcome::{Event, Outcome, RunError};
use crate::exec::policy::Policy;
use crate::exec::run_loop::{Finished, Held, Ran, RunLoop, Step};
use crate::key::{Fingerprint, Key};
use crate::memory::InMemoryBackend;
use crate::response::Response;
use crate::rt::Timer;
use crate::token::ClaimToken;

/// Runs an operation once per key on a [`Backend`], and gives every duplicate the first
/// result: the async twin of [`Idempotency`](crate::Idempotency), with the same rules
/// (both follow one run loop).
///
/// It runs on any executor: it measures waits and paces heartbeats on its backend's
/// [`Timer`], and leases are judged by the backend. `idemkit-tokio` and `idemkit-smol`
/// re-export it under this name.
///
/// The heartbeat runs inside each run's own future, raced against the operation's: no
/// task is spawned, and when a renewal fails the operation's future is dropped, so the
/// operation is cancelled at its next await point.
///
/// ```
/// use std::convert::Infallible;
/// use idemkit_core::{AsyncIdempotency, Decision, Fingerprint, InMemoryBackend, Key, Response};
///
/// let idempotency = AsyncIdempotency::new(InMemoryBackend::new());
/// let (key, request) = (Key::new(["order-9"]), Fingerprint::new(["POST", "/orders"]));
/// futures_lite::future::block_on(async {
///     let create = || async { Ok::<_, Infallible>(Response::new(201, "created")) };
///     let first = idempotency.run(&key, &request, create).await.unwrap();
///     let retry = idempotency.run(&key, &request, create).await.unwrap();
///     assert_eq!((first.decision, retry.decision), (Decision::New, Decision::Replayed));
/// });
/// ```
pub struct AsyncIdempotency<B: Backend = InMemoryBackend> {
    inner: Arc<Inner<B>>,
    observer: Observer,
}

/// What clones share.
struct Inner<B> {
    backend: B,
    policy: Policy,
    timer: Arc<dyn Timer>,
}

/// How the race between an operation and its heartbeat ended.
enum Race<R> {
    /// The operation returned (or panicked) first.
    Finished(R),
    /// A renewal failed first; the operation's future was dropped.
    Lost,
}

/// Releases a claim if the run's future is dropped while it holds one (cancelled). It
/// cannot wait there, so it polls the release once and gives up if that does not finish
/// it: the in-memory backend finishes on the first poll; for others the lease lapses on
/// its own.
struct ReleaseOnDrop<'a, B: Backend> {
    backend: &'a B,
    key: &'a str,
    token: Option<ClaimToken>,
}

impl<B: Backend> ReleaseOnDrop<'_, B> {
    /// The run settled the claim itself: nothing to do on drop.
    fn disarm(mut self) {
        self.token = None;
    }
}

impl<B: Backend> Drop for ReleaseOnDrop<'_, B> {
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            let release = pin!(self.backend.release(self.key, &token));
            let _ = release.poll(&mut Context::from_waker(Waker::noop()));
        }
    }
}

impl<B: Backend> AsyncIdempotency<B> {
    /// An executor over `backend` with [`Policy::default`].
    pub fn new(backend: B) -> AsyncIdempotency<B> {
        AsyncIdempotency::build(backend, Policy::default(), Observer::default())
    }

    /// An executor over `backend` with `policy` (valid, as every built
    /// [`Policy`] is: see [`PolicyBuilder::build`](crate::PolicyBuilder::build)).
    pub fn with_policy(backend: B, policy: Policy) -> AsyncIdempotency<B> {
        AsyncIdempotency::build(backend, policy, Observer::default())
    }

    fn build(backend: B, policy: Policy, observer: Observer) -> AsyncIdempotency<B> {
        let timer = backend.timer();
        AsyncIdempotency {
            inner: Arc::new(Inner {
                backend,
                policy,
                timer,
            }),
            observer,
        }
    }

    /// This executor, calling `f` with the [`Event`] of every run. A panic in `f` is
    /// caught and does not affect the run. Clones made before keep their observer.
    #[must_use]
    pub fn on_event(mut self, f: impl Fn(&Event) + Send + Sync + 'static) -> Self {
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

    /// Runs `op` once for `key`, or returns the result of the run that did: the rules of
    /// [`Idempotency::run`](crate::Idempotency::run), with two differences.
    ///
    /// - A failed renewal drops the operation's future (cancelling it at its next await
    ///   point), releases the claim and returns [`RunError::LeaseLost`].
    /// - If this future is itself dropped while the operation runs, the claim is released
    ///   without waiting: the release is polled once, which is enough for the in-memory
    ///   backend; with others the lease lapses instead. A dropped run reports no event.
    ///
    /// The future is `Send` whenever `op`, its future and its error are, so it can be
    /// spawned.
    pub fn run<E, F, Fut>(
        &self,
        key: &Key,
        fingerprint: &Fingerprint,
        op: F,
    ) -> impl Future<Output = Result<Outcome, RunError<E>>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Response, E>>,
    {
        // Not an `async fn`: that would keep its arguments twice in the future (as
        // arguments, then as locals), and the operation is the largest of them. Here the
        // operation is moved in once and lent to `execute`.
        let mut op = Some(op);
        async move {
            let inner = &*self.inner;
            let now = || inner.timer.now();
            let started = self.observer.start(now);
            let finished = self.execute(key.as_str(), fingerprint, &mut op).await;
            let version = inner.policy.fingerprint_version();
            self.observer.finish(key, version, started, now, finished)
        }
    }

    /// Performs the steps the run loop asks for until it is done; takes the operation
    /// out of `op` to run it.
    async fn execute<E, F, Fut>(
        &self,
        key: &str,
        fingerprint: &Fingerprint,
        op: &mut Option<F>,
    ) -> Finished<E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Response, E>>,
    {
        let Inner {
            backend,
            policy,
            timer,
            ..
        } = &*self.inner;
        let (mut run, mut step) = RunLoop::start(policy, fingerprint);
        // Armed while this run holds a claim it has not settled.
        let mut guard: Option<ReleaseOnDrop<'_, B>> = None;
        loop {
            step = match step {
                Step::Claim => {
                    let issued_at = backend.now();
                    let claim = backend
                        .claim(
                            key,
                            fingerprint.as_str(),
                            policy.fingerprint_version(),
                            policy.lease_ttl(),
                        )
                        .await;
                    run.claimed(claim, issued_at, || timer.now())
                }
                Step::Wait { timeout } => {
                    // Boxed: only a duplicate waits, and inline the wait would make
                    // every run's future as large.
                    run.waited(Box::pin(backend.wait_for_completion(key, timeout)).await)
                }
                Step::Run(held) => {
                    let op = op.take().expect("the run loop runs the operation once");
                    guard = held.as_ref().map(|held| ReleaseOnDrop {
                        backend,
                        key,
                        token: Some(held.token.clone()),
                    });
                    run.ran(self.run_op(key, held, op).await)
                }
                Step::Complete { token, response } => {
                    let stored = backend
                        .complete(key, &token, Arc::clone(&response), policy.expires_after())
                        .await;
                    if let Some(guard) = guard.take() {
                        guard.disarm();
                    }
                    run.completed(stored, response)
                }
                Step::Release { token } => {
                    // Refused or failed: the claim is already gone, or its lease lapses.
                    let _released = backend.release(key, &token).await;
                    if let Some(guard) = guard.take() {
                        guard.disarm();
                    }
                    run.released()
                }
                Step::Done(finished) => return finished,
            };
        }
    }

    /// Runs `op` under `held`, raced against its heartbeat, or without a claim.
    async fn run_op<E, F, Fut>(&self, key: &str, held: Option<Held>, op: F) -> Ran<E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Response, E>>,
    {
        // `op()` is called inside the caught future: a closure that panics before
        // returning its future is a panicking operation too.
        let operation = async {
            match AssertUnwindSafe(async { op().await }).catch_unwind().await {
                Ok(result) => Race::Finished(Ran::Returned(result)),
                Err(panic) => Race::Finished(Ran::Panicked(panic)),
            }
        };
        let Some(held) = held else {
            return match operation.await {
                Race::Finished(ran) => ran,
                Race::Lost => Ran::LeaseLost,
            };
        };
        // The heartbeat starts once the operation is pending, boxed: an operation that
        // is ready at once (most are) neither allocates it nor carries it inline. The
        // operation is polled first, so a result ready at the same time as a failed
        // renewal wins; otherwise the loser's future is dropped here.
        let mut operation = pin!(operation);
        let mut start = Some(move || Box::pin(self.heartbeat(key, held)));
        let mut heartbeat = None;
        let race = std::future::poll_fn(|cx| {
            if let Poll::Ready(race) = operation.as_mut().poll(cx) {
                return Poll::Ready(race);
            }
            if heartbeat.is_none() {
                heartbeat = start.take().map(|start| start());
            }
            match heartbeat.as_mut().map(|beating| beating.as_mut().poll(cx)) {
                Some(Poll::Ready(())) => Poll::Ready(Race::Lost),
                _ => Poll::Pending,
            }
        });
        match race.await {
            Race::Finished(ran) => ran,
            Race::Lost => Ran::LeaseLost,
        }
    }

    /// Renews the lease every heartbeat interval; returns only once it is lost (never,
    /// without a heartbeat).
    async fn heartbeat(&self, key: &str, held: Held) {
        let Held {
            token,
            mut lease,
            interval,
        } = held;
        let Some(interval) = interval else {
            return std::future::pending().await;
        };
        let Inner {
            backend,
            policy,
            timer,
            ..
        } = &*self.inner;
        loop {
            timer.sleep(interval).await;
            let issued_at = backend.now();
            let renewed = backend.renew(key, &token, policy.lease_ttl()).await;
            if lease.after_renew(renewed, issued_at, backend.now()) == Beat::Lost {
                return;
            }
        }
    }
}

impl<B: Backend> Clone for AsyncIdempotency<B> {
    fn clone(&self) -> Self {
        AsyncIdempotency {
            inner: Arc::clone(&self.inner),
            observer: self.observer.clone(),
        }
    }
}

impl<B: Backend + fmt::Debug> fmt::Debug for AsyncIdempotency<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncIdempotency")
            .field("backend", &self.inner.backend)
            .field("policy", &self.inner.policy)
            .field("observer", &self.observer)
            .finish_non_exhaustive()
    }
}
