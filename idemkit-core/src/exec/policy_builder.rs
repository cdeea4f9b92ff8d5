//! [`PolicyBuilder`]: how a [`Policy`] is set up, and the rules that make one valid.

use std::sync::Arc;
use std::time::Duration;

use crate::error::ConfigError;
use crate::exec::policy::{Heartbeat, OnStorageError, Policy};
use crate::response::Response;

/// Sets up a [`Policy`]: start from [`Policy::builder`] (the defaults) or
/// [`Policy::to_builder`] (another policy), change what differs, and [`build`](Self::build).
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{Heartbeat, Policy};
///
/// let error = Policy::builder()
///     .lease_ttl(Duration::from_secs(1))
///     .heartbeat(Heartbeat::Every(Duration::from_secs(2)))
///     .build()
///     .unwrap_err();
/// assert_eq!(error.setting(), "heartbeat");
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct PolicyBuilder {
    policy: Policy,
}

// A policy's two ways to a builder live beside the builder, so that the policy's own
// file needs nothing from this one.
impl Policy {
    /// A builder starting from this policy, to change some of its settings.
    ///
    /// ```
    /// use std::time::Duration;
    /// use idemkit_core::Policy;
    ///
    /// let base = Policy::builder().lease_ttl(Duration::from_secs(5)).build()?;
    /// let patient = base.to_builder().wait_timeout(Duration::from_secs(60)).build()?;
    /// assert_eq!(patient.lease_ttl(), Duration::from_secs(5));
    /// assert_eq!(patient.wait_timeout(), Duration::from_secs(60));
    /// # Ok::<(), idemkit_core::ConfigError>(())
    /// ```
    pub fn to_builder(&self) -> PolicyBuilder {
        PolicyBuilder::from_policy(self.clone())
    }

    /// A builder starting from [`Policy::default`].
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder::from_policy(Policy::default())
    }
}

impl PolicyBuilder {
    pub(crate) fn from_policy(policy: Policy) -> PolicyBuilder {
        PolicyBuilder { policy }
    }

    /// How long a claim is held without renewal before another executor may take the
    /// key over (default 30 s).
    pub fn lease_ttl(mut self, lease_ttl: Duration) -> PolicyBuilder {
        self.policy.lease_ttl = lease_ttl;
        self
    }

    /// How long one run waits, in total, for another executor's in-flight run of the
    /// same key (counted from when the run first finds it in flight) before answering
    /// [`RunError::InProgress`](crate::RunError::InProgress)
    /// (default 10 s).
    pub fn wait_timeout(mut self, wait_timeout: Duration) -> PolicyBuilder {
        self.policy.wait_timeout = wait_timeout;
        self
    }

    /// How long a stored result is replayed (default 24 h).
    pub fn expires_after(mut self, expires_after: Duration) -> PolicyBuilder {
        self.policy.expires_after = expires_after;
        self
    }

    /// Whether and how often the lease is renewed while the operation runs (default
    /// [`Heartbeat::Auto`]).
    pub fn heartbeat(mut self, heartbeat: Heartbeat) -> PolicyBuilder {
        self.policy.heartbeat = heartbeat;
        self
    }

    /// The version of the scheme that builds fingerprints (default 1).
    ///
    /// A record of another version met under the same key is refused
    /// ([`RunError::PayloadMismatch`](crate::RunError)), never replayed: fingerprints of two
    /// versions cannot be compared, so the request may or may not be the one stored. When
    /// you change how fingerprints are built, put the version in the [`Key`](crate::Key)
    /// too (as `idemkit-tower` does): requests of the new version then never meet records
    /// of the old one, and a retry that spans the change runs once more instead of being
    /// refused, while the old records expire on their own.
    pub fn fingerprint_version(mut self, fingerprint_version: u32) -> PolicyBuilder {
        self.policy.fingerprint_version = fingerprint_version;
        self
    }

    /// What to do when the backend fails (default [`OnStorageError::FailClosed`]).
    pub fn on_storage_error(mut self, on_storage_error: OnStorageError) -> PolicyBuilder {
        self.policy.on_storage_error = on_storage_error;
        self
    }

    /// Stores and replays the results for which `cacheable` is true (by default, status
    /// 200 to 299, so a transient 5xx is never replayed and its retry runs again). A
    /// result that is not cacheable is returned and its claim released. The predicate
    /// may capture what it needs; if it panics, the run releases its claim, reports
    /// [`Decision::HandlerFailed`](crate::Decision::HandlerFailed) and resumes the panic.
    pub fn cacheable(
        mut self,
        cacheable: impl Fn(&Response) -> bool + Send + Sync + 'static,
    ) -> PolicyBuilder {
        self.policy.cacheable = Some(Arc::new(cacheable));
        self
    }

    /// The policy, or the setting that cannot work. The heartbeat must renew before the
    /// lease lapses, so its interval must be shorter than the lease, and it must be at
    /// least [`Heartbeat::MIN_INTERVAL`] (a shorter one is refused, not clamped: it would
    /// renew almost without pause); [`Heartbeat::Auto`] on a lease of 3 ms or less fails
    /// the second rule.
    pub fn build(self) -> Result<Policy, ConfigError> {
        let policy = self.policy;
        let Some(interval) = policy.heartbeat_interval() else {
            return Ok(policy);
        };
        if interval < Heartbeat::MIN_INTERVAL {
            return Err(ConfigError::new(
                "heartbeat",
                format!(
                    "the interval ({interval:?}) is under {:?}: it would renew almost \
                     without pause",
                    Heartbeat::MIN_INTERVAL
                ),
            ));
        }
        if interval >= policy.lease_ttl {
            return Err(ConfigError::new(
                "heartbeat",
                format!(
                    "the interval ({interval:?}) must be shorter than the lease_ttl \
                     ({:?}), or the lease lapses between renewals; use a longer lease, \
                     a shorter interval or Heartbeat::Off",
                    policy.lease_ttl
                ),
            ));
        }
        Ok(policy)
    }
}

impl Default for PolicyBuilder {
    fn default() -> PolicyBuilder {
        Policy::builder()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_heartbeat(lease_ttl: Duration, heartbeat: Heartbeat) -> Result<Policy, ConfigError> {
        Policy::builder()
            .lease_ttl(lease_ttl)
            .heartbeat(heartbeat)
            .build()
    }

    #[test]
    fn every_setter_sets_its_setting() {
        let policy = Policy::builder()
            .lease_ttl(Duration::from_secs(9))
            .wait_timeout(Duration::from_secs(8))
            .expires_after(Duration::from_secs(7))
            .heartbeat(Heartbeat::Every(Duration::from_secs(2)))
            .fingerprint_version(6)
            .on_storage_error(OnStorageError::FailOpen)
            .cacheable(|response| response.status == 404)
            .build()
            .unwrap();
        assert_eq!(policy.lease_ttl(), Duration::from_secs(9));
        assert_eq!(policy.wait_timeout(), Duration::from_secs(8));
        assert_eq!(policy.expires_after(), Duration::from_secs(7));
        assert_eq!(policy.heartbeat(), Heartbeat::Every(Duration::from_secs(2)));
        assert_eq!(policy.fingerprint_version(), 6);
        assert_eq!(policy.on_storage_error(), OnStorageError::FailOpen);
        assert!(policy.is_cacheable(&Response::new(404, "")));
        assert!(!policy.is_cacheable(&Response::new(200, "")));
        // A builder from a policy keeps every setting it does not change.
        let changed = policy.to_builder().fingerprint_version(2).build().unwrap();
        assert_eq!(changed.lease_ttl(), Duration::from_secs(9));
        assert_eq!(changed.fingerprint_version(), 2);
        assert!(changed.is_cacheable(&Response::new(404, "")));
    }

    #[test]
    fn a_cacheable_predicate_may_capture() {
        let allowed = std::collections::HashSet::from([201_u16, 409]);
        let policy = Policy::builder()
            .cacheable(move |r| allowed.contains(&r.status))
            .build()
            .unwrap();
        assert!(policy.is_cacheable(&Response::new(409, "")));
        assert!(!policy.is_cacheable(&Response::new(200, "")));
        let cloned = policy.clone();
        assert!(cloned.is_cacheable(&Response::new(201, "")));
    }

    #[test]
    fn a_heartbeat_not_shorter_than_the_lease_is_refused_with_the_reason() {
        let lease = Duration::from_secs(3);
        for every in [lease, lease * 2] {
            let error = with_heartbeat(lease, Heartbeat::Every(every)).unwrap_err();
            assert_eq!(error.setting(), "heartbeat");
            assert!(error.reason().contains("shorter than the lease"), "{error}");
        }
        let just_shorter = lease - Duration::from_nanos(1);
        assert!(with_heartbeat(lease, Heartbeat::Every(just_shorter)).is_ok());
        assert!(with_heartbeat(lease, Heartbeat::Off).is_ok());
        assert!(with_heartbeat(Duration::ZERO, Heartbeat::Off).is_ok());
    }

    #[test]
    fn a_heartbeat_under_the_floor_is_refused_not_clamped() {
        let lease = Duration::from_secs(3);
        for every in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Heartbeat::MIN_INTERVAL - Duration::from_nanos(1),
        ] {
            let error = with_heartbeat(lease, Heartbeat::Every(every)).unwrap_err();
            assert_eq!(error.setting(), "heartbeat");
            assert!(error.reason().contains("without pause"), "{error}");
        }
        assert!(with_heartbeat(lease, Heartbeat::Every(Heartbeat::MIN_INTERVAL)).is_ok());
    }

    #[test]
    fn auto_never_renews_faster_than_the_floor_and_refuses_leases_too_short_for_it() {
        // A 3 ns lease would give 1 ns renewals: the floor applies, and the floor is not
        // shorter than the lease, so the policy is refused.
        assert!(with_heartbeat(Duration::from_nanos(3), Heartbeat::Auto).is_err());
        let short = with_heartbeat(Duration::from_micros(2_400), Heartbeat::Auto).unwrap();
        assert_eq!(short.heartbeat_interval(), Some(Heartbeat::MIN_INTERVAL));
        let normal = with_heartbeat(Duration::from_millis(300), Heartbeat::Auto).unwrap();
        assert_eq!(
            normal.heartbeat_interval(),
            Some(Duration::from_millis(100))
        );
    }
}
