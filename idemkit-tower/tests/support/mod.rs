//! What the integration tests share: an HTTP client, the conformance server in a child
//! process, and the server's own code (compiled into each test binary so that the
//! child can be the test binary itself).
#![allow(dead_code)]

pub mod client;
pub mod in_process;
pub mod scenarios;
pub mod server;
