//! The HTTP conformance scenarios against the conformance server on the in-memory
//! backend, over loopback HTTP, each server in its own process.
//!
//! The in-memory backend keeps typed records in the process, with nothing to decode, so
//! the scenario of a record that fails to decode has no meaning here; it runs against
//! stores that hold bytes (Redis).

mod support;

use support::scenarios::{self, Target};

fn memory() -> Target {
    Target {
        args: vec!["--backend".to_owned(), "memory".to_owned()],
        corrupt: None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn basic_replay() {
    scenarios::basic_replay(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn payload_mismatch() {
    scenarios::payload_mismatch(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_same_key_exactly_once() {
    scenarios::concurrent_same_key_exactly_once(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_wait_then_replay() {
    scenarios::in_flight_wait_then_replay(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_wait_timeout() {
    scenarios::in_flight_wait_timeout(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_recovery_lease_expiry() {
    scenarios::crash_recovery_lease_expiry(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_errors_are_not_cached() {
    scenarios::server_errors_are_not_cached(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cross_tenant_isolation() {
    scenarios::cross_tenant_isolation(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_key_when_required() {
    scenarios::missing_key_when_required(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn response_headers_preserved() {
    scenarios::response_headers_preserved(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn body_size_exceeded_bypass() {
    scenarios::body_size_exceeded_bypass(&memory()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn abandoned_request_frees_its_key() {
    scenarios::abandoned_request_frees_its_key(&memory()).await;
}
