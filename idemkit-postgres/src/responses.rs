//! One allocation per stored response in this process.
//!
//! Every read of a completed row decodes the response anew; the in-memory backend instead
//! hands every replay the one stored allocation, and the executor's callers may rely on
//! that (fifty woken waiters hold one body, not fifty). So the backend remembers, weakly,
//! the response of each result it stored or decoded, by key and claim token, and a decoded
//! response equal to one still held is replaced by it. What is returned is always what
//! the database holds (decoded and compared first); only the allocation is shared.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use idemkit_core::{ClaimToken, Response};
use parking_lot::Mutex;

/// Entries kept before dead ones are swept (and, if all are alive, all forgotten).
const CAPACITY: usize = 4_096;

#[derive(Debug, Default)]
pub(crate) struct SharedResponses {
    by_claim: Mutex<HashMap<(String, ClaimToken), Weak<Response>>>,
}

impl SharedResponses {
    /// `decoded`, stored by the claim `token` of `key`: the allocation this process
    /// already holds for it if equal, else a new one (remembered).
    pub(crate) fn share(&self, key: &str, token: &ClaimToken, decoded: Response) -> Arc<Response> {
        let mut by_claim = self.by_claim.lock();
        let id = (key.to_owned(), token.clone());
        if let Some(held) = by_claim.get(&id).and_then(Weak::upgrade)
            && *held == decoded
        {
            return held;
        }
        let decoded = Arc::new(decoded);
        insert(&mut by_claim, id, &decoded);
        decoded
    }

    /// Remembers `response` as what the claim `token` of `key` stored.
    pub(crate) fn remember(&self, key: &str, token: &ClaimToken, response: &Arc<Response>) {
        insert(
            &mut self.by_claim.lock(),
            (key.to_owned(), token.clone()),
            response,
        );
    }
}

fn insert(
    by_claim: &mut HashMap<(String, ClaimToken), Weak<Response>>,
    id: (String, ClaimToken),
    response: &Arc<Response>,
) {
    if by_claim.len() >= CAPACITY {
        by_claim.retain(|_, held| held.strong_count() > 0);
        if by_claim.len() >= CAPACITY {
            by_claim.clear();
        }
    }
    by_claim.insert(id, Arc::downgrade(response));
}
