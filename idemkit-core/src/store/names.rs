//! [`Names`]: a record's key and fingerprint, kept inside the record when they are short.

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
#[derive(Clone)]
pub(crate) enum Names {
    Inline {
        key_len: u8,
        len: u8,
        bytes: [u8; INLINE],
    },
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
            Names::Inline {
                key_len: key.len() as u8,
                len: len as u8,
                bytes,
            }
        } else {
            let mut names = String::with_capacity(len);
            names.push_str(key);
            names.push_str(fingerprint);
            Names::Boxed {
                key_len: key.len() as u32,
                names: names.into_boxed_str(),
            }
        }
    }

    /// The key's bytes: what lookups compare, without checking UTF-8 again.
    pub(crate) fn key_bytes(&self) -> &[u8] {
        match self {
            Names::Inline { key_len, bytes, .. } => &bytes[..usize::from(*key_len)],
            Names::Boxed { key_len, names } => &names.as_bytes()[..*key_len as usize],
        }
    }

    /// The fingerprint's bytes: what a replay compares with the claiming request's.
    pub(crate) fn fingerprint_bytes(&self) -> &[u8] {
        match self {
            Names::Inline {
                key_len,
                len,
                bytes,
            } => &bytes[usize::from(*key_len)..usize::from(*len)],
            Names::Boxed { key_len, names } => &names.as_bytes()[*key_len as usize..],
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
            Names::Boxed { key_len, names } => (names.clone(), *key_len as usize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(names: &Names) -> (String, String) {
        let (all, key_len) = names.to_boxed();
        (all[..key_len].to_owned(), all[key_len..].to_owned())
    }

    #[test]
    fn short_names_are_inline_and_long_ones_boxed_and_both_read_back() {
        for (key, fingerprint, inline) in [
            ("", "", true),
            ("u-0000000000000017", "fp", true),
            ("k", "ünïcødé-fp", true),
            ("a-key-of-exactly-21-b", "", true),
            ("a-key-of-exactly-21-b", "f", false),
            ("ké", &"f".repeat(200), false),
        ] {
            let names = Names::new(key, fingerprint);
            assert_eq!(matches!(names, Names::Inline { .. }), inline, "{key:?}");
            assert_eq!(names.key_bytes(), key.as_bytes());
            assert_eq!(split(&names), (key.to_owned(), fingerprint.to_owned()));
        }
    }

    #[test]
    fn names_take_no_more_room_than_a_boxed_str_and_its_length() {
        assert_eq!(std::mem::size_of::<Names>(), 24);
    }
}
