//! [`Observer`]: where an executor reports the one [`Event`] of each run.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::exec::outcome::Event;

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
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}
