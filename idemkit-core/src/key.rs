//! [`Key`] and [`Fingerprint`]: the hashed names an executor stores instead of the
//! caller's raw idempotency key and request.
//!
//! Both are the lowercase hex SHA-256 of a list of parts, each written as its byte length
//! (4 bytes, big-endian) followed by its bytes. The length prefixes make the encoding
//! injective: `["ab", "c"]` and `["a", "bc"]` hash different bytes, whatever the parts
//! hold (NUL included), so two different part lists never share an input.

use std::fmt;

use sha2::{Digest, Sha256};

/// The lowercase hex SHA-256 of `parts`, each prefixed by its length.
fn hash_parts<I, P>(parts: I) -> Box<str>
where
    I: IntoIterator<Item = P>,
    P: AsRef<[u8]>,
{
    let mut hasher = Sha256::new();
    for part in parts {
        let part = part.as_ref();
        // A length that does not fit in the 4-byte prefix would make two lists share an
        // input; refusing it keeps the encoding injective.
        let len = u32::try_from(part.len()).expect("a key or fingerprint part is under 4 GiB");
        hasher.update(len.to_be_bytes());
        hasher.update(part);
    }
    to_lower_hex(&hasher.finalize().into())
}

/// The 64 lowercase hex digits of a SHA-256 digest, written into an array first: one
/// allocation of the exact size, and no per-character capacity check.
fn to_lower_hex(digest: &[u8; 32]) -> Box<str> {
    Box::from(crate::hex::write_lower(digest, &mut [0u8; 64]))
}

/// The name under which an executor stores an operation: a hash of the caller's
/// idempotency key, never the key itself.
///
/// Build it from whatever identifies the operation, for instance the tenant and the
/// client's `Idempotency-Key` header. The raw parts are hashed at once and never kept,
/// so they cannot leak through the store, a log or an [`Event`](crate::Event).
///
/// ```
/// use idemkit_core::Key;
///
/// let key = Key::new(["tenant-7", "client-key-8c1f"]);
/// assert_eq!(key.as_str().len(), 64);
/// assert_ne!(Key::new(["ab", "c"]), Key::new(["a", "bc"]));
/// ```
///
/// # Panics
///
/// [`Key::new`] panics if a part is 4 GiB or longer (its length would not fit the
/// prefix).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Key(Box<str>);

impl Key {
    /// The key of `parts`: the lowercase hex SHA-256 of each part's 4-byte big-endian
    /// length followed by its bytes, in order.
    pub fn new<I, P>(parts: I) -> Key
    where
        I: IntoIterator<Item = P>,
        P: AsRef<[u8]>,
    {
        Key(hash_parts(parts))
    }

    /// The 64 lowercase hex digits: what the backend stores.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({})", self.0)
    }
}

/// What the request that claims a key asked for, hashed: a retry with the same key must
/// carry the same fingerprint to be replayed.
///
/// Build it from the parts of the request that matter (method, path, body, ...). A key
/// reused with another fingerprint is refused with
/// [`RunError::PayloadMismatch`](crate::RunError::PayloadMismatch), never answered with
/// another request's result. The encoding is [`Key`]'s.
///
/// ```
/// use idemkit_core::Fingerprint;
///
/// let a = Fingerprint::new(["POST", "/charges", r#"{"amount":100}"#]);
/// let b = Fingerprint::new(["POST", "/charges", r#"{"amount":900}"#]);
/// assert_ne!(a, b);
/// ```
///
/// # Panics
///
/// [`Fingerprint::new`] panics if a part is 4 GiB or longer.
#[derive(Clone, PartialEq, Eq)]
pub struct Fingerprint(Box<str>);

impl Fingerprint {
    /// The fingerprint of `parts`, encoded as for [`Key::new`].
    pub fn new<I, P>(parts: I) -> Fingerprint
    where
        I: IntoIterator<Item = P>,
        P: AsRef<[u8]>,
    {
        Fingerprint(hash_parts(parts))
    }

    /// The 64 lowercase hex digits: what the backend stores and compares.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SHA-256 of the bytes given, through sha2 directly (no length prefixes).
    fn sha256_hex(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    #[test]
    fn no_parts_hash_to_the_sha256_of_nothing() {
        let empty = Key::new([] as [&[u8]; 0]);
        assert_eq!(
            empty.as_str(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(Fingerprint::new([] as [&str; 0]).as_str(), empty.as_str());
    }

    #[test]
    fn values_match_sha256_of_hand_built_length_prefixed_bytes() {
        let mut input = Vec::new();
        input.extend_from_slice(&[0, 0, 0, 2]);
        input.extend_from_slice(b"ab");
        input.extend_from_slice(&[0, 0, 0, 1]);
        input.extend_from_slice(b"c");
        assert_eq!(Key::new(["ab", "c"]).as_str(), sha256_hex(&input));
        assert_eq!(Fingerprint::new(["ab", "c"]).as_str(), sha256_hex(&input));

        // One empty part is four zero bytes of prefix and nothing else.
        assert_eq!(Key::new([""]).as_str(), sha256_hex(&[0, 0, 0, 0]));

        // A part of 300 bytes: the prefix spans two bytes, big-endian.
        let long = vec![0x5a; 300];
        let mut input = vec![0, 0, 1, 44];
        input.extend_from_slice(&long);
        assert_eq!(Key::new([&long]).as_str(), sha256_hex(&input));
    }

    #[test]
    fn moving_a_boundary_or_a_nul_changes_the_value() {
        assert_ne!(Key::new(["ab", "c"]), Key::new(["a", "bc"]));
        assert_ne!(Key::new(["abc"]), Key::new(["ab", "c"]));
        assert_ne!(Key::new(["a\0", "b"]), Key::new(["a", "\0b"]));
        assert_ne!(Key::new(["", "a"]), Key::new(["a", ""]));
        assert_ne!(Key::new(["a"]), Key::new(["a", ""]));
        assert_eq!(Key::new(["a", "b"]), Key::new([b"a".as_slice(), b"b"]));
    }

    #[test]
    fn text_is_64_lowercase_hex_digits_in_every_form() {
        let key = Key::new(["tenant", "raw-key"]);
        let text = key.as_str();
        assert_eq!(text.len(), 64);
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_eq!(key.to_string(), text);
        assert_eq!(format!("{key:?}"), format!("Key({text})"));
        let fingerprint = Fingerprint::new(["x"]);
        assert_eq!(
            format!("{fingerprint:?}"),
            format!("Fingerprint({})", fingerprint.as_str())
        );
    }
}
