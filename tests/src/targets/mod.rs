//! The targets this repository runs the suite against: the in-memory backend through its
//! blocking trait on threads and through its async trait on tokio and on smol, and the
//! [`MutexMap`](crate::mutex_map::MutexMap) backend written outside the core, through
//! both traits.

mod in_memory;
mod mutex_map;

use idemkit_smol::SmolTimer;
use idemkit_tokio::TokioTimer;

use crate::runtimes::{SmolRuntime, TokioRuntime};

pub use self::in_memory::{InMemoryAsync, InMemoryBlocking};
pub use self::mutex_map::{MutexMapAsync, MutexMapBlocking};

/// The in-memory backend through its async trait, on tokio's timer and a multi-thread
/// tokio runtime.
pub type InMemoryTokio = InMemoryAsync<TokioTimer, TokioRuntime>;

/// The in-memory backend through its async trait, on smol's timer and smol.
pub type InMemorySmol = InMemoryAsync<SmolTimer, SmolRuntime>;

/// The `MutexMap` backend through its async trait, on a multi-thread tokio runtime.
pub type MutexMapTokio = MutexMapAsync<TokioRuntime>;
