//! [`IdempotencyLayer`]: the tower `Layer` that wraps a service in an
//! [`IdempotencyService`].

use std::fmt;
use std::sync::Arc;

use http::request::Parts;
use idemkit_core::{AsyncIdempotency, Backend, Key};
use tower_layer::Layer;

use crate::canonical::Target;
use crate::config::{Config, Shared};
use crate::effective_key::effective_key;
use crate::key_header::{KeyHeaderError, key_in};
use crate::service::IdempotencyService;

/// A tower [`Layer`] that runs each keyed request once and replays its response to
/// every retry. See the [crate documentation](crate) for what it does.
///
/// Cloning it is cheap, and clones share their store and settings. It is made by
/// [`IdempotencyLayer::new`] or [`IdempotencyLayer::builder`] (both in `builder.rs`, so
/// that the layer does not depend on its builder).
pub struct IdempotencyLayer<B: Backend> {
    shared: Arc<Shared<B>>,
}

/// Why a request has no effective key.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// It carries no `Idempotency-Key` header.
    Missing,
    /// Its `Idempotency-Key` header is unusable.
    Invalid(KeyHeaderError),
    /// The layer's scope function found no caller identity in it.
    NoIdentity,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::Missing => f.write_str("the request has no Idempotency-Key header"),
            KeyError::Invalid(error) => error.fmt(f),
            KeyError::NoIdentity => f.write_str("the scope function found no caller identity"),
        }
    }
}

impl std::error::Error for KeyError {}

impl<B: Backend> IdempotencyLayer<B> {
    pub(crate) fn from_config(executor: AsyncIdempotency<B>, config: Config) -> Self {
        IdempotencyLayer {
            shared: Arc::new(Shared { executor, config }),
        }
    }

    /// The executor under the layer: its backend and policy.
    pub fn executor(&self) -> &AsyncIdempotency<B> {
        &self.shared.executor
    }

    /// The effective key of a request with this head: the name under which the backend
    /// stores its record (a SHA-256 of the client's key, the caller's scope, the method
    /// and the canonical path). Useful to inspect or delete a record.
    pub fn effective_key(&self, parts: &Parts) -> Result<Key, KeyError> {
        let key = key_in(&parts.headers)
            .map_err(KeyError::Invalid)?
            .ok_or(KeyError::Missing)?;
        let scope = self
            .shared
            .config
            .scope
            .of(parts)
            .ok_or(KeyError::NoIdentity)?;
        let target = Target::of(&parts.method, parts.uri.path());
        Ok(effective_key(&key, &scope, &target))
    }
}

impl<B: Backend> Clone for IdempotencyLayer<B> {
    fn clone(&self) -> Self {
        IdempotencyLayer {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<B: Backend> fmt::Debug for IdempotencyLayer<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let config = &self.shared.config;
        f.debug_struct("IdempotencyLayer")
            .field("methods", &config.methods)
            .field("require_key", &config.require_key)
            .field("scope", &config.scope)
            .field("compat", &config.compat)
            .field("policy", self.shared.executor.policy())
            .field("backend", &config.backend_name)
            .finish_non_exhaustive()
    }
}

impl<S, B: Backend> Layer<S> for IdempotencyLayer<B> {
    type Service = IdempotencyService<S, B>;

    fn layer(&self, inner: S) -> IdempotencyService<S, B> {
        IdempotencyService::new(inner, Arc::clone(&self.shared))
    }
}
