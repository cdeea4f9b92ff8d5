//! One response per stored result in this process.
//!
//! Every read of a completed record decodes the response the server sends; the in-memory
//! backend instead hands every replay the one stored allocation. To give the same
//! sharing (fifty waiters woken by one completion hold one body, not fifty), the backend
//! remembers, weakly, the response of each result it stored or decoded, by claim token:
//! a decoded response equal to one still held here is replaced by it. What is returned
//! is always what the server holds (decoded and compared first); only the allocation is
//! shared.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use idemkit_core::{ClaimToken, Response};
use parking_lot::Mutex;

/// How many results are remembered before dead entries are swept (and, if all are
/// alive, forgotten).
const CAPACITY: usize = 4_096;

/// Responses by the claim that stored them, with the Redis key they were stored at.
type ByClaim = HashMap<ClaimToken, (Box<str>, Weak<Response>)>;

/// The responses this process holds, by the claim that stored them.
#[derive(Debug, Default)]
pub(crate) struct SharedResponses {
    by_claim: Mutex<ByClaim>,
}

impl SharedResponses {
    /// `decoded`, the result the claim `token` stored at `storage_key`: as the response
    /// this process already holds for it if that one is equal, else as a new one.
    pub(crate) fn share(
        &self,
        storage_key: &str,
        token: &ClaimToken,
        decoded: Response,
    ) -> Arc<Response> {
        // One lock for the look-up and the insert: two readers decoding the same result
        // at once must end up with one allocation.
        let mut by_claim = self.by_claim.lock();
        let held = by_claim
            .get(token)
            .filter(|(key, _)| **key == *storage_key)
            .and_then(|(_, response)| response.upgrade());
        match held {
            Some(held) if *held == decoded => held,
            _ => {
                let decoded = Arc::new(decoded);
                insert(&mut by_claim, storage_key, token, &decoded);
                decoded
            }
        }
    }

    /// Remembers `response` as the result the claim `token` stored at `storage_key`.
    pub(crate) fn remember(&self, storage_key: &str, token: &ClaimToken, response: &Arc<Response>) {
        insert(&mut self.by_claim.lock(), storage_key, token, response);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_claim.lock().len()
    }
}

fn insert(by_claim: &mut ByClaim, storage_key: &str, token: &ClaimToken, response: &Arc<Response>) {
    if by_claim.len() >= CAPACITY {
        by_claim.retain(|_, (_, response)| response.strong_count() > 0);
        if by_claim.len() >= CAPACITY {
            by_claim.clear();
        }
    }
    by_claim.insert(
        token.clone(),
        (storage_key.into(), Arc::downgrade(response)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(n: u8) -> ClaimToken {
        ClaimToken::from_bytes([n; 16])
    }

    #[test]
    fn equal_results_share_the_held_allocation() {
        let shared = SharedResponses::default();
        let stored = Arc::new(Response::new(200, "receipt"));
        shared.remember("k", &token(1), &stored);
        let replay = shared.share("k", &token(1), Response::new(200, "receipt"));
        assert!(Arc::ptr_eq(&replay, &stored));
    }

    #[test]
    fn what_the_server_holds_wins_over_what_is_remembered() {
        let shared = SharedResponses::default();
        let stored = Arc::new(Response::new(200, "receipt"));
        shared.remember("k", &token(1), &stored);
        let changed = shared.share("k", &token(1), Response::new(200, "changed on the server"));
        assert_eq!(changed.body, "changed on the server");
        let other_key = shared.share("other", &token(1), Response::new(200, "receipt"));
        assert!(!Arc::ptr_eq(&other_key, &stored));
    }

    #[test]
    fn dropped_responses_are_decoded_afresh_and_memory_stays_bounded() {
        let shared = SharedResponses::default();
        let first = shared.share("k", &token(1), Response::new(200, "x"));
        let address = Arc::as_ptr(&first);
        drop(first);
        let again = shared.share("k", &token(1), Response::new(200, "x"));
        assert_eq!(again.body, "x");
        let _ = address;
        let kept: Vec<_> = (0..CAPACITY + 10)
            .map(|n| {
                let key = format!("k{n}");
                let token = ClaimToken::from_bytes((n as u128).to_be_bytes());
                shared.share(&key, &token, Response::new(200, "x"))
            })
            .collect();
        assert!(shared.len() <= CAPACITY, "{}", shared.len());
        drop(kept);
    }
}
