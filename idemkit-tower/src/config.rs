//! The layer's settings as built, and what every service of one layer shares.
//!
//! They live apart from the layer and its builder so that the builder, the layer, its
//! service and the request path ([`handle`](crate::handle), [`answer`](crate::answer))
//! each read them without importing one another.

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use http::header::HeaderName;
use idemkit_core::{AsyncIdempotency, Backend};

use crate::compat::Compat;
use crate::event::EventCallback;
use crate::run_hook::RunHook;
use crate::scope::Scope;
use crate::stored_headers::StoredHeaders;

/// What every service of one layer shares: the executor and the settings.
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
    /// The backend's own name ([`Backend::name`]), read once when the layer is built.
    pub(crate) backend_name: &'static str,
    pub(crate) run_hook: Option<Arc<dyn RunHook>>,
}
