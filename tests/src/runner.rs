//! The vectors as a list to run at run time, one by one, each reported as it finishes:
//! what a program (the `idemkit check` command) runs against a deployed store, where the
//! `#[test]` macros only serve `cargo test`.
//!
//! Both read the same list of vectors, so a vector added to the suite is run by both.
//!
//! ```
//! use idemkit_conformance::runner::Suite;
//! use idemkit_conformance::targets::InMemoryTokio;
//!
//! let suite = Suite::core::<InMemoryTokio>().async_waits::<InMemoryTokio>();
//! let first = &suite.vectors()[0];
//! let report = first.run();
//! assert!(report.passed(), "{}::{}: {:?}", report.group, report.name, report.outcome);
//! ```

use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::target::{ExactCapacity, ManualTime, Purging, Target};

/// One vector for one target, ready to run.
#[derive(Clone, Copy, Debug)]
pub struct Vector {
    group: &'static str,
    name: &'static str,
    body: fn(),
}

impl Vector {
    #[doc(hidden)]
    pub fn new(group: &'static str, name: &'static str, body: fn()) -> Vector {
        Vector { group, name, body }
    }

    /// The module of vectors it belongs to (`claims`, `waits`, `executor`...).
    pub fn group(&self) -> &'static str {
        self.group
    }

    /// Its name, the name of its function and of its `#[test]`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Runs it on its target's runtime and says how it went. A vector fails by
    /// panicking; the panic is caught, and its message (and where it was raised) is the
    /// report's. While the vector runs the process's panic hook is replaced, so that the
    /// vectors that panic on purpose (inside the executor, which catches it) print
    /// nothing; it is put back afterwards. Vectors run one at a time in a process: a
    /// second thread calling this waits for the first vector to finish.
    pub fn run(&self) -> Report {
        // One vector at a time in the process: the panic hook is process-wide.
        let _alone = RUNNING.lock().unwrap_or_else(|poison| poison.into_inner());
        let captured = PanicCapture::install();
        let started = Instant::now();
        let result = panic::catch_unwind(AssertUnwindSafe(self.body));
        let elapsed = started.elapsed();
        let seen = captured.finish();
        let outcome = result.map_err(|payload| {
            let message = payload_text(payload.as_ref());
            match seen.iter().rev().find(|(text, _)| *text == message) {
                Some((_, Some(location))) => format!("{message} (at {location})"),
                _ => message,
            }
        });
        Report {
            group: self.group,
            name: self.name,
            outcome,
            elapsed,
        }
    }
}

/// How one vector went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The vector's group: [`Vector::group`].
    pub group: &'static str,
    /// The vector's name: [`Vector::name`].
    pub name: &'static str,
    /// `Ok` if it passed; else why it failed (the failed assertion's message).
    pub outcome: Result<(), String>,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Report {
    /// Whether the vector passed.
    pub fn passed(&self) -> bool {
        self.outcome.is_ok()
    }
}

/// The vectors a target can run, in the order the suite lists them: the core vectors,
/// then the groups added for what the target also supports (as the names after the
/// target in `conformance_tests!`).
#[derive(Clone, Debug, Default)]
pub struct Suite {
    vectors: Vec<Vector>,
}

/// Adds one module of vectors to a suite: the runner's callback of
/// `__group_vectors`.
#[doc(hidden)]
#[macro_export]
macro_rules! __runner_module {
    ($suite:ident, $target:ty; $module:ident; $($path:ident)::+; $($vector:ident),* $(,)?) => {
        {
            use $crate::$($path)::+ as __vectors;
            $(
                $suite.push($crate::runner::Vector::new(
                    stringify!($module),
                    stringify!($vector),
                    || $crate::run::<$target, _>(__vectors::$vector::<$target>()),
                ));
            )*
        }
    };
}

impl Suite {
    /// Every vector that needs nothing beyond the traits: claims, waits, leases and
    /// results lapsing on real time, and the executor rules that move no clock.
    pub fn core<T: Target>() -> Suite {
        let mut vectors = Vec::new();
        crate::__group_vectors!(core; __runner_module; vectors, T);
        Suite { vectors }
    }

    /// Adds the vectors on a manual clock.
    #[must_use]
    pub fn manual_time<T: ManualTime>(mut self) -> Suite {
        let vectors = &mut self.vectors;
        crate::__group_vectors!(manual_time; __runner_module; vectors, T);
        self
    }

    /// Adds the capacity vectors.
    #[must_use]
    pub fn exact_capacity<T: ManualTime + ExactCapacity>(mut self) -> Suite {
        let vectors = &mut self.vectors;
        crate::__group_vectors!(exact_capacity; __runner_module; vectors, T);
        self
    }

    /// Adds the vectors that drop waits mid-wait (for a backend driven through its async
    /// trait).
    #[must_use]
    pub fn async_waits<T: Target>(mut self) -> Suite {
        let vectors = &mut self.vectors;
        crate::__group_vectors!(async_waits; __runner_module; vectors, T);
        self
    }

    /// Adds the purger vector.
    #[must_use]
    pub fn purger<T: ManualTime + Purging>(mut self) -> Suite {
        let vectors = &mut self.vectors;
        crate::__group_vectors!(purger; __runner_module; vectors, T);
        self
    }

    /// The vectors, in order.
    pub fn vectors(&self) -> &[Vector] {
        &self.vectors
    }

    /// Runs every vector, one after the other, handing each report to `on_report` as
    /// soon as its vector finishes; returns them all.
    pub fn run(&self, mut on_report: impl FnMut(&Report)) -> Vec<Report> {
        self.vectors
            .iter()
            .map(|vector| {
                let report = vector.run();
                on_report(&report);
                report
            })
            .collect()
    }
}

/// The text of a panic's payload.
fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

type Seen = Vec<(String, Option<String>)>;

/// Held while a vector runs.
static RUNNING: Mutex<()> = Mutex::new(());

/// The panics raised (on any thread) while one vector runs: message and location.
static SEEN: Mutex<Seen> = Mutex::new(Vec::new());

/// A panic hook, as `std::panic::take_hook` returns it.
type Hook = Box<dyn Fn(&panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// One vector's panic hook: it records each panic instead of printing it.
struct PanicCapture {
    previous: Option<Hook>,
}

impl PanicCapture {
    fn install() -> PanicCapture {
        SEEN.lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clear();
        let previous = panic::take_hook();
        panic::set_hook(Box::new(|info| {
            let message = payload_text(info.payload());
            let location = info.location().map(ToString::to_string);
            SEEN.lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .push((message, location));
        }));
        PanicCapture {
            previous: Some(previous),
        }
    }

    /// Puts the previous hook back; the panics seen.
    fn finish(mut self) -> Seen {
        self.restore();
        std::mem::take(&mut *SEEN.lock().unwrap_or_else(|poison| poison.into_inner()))
    }

    fn restore(&mut self) {
        if let Some(previous) = self.previous.take() {
            panic::set_hook(previous);
        }
    }
}

impl Drop for PanicCapture {
    fn drop(&mut self) {
        self.restore();
    }
}
