//! [`IdempotencyLayerBuilder`]: the settings of an [`IdempotencyLayer`], checked when it
//! is built; and the layer's constructors.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::header::HeaderName;
use http::request::Parts;
use http::{Method, StatusCode};
use idemkit_core::{AsyncIdempotency, Backend, ConfigError, Policy};

use crate::compat::Compat;
use crate::config::Config;
use crate::event::{EventCallback, IdempotencyEvent};
use crate::fingerprint::FINGERPRINT_VERSION;
use crate::layer::IdempotencyLayer;
use crate::run_hook::RunHook;
use crate::scope::{self, Scope};
use crate::stored_headers::StoredHeaders;

/// The default cap on a protected request's body: 1 MiB.
pub const DEFAULT_MAX_REQUEST_BODY_BYTES: usize = 1024 * 1024;

/// The default cap on a stored response body: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BODY_BYTES: usize = 1024 * 1024;

/// Configures an [`IdempotencyLayer`]. Start from [`IdempotencyLayer::builder`].
///
/// The HTTP settings are its own; how keys are claimed, waited for, renewed, kept and
/// which responses are stored come from the core's [`Policy`], set whole with
/// [`policy`](IdempotencyLayerBuilder::policy).
///
/// ```
/// use std::time::Duration;
/// use http::Method;
/// use idemkit_core::{InMemoryBackend, Policy, Response};
/// use idemkit_tower::{Compat, IdempotencyLayer};
///
/// let policy = Policy::builder()
///     .wait_timeout(Duration::from_secs(5))
///     // A 409 is an answer worth replaying too.
///     .cacheable(|response: &Response| matches!(response.status, 200..=299 | 409))
///     .build()?;
/// let layer = IdempotencyLayer::builder(InMemoryBackend::new())
///     .methods([Method::POST, Method::PUT, Method::PATCH])
///     .require_key(true)
///     .scope(|parts| {
///         let tenant = parts.headers.get("x-tenant-id")?.to_str().ok()?;
///         Some(tenant.to_owned())
///     })
///     .policy(policy)
///     .compat(Compat::Stripe)
///     .build()?;
/// # drop(layer);
/// # Ok::<(), idemkit_core::ConfigError>(())
/// ```
pub struct IdempotencyLayerBuilder<B: Backend> {
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
    policy: Policy,
    on_event: Option<EventCallback>,
    run_hook: Option<Arc<dyn RunHook>>,
}

impl<B: Backend> IdempotencyLayer<B> {
    /// A layer over `backend` with every default: POST and PATCH protected, keys
    /// optional, no scope (one namespace for all callers, and a warning about it), 1 MiB
    /// caps, and the default [`Policy`] (a 10 s wait, a 30 s lease, 2xx stored for 24 h,
    /// failing closed).
    pub fn new(backend: B) -> IdempotencyLayer<B> {
        // The defaults form a valid policy: building cannot fail.
        IdempotencyLayerBuilder::new(backend)
            .build()
            .expect("the default settings are valid")
    }

    /// A builder to change the defaults.
    pub fn builder(backend: B) -> IdempotencyLayerBuilder<B> {
        IdempotencyLayerBuilder::new(backend)
    }
}

impl<B: Backend> IdempotencyLayerBuilder<B> {
    fn new(backend: B) -> IdempotencyLayerBuilder<B> {
        IdempotencyLayerBuilder {
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
            policy: Policy::default(),
            on_event: None,
            run_hook: None,
        }
    }

    /// The methods the layer protects (default POST and PATCH). Requests with other
    /// methods pass through untouched.
    pub fn methods(
        mut self,
        methods: impl IntoIterator<Item = Method>,
    ) -> IdempotencyLayerBuilder<B> {
        self.methods = methods.into_iter().collect();
        self
    }

    /// Whether a protected request without an `Idempotency-Key` is refused with a 400
    /// (default `false`: it passes through, unprotected).
    pub fn require_key(mut self, required: bool) -> IdempotencyLayerBuilder<B> {
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
    /// choosing (a client address, say). A scope that is one request header's value is
    /// simpler with [`scope_header`](IdempotencyLayerBuilder::scope_header), which reads
    /// it without a copy.
    ///
    /// Without a scope, every caller shares one namespace, and the layer warns about it
    /// once per process when it is built (through `tracing`, or on standard error when
    /// no subscriber listens).
    pub fn scope(
        mut self,
        scope: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static,
    ) -> IdempotencyLayerBuilder<B> {
        self.scope = Scope::Caller(Arc::new(scope));
        self
    }

    /// The caller's identity is the value of request header `name`: an API key, or a
    /// tenant or user id that your authentication or a trusted proxy sets. The same
    /// scope as a [`scope`](IdempotencyLayerBuilder::scope) function that returns the
    /// header's value as text, so the records' names are the same either way, read
    /// without copying the value for each request.
    ///
    /// A request whose header is missing, empty or not text (visible ASCII) is refused
    /// as [`scope`](IdempotencyLayerBuilder::scope) refuses one without an identity, and
    /// so is one that sends the header twice: a layer in front may have checked either
    /// value, and taking the other would file one caller's records under another's name.
    /// Name a header the client cannot set for someone else: one your authentication has
    /// checked, as with any scope.
    ///
    /// ```
    /// use http::HeaderName;
    /// use idemkit_core::InMemoryBackend;
    /// use idemkit_tower::IdempotencyLayer;
    ///
    /// let layer = IdempotencyLayer::builder(InMemoryBackend::new())
    ///     .scope_header(HeaderName::from_static("x-api-key"))
    ///     .build()?;
    /// # drop(layer);
    /// # Ok::<(), idemkit_core::ConfigError>(())
    /// ```
    pub fn scope_header(mut self, name: HeaderName) -> IdempotencyLayerBuilder<B> {
        self.scope = Scope::Header(name);
        self
    }

    /// Declares that the service has a single caller: one namespace for everyone, and
    /// no warning about it.
    pub fn single_tenant(mut self) -> IdempotencyLayerBuilder<B> {
        self.scope = Scope::SingleTenant;
        self
    }

    /// Request headers that are part of the fingerprint, besides the method, path,
    /// query and body (default none). Name the headers that change what a request
    /// means (`X-Currency`, say): a retry that changes one is refused, not replayed.
    pub fn fingerprint_headers(
        mut self,
        names: impl IntoIterator<Item = HeaderName>,
    ) -> IdempotencyLayerBuilder<B> {
        self.fingerprint_headers = names.into_iter().collect();
        self
    }

    /// The largest request body a protected request may have (default 1 MiB). The body
    /// is read whole before the handler runs, since it is part of the fingerprint; a
    /// longer one is refused with a 413 (`urn:idemkit:request-too-large`).
    pub fn max_request_body_bytes(mut self, bytes: usize) -> IdempotencyLayerBuilder<B> {
        self.max_request_body_bytes = bytes;
        self
    }

    /// The largest response body stored for replay (default 1 MiB), counted as the body
    /// streams (never by `Content-Length`). A longer body is still delivered whole, marked
    /// `Idempotency-Replay-Unavailable: size-exceeded`, and not stored.
    pub fn max_response_body_bytes(mut self, bytes: usize) -> IdempotencyLayerBuilder<B> {
        self.max_response_body_bytes = bytes;
        self
    }

    /// Which response headers are stored and replayed (see [`StoredHeaders`]).
    pub fn stored_headers(mut self, stored: StoredHeaders) -> IdempotencyLayerBuilder<B> {
        self.stored_headers = stored;
        self
    }

    /// The wire dialect (default [`Compat::Default`]).
    pub fn compat(mut self, compat: Compat) -> IdempotencyLayerBuilder<B> {
        self.compat = compat;
        self
    }

    /// How keys are claimed and kept (default [`Policy::default`]): the lease and its
    /// heartbeat, how long a duplicate waits for the request in flight before it is
    /// answered 423 with `Retry-After`, how long a stored response is replayed, what a
    /// failing store means ([`OnStorageError`](idemkit_core::OnStorageError): a 503, or
    /// the handler run unprotected) and which responses are stored.
    ///
    /// Two of its settings are the layer's own: a 5xx response is never stored, whatever
    /// the policy's `cacheable` says (a replayed transient failure would fail every
    /// retry), and the fingerprint version is the layer's
    /// ([`IdempotencyEvent::fingerprint_version`]), since the layer computes the
    /// fingerprints.
    pub fn policy(mut self, policy: Policy) -> IdempotencyLayerBuilder<B> {
        self.policy = policy;
        self
    }

    /// The `Retry-After` of a 503 for a failed store or a lost lease (default 1 s).
    pub fn storage_retry_after(mut self, after: Duration) -> IdempotencyLayerBuilder<B> {
        self.storage_retry_after = after;
        self
    }

    /// Calls `on_event` with every decision the layer makes (the same events are logged
    /// through `tracing`, target `idemkit_tower`). It runs on the request's task: keep it
    /// short.
    pub fn on_event(
        mut self,
        on_event: impl Fn(&IdempotencyEvent) + Send + Sync + 'static,
    ) -> IdempotencyLayerBuilder<B> {
        self.on_event = Some(Arc::new(on_event));
        self
    }

    /// Work done around each protected run: with the `postgres` feature,
    /// `PostgresTransactions` hands the handler the
    /// request's transaction and commits it with the stored response.
    pub fn run_hook(mut self, hook: impl RunHook) -> IdempotencyLayerBuilder<B> {
        self.run_hook = Some(Arc::new(hook));
        self
    }

    /// The layer. Fails with a [`ConfigError`] naming the setting when one cannot work:
    /// no method to protect (setting `methods`). A policy that cannot work never gets
    /// here: [`PolicyBuilder::build`](idemkit_core::PolicyBuilder::build) refuses it.
    pub fn build(self) -> Result<IdempotencyLayer<B>, ConfigError> {
        if self.methods.is_empty() {
            return Err(ConfigError::new(
                "methods",
                "no method is protected, so the layer would do nothing; name at least one \
                 (POST and PATCH by default)",
            ));
        }
        // The user's predicate, behind the layer's rule that a 5xx is never stored.
        let chosen = self.policy.clone();
        let policy = self
            .policy
            .to_builder()
            .fingerprint_version(FINGERPRINT_VERSION)
            .cacheable(move |response| {
                let Ok(status) = StatusCode::from_u16(response.status) else {
                    return false;
                };
                !status.is_server_error() && chosen.is_cacheable(response)
            })
            .build()
            // Validity depends on the lease and heartbeat only, which stay the valid
            // policy's: another fingerprint version and predicate cannot break it.
            .expect("a valid policy with another version and predicate is valid");
        let backend_name = self.backend.name();
        let executor = AsyncIdempotency::with_policy(self.backend, policy);
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
                backend_name,
                run_hook: self.run_hook,
            },
        ))
    }
}

impl<B: Backend> fmt::Debug for IdempotencyLayerBuilder<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdempotencyLayerBuilder")
            .field("methods", &self.methods)
            .field("require_key", &self.require_key)
            .field("scope", &self.scope)
            .field("fingerprint_headers", &self.fingerprint_headers)
            .field("max_request_body_bytes", &self.max_request_body_bytes)
            .field("max_response_body_bytes", &self.max_response_body_bytes)
            .field("stored_headers", &self.stored_headers)
            .field("compat", &self.compat)
            .field("policy", &self.policy)
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}
