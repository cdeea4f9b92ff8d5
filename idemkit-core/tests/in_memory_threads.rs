//! `InMemoryBackend` under threads: racing claims, many workers, waiters and wake-ups,
//! timeouts, `ManualClock`, capacity across shards, and waiter bookkeeping.
//!
//! Leases and TTLs run on a `ManualClock` wherever the test allows it. Where real time is
//! the point (wake-ups, timeouts, a crashed owner), bounds are generous: the machine may be
//! small and busy, so these say "woke within 500 ms", never "within 5 ms".

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use idemkit_core::BlockingBackend;
use idemkit_core::{
    Claim, ClaimToken, Clock, Error, InMemoryBackend, ManualClock, Record, Response, State,
};

const LEASE: Duration = Duration::from_secs(30);
const TTL: Duration = Duration::from_secs(3600);
/// Long enough that no waiter here ever times out unless the test means it to.
const LONG_WAIT: Duration = Duration::from_secs(30);
/// How soon a woken waiter must return: far below the poll intervals it would otherwise
/// fall back on once parked for a while, far above any scheduling delay.
const PROMPT: Duration = Duration::from_millis(500);

fn manual_backend() -> (InMemoryBackend, ManualClock) {
    let clock = ManualClock::new();
    let backend = InMemoryBackend::builder().clock(clock.clone()).build();
    (backend, clock)
}

fn claim_new(backend: &InMemoryBackend, key: &str, lease: Duration) -> ClaimToken {
    match backend.claim(key, "fp", 1, lease) {
        Ok(Claim::New(token)) => token,
        other => panic!("expected New for {key:?}, got {other:?}"),
    }
}

/// Spins (politely) until `condition` holds, failing after ten seconds.
fn eventually(what: &str, condition: impl Fn() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "never saw {what}"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// A thread waiting for `key`; it reports what it got and when it returned.
fn waiter(
    backend: &InMemoryBackend,
    key: &'static str,
    timeout: Duration,
) -> JoinHandle<(Option<Record>, Instant)> {
    let backend = backend.clone();
    thread::spawn(move || {
        let record = backend.wait_for_completion(key, timeout).unwrap();
        (record, Instant::now())
    })
}

/// Waits until a waiter is parked on `key`, then lets it sit long enough that its poll
/// interval has grown to about a second: from then on, only a notification can wake it
/// within [`PROMPT`].
fn let_waiter_settle(backend: &InMemoryBackend) {
    eventually("a parked waiter", || backend.watched_keys() == 1);
    // Re-reads come at 50, 150, 350, 750 and 1550 ms, then every second.
    thread::sleep(Duration::from_millis(1600));
}

// ---- racing claims ----

#[test]
fn twenty_five_threads_racing_one_key_get_exactly_one_new() {
    const THREADS: usize = 25;
    const ROUNDS: usize = 20;
    let backend = InMemoryBackend::new();
    let start = Arc::new(Barrier::new(THREADS));
    let racers: Vec<_> = (0..THREADS)
        .map(|_| {
            let backend = backend.clone();
            let start = start.clone();
            thread::spawn(move || {
                (0..ROUNDS)
                    .map(|round| {
                        start.wait();
                        backend
                            .claim(&format!("race-{round}"), "fp", 1, LEASE)
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let claims: Vec<Vec<Claim>> = racers.into_iter().map(|r| r.join().unwrap()).collect();

    for round in 0..ROUNDS {
        let mut winner = None;
        let mut in_flight = 0;
        for claims in &claims {
            match &claims[round] {
                Claim::New(token) => {
                    assert!(winner.is_none(), "round {round}: two New claims");
                    winner = Some(token.clone());
                }
                Claim::InFlight(record) => {
                    in_flight += 1;
                    // Every loser saw the winner's claim, whoever that turns out to be.
                    let winner_record = backend.get(&format!("race-{round}")).unwrap().unwrap();
                    assert_eq!(record.claim_token(), winner_record.claim_token());
                }
                other => panic!("round {round}: unexpected {other:?}"),
            }
        }
        let winner = winner.unwrap_or_else(|| panic!("round {round}: nobody won"));
        assert_eq!(in_flight, THREADS - 1);
        let key = format!("race-{round}");
        assert_eq!(backend.get(&key).unwrap().unwrap().claim_token(), &winner);
    }
    assert_eq!(backend.len(), ROUNDS);
}

#[test]
fn many_workers_over_many_keys_run_each_key_once_and_agree_on_its_result() {
    const WORKERS: usize = 8;
    const KEYS: usize = 200;
    let backend = InMemoryBackend::new();
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
    let body_of = |key: usize| format!("result of key {key}").into_bytes();
    let start = Arc::new(Barrier::new(WORKERS));

    let workers: Vec<_> = (0..WORKERS)
        .map(|worker| {
            let backend = backend.clone();
            let runs = runs.clone();
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                let mut seen = Vec::with_capacity(KEYS);
                // Each worker starts elsewhere, so workers meet on keys in every state.
                for offset in 0..KEYS {
                    let key = (worker * KEYS / WORKERS + offset) % KEYS;
                    let name = format!("job-{key}");
                    let record = match backend.claim(&name, "fp", 1, LEASE).unwrap() {
                        Claim::New(token) => {
                            runs[key].fetch_add(1, Ordering::SeqCst);
                            thread::yield_now();
                            let response = Response::new(200, body_of(key));
                            assert!(
                                backend
                                    .complete(&name, &token, response.into(), TTL)
                                    .unwrap()
                            );
                            backend.get(&name).unwrap().expect("just completed")
                        }
                        Claim::InFlight(_) => backend
                            .wait_for_completion(&name, LONG_WAIT)
                            .unwrap()
                            .unwrap_or_else(|| panic!("{name}: wait ended without a result")),
                        // A replay carries no record: read it, as the others do.
                        Claim::Completed(_) => backend.get(&name).unwrap().expect("completed"),
                        Claim::Reclaimed(_) => panic!("{name}: no lease should lapse here"),
                    };
                    assert_eq!(record.state(), State::Completed);
                    assert_eq!(record.response().unwrap().body, body_of(key));
                    seen.push((key, record.shared_response().unwrap().clone()));
                }
                seen
            })
        })
        .collect();

    let seen: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    for (key, runs) in runs.iter().enumerate() {
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "key {key} ran {runs:?} times"
        );
    }
    for (key, response) in seen.iter().flatten() {
        let stored = backend.get(&format!("job-{key}")).unwrap().unwrap();
        assert!(
            Arc::ptr_eq(response, stored.shared_response().unwrap()),
            "key {key}: a worker saw a different response"
        );
    }
    assert_eq!(seen.iter().map(Vec::len).sum::<usize>(), WORKERS * KEYS);
    assert_eq!(backend.len(), KEYS);
    assert_eq!(backend.watched_keys(), 0);
}

// ---- waiters ----

#[test]
fn a_waiter_wakes_promptly_on_complete() {
    let backend = InMemoryBackend::new();
    let token = claim_new(&backend, "k", LEASE);
    let waiting = waiter(&backend, "k", LONG_WAIT);
    let_waiter_settle(&backend);

    let completed_at = Instant::now();
    assert!(
        backend
            .complete("k", &token, Response::new(200, "done").into(), TTL)
            .unwrap()
    );
    let (record, returned_at) = waiting.join().unwrap();

    let record = record.expect("the waiter gets the result");
    assert_eq!(record.response().unwrap().body, "done");
    let stored = backend.get("k").unwrap().unwrap();
    assert!(Arc::ptr_eq(
        record.shared_response().unwrap(),
        stored.shared_response().unwrap()
    ));
    let latency = returned_at.saturating_duration_since(completed_at);
    assert!(latency < PROMPT, "woke {latency:?} after the completion");
    assert_eq!(backend.watched_keys(), 0);
}

#[test]
fn a_waiter_wakes_promptly_on_release() {
    let backend = InMemoryBackend::new();
    let token = claim_new(&backend, "k", LEASE);
    let waiting = waiter(&backend, "k", LONG_WAIT);
    let_waiter_settle(&backend);

    let released_at = Instant::now();
    assert!(backend.release("k", &token).unwrap());
    let (record, returned_at) = waiting.join().unwrap();

    assert!(record.is_none(), "a released key has no result: {record:?}");
    let latency = returned_at.saturating_duration_since(released_at);
    assert!(latency < PROMPT, "woke {latency:?} after the release");
    assert_eq!(backend.watched_keys(), 0);
}

#[test]
fn a_waiter_follows_a_reclaim_to_the_new_claims_result() {
    let (backend, clock) = manual_backend();
    claim_new(&backend, "k", Duration::from_secs(10));
    let waiting = waiter(&backend, "k", LONG_WAIT);
    let_waiter_settle(&backend);

    // The owner's lease lapses and someone takes over at once: the waiter is woken by the
    // reclaim, sees a live claim again, and keeps waiting for it.
    clock.advance(Duration::from_secs(11));
    let Ok(Claim::Reclaimed(token)) = backend.claim("k", "fp", 1, LEASE) else {
        panic!("expected a reclaim");
    };
    let completed_at = Instant::now();
    assert!(
        backend
            .complete("k", &token, Response::new(200, "second try").into(), TTL)
            .unwrap()
    );
    let (record, returned_at) = waiting.join().unwrap();

    let record = record.expect("the waiter gets the new claim's result");
    assert_eq!(record.claim_token(), &token);
    assert_eq!(record.response().unwrap().body, "second try");
    let latency = returned_at.saturating_duration_since(completed_at);
    assert!(latency < PROMPT, "woke {latency:?} after the completion");
    assert_eq!(backend.watched_keys(), 0);
}

#[test]
fn a_waiter_on_a_crashed_owner_returns_once_the_lease_lapses() {
    let backend = InMemoryBackend::new();
    let lease = Duration::from_millis(200);
    let claimed_at = Instant::now();
    claim_new(&backend, "k", lease); // and the owner never comes back

    let (record, returned_at) = waiter(&backend, "k", LONG_WAIT).join().unwrap();
    assert!(record.is_none(), "{record:?}");
    let waited = returned_at - claimed_at;
    assert!(
        waited >= lease,
        "returned after {waited:?}, before the lease lapsed"
    );
    assert!(
        waited < Duration::from_secs(5),
        "returned after {waited:?}: it waited out far more than the lease"
    );
    assert_eq!(backend.watched_keys(), 0);
    // The key is the caller's to take over now.
    assert!(matches!(
        backend.claim("k", "fp", 1, LEASE),
        Ok(Claim::Reclaimed(_))
    ));
}

#[test]
fn a_wait_on_a_claim_that_never_completes_honours_its_timeout() {
    let backend = InMemoryBackend::new();
    claim_new(&backend, "k", Duration::from_secs(3600));
    let timeout = Duration::from_millis(300);

    let started = Instant::now();
    let record = backend.wait_for_completion("k", timeout).unwrap();
    let waited = started.elapsed();
    assert!(record.is_none(), "{record:?}");
    assert!(waited >= timeout, "gave up after {waited:?}");
    assert!(waited < Duration::from_secs(5), "overslept: {waited:?}");
    assert_eq!(backend.watched_keys(), 0);
}

#[test]
fn waits_return_at_once_for_no_record_a_result_or_a_lapsed_lease() {
    let (backend, clock) = manual_backend();
    let started = Instant::now();

    assert!(
        backend
            .wait_for_completion("nothing", LONG_WAIT)
            .unwrap()
            .is_none()
    );

    let token = claim_new(&backend, "done", LEASE);
    assert!(
        backend
            .complete("done", &token, Response::new(200, "x").into(), TTL)
            .unwrap()
    );
    let record = backend
        .wait_for_completion("done", LONG_WAIT)
        .unwrap()
        .unwrap();
    assert_eq!(record.response().unwrap().body, "x");

    // Lapsed by the backend's clock, not by real time.
    claim_new(&backend, "lapsed", Duration::from_secs(10));
    clock.advance(Duration::from_secs(10) + Duration::from_nanos(1));
    assert!(
        backend
            .wait_for_completion("lapsed", LONG_WAIT)
            .unwrap()
            .is_none()
    );

    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(5), "took {waited:?}");
    assert_eq!(backend.watched_keys(), 0);
}

#[test]
fn abandoned_waits_leave_no_entry_behind() {
    let backend = InMemoryBackend::new();
    let keys = ["a", "b", "c", "d"];
    for key in keys {
        claim_new(&backend, key, Duration::from_secs(3600));
    }
    let waiters: Vec<_> = keys
        .iter()
        .cycle()
        .take(12)
        .map(|&key| waiter(&backend, key, Duration::from_millis(200)))
        .collect();
    eventually("waiters on every key", || {
        backend.watched_keys() == keys.len()
    });
    for waiting in waiters {
        assert!(waiting.join().unwrap().0.is_none());
    }
    assert_eq!(backend.watched_keys(), 0);
    assert_eq!(backend.len(), keys.len(), "the claims themselves stay");
}

#[test]
fn two_hundred_waiters_all_wake_on_one_completion() {
    const WAITERS: usize = 200;
    let backend = InMemoryBackend::new();
    let token = claim_new(&backend, "k", LEASE);
    let all_started = Arc::new(Barrier::new(WAITERS + 1));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|_| {
            let backend = backend.clone();
            let all_started = all_started.clone();
            thread::spawn(move || {
                all_started.wait();
                backend.wait_for_completion("k", LONG_WAIT).unwrap()
            })
        })
        .collect();
    all_started.wait();
    eventually("a parked waiter", || backend.watched_keys() == 1);

    let completed_at = Instant::now();
    assert!(
        backend
            .complete("k", &token, Response::new(200, vec![7u8; 4096]).into(), TTL)
            .unwrap()
    );
    let results: Vec<_> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
    let took = completed_at.elapsed();

    let stored = backend.get("k").unwrap().unwrap();
    for (i, record) in results.iter().enumerate() {
        let record = record
            .as_ref()
            .unwrap_or_else(|| panic!("waiter {i} got nothing"));
        assert!(Arc::ptr_eq(
            record.shared_response().unwrap(),
            stored.shared_response().unwrap()
        ));
    }
    assert!(
        took < Duration::from_secs(5),
        "all woke only after {took:?}"
    );
    assert_eq!(backend.watched_keys(), 0);
}

// ---- ManualClock drives leases and TTLs ----

#[test]
fn a_manual_clock_drives_leases_without_sleeping() {
    let (backend, clock) = manual_backend();
    let old = claim_new(&backend, "k", Duration::from_secs(10));

    clock.advance(Duration::from_secs(10));
    assert!(matches!(
        backend.claim("k", "fp", 1, LEASE),
        Ok(Claim::InFlight(_))
    ));
    clock.advance(Duration::from_nanos(1));
    let Ok(Claim::Reclaimed(new)) = backend.claim("k", "fp", 1, LEASE) else {
        panic!("expected a reclaim");
    };
    assert!(
        !backend
            .complete("k", &old, Response::new(200, "late").into(), TTL)
            .unwrap()
    );
    assert!(!backend.renew("k", &old, LEASE).unwrap());

    // Renewing keeps the new lease live past its first end.
    clock.advance(LEASE - Duration::from_secs(1));
    assert!(backend.renew("k", &new, LEASE).unwrap());
    clock.advance(Duration::from_secs(2));
    assert!(matches!(
        backend.claim("k", "fp", 1, LEASE),
        Ok(Claim::InFlight(_))
    ));
}

#[test]
fn a_manual_clock_drives_ttls_without_sleeping() {
    let (backend, clock) = manual_backend();
    let token = claim_new(&backend, "k", LEASE);
    assert!(
        backend
            .complete(
                "k",
                &token,
                Response::new(200, "x").into(),
                Duration::from_secs(60)
            )
            .unwrap()
    );
    let record = backend.get("k").unwrap().unwrap();
    assert_eq!(record.completed_at(), Some(clock.now()));
    assert_eq!(
        record.expires_at(),
        Some(clock.now() + Duration::from_secs(60))
    );

    clock.advance(Duration::from_secs(60));
    assert!(matches!(
        backend.claim("k", "fp", 1, LEASE),
        Ok(Claim::Completed(_))
    ));
    clock.advance(Duration::from_nanos(1));
    assert!(backend.get("k").unwrap().is_none());
    claim_new(&backend, "k", LEASE);
}

#[test]
fn a_manual_clock_drives_the_reclaim_grace() {
    let clock = ManualClock::new();
    let backend = InMemoryBackend::builder()
        .reclaim_grace(Duration::from_secs(5))
        .clock(clock.clone())
        .build();
    let token = claim_new(&backend, "k", Duration::from_secs(10));
    assert_eq!(
        backend.next_expiry(),
        Some(clock.now() + Duration::from_secs(15) + Duration::from_nanos(1))
    );

    clock.advance(Duration::from_secs(15));
    assert_eq!(backend.purge_expired(), 0);
    assert!(
        backend.get("k").unwrap().is_some(),
        "kept through the grace"
    );
    clock.advance(Duration::from_nanos(1));
    assert!(backend.get("k").unwrap().is_none());
    // Release is judged by the backend's clock too: past the grace, the claim is gone.
    assert!(!backend.release("k", &token).unwrap());
    assert_eq!(
        backend.purge_expired(),
        1,
        "a refused release leaves it to the purge"
    );
    assert!(backend.is_empty());
    assert_eq!(backend.next_expiry(), None);
}

// ---- capacity ----

#[test]
fn capacity_stays_exact_under_racing_claims_across_shards() {
    const THREADS: usize = 4;
    const KEYS: usize = 100;
    const MAX: usize = 50;
    let backend = InMemoryBackend::builder().max_size(MAX).build();
    let start = Arc::new(Barrier::new(THREADS));
    let racers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let backend = backend.clone();
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                let (mut new, mut full) = (0, 0);
                for i in 0..KEYS {
                    match backend.claim(&format!("t{thread}-k{i}"), "fp", 1, LEASE) {
                        Ok(Claim::New(_)) => new += 1,
                        Err(Error::Full { max_size: MAX }) => full += 1,
                        other => panic!("unexpected {other:?}"),
                    }
                }
                (new, full)
            })
        })
        .collect();
    let (new, full) = racers
        .into_iter()
        .map(|r| r.join().unwrap())
        .fold((0, 0), |(n, f), (new, full)| (n + new, f + full));
    assert_eq!(new, MAX);
    assert_eq!(full, THREADS * KEYS - MAX);
    assert_eq!(backend.len(), MAX);
}

#[test]
fn slots_freed_by_racing_releases_are_never_lost_to_a_claim() {
    // Each thread holds at most HELD claims at a time, all threads together fewer than
    // MAX: no claim may be refused, however the shards that released a slot keep it for
    // their own next claims.
    const THREADS: usize = 4;
    const HELD: usize = 3;
    const MAX: usize = 16;
    const ROUNDS: usize = 20_000;
    let backend = InMemoryBackend::builder().max_size(MAX).shards(8).build();
    let start = Arc::new(Barrier::new(THREADS));
    let churners: Vec<_> = (0..THREADS)
        .map(|thread| {
            let backend = backend.clone();
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                let mut held = std::collections::VecDeque::new();
                for round in 0..ROUNDS {
                    let key = format!("t{thread}-{round}");
                    match backend.claim(&key, "fp", 1, LEASE) {
                        Ok(Claim::New(token)) => held.push_back((key, token)),
                        other => panic!("round {round}: {other:?} with {} held", backend.len()),
                    }
                    if held.len() == HELD {
                        let (key, token) = held.pop_front().unwrap();
                        assert!(backend.release(&key, &token).unwrap());
                    }
                }
                held.len()
            })
        })
        .collect();
    let held: usize = churners.into_iter().map(|c| c.join().unwrap()).sum();
    assert_eq!(backend.len(), held);
    // And what is free is free to anyone: exactly MAX - held more claims, then Full.
    for i in 0..MAX - held {
        claim_new(&backend, &format!("last-{i}"), LEASE);
    }
    assert!(matches!(
        backend.claim("one-more", "fp", 1, LEASE),
        Err(Error::Full { max_size: MAX })
    ));
}

#[test]
fn a_full_backend_is_cured_by_expired_records_in_other_shards() {
    const MAX: usize = 8;
    let clock = ManualClock::new();
    let backend = InMemoryBackend::builder()
        .max_size(MAX)
        .shards(64)
        .clock(clock.clone())
        .build();
    for i in 0..MAX {
        let key = format!("old-{i}");
        let token = claim_new(&backend, &key, LEASE);
        let stored = backend.complete(
            &key,
            &token,
            Response::new(200, "x").into(),
            Duration::from_secs(1),
        );
        assert!(stored.unwrap());
    }
    assert!(matches!(
        backend.claim("new-0", "fp", 1, LEASE),
        Err(Error::Full { max_size: MAX })
    ));

    // With 64 shards most new keys land where nothing expired: only the other shards'
    // expired records can make room for them.
    clock.advance(Duration::from_secs(2));
    for i in 0..MAX {
        claim_new(&backend, &format!("new-{i}"), LEASE);
    }
    assert_eq!(backend.len(), MAX);
    assert!(matches!(
        backend.claim("one-more", "fp", 1, LEASE),
        Err(Error::Full { max_size: MAX })
    ));
}

#[test]
fn a_backend_is_send_sync_and_its_clones_share_one_store() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<InMemoryBackend>();

    let backend = InMemoryBackend::default();
    let clone = backend.clone();
    let token = claim_new(&backend, "k", LEASE);
    assert!(
        clone
            .complete("k", &token, Response::new(200, "shared").into(), TTL)
            .unwrap()
    );
    assert_eq!(
        backend.get("k").unwrap().unwrap().response().unwrap().body,
        "shared"
    );
    assert_eq!(clone.len(), 1);
}

/// Waits on one key that end at the same moment all leave: the key's waiter entry goes
/// with the last of them, whatever order they take the shard's lock in. Each round eight
/// threads wait on the same claimed key with a tiny timeout, so they time out and leave
/// together, while another thread takes the (only) shard's lock over and over to shuffle
/// who gets it first. Afterwards no wait is in progress and, once the owners' claims are
/// gone, no entry may remain. (Counting a waiter's own reference after unlocking let two
/// leavers each think the other stayed: a few entries of the 20,000 leaked every run.)
#[test]
fn waiter_entries_never_outlive_two_waits_that_end_together() {
    const KEYS: usize = 20_000;
    const WAITERS: usize = 8;
    let clock = ManualClock::new();
    let backend = InMemoryBackend::builder()
        .shards(1)
        .max_size(KEYS)
        .clock(clock.clone())
        .build();
    let keys: Arc<Vec<String>> = Arc::new((0..KEYS).map(|i| format!("key-{i}")).collect());
    for key in keys.iter() {
        claim_new(&backend, key, LEASE);
    }
    let together = Arc::new(Barrier::new(WAITERS));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|_| {
            let (backend, keys, together) = (backend.clone(), keys.clone(), together.clone());
            thread::spawn(move || {
                for key in keys.iter() {
                    together.wait();
                    let got = backend
                        .wait_for_completion(key, Duration::from_micros(100))
                        .unwrap();
                    assert!(got.is_none(), "{key} never completes");
                }
            })
        })
        .collect();
    let shuffler = {
        let (backend, done) = (backend.clone(), done.clone());
        thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let _ = backend.get("key-0").unwrap().unwrap();
                thread::yield_now();
            }
        })
    };
    for waiter in waiters {
        waiter.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    shuffler.join().unwrap();

    // The owners crash: their leases lapse, then the reclaim grace ends.
    clock.advance(LEASE + Duration::from_secs(61));
    assert_eq!(backend.purge_expired(), KEYS);
    assert_eq!(backend.watched_keys(), 0, "waiter entries leaked");
}
