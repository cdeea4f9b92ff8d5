//! [`Policy`]: how an executor claims, waits, stores and renews.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::response::Response;

/// Which results are stored and replayed.
type Cacheable = dyn Fn(&Response) -> bool + Send + Sync;

/// How an executor runs operations: leases, waiting, replay lifetime, heartbeats,
/// fingerprint version, storage failures and what is worth caching.
///
/// Start from [`Policy::default`] and change what differs; every setter returns the
/// changed policy.
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{Heartbeat, Policy, Response};
///
/// let policy = Policy::default()
///     .with_lease_ttl(Duration::from_secs(5))
///     .with_heartbeat(Heartbeat::Every(Duration::from_secs(1)))
///     // Deterministic validation errors are worth replaying too.
///     .with_cacheable(|response: &Response| matches!(response.status, 200..=299 | 422));
/// assert!(policy.validate().is_ok());
/// assert_eq!(policy.heartbeat_interval(), Some(Duration::from_secs(1)));
/// assert!(policy.is_cacheable(&Response::new(422, "")));
/// assert!(!policy.is_cacheable(&Response::new(503, "")));
/// ```
#[derive(Clone)]
pub struct Policy {
    lease_ttl: Duration,
    wait_timeout: Duration,
    expires_after: Duration,
    heartbeat: Heartbeat,
    fingerprint_version: u32,
    on_storage_error: OnStorageError,
    /// `None`: the default, a 2xx status.
    cacheable: Option<Arc<Cacheable>>,
}

/// Whether the executor renews the lease while the operation runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heartbeat {
    /// Renew every third of the lease, so two renewals can fail before it lapses; at
    /// least every [`Heartbeat::MIN_INTERVAL`], so a lease of 3 ms or less cannot use it.
    Auto,
    /// Renew at this interval, which must be shorter than the lease and at least
    /// [`Heartbeat::MIN_INTERVAL`].
    Every(Duration),
    /// Never renew: an operation that outlives its lease may be taken over.
    Off,
}

impl Heartbeat {
    /// The shortest interval a heartbeat renews at: a policy asking for less is refused
    /// by [`Policy::validate`]. A renewal is a store operation (a round trip for a
    /// networked store); renewing more often than this only burns a core.
    pub const MIN_INTERVAL: Duration = Duration::from_millis(1);
}

/// What an executor does when the backend fails (a lost connection, a full in-memory
/// store).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnStorageError {
    /// Refuse the request: the run returns
    /// [`RunError::StorageFailed`](crate::RunError::StorageFailed) and the operation does
    /// not run.
    FailClosed,
    /// Run the operation anyway, without protection against duplicates, and report
    /// [`Decision::RanUnprotected`](crate::Decision::RanUnprotected).
    FailOpen,
}

impl Default for Policy {
    /// A 30 s lease renewed by [`Heartbeat::Auto`], a 10 s wait, results replayed for 24 h,
    /// fingerprint version 1, [`OnStorageError::FailClosed`], and 2xx results cached.
    fn default() -> Policy {
        Policy {
            lease_ttl: Duration::from_secs(30),
            wait_timeout: Duration::from_secs(10),
            expires_after: Duration::from_secs(24 * 60 * 60),
            heartbeat: Heartbeat::Auto,
            fingerprint_version: 1,
            on_storage_error: OnStorageError::FailClosed,
            cacheable: None,
        }
    }
}

impl Policy {
    /// How long a claim is held without renewal before another executor may take the
    /// key over.
    pub fn lease_ttl(&self) -> Duration {
        self.lease_ttl
    }

    /// This policy with leases of `lease_ttl`.
    #[must_use]
    pub fn with_lease_ttl(mut self, lease_ttl: Duration) -> Policy {
        self.lease_ttl = lease_ttl;
        self
    }

    /// How long one run waits, in total, for another executor's in-flight run of the
    /// same key before answering [`RunError::InProgress`](crate::RunError::InProgress).
    pub fn wait_timeout(&self) -> Duration {
        self.wait_timeout
    }

    /// This policy, waiting at most `wait_timeout` for a run in flight.
    #[must_use]
    pub fn with_wait_timeout(mut self, wait_timeout: Duration) -> Policy {
        self.wait_timeout = wait_timeout;
        self
    }

    /// How long a stored result is replayed.
    pub fn expires_after(&self) -> Duration {
        self.expires_after
    }

    /// This policy, replaying stored results for `expires_after`.
    #[must_use]
    pub fn with_expires_after(mut self, expires_after: Duration) -> Policy {
        self.expires_after = expires_after;
        self
    }

    /// Whether and how often the lease is renewed while the operation runs.
    pub fn heartbeat(&self) -> Heartbeat {
        self.heartbeat
    }

    /// This policy with `heartbeat`.
    #[must_use]
    pub fn with_heartbeat(mut self, heartbeat: Heartbeat) -> Policy {
        self.heartbeat = heartbeat;
        self
    }

    /// The version of the scheme that builds fingerprints; a stored result is replayed
    /// only to a request with the same fingerprint and version.
    pub fn fingerprint_version(&self) -> u32 {
        self.fingerprint_version
    }

    /// This policy with fingerprint version `fingerprint_version`.
    ///
    /// A record of another version met under the same key is refused
    /// ([`RunError::PayloadMismatch`](crate::RunError)), never replayed: fingerprints of two
    /// versions cannot be compared, so the request may or may not be the one stored. When
    /// you change how fingerprints are built, put the version in the [`Key`](crate::Key)
    /// too (as `idemkit-tower` does): requests of the new version then never meet records
    /// of the old one, and a retry that spans the change runs once more instead of being
    /// refused, while the old records expire on their own.
    #[must_use]
    pub fn with_fingerprint_version(mut self, fingerprint_version: u32) -> Policy {
        self.fingerprint_version = fingerprint_version;
        self
    }

    /// What to do when the backend fails.
    pub fn on_storage_error(&self) -> OnStorageError {
        self.on_storage_error
    }

    /// This policy, answering backend failures with `on_storage_error`.
    #[must_use]
    pub fn with_on_storage_error(mut self, on_storage_error: OnStorageError) -> Policy {
        self.on_storage_error = on_storage_error;
        self
    }

    /// This policy, storing and replaying the results for which `cacheable` is true (by
    /// default, status 200 to 299, so a transient 5xx is never replayed and its retry
    /// runs again). A result that is not cacheable is returned and its claim released.
    /// The predicate may capture what it needs; if it panics, the run releases its
    /// claim, reports [`Decision::HandlerFailed`](crate::Decision::HandlerFailed) and
    /// resumes the panic.
    #[must_use]
    pub fn with_cacheable(
        mut self,
        cacheable: impl Fn(&Response) -> bool + Send + Sync + 'static,
    ) -> Policy {
        self.cacheable = Some(Arc::new(cacheable));
        self
    }

    /// Whether `response` is stored and replayed under this policy.
    pub fn is_cacheable(&self, response: &Response) -> bool {
        match &self.cacheable {
            Some(cacheable) => cacheable(response),
            None => (200..=299).contains(&response.status),
        }
    }

    /// How often the lease is renewed while an operation runs; `None` for
    /// [`Heartbeat::Off`]. [`Heartbeat::Auto`] renews every third of the lease, but no
    /// more often than [`Heartbeat::MIN_INTERVAL`].
    pub fn heartbeat_interval(&self) -> Option<Duration> {
        match self.heartbeat {
            Heartbeat::Auto => Some((self.lease_ttl / 3).max(Heartbeat::MIN_INTERVAL)),
            Heartbeat::Every(interval) => Some(interval),
            Heartbeat::Off => None,
        }
    }

    /// Checks that the policy can work: a heartbeat must renew before the lease lapses,
    /// so its interval must be shorter than the lease, and it must be at least
    /// [`Heartbeat::MIN_INTERVAL`] (a shorter one is refused, not clamped: it would
    /// renew almost without pause). The executors' `with_policy` calls this.
    pub fn validate(&self) -> Result<(), Error> {
        let Some(interval) = self.heartbeat_interval() else {
            return Ok(());
        };
        if interval < Heartbeat::MIN_INTERVAL {
            return Err(Error::InvalidPolicy(format!(
                "the heartbeat interval ({interval:?}) is under {:?}: it would renew \
                 almost without pause",
                Heartbeat::MIN_INTERVAL
            )));
        }
        if interval >= self.lease_ttl {
            return Err(Error::InvalidPolicy(format!(
                "the heartbeat interval ({interval:?}) must be shorter than the lease \
                 ({:?}), or the lease lapses between renewals; use a longer lease or \
                 Heartbeat::Off",
                self.lease_ttl
            )));
        }
        Ok(())
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("lease_ttl", &self.lease_ttl)
            .field("wait_timeout", &self.wait_timeout)
            .field("expires_after", &self.expires_after)
            .field("heartbeat", &self.heartbeat)
            .field("fingerprint_version", &self.fingerprint_version)
            .field("on_storage_error", &self.on_storage_error)
            .field(
                "cacheable",
                &if self.cacheable.is_some() {
                    "custom"
                } else {
                    "2xx"
                },
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_heartbeat(lease_ttl: Duration, heartbeat: Heartbeat) -> Policy {
        Policy::default()
            .with_lease_ttl(lease_ttl)
            .with_heartbeat(heartbeat)
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let policy = Policy::default();
        assert_eq!(policy.lease_ttl(), Duration::from_secs(30));
        assert_eq!(policy.wait_timeout(), Duration::from_secs(10));
        assert_eq!(policy.expires_after(), Duration::from_secs(86_400));
        assert_eq!(policy.heartbeat(), Heartbeat::Auto);
        assert_eq!(policy.fingerprint_version(), 1);
        assert_eq!(policy.on_storage_error(), OnStorageError::FailClosed);
        assert_eq!(policy.heartbeat_interval(), Some(Duration::from_secs(10)));
        assert!(policy.validate().is_ok());
    }

    #[test]
    fn only_2xx_is_cacheable_by_default() {
        let policy = Policy::default();
        for (status, expected) in [
            (199, false),
            (200, true),
            (201, true),
            (299, true),
            (300, false),
            (404, false),
            (500, false),
        ] {
            assert_eq!(
                policy.is_cacheable(&Response::new(status, "")),
                expected,
                "{status}"
            );
        }
    }

    #[test]
    fn a_cacheable_predicate_may_capture() {
        let allowed = std::collections::HashSet::from([201_u16, 409]);
        let policy = Policy::default().with_cacheable(move |r| allowed.contains(&r.status));
        assert!(policy.is_cacheable(&Response::new(409, "")));
        assert!(!policy.is_cacheable(&Response::new(200, "")));
        let cloned = policy.clone();
        assert!(cloned.is_cacheable(&Response::new(201, "")));
    }

    #[test]
    fn a_heartbeat_not_shorter_than_the_lease_is_refused_with_the_reason() {
        let lease = Duration::from_secs(3);
        for every in [lease, lease * 2] {
            let error = with_heartbeat(lease, Heartbeat::Every(every))
                .validate()
                .unwrap_err();
            assert!(matches!(error, Error::InvalidPolicy(_)));
            let text = error.to_string();
            assert!(text.contains("shorter than the lease"), "{text}");
        }
        let just_shorter = lease - Duration::from_nanos(1);
        assert!(
            with_heartbeat(lease, Heartbeat::Every(just_shorter))
                .validate()
                .is_ok()
        );
        assert!(with_heartbeat(lease, Heartbeat::Off).validate().is_ok());
        assert!(
            with_heartbeat(Duration::ZERO, Heartbeat::Off)
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn a_heartbeat_under_the_floor_is_refused_not_clamped() {
        let lease = Duration::from_secs(3);
        for every in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Heartbeat::MIN_INTERVAL - Duration::from_nanos(1),
        ] {
            let error = with_heartbeat(lease, Heartbeat::Every(every))
                .validate()
                .unwrap_err();
            assert!(error.to_string().contains("without pause"), "{error}");
        }
        assert!(
            with_heartbeat(lease, Heartbeat::Every(Heartbeat::MIN_INTERVAL))
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn auto_never_renews_faster_than_the_floor_and_refuses_leases_too_short_for_it() {
        // A 3 ns lease would give 1 ns renewals: the floor applies, and the floor is not
        // shorter than the lease, so the policy is refused.
        let tiny = with_heartbeat(Duration::from_nanos(3), Heartbeat::Auto);
        assert_eq!(tiny.heartbeat_interval(), Some(Heartbeat::MIN_INTERVAL));
        assert!(tiny.validate().is_err());
        let short = with_heartbeat(Duration::from_micros(2_400), Heartbeat::Auto);
        assert_eq!(short.heartbeat_interval(), Some(Heartbeat::MIN_INTERVAL));
        assert!(short.validate().is_ok());
        let normal = with_heartbeat(Duration::from_millis(300), Heartbeat::Auto);
        assert_eq!(
            normal.heartbeat_interval(),
            Some(Duration::from_millis(100))
        );
    }
}
