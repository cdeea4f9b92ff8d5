//! Figure 7 of the first round (BENCHMARKS.md): how long a thread blocked in
//! `wait_for_completion` takes to return once the key is completed.
//!
//! For each of 2,000 keys: claim it, let a waiter thread start waiting on it, make sure
//! the waiter is registered and has had time to fall asleep, then take the time just
//! before `complete`; the waiter takes the time as soon as `wait_for_completion`
//! returns. The latency is the difference (both read the same monotonic clock). Prints
//! percentiles; goal: p99 at most 200 us. A `harness = false` binary; `cargo test
//! --benches` runs 20 wake-ups as a smoke test.

mod support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use idemkit_core::BlockingBackend;
use idemkit_core::{Claim, InMemoryBackend, Response};
use support::{BODY, FINGERPRINT, HELD_TTL, Keys, LEASE};

/// How long the waiter is given to park after registering, so each wake-up is from
/// sleep and not from a waiter still on its way to the futex.
const SETTLE: Duration = Duration::from_micros(500);
/// A bound no healthy wake-up comes near; the poll floor (50 ms) would hide a lost one.
const WAIT_TIMEOUT: Duration = Duration::from_secs(10);

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let rank = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn main() {
    let wakeups = if support::measuring() { 2_000 } else { 20 };
    let backend = InMemoryBackend::new();
    let (keys_to_wait_on, waiter_keys) = mpsc::channel::<String>();
    let (woken_at, wake_times) = mpsc::channel::<(bool, Instant)>();
    let waiter = {
        let backend = backend.clone();
        std::thread::spawn(move || {
            for key in waiter_keys {
                let record = backend.wait_for_completion(&key, WAIT_TIMEOUT).unwrap();
                let now = Instant::now();
                woken_at
                    .send((record.is_some(), now))
                    .expect("main is listening");
            }
        })
    };

    let mut keys = Keys::new("w-", 0);
    let mut latencies = Vec::with_capacity(wakeups);
    for _ in 0..wakeups {
        let key = keys.next_key().to_owned();
        let Claim::New(token) = backend.claim(&key, FINGERPRINT, 1, LEASE).unwrap() else {
            panic!("{key} was not new");
        };
        keys_to_wait_on
            .send(key.clone())
            .expect("the waiter is running");
        while backend.watched_keys() == 0 {
            std::thread::yield_now();
        }
        std::thread::sleep(SETTLE);
        let before = Instant::now();
        assert!(
            backend
                .complete(&key, &token, Response::new(200, BODY).into(), HELD_TTL)
                .unwrap()
        );
        let (completed, woken) = wake_times.recv().expect("the waiter answers");
        assert!(completed, "the waiter on {key} saw no completion");
        latencies.push(woken.saturating_duration_since(before));
    }
    drop(keys_to_wait_on);
    waiter.join().expect("the waiter panicked");

    latencies.sort();
    let micros = |duration: Duration| duration.as_secs_f64() * 1e6;
    let p50 = micros(percentile(&latencies, 0.50));
    let p90 = micros(percentile(&latencies, 0.90));
    let p99 = micros(percentile(&latencies, 0.99));
    let max = micros(*latencies.last().expect("at least one wake-up"));
    println!("blocking waiter woken by complete, {wakeups} wake-ups");
    println!("  p50 {p50:.1} us, p90 {p90:.1} us, p99 {p99:.1} us, max {max:.1} us");
    println!("  goal: p99 at most 200 us");
    if support::measuring() {
        support::write_figure(
            "wake_latency",
            &[
                ("wakeups", wakeups as f64),
                ("p50_us", p50),
                ("p90_us", p90),
                ("p99_us", p99),
                ("max_us", max),
            ],
        );
    }
}
