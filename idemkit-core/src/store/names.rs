//! [`Names`]: a record's key and fingerprint, kept inside the record when they are short,
//! and as the digests they stand for when they are an executor's.

use crate::hex;

/// The most bytes of key and fingerprint kept inside the record: what fits beside the
/// two lengths and the variant's tag in the 24 bytes the boxed form takes anyway.
const INLINE: usize = 21;

/// A record's key followed by its fingerprint.
///
/// Short names (at most [`INLINE`] bytes together, such as an 18-byte key and a 2-byte
/// fingerprint) live in the record itself; longer ones in one allocation of their own.
/// A separate allocation for 20 bytes costs a 32-byte heap chunk (glibc's smallest) on
/// top of its 16-byte pointer, an allocation and a free per record, and a cache miss
/// each time an old record is purged; kept inline they cost 8 more bytes of record.
///
/// The names every executor stores under, a [`Key`](crate::Key) and a
/// [`Fingerprint`](crate::Fingerprint), are 64 lowercase hex digits each: 128 bytes of
/// text for 64 bytes of SHA-256 digests. Such names are kept as the digests, in a
/// 64-byte allocation (an 80-byte heap chunk, where the text took 144), and written out
/// again only to be compared or read.
#[derive(Clone)]
pub(crate) enum Names {
    Inline {
        key_len: u8,
        len: u8,
        bytes: [u8; INLINE],
    },
    /// The key's digest, then the fingerprint's.
    Digests(Box<[u8; 64]>),
    Boxed {
        key_len: u32,
        names: Box<str>,
    },
}

impl Names {
    /// The names of `key` and `fingerprint`. The caller checked that `key.len()` fits in
    /// a `u32`.
    pub(crate) fn new(key: &str, fingerprint: &str) -> Names {
        let len = key.len() + fingerprint.len();
        if len <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..key.len()].copy_from_slice(key.as_bytes());
            bytes[key.len()..len].copy_from_slice(fingerprint.as_bytes());
            // Both lengths are at most INLINE, so they fit in a byte.
            return Names::Inline {
                key_len: key.len() as u8,
                len: len as u8,
                bytes,
            };
        }
        if let (Some(key), Some(fingerprint)) = (
            hex::read_lower(key.as_bytes()),
            hex::read_lower(fingerprint.as_bytes()),
        ) {
            let mut digests = [0; 64];
            digests[..32].copy_from_slice(&key);
            digests[32..].copy_from_slice(&fingerprint);
            return Names::Digests(Box::new(digests));
        }
        let mut names = String::with_capacity(len);
        names.push_str(key);
        names.push_str(fingerprint);
        Names::Boxed {
            key_len: key.len() as u32,
            names: names.into_boxed_str(),
        }
    }

    /// Whether the key is `key`: what lookups ask, without checking UTF-8 again.
    pub(crate) fn key_is(&self, key: &[u8]) -> bool {
        match self {
            Names::Inline { key_len, bytes, .. } => bytes[..usize::from(*key_len)] == *key,
            Names::Digests(digests) => hex::is_lower_of(first_half(digests), key),
            Names::Boxed { key_len, names } => names.as_bytes()[..*key_len as usize] == *key,
        }
    }

    /// Whether the fingerprint is `fingerprint`: what a replay asks of the claiming
    /// request's.
    pub(crate) fn fingerprint_is(&self, fingerprint: &[u8]) -> bool {
        match self {
            Names::Inline {
                key_len,
                len,
                bytes,
            } => bytes[usize::from(*key_len)..usize::from(*len)] == *fingerprint,
            Names::Digests(digests) => hex::is_lower_of(second_half(digests), fingerprint),
            Names::Boxed { key_len, names } => {
                names.as_bytes()[*key_len as usize..] == *fingerprint
            }
        }
    }

    /// The key and the fingerprint as one string, and where the key ends: what a
    /// [`Record`](crate::Record) is built from.
    pub(crate) fn to_boxed(&self) -> (Box<str>, usize) {
        match self {
            Names::Inline {
                key_len,
                len,
                bytes,
            } => {
                let names = std::str::from_utf8(&bytes[..usize::from(*len)])
                    .expect("inline names are a key and a fingerprint, both strings");
                (names.into(), usize::from(*key_len))
            }
            Names::Digests(digests) => {
                let mut names = String::with_capacity(128);
                names.push_str(hex::write_lower(first_half(digests), &mut [0; 64]));
                names.push_str(hex::write_lower(second_half(digests), &mut [0; 64]));
                (names.into_boxed_str(), 64)
            }
            Names::Boxed { key_len, names } => (names.clone(), *key_len as usize),
        }
    }
}

fn first_half(digests: &[u8; 64]) -> &[u8; 32] {
    digests.first_chunk().expect("64 bytes hold 32")
}

fn second_half(digests: &[u8; 64]) -> &[u8; 32] {
    digests.last_chunk().expect("64 bytes hold 32")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::{Fingerprint, Key};

    fn split(names: &Names) -> (String, String) {
        let (all, key_len) = names.to_boxed();
        (all[..key_len].to_owned(), all[key_len..].to_owned())
    }

    /// Which form `names` took.
    fn form(names: &Names) -> &'static str {
        match names {
            Names::Inline { .. } => "inline",
            Names::Digests(_) => "digests",
            Names::Boxed { .. } => "boxed",
        }
    }

    /// `names` answers for `key` and `fingerprint`, and for nothing else tried, and reads
    /// back as them.
    fn assert_names(names: &Names, key: &str, fingerprint: &str) {
        assert!(names.key_is(key.as_bytes()), "{key:?}");
        assert!(
            names.fingerprint_is(fingerprint.as_bytes()),
            "{fingerprint:?}"
        );
        for other in [&b""[..], b"k", key.as_bytes(), fingerprint.as_bytes()] {
            assert_eq!(names.key_is(other), other == key.as_bytes());
            assert_eq!(names.fingerprint_is(other), other == fingerprint.as_bytes());
        }
        assert_eq!(split(names), (key.to_owned(), fingerprint.to_owned()));
    }

    #[test]
    fn each_form_is_taken_by_the_names_it_fits_and_reads_back() {
        let key = Key::new(["tenant-7", "order-17"]);
        let fingerprint = Fingerprint::new(["POST", "/orders"]);
        let (key, fingerprint) = (key.as_str(), fingerprint.as_str());
        let upper = key.to_ascii_uppercase();
        for (key, fingerprint, expected) in [
            ("", "", "inline"),
            ("u-0000000000000017", "fp", "inline"),
            ("k", "ünïcødé-fp", "inline"),
            ("a-key-of-exactly-21-b", "", "inline"),
            ("a-key-of-exactly-21-b", "f", "boxed"),
            ("ké", &"f".repeat(200), "boxed"),
            // An executor's names: both 64 lowercase hex digits.
            (key, fingerprint, "digests"),
            // Digits a digest would not be written with, or one name that is not one.
            (&upper, fingerprint, "boxed"),
            (key, "fp", "boxed"),
            ("fp", fingerprint, "boxed"),
            (&key[..62], &fingerprint[..62], "boxed"),
        ] {
            let names = Names::new(key, fingerprint);
            assert_eq!(form(&names), expected, "{key:?} {fingerprint:?}");
            assert_names(&names, key, fingerprint);
        }
    }

    #[test]
    fn digests_answer_for_their_own_text_only() {
        let (key, fingerprint) = (Key::new(["k"]), Fingerprint::new(["f"]));
        let names = Names::new(key.as_str(), fingerprint.as_str());
        // The key's digits are not the fingerprint's, nor the other way round.
        assert!(!names.key_is(fingerprint.as_str().as_bytes()));
        assert!(!names.fingerprint_is(key.as_str().as_bytes()));
        assert!(!names.key_is(key.as_str().to_ascii_uppercase().as_bytes()));
    }

    #[test]
    fn names_take_no_more_room_than_a_boxed_str_and_its_length() {
        assert_eq!(std::mem::size_of::<Names>(), 24);
    }

    /// `bytes` as the lowercase hex an executor's names are written in.
    fn hex_of(bytes: [u8; 32]) -> String {
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// A name of any form: an executor's hex digest, one with a digit changed to one a
    /// digest would not hold, or any string.
    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<[u8; 32]>().prop_map(hex_of),
            (any::<[u8; 32]>(), 0..64usize, "[g-zA-Z]").prop_map(|(bytes, at, digit)| {
                let mut text = hex_of(bytes);
                text.replace_range(at..=at, &digit);
                text
            }),
            ".{0,80}",
        ]
    }

    proptest! {
        #[test]
        fn any_names_answer_for_themselves_alone(
            key in name(),
            fingerprint in name(),
            other in name(),
        ) {
            let names = Names::new(&key, &fingerprint);
            assert_names(&names, &key, &fingerprint);
            prop_assert_eq!(names.key_is(other.as_bytes()), other == key);
            prop_assert_eq!(names.fingerprint_is(other.as_bytes()), other == fingerprint);
        }
    }
}
