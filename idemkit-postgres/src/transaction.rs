//! An effect and its record in one transaction: [`PostgresBackend::begin`] claims the key
//! (committed, so other replicas see it in flight), hands the handler an open
//! transaction, and [`ClaimedTransaction::commit`] writes the fenced completion inside
//! it and commits it with the handler's writes.

use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{Claim, ClaimToken, Error, Response};
use sqlx::{PgConnection, Postgres, Transaction};

use crate::backend::{On, PostgresBackend};
use crate::error::sqlx_error;
use crate::runtime::Timers;

/// What [`PostgresBackend::begin`] found.
#[derive(Debug)]
pub enum Started {
    /// This caller holds the key: run the handler in the transaction, then commit.
    Run(ClaimedTransaction),
    /// Another executor holds the key ([`Claim::InFlight`]: wait for it with
    /// `wait_for_completion`, or refuse), or it already ran ([`Claim::Completed`]:
    /// replay its response if it is the same request, refuse otherwise).
    Found(Claim),
}

/// How [`ClaimedTransaction::commit`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Committed {
    /// The handler's writes and the stored response were committed together.
    Stored,
    /// The claim no longer held the key (its lease lapsed and another executor took it
    /// over): the transaction was rolled back, so neither the handler's writes nor a
    /// record of this run exist. Tell the client to retry; never report success.
    Fenced,
}

/// A claim this caller holds and an open transaction for the handler's writes.
///
/// Dropping it without [`commit`](ClaimedTransaction::commit) rolls the transaction
/// back and leaves the claim to lapse (as a crash would): the retry after the lease runs
/// once. [`abort`](ClaimedTransaction::abort) rolls back and frees the key at once.
pub struct ClaimedTransaction {
    backend: PostgresBackend,
    key: String,
    token: ClaimToken,
    reclaimed: bool,
    transaction: Transaction<'static, Postgres>,
}

impl std::fmt::Debug for ClaimedTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimedTransaction")
            .field("key", &self.key)
            .field("token", &self.token)
            .field("reclaimed", &self.reclaimed)
            .finish_non_exhaustive()
    }
}

impl PostgresBackend {
    /// Claims `key` for a request with this fingerprint, under a lease of `lease_ttl`;
    /// the claim commits at once, so other replicas see the key in flight. When this
    /// caller wins it, opens a transaction on the pool for the handler's writes.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use idemkit_core::{Claim, Response};
    /// use idemkit_postgres::{Committed, PostgresBackend, Started};
    ///
    /// # async fn demo(backend: PostgresBackend) -> Result<(), Box<dyn std::error::Error>> {
    /// match backend.begin("order-17", "fp", 1, Duration::from_secs(30)).await? {
    ///     Started::Run(mut run) => {
    ///         sqlx::query("INSERT INTO orders (key) VALUES ($1)")
    ///             .bind("order-17")
    ///             .execute(run.connection())
    ///             .await?;
    ///         match run.commit(Response::new(201, "created"), Duration::from_secs(3600)).await? {
    ///             Committed::Stored => { /* answer 201 */ }
    ///             Committed::Fenced => { /* rolled back: answer 409, retry later */ }
    ///         }
    ///     }
    ///     Started::Found(Claim::Completed(replay)) => { /* replay.response() if replay.same_request() */ }
    ///     Started::Found(_) => { /* in flight elsewhere: wait or refuse */ }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn begin(
        &self,
        key: &str,
        fingerprint: &str,
        fingerprint_version: u32,
        lease_ttl: Duration,
    ) -> Result<Started, Error> {
        let claim = self
            .inner
            .claim(
                key,
                fingerprint,
                fingerprint_version,
                lease_ttl,
                Timers::Auto,
            )
            .await?;
        let (token, reclaimed) = match claim {
            Claim::New(token) => (token, false),
            Claim::Reclaimed(token) => (token, true),
            found => return Ok(Started::Found(found)),
        };
        let begun = self
            .inner
            .timed("begin", Timers::Auto, self.inner.pool.begin())
            .await;
        match begun {
            Ok(transaction) => Ok(Started::Run(ClaimedTransaction {
                backend: self.clone(),
                key: key.to_owned(),
                token,
                reclaimed,
                transaction,
            })),
            Err(error) => {
                // No transaction, no run: free the key for the retry.
                let _ = self.inner.release(key, &token, Timers::Auto).await;
                Err(error)
            }
        }
    }
}

impl ClaimedTransaction {
    /// The key this run holds.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The claim's token.
    pub fn token(&self) -> &ClaimToken {
        &self.token
    }

    /// Whether the claim took the key over from an owner whose lease lapsed.
    pub fn reclaimed(&self) -> bool {
        self.reclaimed
    }

    /// The transaction's connection: run the handler's statements on it.
    pub fn connection(&mut self) -> &mut PgConnection {
        &mut self.transaction
    }

    /// The transaction itself.
    pub fn transaction(&mut self) -> &mut Transaction<'static, Postgres> {
        &mut self.transaction
    }

    /// Extends the lease to `lease_ttl` from now (on another connection, as the claim is
    /// committed already); `Ok(false)` when the key was taken over.
    pub async fn renew(&self, lease_ttl: Duration) -> Result<bool, Error> {
        self.backend
            .inner
            .renew(&self.key, &self.token, lease_ttl, Timers::Auto)
            .await
    }

    /// Stores `response` inside the transaction, fenced by the claim's token, and commits
    /// it with the handler's writes: [`Committed::Stored`]. When the token no longer holds
    /// the key, rolls everything back: [`Committed::Fenced`]. An error means the outcome
    /// is unknown (the connection was lost around the commit); a retry finds out.
    pub async fn commit(
        mut self,
        response: impl Into<Arc<Response>>,
        expires_after: Duration,
    ) -> Result<Committed, Error> {
        let response = response.into();
        let inner = self.backend.inner.clone();
        let held = inner
            .complete_on(
                On::Connection(&mut self.transaction),
                &self.key,
                &self.token,
                &response,
                expires_after,
                Timers::Auto,
            )
            .await?;
        if !held {
            inner
                .timed("rollback", Timers::Auto, self.transaction.rollback())
                .await?;
            return Ok(Committed::Fenced);
        }
        inner
            .timed("commit", Timers::Auto, self.transaction.commit())
            .await?;
        Ok(Committed::Stored)
    }

    /// Rolls the transaction back and releases the claim, so a retry runs at once.
    pub async fn abort(self) -> Result<bool, Error> {
        let ClaimedTransaction {
            backend,
            key,
            token,
            transaction,
            ..
        } = self;
        transaction
            .rollback()
            .await
            .map_err(sqlx_error("rollback"))?;
        backend.inner.release(&key, &token, Timers::Auto).await
    }
}
