//! What a run reports: [`Decision`], [`Outcome`], [`RunError`] and the [`Event`] an
//! observer receives.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::key::Key;
use crate::response::Response;

/// What an executor decided for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Decision {
    /// The key was free: the operation ran and its result was stored.
    New,
    /// A crashed owner's lease had lapsed: the operation ran and its result was stored.
    Reclaimed,
    /// The stored result was returned at once; the operation did not run.
    Replayed,
    /// Another run of the key was in flight; its result was returned once it finished.
    ReplayedAfterWait,
    /// The operation ran; its result was not cacheable, so the claim was released and a
    /// retry runs again.
    NotCached,
    /// The operation ran, but another executor took the key over meanwhile: the result
    /// was returned to this caller but not stored.
    ReclaimedLoss,
    /// The backend failed under [`OnStorageError::FailOpen`](crate::OnStorageError): the
    /// operation ran without protection against duplicates.
    RanUnprotected,
    /// Refused: the key was used with another fingerprint
    /// ([`RunError::PayloadMismatch`]).
    PayloadMismatch,
    /// Refused: another run of the key did not finish in time ([`RunError::InProgress`]).
    InProgress,
    /// The backend failed ([`RunError::StorageFailed`]).
    StorageFailed,
    /// The lease could not be renewed ([`RunError::LeaseLost`]).
    LeaseLost,
    /// The operation returned an error ([`RunError::HandlerFailed`]) or panicked; a
    /// panic in the policy's `cacheable` predicate counts as the operation's.
    HandlerFailed,
}

/// Why the response of an operation that ran was not stored though it was to be: a
/// retry will not find it, and runs the operation again (or waits out a lease).
///
/// A caller that hands the response on can say so (an HTTP layer, in a header); a
/// response left out by the policy's `cacheable` predicate ([`Decision::NotCached`]) is
/// not one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unstored {
    /// The backend failed when the response was to be stored (or when the key was to be
    /// claimed, under [`OnStorageError::FailOpen`](crate::OnStorageError), so there was
    /// no claim to store it under).
    StorageError,
    /// The lease lapsed and another executor took the key over before the response was
    /// stored: the completion was refused (fencing), and the new owner's result is the
    /// one stored.
    FencedOut,
}

impl Unstored {
    /// A short name: `storage-error` or `fenced-out`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unstored::StorageError => "storage-error",
            Unstored::FencedOut => "fenced-out",
        }
    }
}

/// A successful run: the response to give the caller and how it was obtained.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Outcome {
    /// The response. It is the allocation the store keeps, shared with every replay: the
    /// runner's own response is stored without a copy, and a replay copies nothing.
    pub response: Arc<Response>,
    /// How the response was obtained.
    pub decision: Decision,
    /// Set when the operation ran here and its response was to be stored but could not
    /// be ([`Decision::ReclaimedLoss`]: fenced out; [`Decision::RanUnprotected`]: the
    /// backend failed); `None` for a stored, replayed or not cacheable response.
    pub unstored: Option<Unstored>,
}

impl Outcome {
    /// An outcome whose response was stored, or needed no storing.
    pub(crate) fn new(response: Arc<Response>, decision: Decision) -> Outcome {
        Outcome {
            response,
            decision,
            unstored: None,
        }
    }
}

/// Why a run produced no response.
///
/// `E` is the operation's own error. A caller maps each variant to what its clients
/// understand; an HTTP service, for instance:
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::RunError;
///
/// fn status_of<E>(error: &RunError<E>) -> (u16, Option<Duration>) {
///     match error {
///         RunError::PayloadMismatch => (422, None),
///         RunError::InProgress { retry_after } => (423, Some(*retry_after)),
///         RunError::StorageFailed(_) => (503, Some(Duration::from_secs(1))),
///         RunError::HandlerFailed(_) | RunError::LeaseLost => (500, None),
///         // New variants may come: treat them as failures.
///         _ => (500, None),
///     }
/// }
///
/// let busy = RunError::<std::io::Error>::InProgress { retry_after: Duration::from_secs(20) };
/// assert_eq!(status_of(&busy), (423, Some(Duration::from_secs(20))));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError<E> {
    /// The key was used with another fingerprint (or fingerprint version): the request is
    /// refused, and the stored result is never handed to it.
    #[error("the idempotency key was already used with a different request")]
    PayloadMismatch,
    /// Another run of the key did not finish within the policy's `wait_timeout`; the
    /// caller should retry after `retry_after` (the rest of that run's lease, rounded up
    /// to whole seconds, at least one).
    #[error("a request with this idempotency key is in progress; retry after {retry_after:?}")]
    InProgress {
        /// When a retry may find the result, or the key free.
        retry_after: Duration,
    },
    /// The backend failed under [`OnStorageError::FailClosed`](crate::OnStorageError).
    #[error("the idempotency backend failed")]
    StorageFailed(#[source] Error),
    /// The operation returned this error; its claim (if it ran under one) was released,
    /// so a retry runs again.
    #[error("the operation failed: {0}")]
    HandlerFailed(E),
    /// The lease could not be renewed (the claim was released or taken over): the result
    /// was not stored. Async executors cancel the operation at its next await point;
    /// the blocking executor lets it return (see [`Lease::is_lost`](crate::Lease::is_lost)).
    #[error("the lease on the idempotency key was lost; the result was not stored")]
    LeaseLost,
}

impl<E> RunError<E> {
    /// The [`Decision`] an event reports for this error.
    pub fn decision(&self) -> Decision {
        match self {
            RunError::PayloadMismatch => Decision::PayloadMismatch,
            RunError::InProgress { .. } => Decision::InProgress,
            RunError::StorageFailed(_) => Decision::StorageFailed,
            RunError::HandlerFailed(_) => Decision::HandlerFailed,
            RunError::LeaseLost => Decision::LeaseLost,
        }
    }
}

/// What an executor tells its observer after each run: exactly one per run.
///
/// It carries the hashed [`Key`], never the caller's raw key, so it is safe to log.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Event {
    /// What was decided.
    pub decision: Decision,
    /// The hashed key.
    pub key: Key,
    /// The policy's fingerprint version.
    pub fingerprint_version: u32,
    /// How long the run took, waiting included.
    pub latency: Duration,
    /// Set when the operation ran and its response was to be stored but could not be
    /// (see [`Outcome::unstored`]); also under
    /// [`OnStorageError::FailClosed`](crate::OnStorageError), where the run ends with
    /// [`RunError::StorageFailed`] though the operation ran.
    pub unstored: Option<Unstored>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_maps_to_its_own_decision() {
        let errors: [RunError<&str>; 5] = [
            RunError::PayloadMismatch,
            RunError::InProgress {
                retry_after: Duration::from_secs(1),
            },
            RunError::StorageFailed(Error::Full { max_size: 0 }),
            RunError::HandlerFailed("boom"),
            RunError::LeaseLost,
        ];
        let decisions: Vec<Decision> = errors.iter().map(RunError::decision).collect();
        assert_eq!(
            decisions,
            [
                Decision::PayloadMismatch,
                Decision::InProgress,
                Decision::StorageFailed,
                Decision::HandlerFailed,
                Decision::LeaseLost,
            ]
        );
        assert_eq!(errors[3].to_string(), "the operation failed: boom");
    }
}
