//! The `postgres` feature: a handler behind the layer writes in the request's
//! transaction, and the layer commits it together with the stored response.

use http::Extensions;
use idemkit_core::Key;
use idemkit_postgres::{PostgresBackend, RunEffect, RunTransaction};

use crate::run_hook::{RunGuard, RunHook};

/// The [`RunHook`] of a [`PostgresBackend`]: every protected request gets a
/// [`RunTransaction`] as a request extension (with axum, `Extension<RunTransaction>`).
/// The handler calls [`RunTransaction::begin`] and writes through the connection it
/// gets; the layer stores the handler's response inside that transaction, fenced by the
/// claim, and commits both together. A fence that fails rolls both back and the client
/// gets a `urn:idemkit:lease-lost` problem, never the handler's success.
///
/// ```no_run
/// use axum::{Extension, Router, http::StatusCode, routing::post};
/// use idemkit_postgres::{PostgresBackend, RunTransaction};
/// use idemkit_tower::{IdempotencyLayer, PostgresTransactions};
///
/// async fn create_order(Extension(run): Extension<RunTransaction>, body: String) -> StatusCode {
///     let Ok(mut tx) = run.begin().await else { return StatusCode::SERVICE_UNAVAILABLE };
///     let inserted = sqlx::query("INSERT INTO orders (body) VALUES ($1)")
///         .bind(body)
///         .execute(&mut *tx)
///         .await;
///     if inserted.is_err() { return StatusCode::INTERNAL_SERVER_ERROR; }
///     StatusCode::CREATED // committed by the layer, with this stored response
/// }
///
/// # async fn demo(backend: PostgresBackend) {
/// let layer = IdempotencyLayer::builder(backend.clone())
///     .single_tenant()
///     .run_hook(PostgresTransactions::new(&backend))
///     .build()
///     .unwrap();
/// let app: Router = Router::new().route("/orders", post(create_order)).layer(layer);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct PostgresTransactions {
    backend: PostgresBackend,
}

impl PostgresTransactions {
    /// The hook for `backend`: the layer's backend, or one on the same table.
    pub fn new(backend: &PostgresBackend) -> PostgresTransactions {
        PostgresTransactions {
            backend: backend.clone(),
        }
    }
}

struct Guard(RunTransaction);

impl RunGuard for Guard {
    fn rolled_back(self: Box<Self>) -> bool {
        self.0.finish() == RunEffect::RolledBack
    }
}

impl RunHook for PostgresTransactions {
    fn before(&self, key: &Key, extensions: &mut Extensions) -> Box<dyn RunGuard> {
        let run = RunTransaction::new(&self.backend, key.as_str());
        extensions.insert(run.clone());
        Box::new(Guard(run))
    }
}
