//! [`IdempotencyLayer`]: the tower `Layer`, and what its services share.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::Method;
use http::header::HeaderName;
use http::request::Parts;
use idemkit_core::{AsyncIdempotency, Backend, Key};
use tower_layer::Layer;

use crate::builder::Builder;
use crate::canonical::Target;
use crate::compat::Compat;
use crate::effective_key::effective_key;
use crate::event::EventCallback;
use crate::key_header::{IdempotencyKey, KeyHeaderError};
use crate::run_hook::RunHook;
use crate::scope::Scope;
use crate::service::IdempotencyService;
use crate::stored_headers::StoredHeaders;

/// A tower [`Layer`] that runs each keyed request once and replays its response to
/// every retry. See the [crate documentation](crate) for what it does.
///
/// Cloning it is cheap, and clones share their store and settings.
pub struct IdempotencyLayer<B: Backend> {
    shared: Arc<Shared<B>>,
}

/// What every service of one layer shares.
pub(crate) struct Shared<B: Backend> {
    pub(crate) executor: AsyncIdempotency<B>,
    pub(crate) config: Config,
}

/// The layer's settings, as built.
pub(crate) struct Config {
    pub(crate) methods: Vec<Method>,
    pub(crate) require_key: bool,
    pub(crate) scope: Scope,
    pub(crate) fingerprint_headers: Vec<HeaderName>,
    pub(crate) max_request_body_bytes: usize,
    pub(crate) max_response_body_bytes: usize,
    pub(crate) stored_headers: StoredHeaders,
    pub(crate) compat: Compat,
    pub(crate) storage_retry_after: Duration,
    pub(crate) on_event: Option<EventCallback>,
    pub(crate) backend_name: &'static str,
    pub(crate) run_hook: Option<Arc<dyn RunHook>>,
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
    /// A layer over `backend` with every default: POST and PATCH protected, keys
    /// optional, no scope (one namespace for all callers, and a warning about it), 1 MiB
    /// caps, a 10 s wait, a 30 s lease, 2xx stored for 24 h, failing closed.
    pub fn new(backend: B) -> IdempotencyLayer<B> {
        // The defaults form a valid policy: building cannot fail.
        Builder::new(backend)
            .build()
            .expect("the default settings are valid")
    }

    /// A builder to change the defaults.
    pub fn builder(backend: B) -> Builder<B> {
        Builder::new(backend)
    }

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
        let key = IdempotencyKey::from_headers(&parts.headers)
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
