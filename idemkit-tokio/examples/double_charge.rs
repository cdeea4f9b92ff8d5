//! The double-charge demo: a payment endpoint guarded by idemkit, under tokio.
//!
//! Run it from the workspace root:
//!
//! ```text
//! cargo run --release --example double_charge
//! ```
//!
//! It plays three scenes against a fake card gateway, prints what happened, and exits
//! non-zero if any invariant breaks:
//!
//! 1. 50 concurrent retries of one charge, arriving over 250 ms: the card is charged once, every caller gets
//!    the same receipt, and 49 of them are replays (some waited for the charge in flight).
//! 2. A worker claims, charges, and crashes before recording the result. After its lease
//!    lapses a retry takes the key over and charges once; the crashed worker's late
//!    completion is fenced out.
//! 3. The same key with a different amount is caught by its fingerprint and refused,
//!    never answered with the stored receipt.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idemkit_tokio::{
    AsyncIdempotency, Backend, Claim, Decision, Fingerprint, InMemoryBackend, Key, ManualClock,
    Policy, Response, RunError,
};

/// A card gateway that takes a while to answer. Like a real payment API, it accepts an
/// idempotency key of its own: the last line of defence for a side effect performed by
/// a worker that then lost its lease (fencing protects the stored result, not that).
#[derive(Default)]
struct Gateway {
    attempts: AtomicUsize,
    charges: Mutex<HashMap<String, String>>,
}

impl Gateway {
    async fn charge(&self, idempotency_key: &Key, card: &str, cents: u64) -> Response {
        let attempt = self.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::time::sleep(Duration::from_millis(150)).await;
        let mut charges = self.charges.lock().expect("gateway lock");
        let receipt = charges
            .entry(idempotency_key.to_string())
            .or_insert_with(|| format!("receipt #{attempt}: {card} charged {cents} cents"))
            .clone();
        Response::new(201, receipt).with_header("content-type", "text/plain")
    }

    fn orders_charged(&self) -> usize {
        self.charges.lock().expect("gateway lock").len()
    }
}

/// The request a client retries: its idempotency key and what it asks for.
struct ChargeRequest<'a> {
    idempotency_key: &'a str,
    card: &'a str,
    cents: u64,
}

impl ChargeRequest<'_> {
    fn key(&self) -> Key {
        Key::new(["POST /charges", self.idempotency_key])
    }

    fn fingerprint(&self) -> Fingerprint {
        Fingerprint::new([self.card.as_bytes(), &self.cents.to_be_bytes()])
    }
}

/// Collects broken invariants instead of stopping at the first.
#[derive(Default)]
struct Checks {
    failed: Vec<String>,
}

impl Checks {
    fn check(&mut self, ok: bool, what: &str) {
        println!("  [{}] {what}", if ok { "ok" } else { "FAILED" });
        if !ok {
            self.failed.push(what.to_owned());
        }
    }
}

#[tokio::main]
async fn main() {
    // A manual clock lets scene 2 fast-forward past a lease instead of sleeping through it.
    let clock = ManualClock::new();
    let backend = InMemoryBackend::builder().clock(clock.clone()).build();
    // Duplicates wait up to 2 s for a charge in flight, then are told to retry later.
    let policy = Policy::builder()
        .lease_ttl(Duration::from_secs(30))
        .wait_timeout(Duration::from_secs(2))
        .build()
        .expect("a valid policy");
    let idempotency = Arc::new(AsyncIdempotency::with_policy(backend.clone(), policy));
    let gateway = Arc::new(Gateway::default());
    let mut checks = Checks::default();

    println!("Scene 1: a client retries one charge 50 times, all within 250 ms");
    let request = ChargeRequest {
        idempotency_key: "order-1001",
        card: "4242",
        cents: 4_999,
    };
    let (key, fingerprint) = (request.key(), request.fingerprint());
    let retries: Vec<_> = (0..50)
        .map(|retry| {
            let (idempotency, gateway) = (idempotency.clone(), gateway.clone());
            let (key, fingerprint) = (key.clone(), fingerprint.clone());
            tokio::spawn(async move {
                // Retries trickle in over 250 ms: the early ones find the charge in
                // flight and wait, the late ones find it done.
                tokio::time::sleep(Duration::from_millis(5) * retry).await;
                idempotency
                    .run(&key, &fingerprint, || async {
                        Ok::<_, std::convert::Infallible>(gateway.charge(&key, "4242", 4_999).await)
                    })
                    .await
            })
        })
        .collect();
    let mut decisions: HashMap<Decision, usize> = HashMap::new();
    let mut receipts = Vec::new();
    for retry in retries {
        let outcome = retry.await.expect("task").expect("no retry fails");
        *decisions.entry(outcome.decision).or_default() += 1;
        receipts.push(outcome.response);
    }
    let count = |decision| decisions.get(&decision).copied().unwrap_or(0);
    let replays = count(Decision::Replayed) + count(Decision::ReplayedAfterWait);
    println!(
        "  gateway attempts: {}, orders charged: {}; ran: {}, replayed at once: {}, replayed after waiting: {}",
        gateway.attempts.load(Ordering::SeqCst),
        gateway.orders_charged(),
        count(Decision::New),
        count(Decision::Replayed),
        count(Decision::ReplayedAfterWait),
    );
    println!("  receipt: {}", String::from_utf8_lossy(&receipts[0].body));
    checks.check(
        gateway.attempts.load(Ordering::SeqCst) == 1,
        "the charge ran exactly once",
    );
    checks.check(
        count(Decision::New) == 1 && replays == 49,
        "49 of the 50 callers got a replay",
    );
    checks.check(
        receipts.iter().all(|r| r == &receipts[0]),
        "every caller got the same receipt",
    );
    checks.check(
        count(Decision::ReplayedAfterWait) > 0,
        "duplicates arriving mid-charge waited for it",
    );

    println!("\nScene 2: a worker charges, then crashes before storing the result");
    let request = ChargeRequest {
        idempotency_key: "order-1002",
        card: "5555",
        cents: 1_250,
    };
    let (key, fingerprint) = (request.key(), request.fingerprint());
    let attempts_before = gateway.attempts.load(Ordering::SeqCst);
    let lease = idempotency.policy().lease_ttl();
    let claim = backend.claim(key.as_str(), fingerprint.as_str(), 1, lease);
    let Ok(Claim::New(crashed_token)) = claim.await else {
        panic!("the crashed worker's claim should be new");
    };
    let crashed_receipt = gateway.charge(&key, "5555", 1_250).await;
    println!("  the worker charged the card, then died holding the lease");
    let early = idempotency.run(&key, &fingerprint, || async {
        Ok::<_, String>(Response::new(500, ""))
    });
    let early = tokio::time::timeout(Duration::from_secs(30), early)
        .await
        .expect("bounded");
    checks.check(
        matches!(early, Err(RunError::InProgress { .. })),
        "a retry during the lease is told to come back later, not run",
    );
    clock.advance(lease + Duration::from_secs(1));
    println!(
        "  {} s later the lease has lapsed; the client retries",
        lease.as_secs() + 1
    );
    let retried = idempotency
        .run(&key, &fingerprint, || async {
            Ok::<_, String>(gateway.charge(&key, "5555", 1_250).await)
        })
        .await
        .expect("the retry succeeds");
    let late = backend
        .complete(
            key.as_str(),
            &crashed_token,
            crashed_receipt.into(),
            Duration::from_secs(3600),
        )
        .await
        .expect("the in-memory backend does not fail");
    println!(
        "  retry: {:?}; the crashed worker's late completion was {}",
        retried.decision,
        if late { "ACCEPTED" } else { "refused" }
    );
    checks.check(
        retried.decision == Decision::Reclaimed,
        "the retry took over the lapsed claim",
    );
    checks.check(
        gateway.attempts.load(Ordering::SeqCst) - attempts_before == 2,
        "the retry charged once (the crashed worker had charged once)",
    );
    checks.check(!late, "the crashed worker's late completion was fenced out");
    let stored = backend
        .get(key.as_str())
        .await
        .expect("the in-memory backend does not fail")
        .and_then(|record| record.response().cloned());
    checks.check(
        stored.as_ref() == Some(&*retried.response),
        "the stored receipt is the retry's",
    );
    checks.check(
        gateway.orders_charged() == 2,
        "passing the key downstream kept the card charged once per order",
    );

    println!("\nScene 3: the same key is reused for a different amount");
    let tampered = ChargeRequest {
        idempotency_key: "order-1001",
        card: "4242",
        cents: 499_900,
    };
    let attempts_before = gateway.attempts.load(Ordering::SeqCst);
    let result = idempotency
        .run(&tampered.key(), &tampered.fingerprint(), || async {
            Ok::<_, String>(gateway.charge(&tampered.key(), "4242", 499_900).await)
        })
        .await;
    println!(
        "  result: {}",
        match &result {
            Err(RunError::PayloadMismatch) => "refused: payload mismatch".to_owned(),
            other => format!("{other:?}"),
        }
    );
    checks.check(
        matches!(result, Err(RunError::PayloadMismatch)),
        "the fingerprint caught the changed payload",
    );
    checks.check(
        gateway.attempts.load(Ordering::SeqCst) == attempts_before,
        "nothing was charged",
    );

    if checks.failed.is_empty() {
        println!("\nAll invariants held.");
    } else {
        eprintln!(
            "\n{} invariant(s) broke: {:?}",
            checks.failed.len(),
            checks.failed
        );
        std::process::exit(1);
    }
}
