//! [`Runtime`]: what a vector needs from whatever drives it.

use std::future::Future;
use std::time::Duration;

/// The executor a target's vectors run on: threads for the blocking backend, tokio or
/// smol for the async ones.
///
/// Everything is an associated function: a vector names its target's runtime as a type
/// and never holds an instance.
pub trait Runtime: 'static {
    /// Runs `future` to completion on the current thread, inside the runtime.
    fn block_on<F: Future>(future: F) -> F::Output;

    /// Runs `future` concurrently with its caller (on another thread where the runtime
    /// has several). The returned handle resolves to its output and re-raises its panic.
    /// Await it: dropping it may cancel the work.
    fn spawn<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    /// Completes once `duration` of real time has passed.
    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send + 'static;
}
