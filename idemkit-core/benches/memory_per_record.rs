//! Figure 6 of issue 4: memory per COMPLETED record (an 18-byte key, a 2-byte
//! fingerprint, the body `b"ok"`), measured two ways over 1,000,000 records in a `Store`:
//!
//! - requested: the bytes the store asked the allocator for and still holds, counted by
//!   a wrapping global allocator. This is what Python's `tracemalloc` counts, and so the
//!   measure the reference's figure (about 550 bytes) is in.
//! - resident: the growth of the process's resident set (`/proc/self/statm`), which adds
//!   the allocator's own rounding and headers on top.
//!
//! Goal: at most 200 bytes per record. A `harness = false` binary; `cargo test --benches`
//! runs it on 10,000 records as a smoke test.

mod support;

#[path = "../tests/support/counting_allocator.rs"]
mod counting_allocator;

use counting_allocator::{Counting, live_bytes};

use std::time::Instant;

use idemkit_core::Store;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The resident set size in bytes, from `/proc/self/statm` (its second field, in pages).
fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .expect("statm's resident field");
    pages * page_size()
}

/// The page size, from the auxiliary vector the kernel handed the process (`AT_PAGESZ`).
fn page_size() -> usize {
    const AT_PAGESZ: u64 = 6;
    let auxv = std::fs::read("/proc/self/auxv").expect("read /proc/self/auxv");
    auxv.chunks_exact(16)
        .map(|pair| {
            let word = |bytes: &[u8]| u64::from_ne_bytes(bytes.try_into().expect("8 bytes"));
            (word(&pair[..8]), word(&pair[8..]))
        })
        .find(|&(kind, _)| kind == AT_PAGESZ)
        .map_or(4096, |(_, size)| size as usize)
}

fn main() {
    let records = if support::measuring() {
        1_000_000
    } else {
        10_000
    };
    let now = Instant::now();
    // Touch the token source and the clock origin first so one-time setup is not counted.
    let mut warm = Store::new();
    support::fill_store(&mut warm, 1, now);

    let requested_before = live_bytes();
    let resident_before = resident_bytes();
    let mut store = Store::new().with_max_size(records);
    support::fill_store(&mut store, records, now);
    let requested = live_bytes() - requested_before;
    let resident = resident_bytes().saturating_sub(resident_before);
    assert_eq!(store.len(), records);

    let requested_per_record = requested as f64 / records as f64;
    let resident_per_record = resident as f64 / records as f64;
    println!("memory per COMPLETED record (18-byte key, 2-byte fingerprint, body b\"ok\")");
    println!("  records:              {records}");
    println!("  requested (counting allocator, as tracemalloc): {requested_per_record:.1} bytes");
    println!("  resident (RSS delta, /proc/self/statm):          {resident_per_record:.1} bytes");
    println!("  goal: at most 200 bytes");
    if support::measuring() {
        support::write_figure(
            "memory_per_record",
            &[
                ("records", records as f64),
                ("requested_bytes", requested_per_record),
                ("resident_bytes", resident_per_record),
            ],
        );
    }
    drop(store);
}
