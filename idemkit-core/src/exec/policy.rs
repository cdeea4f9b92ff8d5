//! [`Policy`]: how an executor claims, waits, stores and renews.

use std::time::Duration;

use crate::error::Error;
use crate::record::Response;

/// How an executor runs operations: leases, waiting, replay lifetime, heartbeats,
/// fingerprint version, storage failures and what is worth caching.
///
/// ```
/// use std::time::Duration;
/// use idemkit_core::{Heartbeat, Policy};
///
/// let policy = Policy {
///     lease_ttl: Duration::from_secs(5),
///     heartbeat: Heartbeat::Every(Duration::from_secs(1)),
///     ..Policy::default()
/// };
/// assert!(policy.validate().is_ok());
/// assert_eq!(policy.heartbeat_interval(), Some(Duration::from_secs(1)));
/// ```
#[derive(Clone, Debug)]
pub struct Policy {
    /// How long a claim is held without renewal before another executor may take the
    /// key over. Default 30 s.
    pub lease_ttl: Duration,
    /// How long one `run` waits, in total, for another executor's in-flight run of the
    /// same key before answering [`RunError::InProgress`](crate::RunError::InProgress).
    /// Default 10 s.
    pub wait_timeout: Duration,
    /// How long a stored result is replayed. Default 24 h.
    pub expires_after: Duration,
    /// Whether and how often the lease is renewed while the operation runs. Default
    /// [`Heartbeat::Auto`].
    pub heartbeat: Heartbeat,
    /// The version of the scheme that builds fingerprints; a stored result is replayed
    /// only to a request with the same fingerprint and version. Default 1.
    pub fingerprint_version: u32,
    /// What to do when the backend fails. Default [`OnStorageError::FailClosed`].
    pub on_storage_error: OnStorageError,
    /// Which results are stored and replayed. Default: status 200 to 299, so a transient
    /// 5xx is never replayed and its retry runs again.
    pub cacheable: fn(&Response) -> bool,
}

/// Whether the executor renews the lease while the operation runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heartbeat {
    /// Renew every third of the lease, so two renewals can fail before it lapses.
    Auto,
    /// Renew at this interval, which must be shorter than the lease (and not zero).
    Every(Duration),
    /// Never renew: an operation that outlives its lease may be taken over.
    Off,
}

/// What an executor does when the backend fails (for instance a full in-memory store).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnStorageError {
    /// Refuse the request: the run returns [`RunError::Storage`](crate::RunError::Storage)
    /// and the operation does not run.
    FailClosed,
    /// Run the operation anyway, without protection against duplicates, and report
    /// [`Decision::RanUnprotected`](crate::Decision::RanUnprotected).
    FailOpen,
}

/// The default [`Policy::cacheable`]: a 2xx status.
fn is_success(response: &Response) -> bool {
    (200..=299).contains(&response.status)
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            lease_ttl: Duration::from_secs(30),
            wait_timeout: Duration::from_secs(10),
            expires_after: Duration::from_secs(24 * 60 * 60),
            heartbeat: Heartbeat::Auto,
            fingerprint_version: 1,
            on_storage_error: OnStorageError::FailClosed,
            cacheable: is_success,
        }
    }
}

impl Policy {
    /// How often the lease is renewed while an operation runs; `None` for
    /// [`Heartbeat::Off`].
    pub fn heartbeat_interval(&self) -> Option<Duration> {
        match self.heartbeat {
            Heartbeat::Auto => Some(self.lease_ttl / 3),
            Heartbeat::Every(interval) => Some(interval),
            Heartbeat::Off => None,
        }
    }

    /// Checks that the policy can work: a heartbeat must renew before the lease lapses,
    /// so its interval must be shorter than the lease, and it must not be zero (it would
    /// renew without pause). The executors' `with_policy` calls this.
    pub fn validate(&self) -> Result<(), Error> {
        let Some(interval) = self.heartbeat_interval() else {
            return Ok(());
        };
        if interval >= self.lease_ttl {
            return Err(Error::InvalidPolicy(format!(
                "the heartbeat interval ({interval:?}) must be shorter than the lease \
                 ({:?}), or the lease lapses between renewals",
                self.lease_ttl
            )));
        }
        if interval.is_zero() {
            return Err(Error::InvalidPolicy(format!(
                "the heartbeat interval is zero (lease {:?}): it would renew without pause",
                self.lease_ttl
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_heartbeat(lease_ttl: Duration, heartbeat: Heartbeat) -> Policy {
        Policy {
            lease_ttl,
            heartbeat,
            ..Policy::default()
        }
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let policy = Policy::default();
        assert_eq!(policy.lease_ttl, Duration::from_secs(30));
        assert_eq!(policy.wait_timeout, Duration::from_secs(10));
        assert_eq!(policy.expires_after, Duration::from_secs(86_400));
        assert_eq!(policy.heartbeat, Heartbeat::Auto);
        assert_eq!(policy.fingerprint_version, 1);
        assert_eq!(policy.on_storage_error, OnStorageError::FailClosed);
        assert_eq!(policy.heartbeat_interval(), Some(Duration::from_secs(10)));
        assert!(policy.validate().is_ok());
    }

    #[test]
    fn only_2xx_is_cacheable_by_default() {
        let cacheable = Policy::default().cacheable;
        for (status, expected) in [
            (199, false),
            (200, true),
            (201, true),
            (299, true),
            (300, false),
            (404, false),
            (500, false),
        ] {
            assert_eq!(cacheable(&Response::new(status, "")), expected, "{status}");
        }
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
        let zero = with_heartbeat(lease, Heartbeat::Every(Duration::ZERO));
        assert!(zero.validate().unwrap_err().to_string().contains("zero"));
        let auto_on_a_tiny_lease = with_heartbeat(Duration::from_nanos(2), Heartbeat::Auto);
        assert!(auto_on_a_tiny_lease.validate().is_err());

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
}
