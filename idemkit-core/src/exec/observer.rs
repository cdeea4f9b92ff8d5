//! [`Observer`]: where an executor reports the one [`Event`] of each run.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::exec::outcome::{Event, Outcome, RunError};
use crate::exec::run_loop::Finished;
use crate::key::Key;

/// A callback that receives events.
type Callback = dyn Fn(&Event) + Send + Sync;

/// The callback an executor was given with `on_event`, if any.
#[derive(Clone, Default)]
pub(crate) struct Observer(Option<Arc<Callback>>);

impl Observer {
    pub(crate) fn new(f: impl Fn(&Event) + Send + Sync + 'static) -> Observer {
        Observer(Some(Arc::new(f)))
    }

    /// Hands `event` to the callback. A callback that panics is contained here: the
    /// run's result does not depend on its observer.
    pub(crate) fn emit(&self, event: &Event) {
        if let Some(f) = &self.0 {
            // The panic hook has already reported it; the run goes on regardless.
            let _ = catch_unwind(AssertUnwindSafe(|| f(event)));
        }
    }

    /// When a run starts, read off `now` only if a callback listens: only a callback
    /// gets the run's latency, so without one the clock is not read.
    pub(crate) fn start(&self, now: impl FnOnce() -> Instant) -> Option<Instant> {
        self.0.as_ref().map(|_| now())
    }

    /// Reports the one event of a run that ended as `finished`, then hands its result
    /// back, or resumes the operation's panic (reported as `HandlerFailed`). The event's
    /// latency runs from `started` (what [`start`](Observer::start) gave) to `now`, which
    /// is read only for a callback.
    pub(crate) fn finish<E>(
        &self,
        key: &Key,
        fingerprint_version: u32,
        started: Option<Instant>,
        now: impl FnOnce() -> Instant,
        finished: Finished<E>,
    ) -> Result<Outcome, RunError<E>> {
        // Built only for a callback: the event owns a copy of the key (an allocation a
        // replay would otherwise make for nobody).
        if self.0.is_some() {
            self.emit(&Event {
                decision: finished.decision(),
                key: key.clone(),
                fingerprint_version,
                latency: started.map_or(Duration::ZERO, |started| {
                    now().saturating_duration_since(started)
                }),
                unstored: finished.unstored(),
            });
        }
        match finished {
            Finished::Outcome(outcome) => Ok(outcome),
            Finished::Error(error) => Err(error),
            Finished::NotStored(error) => Err(RunError::StorageFailed(error)),
            Finished::Panicked(panic) => resume_unwind(panic),
        }
    }
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}
