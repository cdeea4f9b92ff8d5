//! [`RunHook`]: what a store whose handlers write in its own transactions does around
//! each protected request: hand the handler its transaction (a request extension), and
//! afterwards say whether the effect was rolled back, so the layer refuses instead of
//! answering success for an effect that does not exist.

use http::Extensions;
use idemkit_core::Key;

/// Work around each run the layer protects. Set with [`IdempotencyLayerBuilder::run_hook`](crate::IdempotencyLayerBuilder::run_hook);
/// with the `postgres` feature, `PostgresTransactions` is one.
pub trait RunHook: Send + Sync + 'static {
    /// Before the executor runs the request whose record is `key` (the effective key):
    /// put what the handler needs into the request's `extensions`, and return what the
    /// layer asks afterwards.
    fn before(&self, key: &Key, extensions: &mut Extensions) -> Box<dyn RunGuard>;
}

/// What a [`RunHook`] says once its run is over.
pub trait RunGuard: Send {
    /// Whether the handler's effect was rolled back after it answered (its completion
    /// was fenced out, or its commit failed). The layer then refuses with a
    /// `urn:idemkit:lease-lost` problem (503, `Retry-After`) whatever the handler
    /// answered: a client is never told that an effect which does not exist succeeded.
    fn rolled_back(self: Box<Self>) -> bool;
}
