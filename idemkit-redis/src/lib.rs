//! idemkit on Redis.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// The pieces below are wired into the backend once the core's backend traits land.
#![allow(dead_code)]

mod commands;
mod error;
mod headers;
mod layout;
mod reply;
mod runtime;
mod scripts;
mod server_clock;
mod wakeups;

pub use error::RedisError;
pub use layout::InvalidNamespace;
