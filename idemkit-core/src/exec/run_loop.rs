//! [`RunLoop`]: one run of an executor as a state machine, written once for the blocking
//! and the async executor.
//!
//! The loop asks for one I/O step at a time ([`Step`]); the executor performs it (a
//! blocking call, or an await) and hands the result back. Claim, wait, claim again after
//! a release or a lapse, run, store or release, and what to report: all of it is decided
//! here, from the pure decisions in `decide`.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::claim::Claim;
use crate::error::Error;
use crate::exec::decide::{self, AfterWait, LeaseTracker, Next};
use crate::exec::outcome::{Decision, Outcome, RunError, Unstored};
use crate::exec::policy::{OnStorageError, Policy};
use crate::key::Fingerprint;
use crate::record::Record;
use crate::response::Response;
use crate::rt::deadline::{deadline_after, remaining};
use crate::token::ClaimToken;

/// The I/O a run asks its executor for next.
#[derive(Debug)]
pub(crate) enum Step<E> {
    /// Read the backend's clock, then claim the key; hand both to [`RunLoop::claimed`].
    Claim,
    /// Wait up to `timeout` for the key to complete; hand the result to
    /// [`RunLoop::waited`].
    Wait { timeout: Duration },
    /// Run the operation under `claim` (with a heartbeat), or without one (`None`: a
    /// storage failure under `FailOpen`); hand the result to [`RunLoop::ran`].
    Run(Option<Held>),
    /// Store `response` for the claim `token` holds; hand the result to
    /// [`RunLoop::completed`].
    Complete {
        token: ClaimToken,
        response: Arc<Response>,
    },
    /// Release the claim `token` holds (a refusal or failure changes nothing); then call
    /// [`RunLoop::released`].
    Release { token: ClaimToken },
    /// The run is over.
    Done(Finished<E>),
}

/// The claim an operation runs under.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) token: ClaimToken,
    /// What the heartbeat knows about the lease.
    pub(crate) lease: LeaseTracker,
    /// How often to renew it; `None` for no heartbeat.
    pub(crate) interval: Option<Duration>,
}

/// A panic caught from an operation, to be resumed once its claim is released.
pub(crate) type Panic = Box<dyn Any + Send + 'static>;

/// How the operation ended, as the executor saw it.
pub(crate) enum Ran<E> {
    /// It returned.
    Returned(Result<Response, E>),
    /// It panicked; the panic is resumed once the claim is released.
    Panicked(Panic),
    /// The heartbeat could not renew the lease: its result (if any) must not be stored.
    LeaseLost,
}

/// How a run ended.
#[derive(Debug)]
pub(crate) enum Finished<E> {
    /// With a response.
    Outcome(Outcome),
    /// With an error.
    Error(RunError<E>),
    /// With the operation's panic (or the `cacheable` predicate's), to be resumed.
    Panicked(Panic),
    /// The operation ran, but the backend failed to store its response, under
    /// `FailClosed`: the caller gets [`RunError::StorageFailed`], and the event says the
    /// response went unstored.
    NotStored(Error),
}

impl<E> Finished<E> {
    /// The decision the run's event reports.
    pub(crate) fn decision(&self) -> Decision {
        match self {
            Finished::Outcome(outcome) => outcome.decision,
            Finished::Error(error) => error.decision(),
            Finished::Panicked(_) => Decision::HandlerFailed,
            Finished::NotStored(_) => Decision::StorageFailed,
        }
    }

    /// Why a response that was to be stored was not, if it was not.
    pub(crate) fn unstored(&self) -> Option<Unstored> {
        match self {
            Finished::Outcome(outcome) => outcome.unstored,
            Finished::NotStored(_) => Some(Unstored::StorageError),
            Finished::Error(_) | Finished::Panicked(_) => None,
        }
    }
}

impl<E> From<Result<Outcome, RunError<E>>> for Finished<E> {
    fn from(result: Result<Outcome, RunError<E>>) -> Finished<E> {
        match result {
            Ok(outcome) => Finished::Outcome(outcome),
            Err(error) => Finished::Error(error),
        }
    }
}

/// One run's state between steps.
pub(crate) struct RunLoop<'a, E> {
    policy: &'a Policy,
    fingerprint: &'a Fingerprint,
    /// When waiting for another run must stop, on the executor's timer: set when the
    /// run first finds its key in flight (`None` before that, and for a wait too long
    /// for an `Instant`).
    deadline: Option<Instant>,
    /// Whether the run has waited (and so has its deadline).
    waited: bool,
    /// The claim this run holds and how it got it (New or Reclaimed).
    held: Option<(ClaimToken, Decision)>,
    /// What the run ends with once its claim is released.
    after_release: Option<Finished<E>>,
}

impl<'a, E> RunLoop<'a, E> {
    /// A run; its first step is [`Step::Claim`].
    ///
    /// It reads no clock: the wait's budget starts when the run first finds its key in
    /// flight (`Policy::wait_timeout` is how long a run waits), so a run that never
    /// waits (every new key and every replay) never needs it.
    pub(crate) fn start(
        policy: &'a Policy,
        fingerprint: &'a Fingerprint,
    ) -> (RunLoop<'a, E>, Step<E>) {
        let run = RunLoop {
            policy,
            fingerprint,
            deadline: None,
            waited: false,
            held: None,
            after_release: None,
        };
        (run, Step::Claim)
    }

    /// The claim's result. `issued_at` is the backend's time read just before the claim
    /// was sent; `now` reads the executor's timer, which only a claim that finds its key
    /// in flight needs (a run or a replay does not read the clock again).
    pub(crate) fn claimed(
        &mut self,
        claim: Result<Claim, Error>,
        issued_at: Instant,
        now: impl FnOnce() -> Instant,
    ) -> Step<E> {
        let claim = match claim {
            Ok(claim) => claim,
            Err(error) => return self.storage_failed(error),
        };
        let version = self.policy.fingerprint_version();
        match decide::on_claim(claim, self.fingerprint, version, self.waited) {
            Next::Run { token, decision } => {
                self.held = Some((token.clone(), decision));
                Step::Run(Some(Held {
                    token,
                    lease: LeaseTracker::new(issued_at, self.policy.lease_ttl()),
                    interval: self.policy.heartbeat_interval(),
                }))
            }
            Next::Replay(outcome) => Step::Done(Finished::Outcome(outcome)),
            Next::Refuse => Step::Done(Finished::Error(RunError::PayloadMismatch)),
            Next::Wait { lease_until } => {
                let now = now();
                if !self.waited {
                    self.deadline = deadline_after(now, self.policy.wait_timeout());
                }
                let timeout = remaining(self.deadline, now);
                if timeout.is_zero() {
                    let retry_after = decide::retry_after(lease_until, issued_at);
                    return Step::Done(Finished::Error(RunError::InProgress { retry_after }));
                }
                self.waited = true;
                Step::Wait { timeout }
            }
        }
    }

    /// The wait's result.
    pub(crate) fn waited(&mut self, completed: Result<Option<Record>, Error>) -> Step<E> {
        let completed = match completed {
            Ok(completed) => completed,
            Err(error) => return self.storage_failed(error),
        };
        let version = self.policy.fingerprint_version();
        match decide::after_wait(completed, self.fingerprint, version) {
            AfterWait::Replay(outcome) => Step::Done(Finished::Outcome(outcome)),
            AfterWait::Refuse => Step::Done(Finished::Error(RunError::PayloadMismatch)),
            AfterWait::ClaimAgain => Step::Claim,
        }
    }

    /// A backend failure before the operation ran: refuse under `FailClosed`, run
    /// without a claim under `FailOpen`.
    fn storage_failed(&mut self, error: Error) -> Step<E> {
        match self.policy.on_storage_error() {
            OnStorageError::FailClosed => {
                Step::Done(Finished::Error(RunError::StorageFailed(error)))
            }
            OnStorageError::FailOpen => Step::Run(None),
        }
    }

    /// How the operation ended.
    pub(crate) fn ran(&mut self, ran: Ran<E>) -> Step<E> {
        let Some((token, decision)) = self.held.take() else {
            return Step::Done(unprotected(ran));
        };
        let ended = match ran {
            Ran::Returned(Ok(response)) => {
                // The predicate is the user's code: a panic in it is the run's panic.
                let policy = self.policy;
                match catch_unwind(AssertUnwindSafe(|| policy.is_cacheable(&response))) {
                    Ok(true) => {
                        self.held = Some((token.clone(), decision));
                        return Step::Complete {
                            token,
                            response: Arc::new(response),
                        };
                    }
                    Ok(false) => {
                        Finished::Outcome(Outcome::new(Arc::new(response), Decision::NotCached))
                    }
                    Err(panic) => Finished::Panicked(panic),
                }
            }
            Ran::Returned(Err(error)) => Finished::Error(RunError::HandlerFailed(error)),
            Ran::Panicked(panic) => Finished::Panicked(panic),
            Ran::LeaseLost => Finished::Error(RunError::LeaseLost),
        };
        // Not stored: release the claim, so a retry runs again.
        self.after_release = Some(ended);
        Step::Release { token }
    }

    /// The completion's result, for the response the run stored.
    pub(crate) fn completed(
        &mut self,
        stored: Result<bool, Error>,
        response: Arc<Response>,
    ) -> Step<E> {
        let (_, decision) = self.held.take().expect("a completion follows a held claim");
        let result =
            decide::after_complete(stored, response, decision, self.policy.on_storage_error());
        Step::Done(match result {
            // It ran: the event says its response went unstored.
            Err(RunError::StorageFailed(error)) => Finished::NotStored(error),
            result => result.into(),
        })
    }

    /// The claim was released (or could not be, which changes nothing).
    pub(crate) fn released(&mut self) -> Step<E> {
        Step::Done(
            self.after_release
                .take()
                .expect("a release follows a result"),
        )
    }
}

/// The end of an operation run without a claim.
fn unprotected<E>(ran: Ran<E>) -> Finished<E> {
    match ran {
        // There was no claim to store the response under.
        Ran::Returned(Ok(response)) => Finished::Outcome(Outcome {
            response: Arc::new(response),
            decision: Decision::RanUnprotected,
            unstored: Some(Unstored::StorageError),
        }),
        Ran::Returned(Err(error)) => Finished::Error(RunError::HandlerFailed(error)),
        Ran::Panicked(panic) => Finished::Panicked(panic),
        // Nothing renews what was never claimed.
        Ran::LeaseLost => Finished::Error(RunError::LeaseLost),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::exec::policy::Heartbeat;
    use crate::key::Fingerprint;

    type Loop<'a> = RunLoop<'a, &'static str>;

    fn token() -> ClaimToken {
        ClaimToken::from_bytes([3; 16])
    }

    fn fingerprint() -> Fingerprint {
        Fingerprint::new(["request"])
    }

    fn in_flight(fingerprint: &Fingerprint, lease_until: Instant) -> Claim {
        let claimed_at = lease_until - Duration::from_secs(30);
        Claim::InFlight(Record::claimed(
            "k",
            fingerprint.as_str(),
            1,
            token(),
            claimed_at,
            lease_until,
        ))
    }

    fn storage_error() -> Error {
        Error::storage(std::io::Error::other("gone"))
    }

    fn done(step: Step<&'static str>) -> Finished<&'static str> {
        match step {
            Step::Done(finished) => finished,
            other => panic!("expected the run to be over, got {other:?}"),
        }
    }

    #[test]
    fn a_new_claim_runs_under_a_lease_counted_from_before_the_claim() {
        let policy = Policy::builder()
            .heartbeat(Heartbeat::Every(Duration::from_secs(2)))
            .build()
            .unwrap();
        let fp = fingerprint();
        let now = Instant::now();
        let (mut run, step) = Loop::start(&policy, &fp);
        assert!(matches!(step, Step::Claim));
        let issued_at = now - Duration::from_secs(5);
        match run.claimed(Ok(Claim::New(token())), issued_at, || now) {
            Step::Run(Some(held)) => {
                assert_eq!(held.token, token());
                assert_eq!(held.interval, Some(Duration::from_secs(2)));
                // Surely held until issued_at + lease, not now + lease.
                let mut lease = held.lease;
                let past = issued_at + policy.lease_ttl() + Duration::from_nanos(1);
                assert_eq!(
                    lease.after_renew(Err(storage_error()), past, past),
                    crate::exec::decide::Beat::Lost
                );
            }
            other => panic!("expected to run, got {other:?}"),
        }
    }

    #[test]
    fn a_stored_result_ends_as_the_claims_decision_and_a_refused_one_as_a_loss() {
        let policy = Policy::default();
        let fp = fingerprint();
        let now = Instant::now();
        for (stored, expected) in [
            (Ok(true), Decision::New),
            (Ok(false), Decision::ReclaimedLoss),
        ] {
            let (mut run, _) = Loop::start(&policy, &fp);
            let _ = run.claimed(Ok(Claim::New(token())), now, || now);
            let Step::Complete {
                token: held,
                response,
            } = run.ran(Ran::Returned(Ok(Response::new(201, "made"))))
            else {
                panic!("a cacheable result is stored");
            };
            assert_eq!(held, token());
            match done(run.completed(stored, Arc::clone(&response))) {
                Finished::Outcome(outcome) => {
                    assert_eq!(outcome.decision, expected);
                    assert!(Arc::ptr_eq(&outcome.response, &response), "not copied");
                }
                other => panic!("expected an outcome, got {other:?}"),
            }
        }
    }

    #[test]
    fn results_not_stored_release_the_claim_before_the_run_ends() {
        let policy = Policy::builder()
            .cacheable(|r| {
                assert_ne!(r.status, 299, "predicate exploded");
                r.status == 200
            })
            .build()
            .unwrap();
        let fp = fingerprint();
        let now = Instant::now();
        let cases: [(Ran<&'static str>, Decision); 4] = [
            (
                Ran::Returned(Ok(Response::new(503, ""))),
                Decision::NotCached,
            ),
            (Ran::Returned(Err("boom")), Decision::HandlerFailed),
            (Ran::LeaseLost, Decision::LeaseLost),
            (
                Ran::Returned(Ok(Response::new(299, ""))),
                Decision::HandlerFailed,
            ),
        ];
        for (ran, expected) in cases {
            let (mut run, _) = Loop::start(&policy, &fp);
            let _ = run.claimed(Ok(Claim::Reclaimed(token())), now, || now);
            let step = run.ran(ran);
            assert!(
                matches!(&step, Step::Release { token: t } if *t == token()),
                "{step:?}"
            );
            assert_eq!(done(run.released()).decision(), expected);
        }
    }

    #[test]
    fn a_duplicate_waits_its_timeout_in_total_from_when_it_finds_the_key_in_flight() {
        let policy = Policy::builder()
            .wait_timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        let fp = fingerprint();
        let found = Instant::now();
        let (mut run, _) = Loop::start(&policy, &fp);
        let lease_until = found + Duration::from_secs(20);
        // The claim itself (however long it took) is not waiting: the whole budget is left.
        match run.claimed(Ok(in_flight(&fp, lease_until)), found, || found) {
            Step::Wait { timeout } => assert_eq!(timeout, Duration::from_secs(10)),
            other => panic!("expected a wait, got {other:?}"),
        }
        // Woken early, it claims again and finds the key still in flight: what is left.
        assert!(matches!(run.waited(Ok(None)), Step::Claim));
        let later = found + Duration::from_secs(4);
        match run.claimed(Ok(in_flight(&fp, lease_until)), later, || later) {
            Step::Wait { timeout } => assert_eq!(timeout, Duration::from_secs(6)),
            other => panic!("expected a wait, got {other:?}"),
        }
        // The wait timed out: claim again, and it is still in flight.
        assert!(matches!(run.waited(Ok(None)), Step::Claim));
        let end = found + Duration::from_secs(10);
        match done(run.claimed(Ok(in_flight(&fp, lease_until)), end, || end)) {
            Finished::Error(RunError::InProgress { retry_after }) => {
                assert_eq!(retry_after, Duration::from_secs(10));
            }
            other => panic!("expected InProgress, got {other:?}"),
        }
    }

    #[test]
    fn storage_failures_refuse_when_closed_and_run_unprotected_when_open() {
        let fp = fingerprint();
        let now = Instant::now();
        let closed = Policy::default();
        let (mut run, _) = Loop::start(&closed, &fp);
        assert!(matches!(
            done(run.claimed(Err(storage_error()), now, || now)),
            Finished::Error(RunError::StorageFailed(_))
        ));
        let (mut run, _) = Loop::start(&closed, &fp);
        let _ = run.claimed(
            Ok(in_flight(&fp, now + Duration::from_secs(30))),
            now,
            || now,
        );
        assert!(matches!(
            done(run.waited(Err(storage_error()))),
            Finished::Error(RunError::StorageFailed(_))
        ));

        let open = Policy::builder()
            .on_storage_error(OnStorageError::FailOpen)
            .build()
            .unwrap();
        let (mut run, _) = Loop::start(&open, &fp);
        assert!(matches!(
            run.claimed(Err(storage_error()), now, || now),
            Step::Run(None)
        ));
        match done(run.ran(Ran::Returned(Ok(Response::new(200, "ran"))))) {
            Finished::Outcome(outcome) => assert_eq!(outcome.decision, Decision::RanUnprotected),
            other => panic!("expected an unprotected outcome, got {other:?}"),
        }
    }
}
