//! [`BlockingBackend`]: every [`Backend`] for blocking code.

use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::claim::Claim;
use crate::error::Error;
use crate::record::Record;
use crate::response::Response;
use crate::token::ClaimToken;

/// A [`Backend`]'s operations for blocking code: what [`Idempotency`](crate::Idempotency)
/// runs on. Each call blocks the calling thread until the operation is answered.
///
/// It is implemented once, for every `Backend`, and cannot be implemented otherwise: a
/// backend author writes the async trait only. Each call polls the backend's future on
/// the calling thread, and parks the thread only if it is pending, so an operation that
/// is ready at once (every operation of the in-memory backend but a wait on a key in
/// flight) costs no more than a function call. A wait parks until the backend wakes it
/// (a completion) or its own timer does.
///
/// Call it from threads, not from inside an async task: a parked thread cannot serve its
/// executor. A backend picked at run time is a [`DynBackend`](crate::DynBackend), which
/// is a `Backend` and so a `BlockingBackend` too.
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{BlockingBackend, Claim, InMemoryBackend, Response};
///
/// let backend = InMemoryBackend::new();
/// let lease = Duration::from_secs(30);
/// let Claim::New(token) = backend.claim("charge-42", "fp", 1, lease)? else { unreachable!() };
///
/// let waiter = {
///     let backend = backend.clone();
///     std::thread::spawn(move || backend.wait_for_completion("charge-42", Duration::from_secs(10)))
/// };
/// let ttl = Duration::from_secs(3600);
/// assert!(backend.complete("charge-42", &token, Response::new(200, "ok").into(), ttl)?);
/// let record = waiter.join().unwrap()?.expect("completed");
/// assert_eq!(record.response().unwrap().body, "ok");
/// # Ok::<(), idemkit_core::Error>(())
/// ```
pub trait BlockingBackend: sealed::Sealed + Send + Sync + 'static {
    /// Claims `key`: see [`Backend::claim`].
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error>;

    /// Stores the response for the claim `token` holds: see [`Backend::complete`].
    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error>;

    /// Gives the key up: see [`Backend::release`].
    fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error>;

    /// Extends the lease `token` holds: see [`Backend::renew`].
    fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> Result<bool, Error>;

    /// Blocks until `key` completes, for at most `timeout` on the backend's
    /// [timer](Backend::timer): see [`Backend::wait_for_completion`].
    fn wait_for_completion(&self, key: &str, timeout: Duration) -> Result<Option<Record>, Error>;

    /// The record of `key`: see [`Backend::get`].
    fn get(&self, key: &str) -> Result<Option<Record>, Error>;

    /// The instant the backend judges leases by: see [`Backend::now`].
    fn now(&self) -> Instant;
}

mod sealed {
    /// Keeps [`BlockingBackend`](super::BlockingBackend) to the one implementation below.
    pub trait Sealed {}

    impl<B: super::Backend> Sealed for B {}
}

thread_local! {
    /// Whether this thread is inside a [`BlockingBackend`] call, polling a backend's future.
    static IN_BLOCKING_CALL: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is blocked in a [`BlockingBackend`] call, polling the
/// backend's future itself, rather than running an async task.
///
/// A backend reads it to serve a blocking caller its own way: a backend whose work
/// blocks anyway (file I/O) does it inline instead of handing it to a thread pool and
/// parking the caller, and a networked one picks timers that do not need the caller to
/// be inside an async runtime. It is `false` on every thread but one parked in a
/// `BlockingBackend` call.
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{in_blocking_call, BlockingBackend, InMemoryBackend};
///
/// assert!(!in_blocking_call());
/// let backend = InMemoryBackend::new();
/// assert!(BlockingBackend::get(&backend, "k")?.is_none());
/// assert!(!in_blocking_call(), "only while a call runs");
/// # Ok::<(), idemkit_core::Error>(())
/// ```
pub fn in_blocking_call() -> bool {
    IN_BLOCKING_CALL.with(Cell::get)
}

/// Polls `future` on this thread and parks the thread only while it is pending, with
/// [`in_blocking_call`] true meanwhile.
fn block<F: Future>(future: F) -> F::Output {
    /// Puts the flag back as it was, even if the future panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_BLOCKING_CALL.with(|flag| flag.set(self.0));
        }
    }
    let _restore = Restore(IN_BLOCKING_CALL.with(|flag| flag.replace(true)));
    // Most operations are ready at once (all of the in-memory backend's but a wait):
    // one poll without a waker answers them, and only a pending one takes a parker. A
    // future polled again registers the parker's waker then, as every future must.
    let mut future = std::pin::pin!(future);
    let mut first = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut first) {
        Poll::Ready(output) => output,
        Poll::Pending => park_until_ready(future),
    }
}

/// The rare path of [`block`]: an operation that must wait (a wait on a key in flight, a
/// round trip to a server) parks the thread until its backend wakes it. Kept out of line
/// so that the path of an operation ready at once stays short.
#[cold]
#[inline(never)]
fn park_until_ready<F: Future>(future: std::pin::Pin<&mut F>) -> F::Output {
    futures_lite::future::block_on(future)
}

impl<B: Backend> BlockingBackend for B {
    fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        block(Backend::claim(
            self,
            key,
            fingerprint,
            fingerprint_version,
            lease_ttl,
        ))
    }

    fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        response: Arc<Response>,
        expires_after: Duration,
    ) -> Result<bool, Error> {
        block(Backend::complete(self, key, token, response, expires_after))
    }

    fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        block(Backend::release(self, key, token))
    }

    fn renew(&self, key: &str, token: &ClaimToken, lease_ttl: Duration) -> Result<bool, Error> {
        block(Backend::renew(self, key, token, lease_ttl))
    }

    fn wait_for_completion(&self, key: &str, timeout: Duration) -> Result<Option<Record>, Error> {
        block(Backend::wait_for_completion(self, key, timeout))
    }

    fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        block(Backend::get(self, key))
    }

    fn now(&self) -> Instant {
        Backend::now(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InMemoryBackend;

    /// A backend's future sees the flag while a blocking call polls it, and not after,
    /// not even after a panic inside the call.
    #[test]
    fn the_flag_is_set_only_while_a_blocking_call_polls() {
        assert!(!in_blocking_call());
        let seen = block(async { in_blocking_call() });
        assert!(seen);
        assert!(!in_blocking_call());
        let panicked = std::panic::catch_unwind(|| block(async { panic!("inside") }));
        assert!(panicked.is_err());
        assert!(!in_blocking_call(), "restored after a panic");
        let async_side = futures_lite::future::block_on(async { in_blocking_call() });
        assert!(!async_side, "a plain executor is not a blocking call");
        let backend = InMemoryBackend::new();
        assert!(BlockingBackend::get(&backend, "k").unwrap().is_none());
    }
}
