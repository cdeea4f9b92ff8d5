//! PostgreSQL for tests, benches and demos.
//!
//! Two kinds of server:
//!
//! - [`PgCluster`]: a private cluster made by `initdb` in a scratch directory and run by
//!   `pg_ctl` on a free loopback port, for a test that stops, kills or restarts its
//!   server. When the process runs as root, every PostgreSQL program runs as the
//!   `postgres` user (`runuser -u postgres --`), as PostgreSQL refuses to run as root.
//!   It is stopped and its directory removed when the value is dropped.
//! - [`machine`]: the machine's own server (`127.0.0.1:5432`, database `test`), for the
//!   tests that only read and write. It is never stopped or restarted; each test keeps
//!   to a table of its own ([`unique_name`]).
//!
//! When PostgreSQL is not there, [`available`] and [`machine`] say so once on standard
//! error and the caller skips; with `IDEMKIT_REQUIRE_POSTGRES=1` in the environment they
//! panic instead, so that CI cannot pass by skipping.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cluster;
mod machine;
mod names;
mod ports;
mod programs;
mod skip;

pub use cluster::PgCluster;
pub use machine::{MACHINE_URL, URL_VAR, machine};
pub use names::unique_name;
pub use skip::{REQUIRE_VAR, available};
