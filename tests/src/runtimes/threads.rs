//! [`Threads`]: the runtime of the blocking target, plain OS threads.

use std::future::Future;
use std::thread;
use std::time::Duration;

use crate::runtime::Runtime;
use crate::thread_task::on_thread;

/// A "runtime" of plain threads: every spawned task and every sleep is an OS thread of
/// its own, so concurrent vectors really race on threads.
#[derive(Debug)]
pub struct Threads;

impl Runtime for Threads {
    fn block_on<F: Future>(future: F) -> F::Output {
        futures_lite::future::block_on(future)
    }

    fn spawn<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        on_thread(move || futures_lite::future::block_on(future))
    }

    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        on_thread(move || thread::sleep(duration))
    }
}
