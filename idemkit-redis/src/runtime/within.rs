//! A time limit on a future: [`within`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use idemkit_core::{Sleep, Timer};
use pin_project_lite::pin_project;

/// A time limit ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Elapsed;

/// `future`'s output if it is ready within `limit` on `timer`, else [`Elapsed`] (and
/// `future` is dropped with the returned future).
///
/// A struct rather than an `async fn`: an `async fn` keeps its argument and the future it
/// moves it into side by side, so every layer of them doubled the size of a command's
/// future (21 KiB for a claim through the backend), which is copied as it is built.
pub(crate) fn within<F: Future>(timer: &dyn Timer, limit: Duration, future: F) -> Within<'_, F> {
    Within {
        future,
        timer,
        limit,
        sleep: None,
    }
}

pin_project! {
    /// The future of [`within`].
    pub(crate) struct Within<'a, F> {
        #[pin]
        future: F,
        timer: &'a dyn Timer,
        limit: Duration,
        // Started at the first poll that finds `future` pending: a command answered at
        // once (or a future that is ready) never starts a timer.
        sleep: Option<Sleep>,
    }
}

impl<F: Future> Future for Within<'_, F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let (timer, limit) = (*this.timer, *this.limit);
        let sleep = this.sleep.get_or_insert_with(|| timer.sleep(limit));
        sleep.as_mut().poll(cx).map(|()| Err(Elapsed))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    use super::*;
    use idemkit_core::{Clock, ThreadTimer};

    /// A timer whose sleeps are over at once, counting the sleeps it starts.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl Clock for Counting {
        fn now(&self) -> Instant {
            Instant::now()
        }
    }

    impl Timer for Counting {
        fn sleep(&self, _duration: Duration) -> Sleep {
            self.0.fetch_add(1, Ordering::Relaxed);
            Box::pin(std::future::ready(()))
        }
    }

    #[test]
    fn a_ready_future_is_answered_and_a_stuck_one_runs_out() {
        futures_lite::future::block_on(async {
            let quick = within(&ThreadTimer, Duration::from_secs(60), async { 7 }).await;
            assert_eq!(quick, Ok(7));
            let stuck = within(
                &ThreadTimer,
                Duration::from_millis(10),
                std::future::pending::<()>(),
            )
            .await;
            assert_eq!(stuck, Err(Elapsed));
        });
    }

    #[test]
    fn the_timer_starts_only_for_a_future_that_waits() {
        let timer = Counting::default();
        futures_lite::future::block_on(async {
            assert_eq!(within(&timer, Duration::ZERO, async { 7 }).await, Ok(7));
            assert_eq!(timer.0.load(Ordering::Relaxed), 0);
            let stuck = within(&timer, Duration::ZERO, std::future::pending::<()>());
            assert_eq!(stuck.await, Err(Elapsed));
            assert_eq!(timer.0.load(Ordering::Relaxed), 1);
        });
    }
}
