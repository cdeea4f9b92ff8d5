//! The executor's decisions, as pure functions: what a claim, a finished wait, a
//! completion or a renewal means for this run. The run loop (`run_loop`) strings them
//! together; the blocking and async executors only perform the I/O it asks for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::claim::Claim;
use crate::error::Error;
use crate::exec::outcome::{Decision, Outcome, RunError, Unstored};
use crate::exec::policy::OnStorageError;
use crate::key::Fingerprint;
use crate::record::Record;
use crate::response::Response;
use crate::token::ClaimToken;

/// What a claim tells this run to do next.
#[derive(Debug)]
pub(crate) enum Next {
    /// This run holds the key: run the operation, then report `decision` (New or
    /// Reclaimed) unless its result says otherwise.
    Run {
        token: ClaimToken,
        decision: Decision,
    },
    /// The operation already ran for this request: return its stored response.
    Replay(Outcome),
    /// The key belongs to another request: refuse, never replay.
    Refuse,
    /// Another run holds the key: wait for it (its lease runs until `lease_until`, by
    /// the backend's clock).
    Wait { lease_until: Instant },
}

/// What a record holds for a request.
enum Replay {
    /// This request's result, to return.
    Same(Outcome),
    /// Another request's result: never handed to this one.
    Other,
    /// No result yet: the record is still claimed.
    NotDone,
}

/// Whether `record` was written by this request: same fingerprint, same version.
fn same_request(record: &Record, fingerprint: &Fingerprint, fingerprint_version: u32) -> bool {
    record.fingerprint() == fingerprint.as_str()
        && record.fingerprint_version() == fingerprint_version
}

/// What `record` holds for this request, reported as `decision` if it is a replay.
fn replay(
    record: &Record,
    fingerprint: &Fingerprint,
    fingerprint_version: u32,
    decision: Decision,
) -> Replay {
    let Some(response) = record.shared_response() else {
        return Replay::NotDone;
    };
    if same_request(record, fingerprint, fingerprint_version) {
        Replay::Same(Outcome::new(Arc::clone(response), decision))
    } else {
        Replay::Other
    }
}

/// What `claim` means for a run with this fingerprint: a free or lapsed key runs, a
/// completed one replays to the same request and refuses another, an in-flight one is
/// waited for by the same request and refused to another. `waited` says whether this
/// run already waited for the key, so a replay reports `ReplayedAfterWait`.
pub(crate) fn on_claim(
    claim: Claim,
    fingerprint: &Fingerprint,
    fingerprint_version: u32,
    waited: bool,
) -> Next {
    let replayed = if waited {
        Decision::ReplayedAfterWait
    } else {
        Decision::Replayed
    };
    match claim {
        Claim::New(token) => Next::Run {
            token,
            decision: Decision::New,
        },
        Claim::Reclaimed(token) => Next::Run {
            token,
            decision: Decision::Reclaimed,
        },
        // The backend compared the fingerprints: the shared response is handed on as is.
        Claim::Completed(completed) if completed.same_request() => {
            Next::Replay(Outcome::new(completed.into_shared_response(), replayed))
        }
        Claim::Completed(_) => Next::Refuse,
        Claim::InFlight(record) if same_request(&record, fingerprint, fingerprint_version) => {
            Next::Wait {
                lease_until: record.lease_until(),
            }
        }
        // Refused at once: waiting could only end in a refusal.
        Claim::InFlight(_) => Next::Refuse,
    }
}

/// What a finished wait tells this run to do next.
#[derive(Debug)]
pub(crate) enum AfterWait {
    /// The run waited for finished with this request's result.
    Replay(Outcome),
    /// It finished with another request's result.
    Refuse,
    /// It was released, lapsed, or the wait timed out: claim again (this run may become
    /// the runner, or learn how long to tell its caller to wait).
    ClaimAgain,
}

/// What a wait's result means for this run.
pub(crate) fn after_wait(
    completed: Option<Record>,
    fingerprint: &Fingerprint,
    fingerprint_version: u32,
) -> AfterWait {
    let Some(record) = completed else {
        return AfterWait::ClaimAgain;
    };
    match replay(
        &record,
        fingerprint,
        fingerprint_version,
        Decision::ReplayedAfterWait,
    ) {
        Replay::Same(outcome) => AfterWait::Replay(outcome),
        Replay::Other => AfterWait::Refuse,
        Replay::NotDone => AfterWait::ClaimAgain,
    }
}

/// How long a caller refused with `InProgress` should wait: the rest of the lease that
/// holds the key, rounded up to whole seconds (a `Retry-After` header counts seconds),
/// and at least one second, so "retry now" is never the answer.
pub(crate) fn retry_after(lease_until: Instant, now: Instant) -> Duration {
    let left = lease_until.saturating_duration_since(now);
    let whole = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    Duration::from_secs(whole.max(1))
}

/// What the completion's result means. `ran` is how the run got the key (New or
/// Reclaimed). A refused completion means another executor reclaimed the key: the
/// caller still gets the response, which is not stored. If the backend failed, the
/// result may or may not be stored; the claim is left to lapse rather than released,
/// in case it was.
pub(crate) fn after_complete<E>(
    stored: Result<bool, Error>,
    response: Arc<Response>,
    ran: Decision,
    on_storage_error: OnStorageError,
) -> Result<Outcome, RunError<E>> {
    let (decision, unstored) = match stored {
        Ok(true) => (ran, None),
        Ok(false) => (Decision::ReclaimedLoss, Some(Unstored::FencedOut)),
        Err(error) => match on_storage_error {
            OnStorageError::FailClosed => return Err(RunError::StorageFailed(error)),
            OnStorageError::FailOpen => (Decision::RanUnprotected, Some(Unstored::StorageError)),
        },
    };
    Ok(Outcome {
        response,
        decision,
        unstored,
    })
}

/// What the heartbeat knows about the lease it renews.
#[derive(Debug)]
pub(crate) struct LeaseTracker {
    lease_ttl: Duration,
    /// Until when the lease is surely held (by the backend's clock): the start of the
    /// last successful renewal (or of the claim) plus the lease. `None`: forever.
    held_until: Option<Instant>,
}

/// What one renewal attempt means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Beat {
    /// The lease is (still) held: keep running, renew again after the interval.
    Held,
    /// The lease is gone or another's: stop the operation, store nothing.
    Lost,
}

impl LeaseTracker {
    /// A lease claimed by a call issued at `claimed_from` (backend time, read before the
    /// claim, so a slow claim never makes the lease look longer than it is).
    pub(crate) fn new(claimed_from: Instant, lease_ttl: Duration) -> LeaseTracker {
        LeaseTracker {
            lease_ttl,
            held_until: claimed_from.checked_add(lease_ttl),
        }
    }

    /// The result of a renewal issued at `issued_at` (backend time, read before the
    /// call). A refusal loses the lease. A backend failure is not proof of loss: the run
    /// keeps going, unless the lease has surely lapsed by `now` since the last renewal.
    pub(crate) fn after_renew(
        &mut self,
        renewed: Result<bool, Error>,
        issued_at: Instant,
        now: Instant,
    ) -> Beat {
        match renewed {
            Ok(true) => {
                self.held_until = issued_at.checked_add(self.lease_ttl);
                Beat::Held
            }
            Ok(false) => Beat::Lost,
            Err(_) if self.held_until.is_some_and(|until| until < now) => Beat::Lost,
            Err(_) => Beat::Held,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    const LEASE: Duration = Duration::from_secs(30);

    fn fingerprint(text: &str) -> Fingerprint {
        Fingerprint::new([text])
    }

    /// A store with `key` claimed by fingerprint `by` at `now`, and its token.
    fn claimed(key: &str, by: &Fingerprint, now: Instant) -> (Store, ClaimToken) {
        let mut store = Store::new();
        let Claim::New(token) = store.claim(key, by.as_str(), 1, LEASE, now).unwrap() else {
            panic!("a fresh store holds nothing");
        };
        (store, token)
    }

    #[test]
    fn new_and_reclaimed_claims_run() {
        let now = Instant::now();
        let fp = fingerprint("a");
        let (mut store, _) = claimed("k", &fp, now);
        let later = now + LEASE + Duration::from_secs(1);
        let claim = store.claim("k", fp.as_str(), 1, LEASE, later).unwrap();
        assert!(matches!(
            on_claim(claim, &fp, 1, false),
            Next::Run {
                decision: Decision::Reclaimed,
                ..
            }
        ));
        let claim = store.claim("other", fp.as_str(), 1, LEASE, later).unwrap();
        assert!(matches!(
            on_claim(claim, &fp, 1, true),
            Next::Run {
                decision: Decision::New,
                ..
            }
        ));
    }

    #[test]
    fn a_completed_key_replays_the_stored_allocation_only_to_the_same_request() {
        let now = Instant::now();
        let fp = fingerprint("a");
        let (mut store, token) = claimed("k", &fp, now);
        assert!(store.complete("k", &token, Response::new(201, "made"), LEASE, now));
        let stored = Arc::clone(store.get("k", now).unwrap().shared_response().unwrap());

        let claim = store.claim("k", fp.as_str(), 1, LEASE, now).unwrap();
        let Next::Replay(outcome) = on_claim(claim, &fp, 1, false) else {
            panic!("same request: replay");
        };
        assert_eq!(outcome.decision, Decision::Replayed);
        assert!(Arc::ptr_eq(&outcome.response, &stored));

        let claim = store.claim("k", fp.as_str(), 1, LEASE, now).unwrap();
        let Next::Replay(outcome) = on_claim(claim, &fp, 1, true) else {
            panic!("same request: replay");
        };
        assert_eq!(outcome.decision, Decision::ReplayedAfterWait);

        // The store compares the fingerprints (the claim's against the stored one).
        let other = fingerprint("b");
        let claim = store.claim("k", other.as_str(), 1, LEASE, now).unwrap();
        assert!(matches!(on_claim(claim, &other, 1, false), Next::Refuse));
        let claim = store.claim("k", fp.as_str(), 2, LEASE, now).unwrap();
        assert!(matches!(on_claim(claim, &fp, 2, false), Next::Refuse));
    }

    #[test]
    fn an_in_flight_key_is_waited_for_by_the_same_request_and_refused_to_others() {
        let now = Instant::now();
        let fp = fingerprint("a");
        let (mut store, _) = claimed("k", &fp, now);
        let claim = store.claim("k", fp.as_str(), 1, LEASE, now).unwrap();
        match on_claim(claim, &fp, 1, false) {
            Next::Wait { lease_until } => assert_eq!(lease_until, now + LEASE),
            other => panic!("expected a wait, got {other:?}"),
        }
        let claim = store.claim("k", fp.as_str(), 1, LEASE, now).unwrap();
        assert!(matches!(
            on_claim(claim, &fingerprint("b"), 1, false),
            Next::Refuse
        ));
    }

    #[test]
    fn a_finished_wait_replays_refuses_or_claims_again() {
        let now = Instant::now();
        let fp = fingerprint("a");
        let (mut store, token) = claimed("k", &fp, now);
        assert!(matches!(after_wait(None, &fp, 1), AfterWait::ClaimAgain));
        assert!(store.complete("k", &token, Response::new(200, "ok"), LEASE, now));
        let record = store.get("k", now);
        match after_wait(record.clone(), &fp, 1) {
            AfterWait::Replay(outcome) => {
                assert_eq!(outcome.decision, Decision::ReplayedAfterWait);
                assert_eq!(outcome.response.body, "ok");
            }
            other => panic!("expected a replay, got {other:?}"),
        }
        assert!(matches!(
            after_wait(record, &fingerprint("b"), 1),
            AfterWait::Refuse
        ));
    }

    #[test]
    fn retry_after_rounds_the_remaining_lease_up_to_whole_seconds_at_least_one() {
        let now = Instant::now();
        let secs = |s| Duration::from_secs(s);
        let cases = [
            (Duration::from_millis(19_500), secs(20)),
            (secs(20), secs(20)),
            (Duration::from_nanos(20_000_000_001), secs(21)),
            (Duration::from_millis(1), secs(1)),
            (Duration::ZERO, secs(1)),
        ];
        for (left, expected) in cases {
            assert_eq!(retry_after(now + left, now), expected, "{left:?} left");
        }
        // A lease already past still says one second, never zero.
        assert_eq!(retry_after(now, now + secs(5)), secs(1));
    }

    #[test]
    fn a_refused_completion_is_a_reclaimed_loss_and_a_failed_one_follows_the_policy() {
        let response = Arc::new(Response::new(200, "ok"));
        let outcome = |stored, policy| {
            after_complete::<()>(stored, Arc::clone(&response), Decision::Reclaimed, policy)
        };
        let closed = OnStorageError::FailClosed;
        let open = OnStorageError::FailOpen;
        let stored = outcome(Ok(true), closed).unwrap();
        assert_eq!(
            (stored.decision, stored.unstored),
            (Decision::Reclaimed, None)
        );
        let fenced = outcome(Ok(false), closed).unwrap();
        assert_eq!(
            (fenced.decision, fenced.unstored),
            (Decision::ReclaimedLoss, Some(Unstored::FencedOut))
        );
        let full = || Err(Error::Full { max_size: 1 });
        assert!(matches!(
            outcome(full(), closed),
            Err(RunError::StorageFailed(Error::Full { max_size: 1 }))
        ));
        let failed = outcome(full(), open).unwrap();
        assert_eq!(
            (failed.decision, failed.unstored),
            (Decision::RanUnprotected, Some(Unstored::StorageError))
        );
    }

    #[test]
    fn a_renewal_refused_loses_the_lease_and_a_failed_one_only_once_it_lapsed() {
        let start = Instant::now();
        let ttl = Duration::from_secs(3);
        let mut lease = LeaseTracker::new(start, ttl);
        let failure = || Err(Error::Full { max_size: 0 });
        assert_eq!(lease.after_renew(failure(), start, start + ttl), Beat::Held);
        let at = start + Duration::from_secs(1);
        assert_eq!(lease.after_renew(Ok(true), at, at), Beat::Held);
        // Renewed at 1 s: held through 4 s, not past it.
        assert_eq!(
            lease.after_renew(failure(), at, start + Duration::from_secs(4)),
            Beat::Held
        );
        let past = start + Duration::from_secs(4) + Duration::from_nanos(1);
        assert_eq!(lease.after_renew(failure(), past, past), Beat::Lost);
        assert_eq!(
            LeaseTracker::new(start, ttl).after_renew(Ok(false), start, start),
            Beat::Lost
        );
        let mut forever = LeaseTracker::new(start, Duration::MAX);
        assert_eq!(
            forever.after_renew(failure(), start, start + Duration::from_secs(1_000_000)),
            Beat::Held
        );
    }
}
