//! The three targets: the blocking backend on threads, the tokio backend on a
//! multi-thread runtime, the smol backend on smol.

mod blocking;
mod smol;
mod tokio;

pub use self::blocking::{Blocking, Threads};
pub use self::smol::{Smol, SmolRuntime};
pub use self::tokio::{Tokio, TokioRuntime};
