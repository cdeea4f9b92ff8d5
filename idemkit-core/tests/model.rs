//! Model check of `Store`: random operation sequences over three keys, each step predicted
//! by a small reference model that follows the specification's store rules directly, with
//! plain `Instant`s and a `HashMap`, and compared with what the store returns.
//!
//! Tokens are random, so the model cannot predict them: it takes the token of each new
//! claim from the store, checks it was never handed out before, and from then on uses it
//! as the current token of that key (or, later, as a stale one).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Claim, ClaimToken, Error, Record, Response, SeededRandom, State, Store};
use proptest::prelude::*;

/// Two short keys, and one of the 64 lowercase hex digits an executor's keys are (which
/// the store keeps as the digest they stand for when its fingerprint is one too).
const KEYS: [&str; 3] = [
    "a",
    "b",
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
];
/// Short fingerprints, and two of an executor's that differ only in their last digit.
const FINGERPRINTS: [(&str, u32); 5] = [
    ("fp-1", 1),
    ("fp-2", 1),
    ("fp-1", 2),
    (
        "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c750",
        1,
    ),
    (
        "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c751",
        1,
    ),
];
const LEASES: [Duration; 4] = [
    Duration::ZERO,
    Duration::from_secs(1),
    Duration::from_secs(5),
    Duration::MAX,
];
const TTLS: [Duration; 3] = [Duration::ZERO, Duration::from_secs(3), Duration::MAX];
/// Steps of time; 1 s and 2 s land exactly on lease, grace and TTL boundaries, 1 ns just
/// past them.
const STEPS: [Duration; 7] = [
    Duration::ZERO,
    Duration::from_nanos(1),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(3),
    Duration::from_secs(61),
    Duration::from_secs(3600),
];
/// Short enough that lapsed claims are dropped within a sequence, so the grace matters.
const GRACE: Duration = Duration::from_secs(2);

/// Which token an operation presents.
#[derive(Clone, Debug)]
enum TokenPick {
    /// The token of the key's latest claim (which may since have completed or gone).
    Current,
    /// One of the key's earlier tokens, fenced out by a later claim.
    Stale(usize),
    /// The latest token of another key.
    OtherKey(usize),
    /// A token no claim ever had.
    Forged(u8),
}

#[derive(Clone, Debug)]
enum Op {
    Claim {
        key: usize,
        fingerprint: usize,
        lease: usize,
    },
    Complete {
        key: usize,
        token: TokenPick,
        ttl: usize,
    },
    Release {
        key: usize,
        token: TokenPick,
    },
    Renew {
        key: usize,
        token: TokenPick,
        lease: usize,
    },
    Advance(usize),
    Purge,
}

// ---- the reference model ----

/// `now + duration`, or `None` for a deadline beyond any instant ("never").
fn deadline(now: Instant, duration: Duration) -> Option<Instant> {
    now.checked_add(duration)
}

/// Rule 2: a deadline is live while `now <= D`.
fn live(deadline: Option<Instant>, now: Instant) -> bool {
    deadline.is_none_or(|deadline| now <= deadline)
}

#[derive(Clone, Debug)]
struct Completion {
    at: Instant,
    expires_at: Option<Instant>,
    response: Response,
}

#[derive(Clone, Debug)]
struct ModelRecord {
    fingerprint: &'static str,
    fingerprint_version: u32,
    token: ClaimToken,
    claimed_at: Instant,
    lease_until: Option<Instant>,
    completion: Option<Completion>,
}

impl ModelRecord {
    /// Rules 6 and 7: a completed record is gone once it expires; a claim once its lease
    /// and the reclaim grace after it have passed.
    fn gone(&self, now: Instant) -> bool {
        match &self.completion {
            Some(completion) => !live(completion.expires_at, now),
            None => !live(self.lease_until.and_then(|end| end.checked_add(GRACE)), now),
        }
    }

    /// Rules 3 to 5: only the live claim's own token acts on it.
    fn held_by(&self, token: &ClaimToken, now: Instant) -> bool {
        self.completion.is_none() && &self.token == token && !self.gone(now)
    }
}

/// What the model expects a claim to return.
#[derive(Debug)]
enum Expected {
    New,
    Reclaimed,
    InFlight(ModelRecord),
    Completed(ModelRecord),
    Full,
}

struct Model {
    max_size: usize,
    now: Instant,
    /// The latest instant the store has been given (`release` judges by it).
    latest: Instant,
    records: HashMap<&'static str, ModelRecord>,
    /// Every token each key's claims were given, oldest first.
    issued: HashMap<&'static str, Vec<ClaimToken>>,
    every_token: HashSet<ClaimToken>,
    responses_made: u32,
}

impl Model {
    fn new(max_size: usize, start: Instant) -> Model {
        Model {
            max_size,
            now: start,
            latest: start,
            records: HashMap::new(),
            issued: HashMap::new(),
            every_token: HashSet::new(),
            responses_made: 0,
        }
    }

    /// The store is told `now`: it becomes the latest instant seen, and whatever is gone
    /// by then is gone for good.
    fn observe_now(&mut self) {
        self.latest = self.latest.max(self.now);
        self.forget_gone();
    }

    fn forget_gone(&mut self) {
        let latest = self.latest;
        self.records.retain(|_, record| !record.gone(latest));
    }

    /// The record `get` shows at `now`.
    fn visible(&self, key: &str) -> Option<&ModelRecord> {
        self.records
            .get(key)
            .filter(|record| !record.gone(self.now))
    }

    fn token(&self, key: usize, pick: &TokenPick) -> ClaimToken {
        let issued = |key: usize| self.issued.get(KEYS[key % KEYS.len()]);
        let unheard_of = ClaimToken::from_bytes([0xee; 16]);
        match pick {
            TokenPick::Current => issued(key).and_then(|tokens| tokens.last().cloned()),
            TokenPick::Stale(index) => issued(key)
                .filter(|tokens| tokens.len() >= 2)
                .map(|tokens| tokens[index % (tokens.len() - 1)].clone()),
            TokenPick::OtherKey(offset) => {
                issued(key + 1 + offset % 2).and_then(|tokens| tokens.last().cloned())
            }
            TokenPick::Forged(byte) => Some(ClaimToken::from_bytes([*byte; 16])),
        }
        .unwrap_or(unheard_of)
    }

    /// Rule 1.
    fn expect_claim(&self, key: &str) -> Expected {
        match self.visible(key) {
            Some(record) if record.completion.is_some() => Expected::Completed(record.clone()),
            Some(record) if live(record.lease_until, self.now) => {
                Expected::InFlight(record.clone())
            }
            Some(_) => Expected::Reclaimed,
            None => {
                let held = KEYS
                    .iter()
                    .filter(|&&other| other != key && self.visible(other).is_some())
                    .count();
                if held >= self.max_size {
                    Expected::Full
                } else {
                    Expected::New
                }
            }
        }
    }

    fn claimed(
        &mut self,
        key: &'static str,
        token: ClaimToken,
        (fingerprint, fingerprint_version): (&'static str, u32),
        lease: Duration,
    ) {
        assert!(
            self.every_token.insert(token.clone()),
            "token {token} handed out twice"
        );
        self.issued.entry(key).or_default().push(token.clone());
        let record = ModelRecord {
            fingerprint,
            fingerprint_version,
            token,
            claimed_at: self.now,
            lease_until: deadline(self.now, lease),
            completion: None,
        };
        self.records.insert(key, record);
    }

    fn next_response(&mut self) -> Response {
        self.responses_made += 1;
        let n = self.responses_made;
        Response::new(200 + (n % 7) as u16, format!("result #{n}"))
            .with_header("x-n", n.to_string())
    }
}

// ---- comparing the store with the model ----

/// A deadline the store saturated to "never": further out than any sequence reaches.
fn is_never(instant: Instant, now: Instant) -> bool {
    instant.saturating_duration_since(now) > Duration::from_secs(100 * 365 * 86_400)
}

fn same_deadline(got: Instant, expected: Option<Instant>, now: Instant) -> bool {
    match expected {
        Some(expected) => got == expected,
        None => is_never(got, now),
    }
}

fn assert_record(key: &str, got: &Record, expected: &ModelRecord, now: Instant) {
    assert_eq!(got.key(), key);
    assert_eq!(got.fingerprint(), expected.fingerprint, "{key}");
    assert_eq!(
        got.fingerprint_version(),
        expected.fingerprint_version,
        "{key}"
    );
    assert_eq!(got.claim_token(), &expected.token, "{key}");
    assert_eq!(got.claimed_at(), expected.claimed_at, "{key}");
    match &expected.completion {
        None => {
            assert_eq!(got.state(), State::Claimed, "{key}");
            assert!(
                same_deadline(got.lease_until(), expected.lease_until, now),
                "{key}: lease_until {:?}, expected {:?}",
                got.lease_until(),
                expected.lease_until
            );
            assert_eq!(got.completed_at(), None, "{key}");
            assert_eq!(got.expires_at(), None, "{key}");
            assert_eq!(got.response(), None, "{key}");
        }
        Some(completion) => {
            assert_eq!(got.state(), State::Completed, "{key}");
            assert_eq!(got.completed_at(), Some(completion.at), "{key}");
            let expires_at = got.expires_at().expect("a completed record expires");
            assert!(
                same_deadline(expires_at, completion.expires_at, now),
                "{key}: expires_at {expires_at:?}, expected {:?}",
                completion.expires_at
            );
            assert_eq!(got.lease_until(), expires_at, "{key}");
            assert_eq!(got.response(), Some(&completion.response), "{key}");
        }
    }
}

/// The replay-stability invariant: from completion until expiry, every observation of a
/// key shows the one stored response, the very same allocation.
#[derive(Default)]
struct Replays {
    stored: HashMap<&'static str, Arc<Response>>,
}

impl Replays {
    fn check(&self, key: &str, record: &Record) {
        if record.state() != State::Completed {
            return;
        }
        let stored = self.stored.get(key).expect("a completion was recorded");
        let shared = record.shared_response().expect("completed");
        assert!(
            Arc::ptr_eq(stored, shared),
            "{key}: the replayed response is not the stored one"
        );
    }
}

/// How often each outcome came up, to show the sequences exercise every rule.
#[derive(Debug, Default)]
struct Coverage {
    new: usize,
    reclaimed: usize,
    in_flight: usize,
    completed: usize,
    full: usize,
    /// Refused, accepted.
    completes: [usize; 2],
    releases: [usize; 2],
    renews: [usize; 2],
    purges_that_dropped: usize,
}

impl Coverage {
    fn add(&mut self, other: &Coverage) {
        self.new += other.new;
        self.reclaimed += other.reclaimed;
        self.in_flight += other.in_flight;
        self.completed += other.completed;
        self.full += other.full;
        for (mine, theirs) in [
            (&mut self.completes, other.completes),
            (&mut self.releases, other.releases),
            (&mut self.renews, other.renews),
        ] {
            mine[0] += theirs[0];
            mine[1] += theirs[1];
        }
        self.purges_that_dropped += other.purges_that_dropped;
    }
}

/// Runs `ops` on a store and the model side by side, panicking at the first difference.
///
/// The store draws its tokens from a `SeededRandom` of `seed`, part of the generated
/// input: proptest reports it with the failing sequence, and the same seed and sequence
/// replay the run token for token.
fn run(max_size: usize, seed: u64, ops: &[Op]) -> Coverage {
    let mut seen = Coverage::default();
    let start = Instant::now();
    let mut store = Store::builder()
        .max_size(max_size)
        .reclaim_grace(GRACE)
        .random(SeededRandom::new(seed))
        .build()
        .expect("a store of its own");
    let mut model = Model::new(max_size, start);
    let mut replays = Replays::default();

    for (step, op) in ops.iter().enumerate() {
        let now = model.now;
        match *op {
            Op::Claim {
                key,
                fingerprint,
                lease,
            } => {
                let key = KEYS[key];
                let (fp, version) = FINGERPRINTS[fingerprint];
                model.observe_now();
                let expected = model.expect_claim(key);
                let got = store.claim(key, fp, version, LEASES[lease], now);
                match (expected, got) {
                    (Expected::New, Ok(Claim::New(token))) => {
                        seen.new += 1;
                        replays.stored.remove(key);
                        model.claimed(key, token, FINGERPRINTS[fingerprint], LEASES[lease]);
                    }
                    (Expected::Reclaimed, Ok(Claim::Reclaimed(token))) => {
                        seen.reclaimed += 1;
                        model.claimed(key, token, FINGERPRINTS[fingerprint], LEASES[lease]);
                    }
                    (Expected::InFlight(expected), Ok(Claim::InFlight(record))) => {
                        assert_record(key, &record, &expected, now);
                        assert_eq!(record.state(), State::Claimed);
                        seen.in_flight += 1;
                    }
                    (Expected::Completed(expected), Ok(Claim::Completed(replay))) => {
                        // A replay carries no record: the one held must match the model,
                        // and the replay what the model says of it.
                        let record = store.get(key, now).expect("a completed record is held");
                        assert_record(key, &record, &expected, now);
                        replays.check(key, &record);
                        let same =
                            expected.fingerprint == fp && expected.fingerprint_version == version;
                        assert_eq!(
                            replay.same_request(),
                            same,
                            "{key}: the fingerprints compared"
                        );
                        assert_eq!(replay.claim_token(), &expected.token, "{key}");
                        assert_eq!(Some(replay.completed_at()), record.completed_at(), "{key}");
                        assert_eq!(Some(replay.expires_at()), record.expires_at(), "{key}");
                        let stored = replays.stored.get(key).expect("a completion was recorded");
                        assert!(
                            Arc::ptr_eq(stored, replay.shared_response()),
                            "{key}: not the stored response"
                        );
                        seen.completed += 1;
                    }
                    (Expected::Full, Err(Error::Full { max_size: reported })) => {
                        assert_eq!(reported, max_size);
                        seen.full += 1;
                    }
                    (expected, got) => {
                        panic!("step {step} {op:?}: expected {expected:?}, got {got:?}")
                    }
                }
            }
            Op::Complete {
                key,
                ref token,
                ttl,
            } => {
                let token = model.token(key, token);
                let key = KEYS[key];
                model.observe_now();
                let response = model.next_response();
                let expected = model
                    .records
                    .get(key)
                    .is_some_and(|record| record.held_by(&token, now));
                let got = store.complete(key, &token, response.clone(), TTLS[ttl], now);
                assert_eq!(got, expected, "step {step} {op:?}");
                seen.completes[usize::from(got)] += 1;
                if expected {
                    let record = model.records.get_mut(key).expect("held");
                    record.completion = Some(Completion {
                        at: now,
                        expires_at: deadline(now, TTLS[ttl]),
                        response,
                    });
                    // Live at `now` even with a zero TTL: capture the stored allocation.
                    let stored = store.get(key, now).expect("just completed");
                    let shared = stored.shared_response().expect("completed").clone();
                    replays.stored.insert(key, shared);
                }
            }
            Op::Release { key, ref token } => {
                let token = model.token(key, token);
                let key = KEYS[key];
                let expected = model
                    .records
                    .get(key)
                    .is_some_and(|record| record.held_by(&token, now));
                let got = store.release(key, &token, now);
                assert_eq!(got, expected, "step {step} {op:?}");
                seen.releases[usize::from(got)] += 1;
                if expected {
                    model.records.remove(key);
                }
            }
            Op::Renew {
                key,
                ref token,
                lease,
            } => {
                let token = model.token(key, token);
                let key = KEYS[key];
                model.observe_now();
                let expected = model
                    .records
                    .get(key)
                    .is_some_and(|record| record.held_by(&token, now));
                let got = store.renew(key, &token, LEASES[lease], now);
                assert_eq!(got, expected, "step {step} {op:?}");
                seen.renews[usize::from(got)] += 1;
                if expected {
                    let record = model.records.get_mut(key).expect("held");
                    record.lease_until = deadline(now, LEASES[lease]);
                }
            }
            Op::Advance(by) => {
                model.now += STEPS[by];
            }
            Op::Purge => {
                model.observe_now();
                let before = store.len();
                let purged = store.purge_expired(now);
                assert_eq!(purged, before - store.len(), "step {step}: purge count");
                seen.purges_that_dropped += usize::from(purged > 0);
                assert_eq!(store.len(), model.records.len(), "step {step}: len");
                // Nothing is left for a purge to do right now.
                assert!(
                    store.next_expiry().is_none_or(|next| now < next),
                    "step {step}: next_expiry {:?} is not after {now:?}",
                    store.next_expiry()
                );
            }
        }

        for key in KEYS {
            let now = model.now;
            match (store.get(key, now), model.visible(key)) {
                (None, None) => {}
                (Some(got), Some(expected)) => {
                    assert_record(key, &got, expected, now);
                    replays.check(key, &got);
                }
                (got, expected) => {
                    panic!("step {step} {op:?}: get({key}) = {got:?}, model has {expected:?}")
                }
            }
        }
        assert!(store.len() <= max_size, "step {step}: over capacity");
    }
    seen
}

// ---- strategies ----

fn token_pick() -> impl Strategy<Value = TokenPick> {
    prop_oneof![
        4 => Just(TokenPick::Current),
        2 => any::<usize>().prop_map(TokenPick::Stale),
        1 => any::<usize>().prop_map(TokenPick::OtherKey),
        1 => (0u8..=255).prop_map(TokenPick::Forged),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    prop_oneof![
        4 => (key.clone(), 0..FINGERPRINTS.len(), 0..LEASES.len())
            .prop_map(|(key, fingerprint, lease)| Op::Claim { key, fingerprint, lease }),
        3 => (key.clone(), token_pick(), 0..TTLS.len())
            .prop_map(|(key, token, ttl)| Op::Complete { key, token, ttl }),
        1 => (key.clone(), token_pick()).prop_map(|(key, token)| Op::Release { key, token }),
        2 => (key, token_pick(), 0..LEASES.len())
            .prop_map(|(key, token, lease)| Op::Renew { key, token, lease }),
        4 => (0..STEPS.len()).prop_map(Op::Advance),
        1 => Just(Op::Purge),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// A roomy store: capacity never binds, every other rule does.
    #[test]
    fn the_store_follows_the_model(
        seed in any::<u64>(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        run(100, seed, &ops);
    }

    /// Two slots for three keys: `Full`, and the expiry and grace that cure it.
    #[test]
    fn a_small_store_follows_the_model(
        seed in any::<u64>(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        run(2, seed, &ops);
    }
}

/// The model check is only as good as the sequences it sees: make sure they reach every
/// outcome, so a strategy change cannot quietly turn it into a test of nothing.
#[test]
fn the_sequences_reach_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    let sequences = prop::collection::vec(op(), 1..60);
    let mut seen = Coverage::default();
    for case in 0..200_u64 {
        let ops = sequences
            .new_tree(&mut runner)
            .expect("a sequence")
            .current();
        let max_size = if case % 2 == 0 { 2 } else { 100 };
        seen.add(&run(max_size, case, &ops));
    }
    let counts = [
        ("New", seen.new),
        ("Reclaimed", seen.reclaimed),
        ("InFlight", seen.in_flight),
        ("Completed", seen.completed),
        ("Full", seen.full),
        ("complete accepted", seen.completes[1]),
        ("complete refused", seen.completes[0]),
        ("release accepted", seen.releases[1]),
        ("release refused", seen.releases[0]),
        ("renew accepted", seen.renews[1]),
        ("renew refused", seen.renews[0]),
        ("purge that dropped something", seen.purges_that_dropped),
    ];
    for (outcome, count) in counts {
        assert!(count > 0, "no sequence reached {outcome}: {counts:?}");
    }
}
