//! Names no other test uses.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

/// `prefix` followed by `_`, this process's id, a counter and random digits: a table
/// name (a valid PostgreSQL identifier when `prefix` is lowercase letters, digits and
/// underscores, at most 30 bytes) that no other test, in this process or another, uses.
///
/// ```
/// let a = pg_harness::unique_name("orders");
/// let b = pg_harness::unique_name("orders");
/// assert!(a.starts_with("orders_") && a != b && a.len() <= 63);
/// ```
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let noise = RandomState::new().hash_one((std::process::id(), count)) % 1_000_000;
    format!("{prefix}_{}_{count}_{noise}", std::process::id())
}
