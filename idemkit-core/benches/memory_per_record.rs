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

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use idemkit_core::{Record, Store};

/// The system allocator, counting the bytes currently handed out.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the counter only records sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from this allocator with `layout`, as the caller promises.
        unsafe { System.dealloc(pointer, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is passed on as is.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        moved
    }
}

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

    let requested_before = LIVE.load(Ordering::Relaxed);
    let resident_before = resident_bytes();
    let mut store = Store::with_max_size(records);
    support::fill_store(&mut store, records, now);
    let requested = LIVE.load(Ordering::Relaxed) - requested_before;
    let resident = resident_bytes().saturating_sub(resident_before);
    assert_eq!(store.len(), records);

    let requested_per_record = requested as f64 / records as f64;
    let resident_per_record = resident as f64 / records as f64;
    println!("memory per COMPLETED record (18-byte key, 2-byte fingerprint, body b\"ok\")");
    println!("  records:              {records}");
    println!("  size_of::<Record>():  {} bytes", size_of::<Record>());
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
