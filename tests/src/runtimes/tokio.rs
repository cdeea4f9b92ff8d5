//! [`TokioRuntime`]: a multi-thread tokio runtime.

use std::future::Future;
use std::panic;
use std::time::Duration;

use crate::runtime::Runtime;

/// A fresh multi-thread tokio runtime per vector, with its timer and its I/O driver
/// enabled (a networked backend needs both).
#[derive(Debug)]
pub struct TokioRuntime;

impl Runtime for TokioRuntime {
    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
            .block_on(future)
    }

    fn spawn<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let handle = tokio::spawn(future);
        async move {
            match handle.await {
                Ok(output) => output,
                Err(error) if error.is_panic() => panic::resume_unwind(error.into_panic()),
                Err(error) => panic!("a spawned task did not finish: {error}"),
            }
        }
    }

    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send + 'static {
        tokio::time::sleep(duration)
    }
}
