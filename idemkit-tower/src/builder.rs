//! [`Builder`]: every setting of the layer, in the style of tower-http's layers.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::header::HeaderName;
use http::request::Parts;
use http::{Method, StatusCode};
use idemkit_core::{
    AsyncIdempotency, Backend, ConfigError, Heartbeat, OnStorageError, Policy, PolicyBuilder,
};

use crate::compat::Compat;
use crate::event::{EventCallback, IdempotencyEvent};
use crate::fingerprint::FINGERPRINT_VERSION;
use crate::layer::{Config, IdempotencyLayer};
use crate::run_hook::RunHook;
use crate::scope::{self, Scope};
use crate::stored_headers::StoredHeaders;

/// The default cap on a protected request's body: 1 MiB.
pub const DEFAULT_MAX_REQUEST_BODY_BYTES: usize = 1024 * 1024;

/// The default cap on a stored response body: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BODY_BYTES: usize = 1024 * 1024;

/// Which statuses are stored for replay, before the rule that a 5xx never is.
type Cacheable = Arc<dyn Fn(StatusCode) -> bool + Send + Sync>;

/// Configures an [`IdempotencyLayer`]. Start from [`IdempotencyLayer::builder`].
///
/// ```
/// use std::time::Duration;
/// use http::{Method, StatusCode};
/// use idemkit_core::InMemoryBackend;
/// use idemkit_tower::{Compat, IdempotencyLayer};
///
/// let layer = IdempotencyLayer::builder(InMemoryBackend::new())
///     .methods([Method::POST, Method::PUT, Method::PATCH])
///     .require_key(true)
///     .scope(|parts| {
///         let tenant = parts.headers.get("x-tenant-id")?.to_str().ok()?;
///         Some(tenant.to_owned())
///     })
///     .wait_timeout(Duration::from_secs(5))
///     .cacheable(|status| status.is_success() || status == StatusCode::CONFLICT)
///     .compat(Compat::Stripe)
///     .build()
///     .unwrap();
/// # drop(layer);
/// ```
pub struct Builder<B: Backend> {
    backend: B,
    methods: Vec<Method>,
    require_key: bool,
    scope: Scope,
    fingerprint_headers: Vec<HeaderName>,
    max_request_body_bytes: usize,
    max_response_body_bytes: usize,
    stored_headers: StoredHeaders,
    compat: Compat,
    storage_retry_after: Duration,
    cacheable: Cacheable,
    policy: PolicyBuilder,
    on_event: Option<EventCallback>,
    backend_name: &'static str,
    run_hook: Option<Arc<dyn RunHook>>,
}

impl<B: Backend> Builder<B> {
    pub(crate) fn new(backend: B) -> Builder<B> {
        Builder {
            backend,
            methods: vec![Method::POST, Method::PATCH],
            require_key: false,
            scope: Scope::Unset,
            fingerprint_headers: Vec::new(),
            max_request_body_bytes: DEFAULT_MAX_REQUEST_BODY_BYTES,
            max_response_body_bytes: DEFAULT_MAX_RESPONSE_BODY_BYTES,
            stored_headers: StoredHeaders::default(),
            compat: Compat::Default,
            storage_retry_after: Duration::from_secs(1),
            cacheable: Arc::new(|status: StatusCode| status.is_success()),
            policy: Policy::builder(),
            on_event: None,
            backend_name: short_type_name::<B>(),
            run_hook: None,
        }
    }

    /// The methods the layer protects (default POST and PATCH). Requests with other
    /// methods pass through untouched.
    pub fn methods(mut self, methods: impl IntoIterator<Item = Method>) -> Builder<B> {
        self.methods = methods.into_iter().collect();
        self
    }

    /// Whether a protected request without an `Idempotency-Key` is refused with a 400
    /// (default `false`: it passes through, unprotected).
    pub fn require_key(mut self, required: bool) -> Builder<B> {
        self.require_key = required;
        self
    }

    /// The caller's identity (tenant, user, API key), read from the request head. It
    /// is part of the effective key, so two callers that send the same key never share
    /// a record.
    ///
    /// A request for which `scope` returns `None` or an empty string is refused with a
    /// 500 (`urn:idemkit:identity-unavailable`) rather than run in a namespace shared
    /// with other callers. For anonymous callers, return a stable stand-in of your
    /// choosing (a client address, say).
    ///
    /// Without a scope, every caller shares one namespace, and the layer warns about it
    /// once per process when it is built (through `tracing`, or on standard error when
    /// no subscriber listens).
    pub fn scope(
        mut self,
        scope: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static,
    ) -> Builder<B> {
        self.scope = Scope::Caller(Arc::new(scope));
        self
    }

    /// Declares that the service has a single caller: one namespace for everyone, and
    /// no warning about it.
    pub fn single_tenant(mut self) -> Builder<B> {
        self.scope = Scope::SingleTenant;
        self
    }

    /// Request headers that are part of the fingerprint, besides the method, path,
    /// query and body (default none). Name the headers that change what a request
    /// means (`X-Currency`, say): a retry that changes one is refused, not replayed.
    pub fn fingerprint_headers(
        mut self,
        names: impl IntoIterator<Item = HeaderName>,
    ) -> Builder<B> {
        self.fingerprint_headers = names.into_iter().collect();
        self
    }

    /// The largest request body a protected request may have (default 1 MiB). The body
    /// is read whole before the handler runs, since it is part of the fingerprint; a
    /// longer one is refused with a 413 (`urn:idemkit:request-too-large`).
    pub fn max_request_body_bytes(mut self, bytes: usize) -> Builder<B> {
        self.max_request_body_bytes = bytes;
        self
    }

    /// The largest response body stored for replay (default 1 MiB), counted as the body
    /// streams (never by `Content-Length`). A longer body is still delivered whole, marked
    /// `Idempotency-Replay-Unavailable: size-exceeded`, and not stored.
    pub fn max_response_body_bytes(mut self, bytes: usize) -> Builder<B> {
        self.max_response_body_bytes = bytes;
        self
    }

    /// Which response headers are stored and replayed (see [`StoredHeaders`]).
    pub fn stored_headers(mut self, stored: StoredHeaders) -> Builder<B> {
        self.stored_headers = stored;
        self
    }

    /// The wire dialect (default [`Compat::Default`]).
    pub fn compat(mut self, compat: Compat) -> Builder<B> {
        self.compat = compat;
        self
    }

    /// How long a claim is held without renewal (default 30 s). While the handler runs
    /// the lease is renewed (see [`heartbeat`](Builder::heartbeat)); if the process dies,
    /// another request may take the key over once the lease lapses.
    pub fn lease_ttl(mut self, lease_ttl: Duration) -> Builder<B> {
        self.policy = self.policy.lease_ttl(lease_ttl);
        self
    }

    /// How long a duplicate waits for the request in flight before it is answered 423
    /// with `Retry-After` (default 10 s).
    pub fn wait_timeout(mut self, wait_timeout: Duration) -> Builder<B> {
        self.policy = self.policy.wait_timeout(wait_timeout);
        self
    }

    /// How long a stored response is replayed (default 24 h).
    pub fn expires_after(mut self, expires_after: Duration) -> Builder<B> {
        self.policy = self.policy.expires_after(expires_after);
        self
    }

    /// Whether and how often the lease is renewed while the handler runs (default
    /// [`Heartbeat::Auto`]: every third of the lease).
    pub fn heartbeat(mut self, heartbeat: Heartbeat) -> Builder<B> {
        self.policy = self.policy.heartbeat(heartbeat);
        self
    }

    /// What to do when the store fails (default [`OnStorageError::FailClosed`]: a 503
    /// with `Retry-After`; [`OnStorageError::FailOpen`] runs the handler unprotected).
    pub fn on_storage_error(mut self, on_storage_error: OnStorageError) -> Builder<B> {
        self.policy = self.policy.on_storage_error(on_storage_error);
        self
    }

    /// The `Retry-After` of a 503 for a failed store or a lost lease (default 1 s).
    pub fn storage_retry_after(mut self, after: Duration) -> Builder<B> {
        self.storage_retry_after = after;
        self
    }

    /// Which statuses are stored for replay (default: 2xx). Whatever it says, a 5xx is
    /// never stored: a replayed transient failure would fail every retry.
    pub fn cacheable(
        mut self,
        cacheable: impl Fn(StatusCode) -> bool + Send + Sync + 'static,
    ) -> Builder<B> {
        self.cacheable = Arc::new(cacheable);
        self
    }

    /// Calls `on_event` with every decision the layer makes (the same events are logged
    /// through `tracing`, target `idemkit_tower`). It runs on the request's task: keep it
    /// short.
    pub fn on_event(
        mut self,
        on_event: impl Fn(&IdempotencyEvent) + Send + Sync + 'static,
    ) -> Builder<B> {
        self.on_event = Some(Arc::new(on_event));
        self
    }

    /// The backend's name in events (default: the backend type's name).
    pub fn backend_name(mut self, name: &'static str) -> Builder<B> {
        self.backend_name = name;
        self
    }

    /// Work done around each protected run: with the `postgres` feature,
    /// `PostgresTransactions` hands the handler the
    /// request's transaction and commits it with the stored response.
    pub fn run_hook(mut self, hook: impl RunHook) -> Builder<B> {
        self.run_hook = Some(Arc::new(hook));
        self
    }

    /// The layer. Fails when the lease settings cannot work together (a heartbeat
    /// interval that is not shorter than the lease, for instance).
    pub fn build(self) -> Result<IdempotencyLayer<B>, ConfigError> {
        let cacheable = self.cacheable;
        let policy = self
            .policy
            .fingerprint_version(FINGERPRINT_VERSION)
            .cacheable(move |response| {
                let Ok(status) = StatusCode::from_u16(response.status) else {
                    return false;
                };
                !status.is_server_error() && cacheable(status)
            });
        let executor = AsyncIdempotency::with_policy(self.backend, policy.build()?);
        if matches!(self.scope, Scope::Unset) {
            scope::warn_shared_namespace_once();
        }
        Ok(IdempotencyLayer::from_config(
            executor,
            Config {
                methods: self.methods,
                require_key: self.require_key,
                scope: self.scope,
                fingerprint_headers: self.fingerprint_headers,
                max_request_body_bytes: self.max_request_body_bytes,
                max_response_body_bytes: self.max_response_body_bytes,
                stored_headers: self.stored_headers,
                compat: self.compat,
                storage_retry_after: self.storage_retry_after,
                on_event: self.on_event,
                backend_name: self.backend_name,
                run_hook: self.run_hook,
            },
        ))
    }
}

impl<B: Backend> fmt::Debug for Builder<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("methods", &self.methods)
            .field("require_key", &self.require_key)
            .field("scope", &self.scope)
            .field("fingerprint_headers", &self.fingerprint_headers)
            .field("max_request_body_bytes", &self.max_request_body_bytes)
            .field("max_response_body_bytes", &self.max_response_body_bytes)
            .field("stored_headers", &self.stored_headers)
            .field("compat", &self.compat)
            .field("policy", &self.policy)
            .field("backend_name", &self.backend_name)
            .finish_non_exhaustive()
    }
}

/// The last segment of a type's path, without generic arguments:
/// `idemkit_core::InMemoryBackend` gives `InMemoryBackend`.
fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let without_generics = full.split('<').next().unwrap_or(full);
    without_generics
        .rsplit("::")
        .next()
        .unwrap_or(without_generics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_shortened() {
        assert_eq!(
            short_type_name::<idemkit_core::InMemoryBackend>(),
            "InMemoryBackend"
        );
        assert_eq!(short_type_name::<Vec<String>>(), "Vec");
        assert_eq!(short_type_name::<u8>(), "u8");
    }
}
