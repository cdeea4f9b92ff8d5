//! A replay of a completed key allocates nothing: not in the `Store`, not in the
//! in-memory backend, not through either executor's `run`. The store compares the
//! fingerprint itself and hands back the shared stored response (`Claim::Completed`
//! carries a `Completed`, not a `Record` with copies of the key and the fingerprint), and
//! the executors pass that `Arc` on.
//!
//! A counting global allocator of this test binary's own counts the allocation calls
//! made by the current thread (a thread-local count, so the test harness's other threads
//! do not disturb it) around one replay.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::convert::Infallible;
use std::time::{Duration, Instant};

use idemkit_core::{
    AsyncIdempotency, BlockingBackend, Claim, Decision, Fingerprint, Idempotency, InMemoryBackend,
    Key, Response, Store,
};

thread_local! {
    /// Allocation calls (`alloc`, `alloc_zeroed`, `realloc`) made by this thread.
    static CALLS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting each thread's allocation calls.
struct CountingCalls;

fn count_call() {
    // `try_with`: a thread being torn down may still allocate after its count is gone.
    let _ = CALLS.try_with(|calls| calls.set(calls.get() + 1));
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the `GlobalAlloc`
// contract; the count touches no allocator state.
unsafe impl GlobalAlloc for CountingCalls {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_call();
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_call();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from this allocator with `layout`, as the caller promises.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_call();
        // SAFETY: the caller's contract for `realloc` is passed on as is.
        unsafe { System.realloc(pointer, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingCalls = CountingCalls;

/// What `f` returns, and how many allocation calls this thread made while it ran.
fn allocations<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = CALLS.with(Cell::get);
    let result = f();
    (result, CALLS.with(Cell::get) - before)
}

const LEASE: Duration = Duration::from_secs(30);
const TTL: Duration = Duration::from_secs(3600);

/// A body larger than a `Body` keeps inline, so a copy of it would have to allocate.
fn large_response() -> Response {
    Response::new(200, vec![b'r'; 4096])
}

#[test]
fn the_counting_allocator_sees_this_threads_allocations() {
    // The control: without it, a broken count would pass every test below.
    let (_, calls) = allocations(|| std::hint::black_box(vec![1_u8; 64]));
    assert_eq!(calls, 1);
}

#[test]
fn a_store_replay_allocates_nothing() {
    let mut store = Store::new();
    let now = Instant::now();
    // Short names live inside the record; these (over 21 bytes) are boxed, so a replay
    // that copied them into a `Record` would allocate.
    let key = "a key long enough to be kept in an allocation of its own";
    let fingerprint = "a fingerprint long enough too";
    let Claim::New(token) = store.claim(key, fingerprint, 1, LEASE, now).unwrap() else {
        panic!("a fresh key is claimed");
    };
    assert!(store.complete(key, &token, large_response(), TTL, now));

    let (claim, calls) = allocations(|| store.claim(key, fingerprint, 1, LEASE, now));
    assert_eq!(calls, 0, "allocation calls in a store replay");
    let Ok(Claim::Completed(replay)) = claim else {
        panic!("expected a replay, got {claim:?}");
    };
    assert!(replay.same_request());
    assert_eq!(replay.response().body.len(), 4096);

    // Another request with the key: refused, and the store says so without allocating.
    let (claim, calls) = allocations(|| store.claim(key, "another fingerprint", 1, LEASE, now));
    assert_eq!(calls, 0, "allocation calls in a refused replay");
    assert!(!claim.unwrap().completed().unwrap().same_request());
    let claim = store.claim(key, fingerprint, 2, LEASE, now).unwrap();
    assert!(
        !claim.completed().unwrap().same_request(),
        "another scheme version"
    );
}

#[test]
fn an_in_memory_backend_replay_allocates_nothing() {
    let backend = InMemoryBackend::new();
    let key = "a key long enough to be kept in an allocation of its own";
    let Claim::New(token) = BlockingBackend::claim(&backend, key, "fp", 1, LEASE).unwrap() else {
        panic!("a fresh key is claimed");
    };
    assert!(
        BlockingBackend::complete(&backend, key, &token, large_response().into(), TTL).unwrap()
    );

    let (claim, calls) = allocations(|| BlockingBackend::claim(&backend, key, "fp", 1, LEASE));
    assert_eq!(calls, 0, "allocation calls in a backend replay");
    assert!(claim.unwrap().completed().unwrap().same_request());
}

#[test]
fn a_blocking_run_replay_allocates_nothing() {
    let idempotency = Idempotency::new(InMemoryBackend::new());
    let key = Key::new(["POST /orders", "client-key-123"]);
    let fingerprint = Fingerprint::new([r#"{"sku":"A1","qty":2}"#]);
    let first = idempotency
        .run(&key, &fingerprint, |_lease| {
            Ok::<_, Infallible>(large_response())
        })
        .unwrap();
    assert_eq!(first.decision, Decision::New);

    let (retry, calls) = allocations(|| {
        idempotency.run(
            &key,
            &fingerprint,
            |_lease| -> Result<Response, Infallible> {
                unreachable!("a replay does not run the operation")
            },
        )
    });
    assert_eq!(calls, 0, "allocation calls in Idempotency::run's replay");
    let retry = retry.unwrap();
    assert_eq!(retry.decision, Decision::Replayed);
    // The very response stored, shared.
    assert!(std::sync::Arc::ptr_eq(&retry.response, &first.response));
}

#[test]
fn an_async_run_replay_allocates_nothing() {
    let idempotency = AsyncIdempotency::new(InMemoryBackend::new());
    let key = Key::new(["POST /orders", "client-key-123"]);
    let fingerprint = Fingerprint::new([r#"{"sku":"A1","qty":2}"#]);
    // The first `block_on` on a thread sets up its parker; this one also runs the
    // operation.
    let first = futures_lite::future::block_on(idempotency.run(&key, &fingerprint, || async {
        Ok::<_, Infallible>(large_response())
    }))
    .unwrap();
    assert_eq!(first.decision, Decision::New);

    let (retry, calls) = allocations(|| {
        futures_lite::future::block_on(idempotency.run(&key, &fingerprint, || async {
            unreachable!("a replay does not run the operation");
            #[allow(unreachable_code)]
            Ok::<Response, Infallible>(Response::default())
        }))
    });
    assert_eq!(
        calls, 0,
        "allocation calls in AsyncIdempotency::run's replay"
    );
    let retry = retry.unwrap();
    assert_eq!(retry.decision, Decision::Replayed);
    assert!(std::sync::Arc::ptr_eq(&retry.response, &first.response));
}
