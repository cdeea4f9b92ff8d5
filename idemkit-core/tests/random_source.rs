//! Randomness is input: a store draws every claim token from the source it is given, so
//! a seeded source replays a run token for token, and a failing one fails the claim.

use std::time::{Duration, Instant};

use idemkit_core::BlockingBackend;
use idemkit_core::{
    Claim, ClaimToken, Error, InMemoryBackend, RandomSource, RandomSourceError, SeededRandom, Store,
};

const LEASE: Duration = Duration::from_secs(30);

/// The tokens a store on `source` hands out for ten new keys, and one reclaim.
fn tokens(source: impl RandomSource) -> Vec<ClaimToken> {
    let mut store = Store::builder().random(source).build().unwrap();
    let now = Instant::now();
    let mut tokens: Vec<ClaimToken> = (0..10)
        .map(
            |i| match store.claim(&format!("k{i}"), "fp", 1, LEASE, now) {
                Ok(Claim::New(token)) => token,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    match store.claim("k0", "fp", 1, LEASE, now + LEASE * 2) {
        Ok(Claim::Reclaimed(token)) => tokens.push(token),
        other => panic!("{other:?}"),
    }
    tokens
}

#[test]
fn two_stores_with_the_same_seed_hand_out_the_same_tokens() {
    let one = tokens(SeededRandom::new(17));
    assert_eq!(one, tokens(SeededRandom::new(17)));
    let distinct: std::collections::HashSet<_> = one.iter().collect();
    assert_eq!(distinct.len(), one.len(), "no token repeats within a run");
}

#[test]
fn different_seeds_hand_out_different_tokens() {
    let one = tokens(SeededRandom::new(17));
    let other = tokens(SeededRandom::new(18));
    assert!(
        one.iter().all(|token| !other.contains(token)),
        "{one:?} {other:?}"
    );
}

#[test]
fn the_default_source_is_not_seeded() {
    // Two stores on the OS source share no token: neither is a fixed sequence.
    let one = tokens(idemkit_core::OsRandom);
    let other = tokens(idemkit_core::OsRandom);
    assert!(one.iter().all(|token| !other.contains(token)));
}

/// A source that has failed since a given draw.
struct FailingAfter(std::sync::atomic::AtomicUsize);

impl RandomSource for FailingAfter {
    fn fill(&self, buffer: &mut [u8]) -> Result<(), RandomSourceError> {
        let left = self.0.load(std::sync::atomic::Ordering::Relaxed);
        if left == 0 {
            return Err(RandomSourceError::new("out of entropy"));
        }
        self.0.store(left - 1, std::sync::atomic::Ordering::Relaxed);
        buffer.fill(7);
        Ok(())
    }
}

#[test]
fn a_failing_source_fails_the_claim_and_stores_nothing() {
    let source = FailingAfter(1.into());
    let mut store = Store::builder().random(source).build().unwrap();
    let now = Instant::now();
    let Ok(Claim::New(token)) = store.claim("first", "fp", 1, LEASE, now) else {
        panic!("the first draw succeeds");
    };
    assert_eq!(
        token.as_bytes(),
        &[7; 16],
        "the token is the source's bytes"
    );
    match store.claim("second", "fp", 1, LEASE, now) {
        Err(Error::Random(error)) => assert_eq!(error.to_string(), "out of entropy"),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.len(), 1, "the refused claim left nothing behind");
    assert!(store.get("second", now).is_none());
}

#[test]
fn the_in_memory_backend_draws_from_its_source_on_every_shard() {
    let claim_all = |seed: u64| {
        let backend = InMemoryBackend::builder()
            .shards(4)
            .random(SeededRandom::new(seed))
            .build();
        (0..20)
            .map(|i| match backend.claim(&format!("k{i}"), "fp", 1, LEASE) {
                Ok(Claim::New(token)) => token,
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>()
    };
    // One thread claims in order, so the shards draw from the shared source in order.
    assert_eq!(claim_all(3), claim_all(3));
    assert_ne!(claim_all(3), claim_all(4));
}
