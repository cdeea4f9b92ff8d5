//! [`Op`]: a scripted operation for the vectors, played the same way by the blocking and
//! async executors, with a [`Probe`] that tells the vector what happened to it.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use idemkit_core::{Lease, Response, Timer};

/// How long a gated operation holds at most, so a broken executor fails a vector
/// instead of hanging it.
pub const HOLD_AT_MOST: Duration = Duration::from_secs(10);

/// How often a held operation looks at its gate.
const LOOK_EVERY: Duration = Duration::from_millis(2);

/// The error a scripted operation returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpError(pub &'static str);

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// How a scripted operation ends.
#[derive(Clone, Debug)]
pub enum Answer {
    /// Returns this response.
    Respond(Response),
    /// Returns this error.
    Fail(&'static str),
    /// Panics with this message.
    Panic(&'static str),
}

/// A switch the vector opens to let held operations finish.
#[derive(Clone, Debug, Default)]
pub struct Gate(Arc<AtomicBool>);

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Lets every operation held by this gate finish.
    pub fn open(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn is_open(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Counts what happened to the operations made from it.
#[derive(Debug, Default)]
pub struct Probe {
    started: AtomicUsize,
    finished: AtomicUsize,
    dropped: AtomicUsize,
    saw_lost: AtomicBool,
}

impl Probe {
    /// A probe with nothing counted.
    pub fn new() -> Arc<Probe> {
        Arc::default()
    }

    /// How many operations started.
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    /// How many operations ran to their answer.
    pub fn finished(&self) -> usize {
        self.finished.load(Ordering::SeqCst)
    }

    /// How many operations were dropped before their answer (cancelled).
    pub fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Whether a blocking operation saw its lease lost while held.
    pub fn saw_lost(&self) -> bool {
        self.saw_lost.load(Ordering::SeqCst)
    }
}

/// Marks an operation as started; unless finished, counts it dropped when it goes.
struct Flight {
    probe: Arc<Probe>,
    finished: bool,
}

impl Flight {
    fn start(probe: &Arc<Probe>) -> Flight {
        probe.started.fetch_add(1, Ordering::SeqCst);
        Flight {
            probe: Arc::clone(probe),
            finished: false,
        }
    }

    fn finish(mut self) {
        self.finished = true;
        self.probe.finished.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        if !self.finished {
            self.probe.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A scripted operation: optionally work for a while, optionally hold until a gate
/// opens, then answer.
#[derive(Clone, Debug)]
pub struct Op {
    probe: Arc<Probe>,
    work: Duration,
    gate: Option<Gate>,
    answer: Answer,
}

impl Op {
    /// An operation reporting to `probe` that answers `answer` at once.
    pub fn new(probe: &Arc<Probe>, answer: Answer) -> Op {
        Op {
            probe: Arc::clone(probe),
            work: Duration::ZERO,
            gate: None,
            answer,
        }
    }

    /// An operation reporting to `probe` that returns `status` with `body`.
    pub fn respond(probe: &Arc<Probe>, status: u16, body: &str) -> Op {
        Op::new(
            probe,
            Answer::Respond(Response::new(status, body.to_owned())),
        )
    }

    /// This operation, sleeping `work` before it answers.
    pub fn working(self, work: Duration) -> Op {
        Op { work, ..self }
    }

    /// This operation, holding until `gate` opens (for at most [`HOLD_AT_MOST`]).
    pub fn held_by(self, gate: &Gate) -> Op {
        Op {
            gate: Some(gate.clone()),
            ..self
        }
    }

    fn answer(self, flight: Flight) -> Result<Response, OpError> {
        flight.finish();
        match self.answer {
            Answer::Respond(response) => Ok(response),
            Answer::Fail(error) => Err(OpError(error)),
            Answer::Panic(message) => panic!("{message}"),
        }
    }
}

/// Plays `op` on a thread. A held blocking operation also stops holding once its lease
/// is lost, as a careful operation would before its side effect.
pub fn play_blocking(op: Op, lease: &Lease) -> Result<Response, OpError> {
    let flight = Flight::start(&op.probe);
    std::thread::sleep(op.work);
    if let Some(gate) = &op.gate {
        let give_up = Instant::now() + HOLD_AT_MOST;
        while !gate.is_open() && Instant::now() < give_up {
            if lease.is_lost() {
                op.probe.saw_lost.store(true, Ordering::SeqCst);
                break;
            }
            std::thread::sleep(LOOK_EVERY);
        }
    }
    op.answer(flight)
}

/// Plays `op` as a future, sleeping on `timer`.
pub async fn play_async(op: Op, timer: Arc<dyn Timer>) -> Result<Response, OpError> {
    let flight = Flight::start(&op.probe);
    if !op.work.is_zero() {
        timer.sleep(op.work).await;
    }
    if let Some(gate) = &op.gate {
        let give_up = Instant::now() + HOLD_AT_MOST;
        while !gate.is_open() && Instant::now() < give_up {
            timer.sleep(LOOK_EVERY).await;
        }
    }
    op.answer(flight)
}
