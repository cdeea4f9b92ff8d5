//! [`Policy`]: how an executor claims, waits, stores and renews.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::response::Response;

/// Which results are stored and replayed.
pub(crate) type Cacheable = dyn Fn(&Response) -> bool + Send + Sync;

/// How an executor runs operations: leases, waiting, replay lifetime, heartbeats,
/// fingerprint version, storage failures and what is worth caching.
///
/// Use [`Policy::default`], or set what differs with [`Policy::builder`], whose `build`
/// refuses settings that cannot work: a `Policy` is always valid.
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{Heartbeat, Policy, Response};
///
/// let policy = Policy::builder()
///     .lease_ttl(Duration::from_secs(5))
///     .heartbeat(Heartbeat::Every(Duration::from_secs(1)))
///     // Deterministic validation errors are worth replaying too.
///     .cacheable(|response: &Response| matches!(response.status, 200..=299 | 422))
///     .build()?;
/// assert_eq!(policy.heartbeat_interval(), Some(Duration::from_secs(1)));
/// assert!(policy.is_cacheable(&Response::new(422, "")));
/// assert!(!policy.is_cacheable(&Response::new(503, "")));
/// # Ok::<(), idemkit_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Policy {
    pub(crate) lease_ttl: Duration,
    pub(crate) wait_timeout: Duration,
    pub(crate) expires_after: Duration,
    pub(crate) heartbeat: Heartbeat,
    pub(crate) fingerprint_version: u32,
    pub(crate) on_storage_error: OnStorageError,
    /// `None`: the default, a 2xx status.
    pub(crate) cacheable: Option<Arc<Cacheable>>,
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
    /// by [`PolicyBuilder::build`](crate::PolicyBuilder::build). A renewal is a store operation (a round trip for a
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

    /// How long one run waits, in total, for another executor's in-flight run of the
    /// same key (counted from when the run first finds it in flight) before answering
    /// [`RunError::InProgress`](crate::RunError::InProgress).
    pub fn wait_timeout(&self) -> Duration {
        self.wait_timeout
    }

    /// How long a stored result is replayed.
    pub fn expires_after(&self) -> Duration {
        self.expires_after
    }

    /// Whether and how often the lease is renewed while the operation runs.
    pub fn heartbeat(&self) -> Heartbeat {
        self.heartbeat
    }

    /// The version of the scheme that builds fingerprints; a stored result is replayed
    /// only to a request with the same fingerprint and version.
    pub fn fingerprint_version(&self) -> u32 {
        self.fingerprint_version
    }

    /// What to do when the backend fails.
    pub fn on_storage_error(&self) -> OnStorageError {
        self.on_storage_error
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
        assert!(policy.to_builder().build().is_ok(), "the default is valid");
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
}
