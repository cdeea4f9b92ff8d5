//! The claims a backend wrote itself (layout 3) and has not yet completed, released or
//! renewed, by token, with what each wrote.
//!
//! A completion of such a claim hands the server the completed record's parts that come
//! from the claim (`idemkit_complete_own_claim`), so that the server checks the claim and
//! dates the record, and cuts nothing out of it. A claim not found here (this backend did
//! not write it, or it was forgotten) is completed by `idemkit_complete`, which reads
//! them from the claim: the same record either way.

use std::collections::HashMap;

use idemkit_core::ClaimToken;
use parking_lot::Mutex;

use crate::claim_fields::ClaimFields;

/// How many claims are kept at most, in two generations of half as many each (see
/// [`OwnClaims`]).
const CAPACITY: usize = 4_096;

/// How many claims one generation holds.
const GENERATION: usize = CAPACITY / 2;

/// The longest fields kept (the claim's fixed fields and its fingerprint): a claim with
/// a longer fingerprint is not kept, so the map holds at most about 4 MiB of fields.
const MAX_FIELDS_LEN: usize = 1_024;

/// What one of a backend's own claims wrote: its fields after its time, and in place of
/// its time the `PX` it was sent with, which the server dates it by (its key's expiry
/// less this).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WrittenClaim {
    /// The claim's fields after its time.
    pub(crate) fields: ClaimFields,
    /// The claim's `PX`, in milliseconds.
    pub(crate) expires_ms: u64,
}

/// What a backend's own claims in flight wrote, by token.
///
/// A claim that is never completed, released or renewed here (its caller gave up on it,
/// or another backend completed it) must not stay for ever, and nothing says when one is
/// given up. So the claims are kept in two generations: a claim goes into the newer;
/// when the newer holds [`GENERATION`] claims, the older is dropped and the newer takes
/// its place. A claim is thus kept at least until [`GENERATION`] more have been kept
/// after it, and at most [`CAPACITY`] are kept. A completion whose claim was dropped
/// takes the general function, which writes the same record.
#[derive(Debug, Default)]
pub(crate) struct OwnClaims {
    generations: Mutex<Generations>,
}

#[derive(Debug, Default)]
struct Generations {
    newer: HashMap<ClaimToken, WrittenClaim>,
    older: HashMap<ClaimToken, WrittenClaim>,
}

impl OwnClaims {
    /// Keeps `written`, what the claim `token` wrote, unless its fields are longer than
    /// [`MAX_FIELDS_LEN`].
    pub(crate) fn insert(&self, token: &ClaimToken, written: WrittenClaim) {
        if written.fields.as_str().len() > MAX_FIELDS_LEN {
            return;
        }
        let mut generations = self.generations.lock();
        if generations.newer.len() >= GENERATION {
            let Generations { newer, older } = &mut *generations;
            // The older generation's map is reused for the new one (its allocation kept).
            std::mem::swap(newer, older);
            newer.clear();
        }
        generations.newer.insert(token.clone(), written);
    }

    /// What the claim `token` wrote, if it is one of this backend's own claims; forgotten
    /// here (a completion is sent once).
    pub(crate) fn take(&self, token: &ClaimToken) -> Option<WrittenClaim> {
        let mut generations = self.generations.lock();
        match generations.newer.remove(token) {
            Some(written) => Some(written),
            None => generations.older.remove(token),
        }
    }

    /// Forgets the claim `token`: released, or rewritten in another layout by a renewal.
    pub(crate) fn forget(&self, token: &ClaimToken) {
        self.take(token);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        let generations = self.generations.lock();
        generations.newer.len() + generations.older.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(n: u32) -> ClaimToken {
        ClaimToken::from_bytes(u128::from(n).to_be_bytes())
    }

    fn fields(fingerprint: &str) -> WrittenClaim {
        WrittenClaim {
            fields: ClaimFields::new(1, 2, fingerprint, 1),
            expires_ms: 3,
        }
    }

    #[test]
    fn a_claim_is_taken_once_and_forgotten_claims_are_gone() {
        let own = OwnClaims::default();
        own.insert(&token(1), fields("one"));
        own.insert(&token(2), fields("two"));
        assert_eq!(own.take(&token(1)), Some(fields("one")));
        assert_eq!(own.take(&token(1)), None, "taken once");
        own.forget(&token(2));
        assert_eq!(own.take(&token(2)), None);
        assert_eq!(own.take(&token(3)), None, "never held");
    }

    #[test]
    fn claims_never_finished_do_not_grow_it_past_its_capacity() {
        let own = OwnClaims::default();
        for n in 0..(CAPACITY as u32) * 3 + 7 {
            own.insert(&token(n), fields("fp"));
            assert!(own.len() <= CAPACITY, "{}", own.len());
        }
        let last = (CAPACITY as u32) * 3 + 6;
        assert_eq!(
            own.take(&token(last)),
            Some(fields("fp")),
            "the newest is kept"
        );
    }

    #[test]
    fn a_claim_is_kept_until_a_generation_was_written_after_it() {
        let own = OwnClaims::default();
        // One more claim than the capacity: the generations turned twice, at the claims
        // `GENERATION` and `CAPACITY`.
        let written = CAPACITY as u32 + 1;
        for n in 0..written {
            own.insert(&token(n), fields("fp"));
        }
        // Kept: every claim with at most a generation written after it.
        let kept = written - GENERATION as u32 - 1;
        for n in kept..written {
            assert_eq!(own.take(&token(n)), Some(fields("fp")), "claim {n}");
        }
        // Gone: the first generation, the one just before the kept ones among them.
        for n in [0, kept - 1] {
            assert_eq!(own.take(&token(n)), None, "claim {n}");
        }
    }

    #[test]
    fn a_claim_whose_fields_are_too_long_is_not_kept() {
        let own = OwnClaims::default();
        let longest = "f".repeat(MAX_FIELDS_LEN - fields("").fields.as_str().len());
        own.insert(&token(1), fields(&longest));
        assert_eq!(own.take(&token(1)), Some(fields(&longest)));
        own.insert(&token(2), fields(&format!("{longest}f")));
        assert_eq!(own.take(&token(2)), None);
    }
}
