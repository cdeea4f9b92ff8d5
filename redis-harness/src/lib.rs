//! Private Redis servers for tests, benches and demos.
//!
//! A test never talks to a Redis it did not start: the machine's own server (port 6379)
//! is not touched. Each [`RedisServer`] is a `redis-server` child process on a free
//! loopback port, with no persistence (`--save ""`, `--appendonly no`) and its own
//! scratch directory; a test can [kill](RedisServer::kill),
//! [restart](RedisServer::restart) or [pause](RedisServer::pause) it. [`RedisCluster`]
//! is three such servers joined into a three-master Redis Cluster by
//! `redis-cli --cluster create`.
//!
//! Every server is stopped when its value is dropped, and also, through a small watchdog
//! process, when the process that started it dies without dropping it (a test binary
//! that panics in a static, or is killed).
//!
//! When `redis-server` is not installed, [`available`] says so once on standard error
//! and returns false, so a test can return early; with `IDEMKIT_REQUIRE_REDIS=1` in the
//! environment it panics instead, so that CI cannot pass by skipping.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cli;
mod cluster;
mod ports;
mod server;
mod shared;
mod skip;
mod watchdog;

pub use cli::{CliError, redis_cli};
pub use cluster::RedisCluster;
pub use server::RedisServer;
pub use shared::shared;
pub use skip::{REQUIRE_VAR, available};
