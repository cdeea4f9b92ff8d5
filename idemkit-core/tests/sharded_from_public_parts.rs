//! A sharded backend with wake-ups, built from the public `Store` API only (as the
//! in-memory backend is): one key hasher routes a key and finds it in its shard's store,
//! one shared capacity bounds every shard, and waiters read `watch_hashed` under the
//! shard's lock, so no completion slips in between the read and the wait.

use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use idemkit_core::{
    Claim, ClaimToken, Error, KeyHasher, Record, Response, SharedCapacity, Store, Watch,
};

const LEASE: Duration = Duration::from_secs(30);

/// One shard: a store, and a condition variable its waiters sleep on.
struct Shard {
    store: Mutex<Store>,
    completed: Condvar,
}

/// Two shards, one hasher, one capacity.
struct TwoShards {
    shards: [Shard; 2],
    hasher: KeyHasher,
    capacity: SharedCapacity,
}

impl TwoShards {
    fn new(max_size: usize) -> TwoShards {
        let hasher = KeyHasher::new();
        let capacity = SharedCapacity::new(max_size);
        let shard = || Shard {
            store: Mutex::new(
                Store::builder()
                    .shared_capacity(capacity.clone())
                    .key_hasher(hasher.clone())
                    .build()
                    .unwrap(),
            ),
            completed: Condvar::new(),
        };
        TwoShards {
            shards: [shard(), shard()],
            hasher,
            capacity,
        }
    }

    fn shard_of(&self, key: &str) -> usize {
        self.hasher.hash(key).shard(self.shards.len())
    }

    fn claim(&self, key: &str) -> Result<Claim, Error> {
        let key = self.hasher.hash(key);
        let shard = &self.shards[key.shard(2)];
        let mut store = shard.store.lock().unwrap();
        store.claim_hashed(key, "fp", 1, LEASE, Instant::now())
    }

    fn complete(&self, key: &str, token: &ClaimToken) -> bool {
        let key = self.hasher.hash(key);
        let shard = &self.shards[key.shard(2)];
        let done = shard.store.lock().unwrap().complete_hashed(
            key,
            token,
            Response::new(200, "done"),
            LEASE,
            Instant::now(),
        );
        if done {
            shard.completed.notify_all();
        }
        done
    }

    /// Waits up to `timeout` for `key` to complete; `None` if it is absent, lapsed or
    /// still running at the deadline.
    fn wait(&self, key: &str, timeout: Duration) -> Option<Record> {
        let deadline = Instant::now() + timeout;
        let key = self.hasher.hash(key);
        let shard = &self.shards[key.shard(2)];
        let mut store = shard.store.lock().unwrap();
        loop {
            let now = Instant::now();
            let lease_left = match store.watch_hashed(key, now) {
                Watch::Completed(record) => return Some(record),
                Watch::Absent | Watch::Lapsed => return None,
                Watch::Claimed { lease_left } => lease_left,
            };
            let left = deadline.saturating_duration_since(now);
            if left.is_zero() {
                return None;
            }
            store = shard
                .completed
                .wait_timeout(store, lease_left.min(left))
                .unwrap()
                .0;
        }
    }
}

/// Keys that land on each shard.
fn keys_per_shard(backend: &TwoShards) -> [Vec<String>; 2] {
    let mut keys = [Vec::new(), Vec::new()];
    for i in 0..64 {
        let key = format!("key-{i}");
        keys[backend.shard_of(&key)].push(key);
    }
    assert!(!keys[0].is_empty() && !keys[1].is_empty(), "{keys:?}");
    keys
}

#[test]
fn the_capacity_is_one_exact_limit_over_both_shards() {
    let backend = TwoShards::new(3);
    let [left, right] = keys_per_shard(&backend);
    for key in [&left[0], &right[0], &left[1]] {
        assert!(matches!(backend.claim(key), Ok(Claim::New(_))), "{key}");
    }
    assert_eq!(backend.capacity.held(), 3);
    assert!(matches!(
        backend.claim(&right[1]),
        Err(Error::Full { max_size: 3 })
    ));
    // A key already held is still found through its own shard.
    assert!(matches!(backend.claim(&left[0]), Ok(Claim::InFlight(_))));
}

#[test]
fn a_completion_wakes_a_waiter_on_its_shard() {
    let backend = Arc::new(TwoShards::new(100));
    let [_, right] = keys_per_shard(&backend);
    let key = right[0].clone();
    let Ok(Claim::New(token)) = backend.claim(&key) else {
        panic!("new");
    };
    let waiter = {
        let (backend, key) = (backend.clone(), key.clone());
        // The lease (30 s) and the timeout (60 s) are far longer than the test: only the
        // completion can end this wait in time.
        thread::spawn(move || {
            let started = Instant::now();
            (
                backend.wait(&key, Duration::from_secs(60)),
                started.elapsed(),
            )
        })
    };
    thread::sleep(Duration::from_millis(50));
    assert!(backend.complete(&key, &token));
    let (record, waited) = waiter.join().unwrap();
    let record = record.expect("the waiter saw the completion");
    assert_eq!(record.response().unwrap().status, 200);
    assert!(
        waited < Duration::from_secs(20),
        "woken, not timed out: {waited:?}"
    );
}

#[test]
fn a_key_hashed_by_another_hasher_is_still_found() {
    let backend = TwoShards::new(10);
    let [left, _] = keys_per_shard(&backend);
    let Ok(Claim::New(token)) = backend.claim(&left[0]) else {
        panic!("new");
    };
    let foreign = KeyHasher::new().hash(&left[0]);
    let mut store = backend.shards[0].store.lock().unwrap();
    assert!(store.get_hashed(foreign, Instant::now()).is_some());
    assert!(store.renew_hashed(foreign, &token, LEASE, Instant::now()));
}
