//! Free loopback ports for test servers.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};

/// A cluster node also listens on its port + 10000 (the cluster bus).
pub(crate) const BUS_OFFSET: u16 = 10_000;

/// Ports are drawn from here: below the usual ephemeral range (32768 and up) is not
/// required, but the bus port of every candidate must stay a valid port.
const FIRST: u16 = 20_000;
const LAST: u16 = 50_000;

/// How many candidates to try before giving up.
const ATTEMPTS: usize = 200;

fn bindable(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// A pseudo-random candidate: distinct per call and per process, so test binaries that
/// run side by side do not all try the same ports in the same order.
fn candidate() -> u16 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let noise = RandomState::new().hash_one((std::process::id(), call));
    FIRST + (noise % u64::from(LAST - FIRST)) as u16
}

/// A loopback port nothing listens on right now, and, with `with_bus`, whose cluster bus
/// port (+10000) is free too. Another process may still take it before the server binds
/// it; the caller retries on a failed start.
pub(crate) fn free_port(with_bus: bool) -> Option<u16> {
    (0..ATTEMPTS)
        .map(|_| candidate())
        .find(|&port| bindable(port) && (!with_bus || bindable(port + BUS_OFFSET)))
}
