//! What the Redis integration tests share: backends on a test server, each in a
//! namespace of its own, and bounded waiting for a backend to work again.
#![allow(dead_code)] // each test binary uses a part

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use idemkit_core::{Backend, BlockingBackend, Claim, ClaimToken, Error, Record};
use idemkit_redis::{RedisBackend, RedisBuilder};

/// How long a test waits for something that should happen "soon" before calling it a
/// hang: far beyond any healthy figure, so a slow shared machine never trips it.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// A lease long enough that it never lapses during a test unless the test wants it to.
pub const LEASE: Duration = Duration::from_secs(60);

/// A namespace no other test (or process) uses.
pub fn namespace(tag: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "t-{tag}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A builder for `url` in a fresh namespace, with a short command timeout so that
/// failures show quickly.
pub fn builder(url: &str, tag: &str) -> RedisBuilder {
    RedisBackend::builder()
        .url(url)
        .namespace(namespace(tag))
        .command_timeout(Duration::from_millis(500))
        .connect_timeout(Duration::from_secs(2))
}

/// Retries a claim of a fresh key (then releases it) until the backend works again, for
/// at most [`HANG_GUARD`]; returns how many attempts failed first.
pub async fn until_working(backend: &RedisBackend) -> usize {
    let give_up = Instant::now() + HANG_GUARD;
    let mut failed = 0;
    loop {
        let probe = format!("probe-{failed}");
        match Backend::claim(backend, &probe, "fp", 1, LEASE).await {
            Ok(Claim::New(token)) => {
                assert!(Backend::release(backend, &probe, &token).await.unwrap());
                return failed;
            }
            Ok(other) => panic!("a fresh probe key was not new: {other:?}"),
            Err(Error::Storage(_)) if Instant::now() < give_up => {
                failed += 1;
                async_io::Timer::after(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("the backend did not work again within {HANG_GUARD:?}: {error}"),
        }
    }
}

/// [`until_working`] for blocking code.
pub fn until_working_blocking(backend: &RedisBackend) -> usize {
    let give_up = Instant::now() + HANG_GUARD;
    let mut failed = 0;
    loop {
        let probe = format!("probe-{failed}");
        match BlockingBackend::claim(backend, &probe, "fp", 1, LEASE) {
            Ok(Claim::New(token)) => {
                assert!(BlockingBackend::release(backend, &probe, &token).unwrap());
                return failed;
            }
            Ok(other) => panic!("a fresh probe key was not new: {other:?}"),
            Err(Error::Storage(_)) if Instant::now() < give_up => {
                failed += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(error) => panic!("the backend did not work again within {HANG_GUARD:?}: {error}"),
        }
    }
}

/// Whether `error` is a storage error whose source is a Redis error.
pub fn is_storage(error: &Error) -> bool {
    match error {
        Error::Storage(source) => source.downcast_ref::<idemkit_redis::RedisError>().is_some(),
        _ => false,
    }
}

/// Whether `error` is a storage error that says no reply came in time.
pub fn is_timeout(error: &Error) -> bool {
    match error {
        Error::Storage(source) => source
            .downcast_ref::<idemkit_redis::RedisError>()
            .is_some_and(idemkit_redis::RedisError::is_timeout),
        _ => false,
    }
}

/// A private `redis-server` of the test's own, or `None` (a skip) without Redis
/// installed (`redis_harness::available` fails instead when Redis is required).
pub fn server() -> Option<redis_harness::RedisServer> {
    redis_harness::available()
        .then(|| redis_harness::RedisServer::start().expect("a test server starts"))
}

/// Claims the fresh key `key` with a long lease, and its token: a key that is not new
/// fails the test.
pub async fn claim_new(backend: &RedisBackend, key: &str) -> ClaimToken {
    match Backend::claim(backend, key, "fp", 1, LEASE).await.unwrap() {
        Claim::New(token) => token,
        other => panic!("{key} was not new: {other:?}"),
    }
}

/// A task that waits on `backend` for `key`'s completion for at most `timeout`.
pub fn spawn_waiter(
    backend: &RedisBackend,
    key: &str,
    timeout: Duration,
) -> tokio::task::JoinHandle<Result<Option<Record>, Error>> {
    let (backend, key) = (backend.clone(), key.to_owned());
    tokio::spawn(async move { Backend::wait_for_completion(&backend, &key, timeout).await })
}
