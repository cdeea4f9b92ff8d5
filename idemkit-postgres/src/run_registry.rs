//! [`RunRegistry`]: the runs of this process whose handlers began a transaction, where
//! the completion of each run's claim finds the transaction to commit, and [`RunState`],
//! what a run's handler, its connection and that completion share.
//!
//! The registry knows nothing of the backend: the backend holds one, and a
//! [`RunTransaction`](crate::RunTransaction) registers its run in its backend's.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use idemkit_core::ClaimToken;
use parking_lot::Mutex;
use sqlx::{Postgres, Transaction};

/// A run's transaction is open, or was never begun.
pub(crate) const OPEN: u8 = 0;
/// Committed with the stored response.
pub(crate) const COMMITTED: u8 = 1;
/// Rolled back with the release of the claim.
pub(crate) const DISCARDED: u8 = 2;
/// Rolled back because the completion's fence or commit failed.
pub(crate) const ROLLED_BACK: u8 = 3;

/// What the handler, its connection and the completion share about one run.
pub(crate) struct RunState {
    /// The key the executor claims.
    pub(crate) key: String,
    /// The claim's token, once the handler began the transaction.
    pub(crate) token: Mutex<Option<ClaimToken>>,
    /// The open transaction while no handler holds it.
    pub(crate) slot: Mutex<Option<Transaction<'static, Postgres>>>,
    /// How the transaction ended: one of the constants above.
    pub(crate) state: AtomicU8,
}

impl RunState {
    /// A run of `key`, not begun.
    pub(crate) fn new(key: &str) -> RunState {
        RunState {
            key: key.to_owned(),
            token: Mutex::new(None),
            slot: Mutex::new(None),
            state: AtomicU8::new(OPEN),
        }
    }
}

/// The runs of this process whose handlers began a transaction, by key and claim token,
/// and the token each key was last claimed with here.
#[derive(Default)]
pub(crate) struct RunRegistry {
    claimed: Mutex<HashMap<String, ClaimToken>>,
    parked: Mutex<HashMap<(String, ClaimToken), Arc<RunState>>>,
    /// Whether any run was registered: until then, claims are not recorded.
    enabled: AtomicBool,
}

impl RunRegistry {
    fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// From now on, records each claim won here: a run may begin a transaction.
    pub(crate) fn enable(&self) {
        self.enabled.store(true, Ordering::Release);
    }

    /// A claim of `key` won here with `token`.
    pub(crate) fn claimed(&self, key: &str, token: &ClaimToken) {
        if self.enabled() {
            self.claimed.lock().insert(key.to_owned(), token.clone());
        }
    }

    /// The token of the claim of `key` last won here, if it is still held.
    pub(crate) fn token_of(&self, key: &str) -> Option<ClaimToken> {
        self.claimed.lock().get(key).cloned()
    }

    /// `run`, whose handler began its transaction under the claim `token` holds, until
    /// the claim's completion or release takes it.
    pub(crate) fn park(&self, token: ClaimToken, run: Arc<RunState>) {
        self.parked.lock().insert((run.key.clone(), token), run);
    }

    /// The run of `key` that `token` holds, if its handler began a transaction; the key's
    /// claim is forgotten either way (the claim ends here).
    pub(crate) fn take(&self, key: &str, token: &ClaimToken) -> Option<Arc<RunState>> {
        if !self.enabled() {
            return None;
        }
        {
            let mut claimed = self.claimed.lock();
            if claimed.get(key) == Some(token) {
                claimed.remove(key);
            }
        }
        self.parked.lock().remove(&(key.to_owned(), token.clone()))
    }
}
