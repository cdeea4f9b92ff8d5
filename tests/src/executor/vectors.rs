//! The executor vectors, each written once as a generic async function over a
//! [`Target`], driving the target's executor through a [`Harness`].
//!
//! Most run on real time with leases no vector outlives. Those that lapse a lease need a
//! [`ManualTime`] target, so that it lapses when the vector says; the one that fills the
//! store needs an [`ExactCapacity`] target. The heartbeat vectors use real time with
//! generous margins.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_lite::FutureExt;
use idemkit_core::{
    Claim, Decision, Error, Fingerprint, Heartbeat, Key, OnStorageError, Policy, PolicyBuilder,
    Response, RunError, State,
};

use crate::backend::ConformanceBackend;
use crate::executor::conformance_executor::RunResult;
use crate::executor::harness::{Harness, Setup, manual, real, try_real};
use crate::executor::op::{Answer, Gate, Op, OpError, Probe};
use crate::support::{self, assert_watched};
use crate::target::{ExactCapacity, ManualTime, Target};

/// Long enough for anything the machine should do promptly, however loaded.
const GENEROUS: Duration = Duration::from_secs(5);

/// Polls `condition` until it holds, for at most [`GENEROUS`].
async fn eventually<T: Target>(what: &str, condition: impl Fn() -> bool) {
    support::eventually::<T::Runtime>(what, GENEROUS, condition).await;
}

fn decision(result: &RunResult) -> Decision {
    match result {
        Ok(outcome) => outcome.decision,
        Err(error) => error.decision(),
    }
}

fn body(result: &RunResult) -> &[u8] {
    &result.as_ref().expect("a response").response.body
}

fn key(name: &str) -> Key {
    Key::new(["conformance", name])
}

fn fingerprint(name: &str) -> Fingerprint {
    Fingerprint::new(["POST", "/charges", name])
}

fn with_policy(setup: Setup, change: impl FnOnce(PolicyBuilder) -> PolicyBuilder) -> Setup {
    setup.with_policy(change)
}

/// The token of the claim that holds `key` right now.
async fn holder<T: Target>(h: &Harness<T>, key: &Key) -> idemkit_core::ClaimToken {
    let record = h
        .backend()
        .get(key.as_str())
        .await
        .expect("the key is claimed");
    assert_eq!(record.state(), State::Claimed);
    record.claim_token().clone()
}

/// A retry gets the stored response, shared with the store, and the operation does not
/// run again.
pub async fn a_retry_replays_without_running_again<T: Target>() {
    let h = real::<T>(Setup::default());
    let (key, request, probe) = (key("retry"), fingerprint("a"), Probe::new());

    let first = h
        .run(&key, &request, Op::respond(&probe, 201, "charged"))
        .await;
    assert_eq!(decision(&first), Decision::New);
    let retry = h
        .run(&key, &request, Op::respond(&probe, 201, "charged again"))
        .await;
    assert_eq!(decision(&retry), Decision::Replayed);
    assert_eq!(body(&retry), b"charged");
    assert_eq!(probe.started(), 1);

    let record = h.backend().get(key.as_str()).await.expect("stored");
    let stored = record.shared_response().expect("completed");
    assert!(
        Arc::ptr_eq(&retry.unwrap().response, stored),
        "a replay shares the stored response instead of copying it"
    );
}

/// Fifty concurrent duplicates: the operation runs once and all fifty get its response.
pub async fn concurrent_duplicates_run_once<T: Target>() {
    let h = real::<T>(Setup::default());
    let (key, request, probe) = (key("fifty"), fingerprint("a"), Probe::new());
    let op = Op::respond(&probe, 200, "once").working(Duration::from_millis(100));
    let pending: Vec<_> = (0..50)
        .map(|_| h.spawn(&key, &request, op.clone()))
        .collect();
    let mut results: Vec<RunResult> = Vec::with_capacity(pending.len());
    for run in pending {
        results.push(run.await);
    }

    assert_eq!(probe.started(), 1, "the operation ran more than once");
    let decisions: Vec<Decision> = results.iter().map(decision).collect();
    let ran = decisions.iter().filter(|d| **d == Decision::New).count();
    assert_eq!(ran, 1, "{decisions:?}");
    let replays: Vec<_> = results
        .iter()
        .filter(|r| decision(r) != Decision::New)
        .map(|r| {
            let outcome = r.as_ref().expect("a replay");
            assert!(
                matches!(
                    outcome.decision,
                    Decision::Replayed | Decision::ReplayedAfterWait
                ),
                "{decisions:?}"
            );
            Arc::clone(&outcome.response)
        })
        .collect();
    assert_eq!(replays.len(), 49);
    for result in &results {
        assert_eq!(body(result), b"once");
    }
    for replay in &replays {
        assert!(Arc::ptr_eq(replay, &replays[0]), "replays share one body");
    }
    assert_eq!(h.events().len(), 50);
}

/// A duplicate that arrives while the first run is in flight waits for it and replays
/// its response.
pub async fn a_duplicate_mid_run_waits_and_replays<T: Target>() {
    let h = real::<T>(Setup::default());
    let (key, request, probe, gate) = (key("mid-run"), fingerprint("a"), Probe::new(), Gate::new());
    let first = h.spawn(
        &key,
        &request,
        Op::respond(&probe, 200, "first").held_by(&gate),
    );
    eventually::<T>("the first run started", || probe.started() == 1).await;
    let duplicate = h.spawn(&key, &request, Op::respond(&probe, 200, "second"));
    support::until_watched::<T::Runtime, _>(&h.backend(), 1).await;
    gate.open();

    let (first, duplicate) = (first.await, duplicate.await);
    assert_eq!(decision(&first), Decision::New);
    assert_eq!(decision(&duplicate), Decision::ReplayedAfterWait);
    assert_eq!(body(&duplicate), b"first");
    assert_eq!(probe.started(), 1);
    assert_watched(&h.backend(), 0);
}

/// A duplicate waiting for a run that gives the key up (a result not worth storing)
/// claims the key itself and runs: a waiter may become the runner (rule 3).
pub async fn a_waiting_duplicate_runs_once_the_first_releases<T: Target>() {
    let h = real::<T>(Setup::default());
    let (key, request, probe, gate) =
        (key("released"), fingerprint("a"), Probe::new(), Gate::new());
    let first = h.spawn(
        &key,
        &request,
        Op::respond(&probe, 503, "busy").held_by(&gate),
    );
    eventually::<T>("the first run started", || probe.started() == 1).await;
    let duplicate = h.spawn(&key, &request, Op::respond(&probe, 201, "second"));
    support::until_watched::<T::Runtime, _>(&h.backend(), 1).await;
    gate.open();

    let (first, duplicate) = (first.await, duplicate.await);
    assert_eq!(decision(&first), Decision::NotCached);
    assert_eq!(decision(&duplicate), Decision::New, "{duplicate:?}");
    assert_eq!(body(&duplicate), b"second");
    assert_eq!(probe.started(), 2);
    let retry = h
        .run(&key, &request, Op::respond(&probe, 201, "third"))
        .await;
    assert_eq!(decision(&retry), Decision::Replayed);
    assert_eq!(body(&retry), b"second");
}

/// A duplicate waiting on an owner whose lease lapses mid-wait takes the key over and
/// runs, rather than waiting out its timeout (rule 3).
pub async fn a_waiting_duplicate_reclaims_a_lease_that_lapses<T: ManualTime>() {
    let lease = Duration::from_secs(30);
    // A wait longer than the check below allows: waiting it out fails the vector.
    let (h, clock) = manual::<T>(with_policy(Setup::default(), |p| {
        p.lease_ttl(lease).wait_timeout(3 * GENEROUS)
    }));
    let (key, request, probe) = (key("lapses"), fingerprint("a"), Probe::new());
    let crashed = match h
        .backend()
        .claim(key.as_str(), request.as_str(), 1, lease)
        .await
    {
        Ok(Claim::New(token)) => token,
        other => panic!("expected a new claim, got {other:?}"),
    };
    let duplicate = h.spawn(&key, &request, Op::respond(&probe, 200, "reclaimed"));
    support::until_watched::<T::Runtime, _>(&h.backend(), 1).await;
    clock.advance(lease + Duration::from_secs(1));

    let duplicate = duplicate.await;
    assert_eq!(decision(&duplicate), Decision::Reclaimed, "{duplicate:?}");
    assert_eq!(body(&duplicate), b"reclaimed");
    assert_eq!(probe.started(), 1);
    let event = h.events().pop().expect("the duplicate's event");
    assert!(
        event.latency < GENEROUS,
        "the duplicate waited out its whole timeout ({:?})",
        event.latency
    );
    let late = idemkit_core::Response::new(200, "late");
    assert!(
        !h.backend()
            .complete(key.as_str(), &crashed, late, Duration::from_secs(60))
            .await,
        "the crashed owner's late write was accepted"
    );
}

/// A duplicate whose wait times out is told to retry after the rest of the lease,
/// rounded up to whole seconds.
pub async fn a_duplicate_that_waits_too_long_is_told_when_to_retry<T: ManualTime>() {
    let wait_timeout = Duration::from_millis(100);
    let (h, clock) = manual::<T>(with_policy(Setup::default(), |p| {
        p.lease_ttl(Duration::from_secs(30))
            .wait_timeout(wait_timeout)
    }));
    let (key, request, probe, gate) =
        (key("too-long"), fingerprint("a"), Probe::new(), Gate::new());
    let first = h.spawn(
        &key,
        &request,
        Op::respond(&probe, 200, "first").held_by(&gate),
    );
    eventually::<T>("the first run started", || probe.started() == 1).await;
    clock.advance(Duration::from_millis(10_500));

    let duplicate = h
        .run(&key, &request, Op::respond(&probe, 200, "second"))
        .await;
    match duplicate {
        Err(RunError::InProgress { retry_after }) => {
            // 19.5 s of the lease left, rounded up.
            assert_eq!(retry_after, Duration::from_secs(20));
        }
        other => panic!("expected InProgress, got {other:?}"),
    }
    let event = h.events().pop().expect("the duplicate's event");
    assert_eq!(event.decision, Decision::InProgress);
    assert!(
        event.latency >= wait_timeout,
        "the duplicate answered after {:?}, without waiting {wait_timeout:?}",
        event.latency
    );

    gate.open();
    assert_eq!(decision(&first.await), Decision::New);
    let retry = h
        .run(&key, &request, Op::respond(&probe, 200, "third"))
        .await;
    assert_eq!(decision(&retry), Decision::Replayed);
    assert_eq!(body(&retry), b"first");
    assert_eq!(probe.started(), 1);
}

/// The same key with another fingerprint (or fingerprint version) is refused, both
/// once completed and while in flight, and never given the stored response.
pub async fn another_request_with_the_key_is_refused<T: Target>() {
    let h = real::<T>(with_policy(Setup::default(), |p| {
        p.wait_timeout(Duration::from_secs(1))
    }));
    let (a, b, probe) = (
        fingerprint("amount=100"),
        fingerprint("amount=900"),
        Probe::new(),
    );

    let done = key("completed");
    assert_eq!(
        decision(&h.run(&done, &a, Op::respond(&probe, 200, "a")).await),
        Decision::New
    );
    let refused = h.run(&done, &b, Op::respond(&probe, 200, "b")).await;
    assert!(
        matches!(refused, Err(RunError::PayloadMismatch)),
        "{refused:?}"
    );
    let v2 = h.sibling(
        h.policy()
            .to_builder()
            .fingerprint_version(2)
            .build()
            .expect("a valid policy"),
    );
    let refused = v2.run(&done, &a, Op::respond(&probe, 200, "a, v2")).await;
    assert!(
        matches!(refused, Err(RunError::PayloadMismatch)),
        "{refused:?}"
    );
    assert_eq!(probe.started(), 1);

    let busy = key("in-flight");
    let gate = Gate::new();
    let first = h.spawn(&busy, &a, Op::respond(&probe, 200, "a").held_by(&gate));
    eventually::<T>("the first run started", || probe.started() == 2).await;
    // Refused at once: had it waited, the closed gate would make it time out instead.
    let refused = h.run(&busy, &b, Op::respond(&probe, 200, "b")).await;
    assert!(
        matches!(refused, Err(RunError::PayloadMismatch)),
        "{refused:?}"
    );
    gate.open();
    assert_eq!(decision(&first.await), Decision::New);
    let refused = h.run(&busy, &b, Op::respond(&probe, 200, "b")).await;
    assert!(
        matches!(refused, Err(RunError::PayloadMismatch)),
        "{refused:?}"
    );
    assert_eq!(probe.started(), 2);
    let mismatches = h
        .events()
        .iter()
        .filter(|e| e.decision == Decision::PayloadMismatch)
        .count();
    assert_eq!(mismatches, 4);
}

/// A crashed owner (claimed on the backend, never completed) holds the key until its
/// lease lapses; then the operation runs once, and the owner's late write is refused.
pub async fn a_crashed_owner_is_reclaimed_after_its_lease<T: ManualTime>() {
    let lease = Duration::from_secs(30);
    let (h, clock) = manual::<T>(with_policy(Setup::default(), |p| {
        p.lease_ttl(lease).wait_timeout(Duration::from_millis(50))
    }));
    let (key, request, probe) = (key("crashed"), fingerprint("a"), Probe::new());
    let crashed = match h
        .backend()
        .claim(key.as_str(), request.as_str(), 1, lease)
        .await
    {
        Ok(Claim::New(token)) => token,
        other => panic!("expected a new claim, got {other:?}"),
    };
    let early = h
        .run(&key, &request, Op::respond(&probe, 200, "early"))
        .await;
    assert!(
        matches!(early, Err(RunError::InProgress { .. })),
        "{early:?}"
    );
    assert_eq!(probe.started(), 0);

    clock.advance(lease + Duration::from_secs(1));
    let reclaimed = h
        .run(&key, &request, Op::respond(&probe, 200, "reclaimed"))
        .await;
    assert_eq!(decision(&reclaimed), Decision::Reclaimed);
    let retry = h
        .run(&key, &request, Op::respond(&probe, 200, "again"))
        .await;
    assert_eq!(decision(&retry), Decision::Replayed);
    assert_eq!(body(&retry), b"reclaimed");
    assert_eq!(probe.started(), 1);
    let late = idemkit_core::Response::new(200, "late");
    assert!(
        !h.backend()
            .complete(key.as_str(), &crashed, late, Duration::from_secs(60))
            .await,
        "the crashed owner's late write was accepted"
    );
}

/// A 500 is returned but not stored: the claim is released and the retry runs again.
pub async fn an_uncacheable_response_is_not_stored<T: Target>() {
    let h = real::<T>(with_policy(Setup::default(), |p| {
        p.wait_timeout(Duration::ZERO)
    }));
    let (key, request, probe) = (key("five-hundred"), fingerprint("a"), Probe::new());
    for attempt in 1..=2 {
        let result = h
            .run(&key, &request, Op::respond(&probe, 500, "try later"))
            .await;
        assert_eq!(decision(&result), Decision::NotCached);
        assert_eq!(result.unwrap().response.status, 500);
        assert!(
            h.backend().get(key.as_str()).await.is_none(),
            "the claim was kept"
        );
        assert_eq!(probe.started(), attempt);
    }
    assert_eq!(
        decision(&h.run(&key, &request, Op::respond(&probe, 200, "ok")).await),
        Decision::New
    );
    assert_eq!(probe.started(), 3);
}

/// An error releases the claim: the retry runs at once.
pub async fn an_error_releases_the_claim<T: Target>() {
    // No waiting: a claim left behind would answer InProgress at once.
    let h = real::<T>(with_policy(Setup::default(), |p| {
        p.wait_timeout(Duration::ZERO)
    }));
    let (key, request, probe) = (key("error"), fingerprint("a"), Probe::new());
    let failed = h
        .run(&key, &request, Op::new(&probe, Answer::Fail("declined")))
        .await;
    assert!(
        matches!(&failed, Err(RunError::HandlerFailed(OpError("declined")))),
        "{failed:?}"
    );
    let retry = h.run(&key, &request, Op::respond(&probe, 200, "ok")).await;
    assert_eq!(decision(&retry), Decision::New);
    assert_eq!(probe.started(), 2);
    let decisions: Vec<_> = h.events().iter().map(|e| e.decision).collect();
    assert_eq!(decisions, [Decision::HandlerFailed, Decision::New]);
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<not a string>")
}

/// A panic releases the claim and continues to the caller: the retry runs at once.
pub async fn a_panic_releases_the_claim<T: Target>() {
    let h = real::<T>(with_policy(Setup::default(), |p| {
        p.wait_timeout(Duration::ZERO)
    }));
    let (key, request, probe) = (key("panic"), fingerprint("a"), Probe::new());
    let panicked = AssertUnwindSafe(h.run(
        &key,
        &request,
        Op::new(&probe, Answer::Panic("op exploded")),
    ))
    .catch_unwind()
    .await;
    let payload = panicked.expect_err("the panic reaches the caller");
    assert_eq!(panic_message(payload.as_ref()), "op exploded");
    assert!(
        h.backend().get(key.as_str()).await.is_none(),
        "the claim was kept"
    );

    let retry = h.run(&key, &request, Op::respond(&probe, 200, "ok")).await;
    assert_eq!(decision(&retry), Decision::New);
    assert_eq!(probe.started(), 2);
    let decisions: Vec<_> = h.events().iter().map(|e| e.decision).collect();
    assert_eq!(decisions, [Decision::HandlerFailed, Decision::New]);
}

/// A slow operation under a short lease keeps its claim through heartbeats, while a
/// duplicate waits and replays instead of taking the key over.
pub async fn heartbeats_keep_a_slow_run_claimed<T: Target>() {
    // Renewed every 200 ms: a beat may run up to 400 ms late on a loaded machine
    // before the lease lapses.
    let h = real::<T>(with_policy(Setup::default(), |p| {
        p.lease_ttl(Duration::from_millis(600))
            .heartbeat(Heartbeat::Auto)
            .wait_timeout(GENEROUS)
    }));
    let (key, request, probe) = (key("slow"), fingerprint("a"), Probe::new());
    let slow = Op::respond(&probe, 200, "slow").working(Duration::from_millis(1_500));
    let first = h.spawn(&key, &request, slow.clone());
    eventually::<T>("the first run started", || probe.started() == 1).await;
    let duplicate = h.spawn(&key, &request, slow);

    let (first, duplicate) = (first.await, duplicate.await);
    assert_eq!(
        probe.started(),
        1,
        "the lease lapsed and the key was run twice"
    );
    assert_eq!(decision(&first), Decision::New);
    assert_eq!(decision(&duplicate), Decision::ReplayedAfterWait);
    assert_eq!(body(&duplicate), b"slow");
}

/// A heartbeat that cannot renew (the claim was released behind the run's back) loses
/// the lease: async executors drop the operation, the blocking one tells it, and
/// nothing is stored.
pub async fn a_heartbeat_that_cannot_renew_loses_the_lease<T: Target>() {
    let h = real::<T>(with_policy(Setup::default(), |p| {
        p.lease_ttl(Duration::from_millis(300))
            .heartbeat(Heartbeat::Auto)
    }));
    let (key, request, probe, gate) = (key("lost"), fingerprint("a"), Probe::new(), Gate::new());
    let run = h.spawn(
        &key,
        &request,
        Op::respond(&probe, 200, "lost").held_by(&gate),
    );
    eventually::<T>("the run started", || probe.started() == 1).await;
    let token = holder(&h, &key).await;
    assert!(h.backend().release(key.as_str(), &token).await);

    let result = run.await;
    assert!(matches!(result, Err(RunError::LeaseLost)), "{result:?}");
    if h.cancels() {
        assert_eq!(probe.dropped(), 1, "the operation was not cancelled");
        assert_eq!(probe.finished(), 0);
    } else {
        assert!(probe.saw_lost(), "the operation was not told");
        assert_eq!(probe.finished(), 1);
    }
    gate.open();
    assert!(
        h.backend().get(key.as_str()).await.is_none(),
        "a result was stored"
    );
    assert_eq!(
        h.events().pop().map(|e| e.decision),
        Some(Decision::LeaseLost)
    );
    let retry = h
        .run(&key, &request, Op::respond(&probe, 200, "again"))
        .await;
    assert_eq!(decision(&retry), Decision::New);
}

/// When another executor takes the key over mid-run, the run's response is returned but
/// not stored, and the new owner keeps the key.
pub async fn a_run_taken_over_returns_its_response_unstored<T: ManualTime>() {
    let lease = Duration::from_secs(30);
    let (h, clock) = manual::<T>(with_policy(Setup::default(), |p| {
        p.lease_ttl(lease).heartbeat(Heartbeat::Off)
    }));
    let (key, request, probe, gate) = (key("taken"), fingerprint("a"), Probe::new(), Gate::new());
    let run = h.spawn(
        &key,
        &request,
        Op::respond(&probe, 200, "mine").held_by(&gate),
    );
    eventually::<T>("the run started", || probe.started() == 1).await;
    clock.advance(lease + Duration::from_secs(1));
    let successor = match h
        .backend()
        .claim(key.as_str(), request.as_str(), 1, lease)
        .await
    {
        Ok(Claim::Reclaimed(token)) => token,
        other => panic!("expected to reclaim, got {other:?}"),
    };
    gate.open();

    let result = run.await;
    assert_eq!(decision(&result), Decision::ReclaimedLoss);
    assert_eq!(body(&result), b"mine");
    let unstored = result.as_ref().map(|outcome| outcome.unstored);
    assert_eq!(unstored.ok(), Some(Some(idemkit_core::Unstored::FencedOut)));
    let record = h
        .backend()
        .get(key.as_str())
        .await
        .expect("the successor's claim");
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claim_token(), &successor);
}

/// A full store refuses under FailClosed, and runs unprotected under FailOpen.
pub async fn a_full_store_fails_closed_or_open<T: ExactCapacity>() {
    let closed = real::<T>(Setup::default().max_size(0));
    let (key, request, probe) = (key("full"), fingerprint("a"), Probe::new());
    let refused = closed
        .run(&key, &request, Op::respond(&probe, 200, "x"))
        .await;
    assert!(
        matches!(
            refused,
            Err(RunError::StorageFailed(Error::Full { max_size: 0 }))
        ),
        "{refused:?}"
    );
    assert_eq!(probe.started(), 0);
    assert_eq!(closed.events()[0].decision, Decision::StorageFailed);

    let open = real::<T>(with_policy(Setup::default().max_size(0), |p| {
        p.on_storage_error(OnStorageError::FailOpen)
    }));
    for attempt in 1..=2 {
        let ran = open
            .run(&key, &request, Op::respond(&probe, 200, "unprotected"))
            .await;
        assert_eq!(decision(&ran), Decision::RanUnprotected);
        assert_eq!(body(&ran), b"unprotected");
        assert_eq!(probe.started(), attempt, "nothing protects an unstored run");
    }
    let failed = open
        .run(&key, &request, Op::new(&probe, Answer::Fail("nope")))
        .await;
    assert!(
        matches!(failed, Err(RunError::HandlerFailed(_))),
        "{failed:?}"
    );
    let decisions: Vec<_> = open.events().iter().map(|e| e.decision).collect();
    assert_eq!(
        decisions,
        [
            Decision::RanUnprotected,
            Decision::RanUnprotected,
            Decision::HandlerFailed
        ]
    );
}

/// Each run reports exactly one event, with its decision, the hashed key, the
/// fingerprint version and its latency, and never the raw key.
pub async fn every_run_reports_one_event_without_the_raw_key<T: Target>() {
    let h = real::<T>(with_policy(Setup::default(), |p| p.fingerprint_version(7)));
    let raw = "raw-client-key-8c1f-do-not-log";
    let other_raw = "another-raw-client-key-3e7a";
    let (key, other) = (
        Key::new(["tenant-7", raw]),
        Key::new(["tenant-7", other_raw]),
    );
    let (a, b, probe) = (fingerprint("a"), fingerprint("b"), Probe::new());
    let work = Duration::from_millis(20);

    let runs = [
        h.run(&key, &a, Op::respond(&probe, 200, "ok").working(work))
            .await,
        h.run(&key, &a, Op::respond(&probe, 200, "ok")).await,
        h.run(&key, &b, Op::respond(&probe, 200, "ok")).await,
        h.run(&other, &a, Op::respond(&probe, 503, "busy")).await,
        h.run(&other, &a, Op::new(&probe, Answer::Fail("no"))).await,
    ];
    let events = h.events();
    let reported: Vec<_> = events.iter().map(|e| e.decision).collect();
    let returned: Vec<_> = runs.iter().map(decision).collect();
    assert_eq!(reported, returned);
    assert_eq!(
        reported,
        [
            Decision::New,
            Decision::Replayed,
            Decision::PayloadMismatch,
            Decision::NotCached,
            Decision::HandlerFailed
        ]
    );
    let keys: Vec<_> = events.iter().map(|e| e.key.clone()).collect();
    assert_eq!(keys, [key.clone(), key.clone(), key, other.clone(), other]);
    for event in &events {
        assert_eq!(event.fingerprint_version, 7);
        let shown = format!("{event:?}");
        assert!(
            !shown.contains(raw) && !shown.contains(other_raw),
            "{shown}"
        );
    }
    assert!(events[0].latency >= work, "{:?}", events[0].latency);
}

/// An observer that panics changes nothing about the runs it observes.
pub async fn a_panicking_observer_does_not_break_the_run<T: Target>() {
    let h = real::<T>(Setup::default().panicking_observer());
    let (key, request, probe) = (key("observer"), fingerprint("a"), Probe::new());
    let first = h.run(&key, &request, Op::respond(&probe, 200, "ok")).await;
    assert_eq!(decision(&first), Decision::New);
    let retry = h.run(&key, &request, Op::respond(&probe, 200, "ok")).await;
    assert_eq!(decision(&retry), Decision::Replayed);
    assert_eq!(
        h.events().len(),
        2,
        "the observer was not called for every run"
    );
}

/// A heartbeat interval that is not shorter than the lease is refused, with the reason,
/// when the policy is built: an executor is only ever given a valid one.
pub async fn a_heartbeat_not_shorter_than_the_lease_is_refused<T: Target>() {
    let lease = Duration::from_secs(3);
    // Not shorter than the lease, zero, or under the floor (it would spin on the store).
    let under_the_floor = Heartbeat::MIN_INTERVAL - Duration::from_nanos(1);
    for every in [
        lease,
        lease * 2,
        Duration::ZERO,
        Duration::from_nanos(1),
        under_the_floor,
    ] {
        let built = Policy::builder()
            .lease_ttl(lease)
            .heartbeat(Heartbeat::Every(every))
            .build();
        match built {
            Err(error) => assert_eq!(error.setting(), "heartbeat", "{error}"),
            Ok(_) => panic!("a heartbeat every {every:?} on a {lease:?} lease was accepted"),
        }
    }
    // Auto on a lease too short for the floor is refused too: 3 ns would renew every 1 ns.
    let tiny = Policy::builder()
        .lease_ttl(Duration::from_nanos(3))
        .heartbeat(Heartbeat::Auto)
        .build();
    assert!(tiny.is_err());
    let fine = with_policy(Setup::default(), |p| {
        p.lease_ttl(lease).heartbeat(Heartbeat::Every(lease / 2))
    });
    assert!(try_real::<T>(fine).is_ok());
}

/// A `cacheable` predicate that panics is the run's panic: the claim is released, the
/// run reports exactly one event (`HandlerFailed`), and the panic reaches the caller.
pub async fn a_panicking_cacheable_predicate_releases_and_reports_one_event<T: Target>() {
    let h = real::<T>(with_policy(Setup::default(), |p| {
        p.cacheable(|response: &Response| {
            assert_ne!(response.status, 299, "the predicate exploded");
            true
        })
    }));
    let (key, request, probe) = (key("predicate"), fingerprint("a"), Probe::new());
    let panicked = AssertUnwindSafe(h.run(&key, &request, Op::respond(&probe, 299, "odd")))
        .catch_unwind()
        .await;
    let payload = panicked.expect_err("the predicate's panic reaches the caller");
    assert!(
        panic_message(payload.as_ref()).contains("the predicate exploded"),
        "{}",
        panic_message(payload.as_ref())
    );
    assert!(
        h.backend().get(key.as_str()).await.is_none(),
        "the claim was kept"
    );
    let decisions: Vec<_> = h.events().iter().map(|e| e.decision).collect();
    assert_eq!(decisions, [Decision::HandlerFailed]);

    let retry = h.run(&key, &request, Op::respond(&probe, 200, "ok")).await;
    assert_eq!(decision(&retry), Decision::New);
    assert_eq!(probe.started(), 2);
}

/// A run dropped mid-operation (async only) releases its claim, so the retry runs at
/// once. Does nothing for the blocking executor, whose runs cannot be dropped.
pub async fn a_dropped_run_releases_its_claim<T: Target>() {
    let h = real::<T>(with_policy(Setup::default(), |p| {
        p.wait_timeout(Duration::ZERO)
    }));
    let (key, request, probe, gate) = (key("dropped"), fingerprint("a"), Probe::new(), Gate::new());
    let op = Op::respond(&probe, 200, "never").held_by(&gate);
    // Dropped once the operation runs, however long the claim took on a busy machine.
    if h.run_and_cancel_once(&key, &request, op, || probe.started() == 1)
        .await
        .is_none()
    {
        return;
    }
    assert_eq!(probe.started(), 1);
    assert_eq!(probe.dropped(), 1);
    assert!(
        h.backend().get(key.as_str()).await.is_none(),
        "the claim was kept"
    );
    assert!(h.events().is_empty(), "a dropped run reports nothing");
    let retry = h.run(&key, &request, Op::respond(&probe, 200, "ok")).await;
    assert_eq!(decision(&retry), Decision::New);
}
