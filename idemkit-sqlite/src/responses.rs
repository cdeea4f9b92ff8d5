//! One response per stored result in this process.
//!
//! Every read of a completed row decodes its response from the file; the in-memory
//! backend instead hands every replay the one allocation it stored. For the same sharing
//! (two hundred waiters woken by one completion hold one body, not two hundred), the
//! backend remembers weakly the response of each result it stored or decoded, by key and
//! claim token, and hands out the remembered allocation when the decoded response equals
//! it. What is returned is always what the file holds: only the allocation is shared.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use idemkit_core::{ClaimToken, Response};
use parking_lot::Mutex;

/// How many results are remembered before dead entries are swept (and, if all are
/// alive, forgotten).
const CAPACITY: usize = 4_096;

type ByClaim = HashMap<(Box<str>, ClaimToken), Weak<Response>>;

/// The responses this process holds, by the key and claim that stored them.
#[derive(Debug, Default)]
pub(crate) struct SharedResponses {
    by_claim: Mutex<ByClaim>,
}

impl SharedResponses {
    /// `decoded`, the result `token`'s claim of `key` stored: as the allocation this
    /// process already holds for it if that one is equal, else as a new one (remembered).
    pub(crate) fn share(&self, key: &str, token: &ClaimToken, decoded: Response) -> Arc<Response> {
        let mut by_claim = self.by_claim.lock();
        let id = (Box::<str>::from(key), token.clone());
        match by_claim.get(&id).and_then(Weak::upgrade) {
            Some(held) if *held == decoded => held,
            _ => {
                let decoded = Arc::new(decoded);
                insert(&mut by_claim, id, &decoded);
                decoded
            }
        }
    }

    /// Remembers `response` as the result `token`'s claim of `key` stored.
    pub(crate) fn remember(&self, key: &str, token: &ClaimToken, response: &Arc<Response>) {
        insert(
            &mut self.by_claim.lock(),
            (key.into(), token.clone()),
            response,
        );
    }
}

fn insert(by_claim: &mut ByClaim, id: (Box<str>, ClaimToken), response: &Arc<Response>) {
    if by_claim.len() >= CAPACITY {
        by_claim.retain(|_, held| held.strong_count() > 0);
        if by_claim.len() >= CAPACITY {
            by_claim.clear();
        }
    }
    by_claim.insert(id, Arc::downgrade(response));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_decodes_share_one_allocation_and_others_do_not() {
        let shared = SharedResponses::default();
        let token = ClaimToken::from_bytes([1; 16]);
        let stored = Arc::new(Response::new(200, "ok"));
        shared.remember("k", &token, &stored);
        let again = shared.share("k", &token, Response::new(200, "ok"));
        assert!(Arc::ptr_eq(&again, &stored));
        let changed = shared.share("k", &token, Response::new(200, "other"));
        assert!(!Arc::ptr_eq(&changed, &stored), "what the file holds wins");
        let other_key = shared.share("j", &token, Response::new(200, "ok"));
        assert!(!Arc::ptr_eq(&other_key, &stored));
        drop((stored, again, changed, other_key));
        for n in 0..CAPACITY + 10 {
            let response = shared.share(&n.to_string(), &token, Response::new(200, "x"));
            drop(response);
        }
        assert!(shared.by_claim.lock().len() <= CAPACITY);
    }
}
