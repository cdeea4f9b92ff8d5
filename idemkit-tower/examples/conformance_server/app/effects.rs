//! `--effects`: every handler call writes a row in the request's PostgreSQL transaction,
//! which the layer commits together with the stored response; `GET /_effects?key=K`
//! counts the committed rows of one raw key.

use http::Extensions;
use idemkit_core::Key;
use idemkit_postgres::{PostgresBackend, RunEffect, RunTransaction};
use idemkit_tower::{RunGuard, RunHook};

/// Hands each protected request its run's transaction (a request extension), and tells
/// the layer when that transaction was rolled back after the handler answered.
pub struct EffectsHook(pub PostgresBackend);

struct Guard(RunTransaction);

impl RunGuard for Guard {
    fn rolled_back(self: Box<Self>) -> bool {
        self.0.finish() == RunEffect::RolledBack
    }
}

impl RunHook for EffectsHook {
    fn before(&self, key: &Key, extensions: &mut Extensions) -> Box<dyn RunGuard> {
        let run = RunTransaction::new(&self.0, key.as_str());
        extensions.insert(run.clone());
        Box::new(Guard(run))
    }
}

/// The committed effect rows of the raw key `key`.
pub async fn committed_rows(backend: &PostgresBackend, key: &str) -> Result<i64, String> {
    sqlx::query_scalar("SELECT count(*) FROM idemkit_test_effects WHERE key = $1")
        .bind(key)
        .fetch_one(backend.pool())
        .await
        .map_err(|error| error.to_string())
}
