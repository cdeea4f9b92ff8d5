//! [`RedisError`]: why an operation on Redis failed. The backend hands it to the core
//! as a storage error, so the executor's storage-error policy decides what happens.

use std::fmt;
use std::time::Duration;

/// A Redis operation that failed: the server could not be reached, the connection was
/// lost, no reply came within the command timeout, the reply made no sense, or too few
/// replicas acknowledged a write.
///
/// Whatever the cause, the operation may or may not have taken effect on the server; a
/// claim that took effect unseen lapses with its lease.
#[derive(Debug)]
pub struct RedisError {
    operation: &'static str,
    cause: Cause,
}

#[derive(Debug)]
pub(crate) enum Cause {
    Redis(redis::RedisError),
    /// Nothing listens at the address: the system refused the connection.
    Refused(redis::RedisError),
    /// The server refused the credentials. The client library reports its `WRONGPASS`
    /// reply without the server's words; `words` are those words, when they could be had.
    Unauthorized {
        error: redis::RedisError,
        words: Option<String>,
    },
    TimedOut(Duration),
    BadReply(String),
    TooFewReplicas {
        acknowledged: i64,
        wanted: u32,
    },
    RuntimeGone,
    /// A response this backend does not store: a status that is not HTTP's.
    Unstorable(u16),
}

impl RedisError {
    pub(crate) fn new(operation: &'static str, cause: Cause) -> RedisError {
        RedisError { operation, cause }
    }

    /// The runtime the backend runs on has shut down: its connections are gone.
    pub(crate) fn runtime_gone(operation: &'static str) -> RedisError {
        RedisError::new(operation, Cause::RuntimeGone)
    }

    /// The backend operation that failed: `"claim"`, `"complete"`, `"release"`,
    /// `"renew"`, `"read"`, `"connect"`...
    pub fn operation(&self) -> &'static str {
        self.operation
    }

    /// Whether no reply came within the command timeout.
    pub fn is_timeout(&self) -> bool {
        match &self.cause {
            Cause::TimedOut(_) => true,
            Cause::Redis(error) => error.is_timeout(),
            _ => false,
        }
    }

    /// Whether the server refused the command because it is at its memory limit (its
    /// `OOM` reply under `maxmemory`): it answered, and refuses writes until memory is
    /// freed or the limit raised. Loading the backend's functions, when it connects, is
    /// such a write.
    pub fn is_out_of_memory(&self) -> bool {
        match &self.cause {
            Cause::Redis(error) => error.code() == Some("OOM"),
            _ => false,
        }
    }

    /// Whether the write is known to have been applied by the server but acknowledged
    /// by fewer replicas than asked for (see the `WAIT` option): it may be lost if the
    /// server fails over now.
    pub fn is_under_replicated(&self) -> bool {
        matches!(self.cause, Cause::TooFewReplicas { .. })
    }
}

impl fmt::Display for RedisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "redis {} failed: ", self.operation)?;
        match &self.cause {
            Cause::Redis(error) => write!(f, "{error}"),
            Cause::Refused(error) => write!(
                f,
                "connection refused: nothing listens at the URL's address ({error})"
            ),
            Cause::Unauthorized {
                words: Some(words), ..
            } => write!(
                f,
                "{words} (the server refused the username or password of the URL)"
            ),
            Cause::Unauthorized { error, words: None } => write!(
                f,
                "WRONGPASS: the server refused the username or password of the URL ({error})"
            ),
            Cause::TimedOut(limit) => write!(f, "no reply within {limit:?}"),
            Cause::BadReply(what) => write!(f, "unexpected reply: {what}"),
            Cause::RuntimeGone => f.write_str(
                "the async runtime the backend runs on has shut down, and its connections with it",
            ),
            Cause::Unstorable(status) => write!(
                f,
                "status {status} is not an HTTP status (100-999), the only ones stored"
            ),
            Cause::TooFewReplicas {
                acknowledged,
                wanted,
            } => write!(
                f,
                "applied, but acknowledged by {acknowledged} of the {wanted} replicas asked for"
            ),
        }
    }
}

impl std::error::Error for RedisError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Cause::Redis(error) | Cause::Refused(error) | Cause::Unauthorized { error, .. } => {
                Some(error)
            }
            _ => None,
        }
    }
}
