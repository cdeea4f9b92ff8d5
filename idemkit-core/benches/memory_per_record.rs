//! Memory per COMPLETED record (an 18-byte key, a 2-byte fingerprint, a 2-byte body; and
//! with an executor's 64-digit names, `hashed_names`),
//! measured two ways over 1,000,000 records put in a `Store`, each in a fresh process:
//!
//! - requested: the bytes the store asked the allocator for and still holds, counted by
//!   a wrapping global allocator. This is what Python's `tracemalloc` counts, and so the
//!   measure the reference's figure (about 550 bytes) is in.
//! - resident: the growth of the process's resident set (`/proc/self/statm`), which adds
//!   the allocator's own rounding and headers on top.
//!
//! How the body is built matters, as it is the caller's allocation the store keeps:
//!
//! - `vec_body` (the figure): the body is built per request from a `Vec<u8>`, as a real
//!   caller's is (a serialized reply is a fresh buffer, handed over as `Bytes::from(Vec)`;
//!   a `Body` keeps its 2 bytes inline and frees the buffer, where a `Bytes` body kept it);
//! - `static_body`: the body is `Bytes::from_static`, which allocates nothing: what the
//!   store itself and the shared `Arc<Response>` cost (the same as `vec_body` now that
//!   small bodies are inline);
//! - `responses_alone`: no store, only the caller's part: 1,000,000 `Arc<Response>` with
//!   `vec_body`'s bodies, kept in a `Vec` (whose 8 bytes per response are counted);
//! - `hashed_names`: `vec_body` under the names an executor stores a record by, a
//!   [`Key`] and a [`Fingerprint`] (64 hex digits each) instead of the short ones: what
//!   a record costs behind `Idempotency`, `AsyncIdempotency` or the HTTP layer;
//! - `formatted_body`: `vec_body` with a 71-byte JSON body built by `format!`, as a
//!   handler's reply often is: a `String` with spare room (`format!` grows its buffer by
//!   doubling), too long to be kept inline, so what a body kept outside the `Response`
//!   costs.
//!
//! The parent process runs each variant in a child process of its own (this binary,
//! with `IDEMKIT_MEMORY_VARIANT` set), so every figure starts from a fresh heap.
//!
//! Goal: at most 200 bytes resident per record. A `harness = false` binary; `cargo test
//! --benches` runs it on 10,000 records as a smoke test.

mod support;

#[path = "../tests/support/counting_allocator.rs"]
mod counting_allocator;

use counting_allocator::{Counting, live_bytes};

use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use idemkit_core::{Claim, Fingerprint, Key, Response, Store};
use support::{FINGERPRINT, HELD_TTL, Keys, LEASE};

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

/// The environment variable that makes this binary a child measuring one variant.
const VARIANT: &str = "IDEMKIT_MEMORY_VARIANT";
const VARIANTS: [&str; 5] = [
    "vec_body",
    "static_body",
    "responses_alone",
    "hashed_names",
    "formatted_body",
];

/// The response a caller completes with in `variant`.
fn response(variant: &str) -> Response {
    match variant {
        "static_body" => Response::new(200, Bytes::from_static(b"ok")),
        "formatted_body" => {
            let (id, amount) = (std::hint::black_box("ch_3MmlLrLkdIwHu7ix0snN0B15"), 2500);
            Response::new(
                200,
                format!(r#"{{"id":"{id}","status":"succeeded","amount":{amount}}}"#),
            )
        }
        _ => Response::new(200, Bytes::from(b"ok".to_vec())),
    }
}

/// Measures `variant` over `records` records in this process: (requested, resident)
/// bytes per record.
fn measure(variant: &str, records: usize) -> (f64, f64) {
    let now = Instant::now();
    // Touch the token source and the clock origin first so one-time setup is not counted.
    let mut warm = Store::new();
    support::fill_store(&mut warm, 1, now);

    let requested_before = live_bytes();
    let resident_before = resident_bytes();
    let mut keys = Keys::new("h-", 0);
    let kept: Box<dyn std::any::Any> = if variant == "responses_alone" {
        let responses: Vec<Arc<Response>> =
            (0..records).map(|_| Arc::new(response(variant))).collect();
        Box::new(responses)
    } else {
        let mut store = Store::builder()
            .max_size(records)
            .build()
            .expect("a store of its own");
        let hashed = variant == "hashed_names";
        let request = Fingerprint::new(["POST", "/orders", r#"{"sku":"A1","qty":2}"#]);
        let fingerprint = if hashed {
            request.as_str()
        } else {
            FINGERPRINT
        };
        for _ in 0..records {
            let short = keys.next_key();
            // Dropped once the claim is completed: only what the store keeps is counted.
            let hashed_key = hashed.then(|| Key::new(["tenant-7", short]));
            let key = hashed_key.as_ref().map_or(short, Key::as_str);
            let Claim::New(token) = store.claim(key, fingerprint, 1, LEASE, now).unwrap() else {
                panic!("{key} was not new");
            };
            assert!(store.complete(key, &token, response(variant), HELD_TTL, now));
        }
        assert_eq!(store.len(), records);
        Box::new(store)
    };
    let requested = live_bytes() - requested_before;
    let resident = resident_bytes().saturating_sub(resident_before);
    drop(kept);
    (
        requested as f64 / records as f64,
        resident as f64 / records as f64,
    )
}

fn main() {
    let records = if support::measuring() {
        1_000_000
    } else {
        10_000
    };
    if let Ok(variant) = std::env::var(VARIANT) {
        let (requested, resident) = measure(&variant, records);
        println!("RESULT {requested} {resident}");
        return;
    }
    println!(
        "memory per COMPLETED record (18-byte key, 2-byte fingerprint, 2-byte body; \
         hashed_names: a 64-digit key and fingerprint)"
    );
    println!("  records: {records}");
    let mut fields = vec![("records", records as f64)];
    for variant in VARIANTS {
        let output = Command::new(std::env::current_exe().expect("this binary"))
            .args(std::env::args().skip(1))
            .env(VARIANT, variant)
            .output()
            .expect("run a child process");
        assert!(output.status.success(), "{variant}: {output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout
            .lines()
            .find_map(|line| line.strip_prefix("RESULT "))
            .expect("a RESULT line");
        let mut numbers = line.split(' ').map(|n| n.parse::<f64>().expect("a number"));
        let (requested, resident) = (numbers.next().unwrap(), numbers.next().unwrap());
        println!(
            "  {variant:16} requested (counting allocator, as tracemalloc) {requested:6.1} B, \
             resident (RSS delta) {resident:6.1} B"
        );
        fields.push((
            if variant == "vec_body" {
                "requested_bytes"
            } else {
                leak(format!("{variant}_requested"))
            },
            requested,
        ));
        fields.push((
            if variant == "vec_body" {
                "resident_bytes"
            } else {
                leak(format!("{variant}_resident"))
            },
            resident,
        ));
    }
    println!("  goal: at most 200 bytes resident (vec_body)");
    if support::measuring() {
        support::write_figure("memory_per_record", &fields);
    }
}

/// A field name built at run time, for `write_figure`'s `&str` names.
fn leak(name: String) -> &'static str {
    Box::leak(name.into_boxed_str())
}
