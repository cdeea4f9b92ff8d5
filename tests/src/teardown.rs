//! The per-vector teardown: every backend a vector builds is handed to its target's
//! [`Target::after_vector`] once the vector has returned or failed.
//!
//! [`run`](crate::run) polls the vector inside a scope; building a backend through the
//! suite's helpers ([`support::real`](crate::support::real),
//! [`support::manual`](crate::support::manual), the executor harness) records a clone
//! of it in the scope of the vector being polled on this thread. Backends are built
//! synchronously from the vector's own body, so the scope is always the right one, even
//! when vectors run side by side on other threads.

use std::cell::RefCell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::target::Target;

/// One backend's teardown, given whether its vector passed.
type Teardown = Box<dyn FnOnce(bool) + Send>;

/// The teardowns of one vector, in the order its backends were built.
#[derive(Clone, Default)]
pub(crate) struct Scope(Arc<Mutex<Vec<Teardown>>>);

thread_local! {
    /// The scope of the vector being polled on this thread, if any.
    static CURRENT: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// Records `backend` for its target's teardown, in the scope of the vector being polled
/// on this thread (outside [`run`](crate::run), there is none and nothing happens).
pub(crate) fn built<T: Target>(backend: &T::Backend) {
    CURRENT.with(|current| {
        if let Some(scope) = current.borrow().as_ref() {
            let backend = backend.clone();
            let teardown: Teardown = Box::new(move |passed| T::after_vector(&backend, passed));
            scope
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(teardown);
        }
    });
}

impl Scope {
    /// `vector`, polled inside this scope.
    pub(crate) fn enter<F: Future>(&self, vector: F) -> Scoped<F> {
        Scoped {
            scope: self.clone(),
            vector: Box::pin(vector),
        }
    }

    /// Runs every teardown, in order. After a vector that passed, a teardown's panic is
    /// the vector's failure (the first one raised); after one that failed, the
    /// teardowns still run, and their panics are dropped in favor of the vector's own.
    pub(crate) fn finish(self, passed: bool) {
        let teardowns = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        let mut first_panic = None;
        for teardown in teardowns {
            if let Err(panic) = panic::catch_unwind(AssertUnwindSafe(|| teardown(passed))) {
                first_panic.get_or_insert(panic);
            }
        }
        if let (true, Some(panic)) = (passed, first_panic) {
            panic::resume_unwind(panic);
        }
    }
}

/// A vector polled inside its [`Scope`].
pub(crate) struct Scoped<F> {
    scope: Scope,
    vector: Pin<Box<F>>,
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let scope = self.scope.clone();
        let outer = CURRENT.with(|current| current.replace(Some(scope)));
        // Put the outer scope back even if the vector panics.
        struct Restore(Option<Scope>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let outer = self.0.take();
                CURRENT.with(|current| *current.borrow_mut() = outer);
            }
        }
        let _restore = Restore(outer);
        self.vector.as_mut().poll(cx)
    }
}
