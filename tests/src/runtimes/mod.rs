//! The runtimes the targets run on: plain threads, a multi-thread tokio runtime, and smol
//! with a two-thread executor.

mod smol;
mod threads;
mod tokio;

pub use self::smol::SmolRuntime;
pub use self::threads::Threads;
pub use self::tokio::TokioRuntime;
