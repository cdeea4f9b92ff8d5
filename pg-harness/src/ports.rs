//! Free loopback ports for private clusters.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};

/// Candidates are drawn from here, clear of PostgreSQL's own 5432.
const FIRST: u16 = 20_000;
const LAST: u16 = 60_000;
const ATTEMPTS: usize = 200;

/// A loopback port nothing listens on right now. Another process may still take it before
/// the server binds it; the caller retries on a failed start.
pub(crate) fn free_port() -> Option<u16> {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    (0..ATTEMPTS)
        .map(|_| {
            // Distinct per call and per process, so binaries side by side differ.
            let call = CALLS.fetch_add(1, Ordering::Relaxed);
            let noise = RandomState::new().hash_one((std::process::id(), call));
            FIRST + (noise % u64::from(LAST - FIRST)) as u16
        })
        .find(|&port| TcpListener::bind(("127.0.0.1", port)).is_ok())
}
