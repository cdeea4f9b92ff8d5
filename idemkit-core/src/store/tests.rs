//! The store's tests that look inside it: the deadline index, compaction, and the
//! agreement of its structures after any sequence of operations.

mod deadline_index {
    use super::super::*;

    const LEASE: Duration = Duration::from_secs(30);

    #[test]
    fn renewing_forever_keeps_the_deadline_index_proportional_to_the_store() {
        let mut store = Store::new();
        let mut now = Instant::now();
        let Claim::New(token) = store.claim("k", "fp", 1, LEASE, now).unwrap() else {
            panic!()
        };
        for _ in 0..10_000 {
            now += Duration::from_millis(1);
            assert!(store.renew("k", &token, LEASE, now));
        }
        assert!(
            store.deadlines.len() <= 2 * store.len() + 65,
            "{} entries",
            store.deadlines.len()
        );
        assert_eq!(
            store.next_expiry(),
            Some(now + LEASE + store.reclaim_grace() + Duration::from_nanos(1))
        );
    }

    #[test]
    fn the_index_top_is_exact_after_every_kind_of_change() {
        let mut store = Store::builder()
            .reclaim_grace(Duration::ZERO)
            .build()
            .unwrap();
        let now = Instant::now();
        let Claim::New(a) = store.claim("a", "fp", 1, LEASE, now).unwrap() else {
            panic!()
        };
        let Claim::New(b) = store.claim("b", "fp", 1, 2 * LEASE, now).unwrap() else {
            panic!()
        };
        let first = |lease: Duration| Some(now + lease + Duration::from_nanos(1));
        assert_eq!(store.next_expiry(), first(LEASE));
        assert!(store.renew("a", &a, 3 * LEASE, now));
        assert_eq!(store.next_expiry(), first(2 * LEASE));
        assert!(store.release("b", &b, now));
        assert_eq!(store.next_expiry(), first(3 * LEASE));
        assert!(store.complete("a", &a, Response::new(200, "ok"), Duration::MAX, now));
        assert_eq!(
            store.next_expiry(),
            None,
            "a record that never expires is not indexed"
        );
    }
}

mod compaction {
    use super::super::*;

    const LEASE: Duration = Duration::from_secs(30);

    #[test]
    fn a_store_that_drains_compacts_and_keeps_what_remains_findable() {
        let now = Instant::now();
        let mut store = Store::builder().max_size(100_000).build().unwrap();
        let mut tokens = Vec::new();
        for i in 0..5_000 {
            let Claim::New(token) = store.claim(&format!("k{i}"), "fp", 1, LEASE, now).unwrap()
            else {
                panic!("new");
            };
            tokens.push(token);
        }
        let grown = store.slots.capacity();
        assert!(grown >= 5_000);
        for (i, token) in tokens.iter().enumerate().skip(10) {
            assert!(store.release(&format!("k{i}"), token, now));
        }
        assert_eq!(store.len(), 10);
        assert!(
            store.slots.capacity() <= 2 * 10 + COMPACT_SLACK,
            "{} slots for 10 records",
            store.slots.capacity()
        );
        assert!(store.keys.capacity() < 100, "{}", store.keys.capacity());
        // What remains is still found, held and indexed.
        for (i, token) in tokens.iter().enumerate().take(10) {
            let key = format!("k{i}");
            assert!(store.get(&key, now).is_some(), "{key}");
            assert!(store.renew(&key, token, LEASE, now), "{key}");
        }
        assert_eq!(
            store.next_expiry(),
            Some(now + LEASE + store.reclaim_grace() + Duration::from_nanos(1))
        );
        // And it grows again.
        for i in 0..100 {
            assert!(matches!(
                store.claim(&format!("again-{i}"), "fp", 1, LEASE, now),
                Ok(Claim::New(_))
            ));
        }
        assert_eq!(store.len(), 110);
        let later = now + LEASE + store.reclaim_grace() + Duration::from_secs(1);
        assert_eq!(store.purge_expired(later), 110);
        assert_eq!(store.slots.capacity(), 0, "an empty store owns no slots");
    }
}

/// The structures behind the store (the slot table, the key table, the deadline index and
/// the capacity count) agree with each other after any sequence of operations.
mod consistency {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::super::*;

    const KEYS: [&str; 4] = ["a", "b", "c", "d"];
    const GRACE: Duration = Duration::from_millis(3);

    #[derive(Clone, Debug)]
    enum Op {
        Claim {
            key: usize,
            lease: Duration,
        },
        Complete {
            key: usize,
            ttl: Duration,
            stale: bool,
        },
        Release {
            key: usize,
        },
        Renew {
            key: usize,
            lease: Duration,
        },
        Advance(Duration),
        Purge,
    }

    fn span() -> impl Strategy<Value = Duration> {
        prop_oneof![
            Just(Duration::ZERO),
            Just(Duration::from_millis(1)),
            Just(Duration::from_millis(5)),
            Just(Duration::from_millis(50)),
            Just(Duration::MAX),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        let key = 0..KEYS.len();
        prop_oneof![
            3 => (key.clone(), span()).prop_map(|(key, lease)| Op::Claim { key, lease }),
            3 => (key.clone(), span(), any::<bool>())
                .prop_map(|(key, ttl, stale)| Op::Complete { key, ttl, stale }),
            1 => key.clone().prop_map(|key| Op::Release { key }),
            2 => (key, span()).prop_map(|(key, lease)| Op::Renew { key, lease }),
            2 => (0u64..8).prop_map(|ms| Op::Advance(Duration::from_millis(ms))),
            1 => Just(Op::Purge),
        ]
    }

    /// Removal deadlines of the records held, by slot.
    fn held(store: &Store) -> Vec<(Slot, Stamp)> {
        (0..)
            .zip(store.slots.iter())
            .filter_map(|(slot, record)| {
                Some((slot, record.as_ref()?.removal_deadline(store.grace)))
            })
            .collect()
    }

    fn check(store: &Store) {
        let held = held(store);
        assert_eq!(store.len(), held.len());
        assert_eq!(store.keys.len(), held.len(), "one table entry per record");
        let Budget::Own { held: counted, .. } = store.capacity else {
            panic!("a lone store has a budget of its own");
        };
        assert_eq!(counted, held.len(), "the capacity counts every record");
        for &(slot, _) in &held {
            let record = store.record(slot);
            let key = &record.key();
            let hashed = store.hasher.hash(key);
            assert_eq!(record.hash(), hashed.hash, "a record keeps its key's hash");
            assert_eq!(store.find_in_table(hashed), Some(slot));
            assert_eq!(store.find(hashed), Some(slot));
            assert_eq!(store.hashed(key).hash, hashed.hash);
        }
        let earliest = held
            .iter()
            .map(|&(_, deadline)| deadline)
            .filter(|&deadline| deadline != Stamp::NEVER)
            .min();
        assert_eq!(
            store.next_expiry(),
            earliest.map(|deadline| store.timeline().instant(deadline.next())),
            "the index's earliest entry is exact"
        );
        assert!(
            store.deadlines.len() <= 2 * held.len() + 66,
            "{}",
            store.deadlines.len()
        );
        // The last claim's slot, if it still holds a record, holds a record found by its
        // key; a key not held is never found through it.
        if let Some(record) = store.slots.get(store.recent) {
            assert_eq!(store.recent(&record.key()), Some(store.recent));
        }
        for key in KEYS {
            let hashed = store.hasher.hash(key);
            assert_eq!(store.find(hashed), store.find_in_table(hashed), "{key}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn the_structures_agree_after_any_sequence(ops in prop::collection::vec(op(), 1..80)) {
            let mut store = Store::builder()
                .max_size(3)
                .reclaim_grace(GRACE)
                .build()
                .unwrap();
            let mut now = Instant::now();
            let mut tokens: HashMap<usize, Vec<ClaimToken>> = HashMap::new();
            for op in ops {
                match op {
                    Op::Claim { key, lease } => {
                        if let Ok(Claim::New(token) | Claim::Reclaimed(token)) =
                            store.claim(KEYS[key], "fp", 1, lease, now)
                        {
                            tokens.entry(key).or_default().push(token);
                        }
                    }
                    Op::Complete { key, ttl, stale } => {
                        let held = tokens.get(&key).map(Vec::as_slice).unwrap_or_default();
                        let token = if stale { held.first() } else { held.last() };
                        if let Some(token) = token {
                            let response = Response::new(200, "ok");
                            let _ = store.complete(KEYS[key], token, response, ttl, now);
                        }
                    }
                    Op::Release { key } => {
                        if let Some(token) = tokens.get(&key).and_then(|held| held.last()) {
                            let _ = store.release(KEYS[key], token, now);
                        }
                    }
                    Op::Renew { key, lease } => {
                        if let Some(token) = tokens.get(&key).and_then(|held| held.last()) {
                            let _ = store.renew(KEYS[key], token, lease, now);
                        }
                    }
                    Op::Advance(by) => now += by,
                    Op::Purge => {
                        let at = store.timeline.map_or(Stamp::UNSET, |line| line.stamp(now));
                        let due = held(&store)
                            .iter()
                            .filter(|&&(_, deadline)| deadline < at)
                            .count();
                        prop_assert_eq!(store.purge_expired(now), due);
                        prop_assert!(held(&store).iter().all(|&(_, deadline)| at <= deadline));
                    }
                }
                check(&store);
            }
        }
    }
}
