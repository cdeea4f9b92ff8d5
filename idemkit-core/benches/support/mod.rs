//! What the benchmarks share: the baseline store, key generation, the workload's
//! constants, and where results that criterion does not record are written.
//!
//! Each bench binary includes this module and uses only part of it.
#![allow(dead_code)]

pub mod baseline;
pub mod fifo_baseline;
pub mod workers;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::Criterion;
use idemkit_core::BlockingBackend;
use idemkit_core::{Claim, InMemoryBackend, Response, Store};

/// The fingerprint every benchmark claims with (2 bytes, as in the memory figure).
pub const FINGERPRINT: &str = "fp";
/// The body every benchmark completes with.
pub const BODY: &[u8] = b"ok";
/// The lease of every claim.
pub const LEASE: Duration = Duration::from_secs(30);
/// The TTL of the records held in the background: far beyond any run.
pub const HELD_TTL: Duration = Duration::from_secs(7 * 86_400);
/// How far the explicit clock moves per operation in the sans-IO benchmarks, so the
/// record completed by one iteration (TTL zero) has expired by the next.
pub const TICK: Duration = Duration::from_nanos(1_000);
/// The number of records held during the claim+complete figures.
pub const HELD: usize = 1_000;
/// The TTL of every completion in the steady-state figures on the system clock (the
/// backend's): records live 1 ms, so the number held is what 1 ms of operations makes.
pub const BACKEND_TTL: Duration = Duration::from_millis(1);

/// The TTL that makes a `Store` driven at [`TICK`] per operation hold `held` records: a
/// record completed at one operation is due exactly `held` operations later, so once
/// `held` operations have run, every claim purges one record and inserts one.
pub fn steady_ttl(held: usize) -> Duration {
    TICK * held as u32 - Duration::from_nanos(1)
}

/// `count` unique keys of `keys`, each its own `String`, made before a sample is timed
/// (as a service's keys arrive: each request owns its key).
pub fn key_strings(keys: &mut Keys, count: u64) -> Vec<String> {
    (0..count).map(|_| keys.next_key().to_owned()).collect()
}

/// Whether this binary runs as a benchmark (`cargo bench` passes `--bench`) rather than
/// as a smoke test (`cargo test --benches`), where it only checks that it works.
pub fn measuring() -> bool {
    std::env::args().any(|arg| arg == "--bench")
}

/// Criterion settings that keep the whole `cargo bench` to a few minutes on two cores.
pub fn criterion() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args()
}

/// Unique keys of exactly 18 bytes: a 2-byte prefix and 16 decimal digits of a counter.
///
/// Keys are written into one buffer, so drawing one allocates nothing and costs the same
/// for every store measured; none ever repeats within a run.
pub struct Keys {
    buffer: [u8; 18],
    /// No key has been drawn yet.
    fresh: bool,
}

impl Keys {
    /// Keys `prefix` + counter, counting from `start`. `prefix` is 2 ASCII bytes.
    pub fn new(prefix: &str, start: u64) -> Keys {
        let mut buffer = [b'0'; 18];
        buffer[..2].copy_from_slice(&prefix.as_bytes()[..2]);
        let mut value = start;
        for digit in buffer[2..].iter_mut().rev() {
            *digit = b'0' + (value % 10) as u8;
            value /= 10;
        }
        Keys {
            buffer,
            fresh: true,
        }
    }

    /// The next key.
    pub fn next_key(&mut self) -> &str {
        // The first key is the start itself; every later one adds one, in place.
        if !std::mem::take(&mut self.fresh) {
            for digit in self.buffer[2..].iter_mut().rev() {
                if *digit == b'9' {
                    *digit = b'0';
                } else {
                    *digit += 1;
                    break;
                }
            }
        }
        std::str::from_utf8(&self.buffer).expect("ASCII digits")
    }
}

/// The CPU time the calling thread has used so far, user and kernel (so a system call
/// such as `getrandom` counts in full).
///
/// The single-threaded figures time their samples with this rather than with a wall
/// clock: the machine the figures come from is shared, and time during which the
/// measuring thread was not running at all is no cost of the operation measured. On an
/// otherwise idle machine the two agree.
pub fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable `timespec`, and CLOCK_THREAD_CPUTIME_ID is a
    // clock every Linux kernel the benches run on provides.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Runs `operation` once per key of a fresh batch of `iters` keys laid end to end and
/// returns the thread CPU time the loop took (see [`thread_cpu_time`]).
pub fn cpu_timed(keys: &mut Keys, iters: u64, operation: impl FnMut(&str)) -> Duration {
    let batch = KeyBatch::new(keys, iters);
    cpu_timed_over(batch.iter(), operation)
}

/// [`cpu_timed`] with each key a `String` of its own, as a service's keys are (the
/// second round's workloads).
pub fn cpu_timed_strings(keys: &mut Keys, iters: u64, operation: impl FnMut(&str)) -> Duration {
    let batch = key_strings(keys, iters);
    cpu_timed_over(batch.iter().map(String::as_str), operation)
}

/// The thread CPU time of `operation` on each of `keys`; the keys were made before.
fn cpu_timed_over<'k>(
    keys: impl Iterator<Item = &'k str>,
    mut operation: impl FnMut(&str),
) -> Duration {
    let start = thread_cpu_time();
    for key in keys {
        operation(key);
    }
    thread_cpu_time() - start
}

/// Unique keys drawn before a measurement starts, laid end to end in one string, so the
/// timed loop spends nothing on making them (the same for every store measured).
pub struct KeyBatch {
    text: String,
}

impl KeyBatch {
    /// The next `count` keys of `keys`.
    pub fn new(keys: &mut Keys, count: u64) -> KeyBatch {
        let mut text = String::with_capacity(18 * count as usize);
        for _ in 0..count {
            text.push_str(keys.next_key());
        }
        KeyBatch { text }
    }

    /// The keys, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.text.len() / 18).map(|at| &self.text[18 * at..18 * at + 18])
    }
}

/// Fills `store` with `count` completed records that outlive the run.
pub fn fill_store(store: &mut Store, count: usize, now: Instant) {
    let mut keys = Keys::new("h-", 0);
    for _ in 0..count {
        let key = keys.next_key();
        let Claim::New(token) = store.claim(key, FINGERPRINT, 1, LEASE, now).unwrap() else {
            panic!("held key {key} was not new");
        };
        assert!(store.complete(key, &token, Response::new(200, BODY), HELD_TTL, now));
    }
}

/// Fills `backend` with `count` completed records that outlive the run.
pub fn fill_backend(backend: &InMemoryBackend, count: usize) {
    let mut keys = Keys::new("h-", 0);
    for _ in 0..count {
        let key = keys.next_key();
        let Claim::New(token) = backend.claim(key, FINGERPRINT, 1, LEASE).unwrap() else {
            panic!("held key {key} was not new");
        };
        assert!(
            backend
                .complete(key, &token, Response::new(200, BODY).into(), HELD_TTL)
                .unwrap()
        );
    }
}

/// One `Store` claim+complete of a fresh key, with a TTL of zero so that the next claim
/// (at a later `now`) drops the record again: the store's own expiry keeps the number of
/// records held steady, as the baseline's explicit `remove` does for it.
pub fn store_claim_complete(store: &mut Store, key: &str, now: Instant) {
    let Claim::New(token) = store.claim(key, FINGERPRINT, 1, LEASE, now).unwrap() else {
        panic!("key {key} was not new");
    };
    let done = store.complete(key, &token, Response::new(200, BODY), Duration::ZERO, now);
    assert!(done, "complete of {key} was refused");
}

/// One `Store` claim+complete of a fresh key at `now`, its record replayed for `ttl`.
pub fn store_claim_complete_for(store: &mut Store, key: &str, ttl: Duration, now: Instant) {
    let Claim::New(token) = store.claim(key, FINGERPRINT, 1, LEASE, now).unwrap() else {
        panic!("key {key} was not new");
    };
    let done = store.complete(key, &token, Response::new(200, BODY), ttl, now);
    assert!(done, "complete of {key} was refused");
}

/// One backend claim+complete of a fresh key, its record replayed for `ttl`.
pub fn backend_claim_complete_for(backend: &InMemoryBackend, key: &str, ttl: Duration) {
    let Claim::New(token) = backend.claim(key, FINGERPRINT, 1, LEASE).unwrap() else {
        panic!("key {key} was not new");
    };
    let done = backend
        .complete(key, &token, Response::new(200, BODY).into(), ttl)
        .unwrap();
    assert!(done, "complete of {key} was refused");
}

/// The same through a backend, which reads its own clock.
pub fn backend_claim_complete(backend: &InMemoryBackend, key: &str) {
    let Claim::New(token) = backend.claim(key, FINGERPRINT, 1, LEASE).unwrap() else {
        panic!("key {key} was not new");
    };
    let done = backend
        .complete(key, &token, Response::new(200, BODY).into(), Duration::ZERO)
        .unwrap();
    assert!(done, "complete of {key} was refused");
}

/// Where results that criterion does not record (the custom-harness figures) are written,
/// beside criterion's own: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else
/// the workspace's `target/criterion`.
pub fn results_dir() -> PathBuf {
    let base = if let Some(home) = std::env::var_os("CRITERION_HOME") {
        PathBuf::from(home)
    } else if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        PathBuf::from(target).join("criterion")
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/criterion")
    };
    base.join("idemkit")
}

/// Writes one custom figure as a small JSON object of named numbers, for
/// `bench/report.py`.
pub fn write_figure(name: &str, values: &[(&str, f64)]) {
    let dir = results_dir();
    std::fs::create_dir_all(&dir).expect("create the results directory");
    let fields: Vec<String> = values
        .iter()
        .map(|(field, value)| format!("\"{field}\": {value}"))
        .collect();
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, format!("{{{}}}\n", fields.join(", "))).expect("write a figure");
    println!("(written to {})", path.display());
}
