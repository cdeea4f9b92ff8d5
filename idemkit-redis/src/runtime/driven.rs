//! Polling a future where the `redis` crate finds the backend's runtime: [`Driven`], the
//! future of [`OnRuntime::drive`](super::OnRuntime::drive).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

/// A runtime context to enter around each poll: tokio's handle.
#[cfg(feature = "tokio")]
pub(crate) type Enter = tokio::runtime::Handle;
/// A runtime context to enter around each poll: without tokio there is none to enter.
#[cfg(not(feature = "tokio"))]
pub(crate) type Enter = std::convert::Infallible;

/// A task the future was handed to: smol's, with both runtimes built in.
#[cfg(all(feature = "tokio", feature = "smol"))]
pub(crate) type Task<T> = smol::Task<T>;
/// A task the future was handed to: with one runtime built in, nothing is, and this
/// stands in for a task that is never made.
#[cfg(not(all(feature = "tokio", feature = "smol")))]
pub(crate) type Task<T> = std::future::Pending<T>;

pin_project! {
    /// A future driven so that the `redis` crate finds the backend's runtime (see
    /// [`OnRuntime::drive`](super::OnRuntime::drive)).
    ///
    /// An enum rather than an `async fn`: an `async fn` keeps its argument and the future
    /// it moves it into side by side, so each layer of them doubled the size of a
    /// command's future, which is copied as it is built.
    #[project = Polled]
    #[cfg_attr(not(all(feature = "tokio", feature = "smol")), allow(dead_code))]
    pub(crate) enum Driven<'a, F: Future> {
        /// Polled by whoever polls this, inside `enter`'s context when there is one.
        Here {
            enter: Option<&'a Enter>,
            #[pin]
            future: F,
        },
        /// Running as a task of smol's executor, out of a tokio context's sight; dropping
        /// this cancels it. (Built only with both runtimes.)
        Spawned {
            task: Task<F::Output>,
        },
    }
}

impl<F: Future> Future for Driven<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        match self.project() {
            Polled::Here { enter, future } => {
                #[cfg(feature = "tokio")]
                let _entered = enter.map(Enter::enter);
                #[cfg(not(feature = "tokio"))]
                let _ = enter;
                future.poll(cx)
            }
            Polled::Spawned { task } => Pin::new(task).poll(cx),
        }
    }
}
