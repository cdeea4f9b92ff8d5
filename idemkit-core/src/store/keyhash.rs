//! Key hashes: [`KeyHasher`] and the [`HashedKey`]s it makes, which a sharded backend
//! routes by and hands to its shard's store, and [`KeyHash`], the part a store keeps.

use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::atomic::{AtomicU32, Ordering};

/// 32 bits of a key's keyed SipHash (std's `RandomState`, so clients cannot choose
/// collisions): what places the key in the store's table.
///
/// Why 32 bits and not 64: a stored record has 4 bytes of padding, so the hash rides
/// along in it for free, and a record that expires, or a table that grows, finds its
/// place in the table without hashing the key again. A table of this store never
/// approaches 2^32 buckets, so no bit that matters is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct KeyHash(u32);

impl KeyHash {
    /// The hash 0, for placeholders that are never looked up.
    pub(crate) const ZERO: KeyHash = KeyHash(0);

    /// The hash of `key` under `hasher`'s secret keys.
    #[cfg(test)]
    pub(crate) fn of(hasher: &RandomState, key: &[u8]) -> KeyHash {
        KeyHash::routed(hasher, key).0
    }

    /// The hash of `key`, and 32 more bits of the same SipHash for picking a shard:
    /// independent of the table's bits, so every shard's table sees well-spread hashes.
    pub(crate) fn routed(hasher: &RandomState, key: &[u8]) -> (KeyHash, u32) {
        // One `write` of the bytes: `hash_one(key)` would also write a terminator byte,
        // which only matters when several fields are hashed together.
        let mut state = hasher.build_hasher();
        state.write(key);
        let full = state.finish();
        (KeyHash(full as u32), (full >> 32) as u32)
    }

    /// The 64-bit hash the table is given. hashbrown picks the bucket from the low bits
    /// and a 7-bit tag from the top ones; repeating the 32 bits in both halves gives the
    /// tag bits that are independent of the bucket's for every table below 2^25 buckets.
    pub(crate) fn table(self) -> u64 {
        let hash = u64::from(self.0);
        hash | (hash << 32)
    }
}

/// A keyed hash of idempotency keys (SipHash under secret keys, so clients cannot choose
/// collisions): how a store finds its records, and how a sharded backend picks the shard
/// of a key without hashing it twice.
///
/// Each store hashes with its own `KeyHasher` unless built with one
/// ([`StoreBuilder::key_hasher`](crate::StoreBuilder::key_hasher)). A backend that gives
/// every shard's store the same hasher hashes a key once, picks the shard from the
/// [`HashedKey`] and hands it to that store's `*_hashed` operations.
///
/// ```
/// use idemkit_core::KeyHasher;
///
/// let hasher = KeyHasher::new();
/// let key = hasher.hash("order-17");
/// assert_eq!(key.key(), "order-17");
/// assert!(key.shard(8) < 8);
/// assert_eq!(key.shard(8), hasher.hash("order-17").shard(8));
/// ```
#[derive(Clone, Debug)]
pub struct KeyHasher {
    state: RandomState,
    /// Tells this hasher's keys from another's: a store given a key hashed by another
    /// hasher hashes it again rather than look in the wrong place.
    id: u32,
}

/// Hands out hasher ids; clones share their original's id, as they hash alike.
static NEXT_ID: AtomicU32 = AtomicU32::new(0);

impl KeyHasher {
    /// A hasher with fresh secret keys.
    pub fn new() -> KeyHasher {
        KeyHasher {
            state: RandomState::new(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// `key` and its hash.
    pub fn hash<'k>(&self, key: &'k str) -> HashedKey<'k> {
        let (hash, route) = KeyHash::routed(&self.state, key.as_bytes());
        HashedKey {
            key,
            hash,
            route,
            hasher: self.id,
        }
    }

    /// Whether `key` was hashed by this hasher (or a clone of it).
    pub(crate) fn made(&self, key: &HashedKey<'_>) -> bool {
        key.hasher == self.id
    }
}

impl Default for KeyHasher {
    fn default() -> KeyHasher {
        KeyHasher::new()
    }
}

/// A key and its hash under one [`KeyHasher`]: what a store looks a key up by, hashed
/// once per operation by whoever routes the key (a store itself, or a sharded backend).
///
/// A store given a key hashed by a hasher other than its own
/// ([`Store::key_hasher`](crate::Store::key_hasher)) hashes it again, so such a key is
/// never looked up in the wrong place: it only costs the hashing it was meant to save.
#[derive(Clone, Copy, Debug)]
pub struct HashedKey<'k> {
    key: &'k str,
    pub(crate) hash: KeyHash,
    /// 32 more bits of the same SipHash for picking a shard: independent of the table's
    /// bits, so every shard's table sees well-spread hashes.
    route: u32,
    hasher: u32,
}

impl<'k> HashedKey<'k> {
    /// The key.
    pub fn key(&self) -> &'k str {
        self.key
    }

    /// Which of `shards` shards holds this key: uniform over `0..shards`, and the same
    /// for the same key and hasher. `shards` of zero counts as one.
    pub fn shard(&self, shards: usize) -> usize {
        // `route * shards / 2^32`: a uniform pick for any shard count, without a division.
        ((u64::from(self.route) * shards.max(1) as u64) >> 32) as usize
    }

    /// This key with the hash a store already keeps for it (the record the last claim
    /// wrote), so it is not hashed again.
    pub(crate) fn with_hash(key: &'k str, hash: KeyHash, hasher: &KeyHasher) -> HashedKey<'k> {
        HashedKey {
            key,
            hash,
            route: 0,
            hasher: hasher.id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_key_hashes_alike_and_different_hashers_differ() {
        let (one, other) = (RandomState::new(), RandomState::new());
        assert_eq!(
            KeyHash::of(&one, b"order-17"),
            KeyHash::of(&one, b"order-17")
        );
        // A chance collision of two 32-bit hashes is possible but rare; three in a row
        // would mean the hasher's key is not used.
        let differ = [&b"a"[..], b"b", b"c"]
            .iter()
            .any(|&key| KeyHash::of(&one, key) != KeyHash::of(&other, key));
        assert!(differ);
    }

    #[test]
    fn the_table_hash_repeats_the_32_bits_in_both_halves() {
        let hash = KeyHash(0x89ab_cdef);
        assert_eq!(hash.table(), 0x89ab_cdef_89ab_cdef);
        assert_eq!(hash.table() >> 57, 0x89ab_cdef >> 25, "the tag bits");
    }
}
