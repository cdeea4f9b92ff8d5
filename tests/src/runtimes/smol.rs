//! [`SmolRuntime`]: smol, with spawned tasks on a two-thread executor.

use std::future::Future;
use std::sync::Once;
use std::thread;
use std::time::Duration;

use futures_lite::future;
use smol::Executor;

use crate::runtime::Runtime;

/// smol as a multi-threaded app runs it: vectors run in `smol::block_on`, spawned tasks
/// on an executor shared by two threads (smol's own global executor has one by default,
/// which would never let two tasks race).
#[derive(Debug)]
pub struct SmolRuntime;

/// How many threads run spawned tasks.
const EXECUTOR_THREADS: usize = 2;

fn executor() -> &'static Executor<'static> {
    static EXECUTOR: Executor<'static> = Executor::new();
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        for _ in 0..EXECUTOR_THREADS {
            thread::Builder::new()
                .name("conformance-smol".into())
                .spawn(|| smol::block_on(EXECUTOR.run(future::pending::<()>())))
                .expect("the OS refused to start a thread");
        }
    });
    &EXECUTOR
}

impl Runtime for SmolRuntime {
    fn block_on<F: Future>(future: F) -> F::Output {
        smol::block_on(future)
    }

    fn spawn<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        // A smol task re-raises its panic where it is awaited.
        executor().spawn(future)
    }

    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        let timer = smol::Timer::after(duration);
        async move {
            timer.await;
        }
    }
}
