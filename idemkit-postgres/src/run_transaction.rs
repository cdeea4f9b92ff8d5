//! [`RunTransaction`]: the transaction of one run behind an HTTP layer, shared by the
//! handler (which writes in it) and the backend's completion (which commits it with the
//! stored response).
//!
//! The layer creates one per request and hands it to the handler (a request extension);
//! the handler calls [`RunTransaction::begin`] for a connection inside the transaction and
//! writes; when the handler is done, the executor stores the response through the
//! backend's `complete`, which finds the parked transaction of that claim, writes the
//! fenced completion in it and commits both. A fence that fails rolls everything back,
//! and [`RunTransaction::finish`] tells the layer so, so that it refuses instead of
//! answering success for an effect that does not exist.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use idemkit_core::{ClaimToken, Error, Response};
use sqlx::{PgConnection, Postgres, Transaction};

use crate::backend::{Inner, On, PostgresBackend};
use crate::error::{Cause, storage};
use crate::run_registry::{COMMITTED, DISCARDED, OPEN, ROLLED_BACK, RunState};
use crate::runtime::Timers;

/// How a run's transaction ended, as [`RunTransaction::finish`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEffect {
    /// The handler never began the transaction: it wrote nothing through it.
    NotBegun,
    /// The handler's writes were committed together with the stored response.
    Committed,
    /// The response was not stored (not cacheable, or the run failed): the handler's
    /// writes were rolled back with the release of the claim.
    Discarded,
    /// The completion's fence failed (another executor took the key over) or the commit
    /// failed: the handler's writes were rolled back, or their fate is unknown. Never
    /// answer success for this run.
    RolledBack,
}

/// The transaction of one run of `key` behind an HTTP layer: see the module docs.
/// Cloning it is cheap; clones are the same run.
#[derive(Clone)]
pub struct RunTransaction {
    backend: PostgresBackend,
    shared: Arc<RunState>,
}

impl std::fmt::Debug for RunTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTransaction")
            .field("key", &self.shared.key)
            .field("state", &self.shared.state.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

/// The completion, for a claim whose run may hold an open transaction: inside it and
/// committed with it when there is one; otherwise on the pool.
pub(crate) async fn complete(
    inner: &Inner,
    key: &str,
    token: &ClaimToken,
    response: &Arc<Response>,
    expires_after: std::time::Duration,
    timers: Timers,
) -> Result<bool, Error> {
    let parked = inner.runs.take(key, token);
    let transaction = parked.as_ref().and_then(|run| run.slot.lock().take());
    let (Some(run), Some(mut transaction)) = (parked, transaction) else {
        return inner
            .complete_on(On::Pool, key, token, response, expires_after, timers)
            .await;
    };
    let held = inner
        .complete_on(
            On::Connection(&mut transaction),
            key,
            token,
            response,
            expires_after,
            timers,
        )
        .await;
    match held {
        Ok(true) => {}
        Ok(false) => {
            run.state.store(ROLLED_BACK, Ordering::Release);
            let _ = inner
                .timed("rollback", timers, transaction.rollback())
                .await;
            return Ok(false);
        }
        Err(error) => {
            run.state.store(ROLLED_BACK, Ordering::Release);
            return Err(error);
        }
    }
    match inner.timed("commit", timers, transaction.commit()).await {
        Ok(()) => {
            run.state.store(COMMITTED, Ordering::Release);
            Ok(true)
        }
        Err(error) => {
            run.state.store(ROLLED_BACK, Ordering::Release);
            Err(error)
        }
    }
}

/// Before a release: rolls back the run's transaction, if its handler began one.
pub(crate) fn discard(inner: &Inner, key: &str, token: &ClaimToken) {
    if let Some(run) = inner.runs.take(key, token) {
        let _ = run
            .state
            .compare_exchange(OPEN, DISCARDED, Ordering::AcqRel, Ordering::Acquire);
        drop(run.slot.lock().take());
    }
}

impl RunTransaction {
    /// A run of `key` (the key the executor claims: the layer's effective key) on
    /// `backend`, not begun yet.
    pub fn new(backend: &PostgresBackend, key: &str) -> RunTransaction {
        backend.inner.runs.enable();
        RunTransaction {
            backend: backend.clone(),
            shared: Arc::new(RunState::new(key)),
        }
    }

    /// A connection inside the run's transaction, opened on the first call. Call it from
    /// the handler, which runs while this process holds the key's claim; write through
    /// the guard, and drop it before the handler returns (it parks the transaction for
    /// the completion to commit).
    pub async fn begin(&self) -> Result<RunConnection, Error> {
        let shared = &self.shared;
        if let Some(transaction) = shared.slot.lock().take() {
            return Ok(RunConnection {
                transaction: Some(transaction),
                home: shared.clone(),
            });
        }
        let inner = &self.backend.inner;
        let token = inner.runs.token_of(&shared.key).ok_or_else(|| {
            storage(
                "begin",
                Cause::Invalid(
                    "no claim of this key is held in this process: begin a run's \
                         transaction from the handler the idempotency layer runs"
                        .into(),
                ),
            )
        })?;
        let transaction = inner
            .timed("begin", Timers::Auto, inner.pool.begin())
            .await?;
        *shared.token.lock() = Some(token.clone());
        inner.runs.park(token, shared.clone());
        Ok(RunConnection {
            transaction: Some(transaction),
            home: shared.clone(),
        })
    }

    /// Ends the run's part in the registry and says how its transaction ended. Call it
    /// once the executor has finished with the request; a transaction still open then is
    /// rolled back (and reported [`RunEffect::Discarded`]).
    pub fn finish(&self) -> RunEffect {
        let shared = &self.shared;
        let token = shared.token.lock().take();
        let Some(token) = token else {
            return match shared.state.load(Ordering::Acquire) {
                COMMITTED => RunEffect::Committed,
                ROLLED_BACK => RunEffect::RolledBack,
                DISCARDED => RunEffect::Discarded,
                _ => RunEffect::NotBegun,
            };
        };
        discard(&self.backend.inner, &shared.key, &token);
        match shared.state.load(Ordering::Acquire) {
            COMMITTED => RunEffect::Committed,
            ROLLED_BACK => RunEffect::RolledBack,
            _ => RunEffect::Discarded,
        }
    }
}

/// A connection inside a run's transaction (derefs to [`PgConnection`]); dropping it
/// parks the transaction for the completion.
pub struct RunConnection {
    transaction: Option<Transaction<'static, Postgres>>,
    home: Arc<RunState>,
}

impl Deref for RunConnection {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        self.transaction.as_ref().expect("held until drop")
    }
}

impl DerefMut for RunConnection {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.transaction.as_mut().expect("held until drop")
    }
}

impl Drop for RunConnection {
    fn drop(&mut self) {
        *self.home.slot.lock() = self.transaction.take();
    }
}

impl std::fmt::Debug for RunConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunConnection")
            .field("key", &self.home.key)
            .finish_non_exhaustive()
    }
}
