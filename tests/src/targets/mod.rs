//! The three targets: the blocking backend and executor on threads, and the async ones
//! with tokio's timer on a multi-thread tokio runtime or with smol's on smol.

mod async_in_memory;
mod blocking;

use idemkit_smol::SmolTimer;
use idemkit_tokio::TokioTimer;

use crate::runtimes::{SmolRuntime, TokioRuntime};

pub use self::async_in_memory::AsyncInMemory;
pub use self::blocking::Blocking;

/// The tokio backend and executor, `idemkit_tokio::{InMemoryBackend, Idempotency}`, on
/// a multi-thread tokio runtime.
pub type Tokio = AsyncInMemory<TokioTimer, TokioRuntime>;

/// The smol backend and executor, `idemkit_smol::{InMemoryBackend, Idempotency}`, on
/// smol.
pub type Smol = AsyncInMemory<SmolTimer, SmolRuntime>;
