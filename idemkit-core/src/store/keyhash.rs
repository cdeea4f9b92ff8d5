//! [`KeyHash`]: the part of a key's hash the store keeps.

use std::hash::{BuildHasher, Hasher, RandomState};

/// 32 bits of a key's keyed SipHash (std's `RandomState`, so clients cannot choose
/// collisions): what places the key in the store's table.
///
/// Why 32 bits and not 64: a deadline entry (an 8-byte deadline and a 4-byte slot) has 4
/// bytes of padding, so the hash rides along in it for free, and a record that expires
/// is found in the table without hashing its key again. A table of this store never
/// approaches 2^32 buckets, so no bit that matters is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct KeyHash(u32);

impl KeyHash {
    /// The hash 0, for placeholders that are never looked up.
    pub(crate) const ZERO: KeyHash = KeyHash(0);

    /// The hash of `key` under `hasher`'s secret keys.
    pub(crate) fn of(hasher: &RandomState, key: &str) -> KeyHash {
        KeyHash::routed(hasher, key).0
    }

    /// The hash of `key`, and 32 more bits of the same SipHash for picking a shard:
    /// independent of the table's bits, so every shard's table sees well-spread hashes.
    pub(crate) fn routed(hasher: &RandomState, key: &str) -> (KeyHash, u32) {
        // One `write` of the bytes: `hash_one(key)` would also write a terminator byte,
        // which only matters when several fields are hashed together.
        let mut state = hasher.build_hasher();
        state.write(key.as_bytes());
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

/// A key and its hash under its store's hasher: what every store operation looks a key up
/// by, hashed once by whoever routes the key (the store itself, or a sharded backend).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HashedKey<'a> {
    pub(crate) key: &'a str,
    pub(crate) hash: KeyHash,
}

impl<'a> HashedKey<'a> {
    pub(crate) fn new(hasher: &RandomState, key: &'a str) -> HashedKey<'a> {
        HashedKey {
            key,
            hash: KeyHash::of(hasher, key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_key_hashes_alike_and_different_hashers_differ() {
        let (one, other) = (RandomState::new(), RandomState::new());
        assert_eq!(KeyHash::of(&one, "order-17"), KeyHash::of(&one, "order-17"));
        // A chance collision of two 32-bit hashes is possible but rare; three in a row
        // would mean the hasher's key is not used.
        let differ = ["a", "b", "c"]
            .iter()
            .any(|key| KeyHash::of(&one, key) != KeyHash::of(&other, key));
        assert!(differ);
    }

    #[test]
    fn the_table_hash_repeats_the_32_bits_in_both_halves() {
        let hash = KeyHash(0x89ab_cdef);
        assert_eq!(hash.table(), 0x89ab_cdef_89ab_cdef);
        assert_eq!(hash.table() >> 57, 0x89ab_cdef >> 25, "the tag bits");
    }
}
