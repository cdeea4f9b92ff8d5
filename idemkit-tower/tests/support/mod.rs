//! What the integration tests share: an HTTP client, the conformance server in a child
//! process (the crate's `idemkit-conformance-server` binary), and a server in the test's
//! own process.
#![allow(dead_code)]

pub mod client;
pub mod in_process;
pub mod scenarios;
pub mod server;
