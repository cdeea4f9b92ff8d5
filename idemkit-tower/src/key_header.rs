//! Reading the client's key from the `Idempotency-Key` request header.
//!
//! Clients send the key two ways: as a structured-field string (`"8e03f7"`, the form the
//! IETF draft names) or bare (`8e03f7`, what most clients do). Both name the same key.
//! The key is opaque bytes, 1 to 255 of them (bytes, not characters: a multi-byte
//! character counts for each of its bytes).

use std::borrow::Cow;
use std::fmt;

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};

/// The request header that carries the client's key. Header names are matched without
/// regard to case (`idempotency-key`, `IDEMPOTENCY-KEY`, ...).
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// The longest key accepted, in bytes (after the quotes of the structured-field form
/// are removed).
pub const MAX_KEY_BYTES: usize = 255;

/// A client's idempotency key: 1 to [`MAX_KEY_BYTES`] bytes, with the quoting of the
/// structured-field form removed.
///
/// Its `Debug` output shows the length only: the raw key is a client secret of sorts
/// (whoever knows it can read the stored response) and is never logged.
///
/// ```
/// use http::HeaderMap;
/// use idemkit_tower::IdempotencyKey;
///
/// let mut headers = HeaderMap::new();
/// headers.insert("Idempotency-Key", "\"order-8e03\"".parse().unwrap());
/// let quoted = IdempotencyKey::from_headers(&headers).unwrap().unwrap();
/// headers.insert("idempotency-key", "order-8e03".parse().unwrap());
/// let bare = IdempotencyKey::from_headers(&headers).unwrap().unwrap();
/// assert_eq!(quoted, bare);
/// assert_eq!(bare.as_bytes(), b"order-8e03");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(Box<[u8]>);

impl IdempotencyKey {
    /// The key carried by `headers`: `Ok(None)` when the header is absent, an error when
    /// it is present but unusable (sent twice, empty, too long, or badly quoted).
    pub fn from_headers(headers: &HeaderMap) -> Result<Option<IdempotencyKey>, KeyHeaderError> {
        Ok(key_in(headers)?.map(IdempotencyKey::owning))
    }

    /// Parses one header value: a structured-field string (starting with `"`) or a bare
    /// value. Surrounding spaces and tabs are ignored.
    pub fn parse(value: &[u8]) -> Result<IdempotencyKey, KeyHeaderError> {
        parse_value(value).map(IdempotencyKey::owning)
    }

    fn owning(key: Cow<'_, [u8]>) -> IdempotencyKey {
        IdempotencyKey(key.into_owned().into_boxed_slice())
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The key's length in bytes (1 to [`MAX_KEY_BYTES`]).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always `false`: an empty key is refused when parsed. Present because `len` is.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The bytes of the key carried by `headers`, as [`IdempotencyKey::from_headers`] reads
/// them, borrowed from the header unless they were quoted.
pub(crate) fn key_in(headers: &HeaderMap) -> Result<Option<Cow<'_, [u8]>>, KeyHeaderError> {
    KeyHeader::of(headers).key()
}

/// The `Idempotency-Key` header of a request, looked up once: the service tells from it
/// whether the layer protects the request, and the request's handling reads the key
/// from it (a header map lookup hashes the name, and costs more than the key's parse).
/// `V` is the value: borrowed from the request, or a cheap shared copy of it that goes
/// along with the request.
#[derive(Debug)]
pub(crate) enum KeyHeader<V> {
    /// No such header.
    Absent,
    /// One value.
    One(V),
    /// Two values or more: which one the client meant is a guess.
    Repeated,
}

impl<V> KeyHeader<V> {
    /// Whether the request carries the header at all (a key, or a header refused).
    pub(crate) fn is_present(&self) -> bool {
        !matches!(self, KeyHeader::Absent)
    }
}

impl<'a> KeyHeader<&'a HeaderValue> {
    /// The header as `headers` carry it.
    pub(crate) fn of(headers: &'a HeaderMap) -> KeyHeader<&'a HeaderValue> {
        let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
        match (values.next(), values.next()) {
            (None, _) => KeyHeader::Absent,
            (Some(value), None) => KeyHeader::One(value),
            (Some(_), Some(_)) => KeyHeader::Repeated,
        }
    }

    /// The header, with its value no longer borrowed from the request.
    pub(crate) fn cloned(self) -> KeyHeader<HeaderValue> {
        match self {
            KeyHeader::Absent => KeyHeader::Absent,
            KeyHeader::One(value) => KeyHeader::One(value.clone()),
            KeyHeader::Repeated => KeyHeader::Repeated,
        }
    }

    /// The key's bytes, borrowed from the value unless they were quoted; `Ok(None)`
    /// without the header.
    pub(crate) fn key(self) -> Result<Option<Cow<'a, [u8]>>, KeyHeaderError> {
        match self {
            KeyHeader::Absent => Ok(None),
            KeyHeader::One(value) => parse_value(value.as_bytes()).map(Some),
            KeyHeader::Repeated => Err(KeyHeaderError::Repeated),
        }
    }
}

impl KeyHeader<HeaderValue> {
    /// The header, its value borrowed from this one.
    pub(crate) fn borrowed(&self) -> KeyHeader<&HeaderValue> {
        match self {
            KeyHeader::Absent => KeyHeader::Absent,
            KeyHeader::One(value) => KeyHeader::One(value),
            KeyHeader::Repeated => KeyHeader::Repeated,
        }
    }
}

/// [`IdempotencyKey::parse`], borrowing a bare key from `value`.
fn parse_value(value: &[u8]) -> Result<Cow<'_, [u8]>, KeyHeaderError> {
    let value = trim_whitespace(value);
    let key = if value.first() == Some(&b'"') {
        Cow::Owned(unquote(value)?)
    } else {
        if value.iter().any(|&byte| is_control(byte)) {
            return Err(KeyHeaderError::ControlCharacter);
        }
        Cow::Borrowed(value)
    };
    if key.is_empty() {
        return Err(KeyHeaderError::Empty);
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(KeyHeaderError::TooLong { len: key.len() });
    }
    Ok(key)
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({} bytes)", self.0.len())
    }
}

/// Why an `Idempotency-Key` header was refused. Each one is answered with a 400.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyHeaderError {
    /// The header was sent more than once.
    Repeated,
    /// The key has no bytes (an empty value, or `""`).
    Empty,
    /// The key is longer than [`MAX_KEY_BYTES`].
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The value starts with a quote but is not a well-formed structured-field string:
    /// no closing quote, a backslash before anything but `"` or `\`, text after the
    /// closing quote, or a byte outside printable ASCII.
    BadQuoting,
    /// A bare value holds a control character (a tab, for instance).
    ControlCharacter,
}

impl fmt::Display for KeyHeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyHeaderError::Repeated => f.write_str(
                "the Idempotency-Key header was sent more than once; send exactly one key",
            ),
            KeyHeaderError::Empty => f.write_str("the Idempotency-Key header is empty"),
            KeyHeaderError::TooLong { len } => write!(
                f,
                "the Idempotency-Key is {len} bytes long; at most {MAX_KEY_BYTES} are accepted"
            ),
            KeyHeaderError::BadQuoting => f.write_str(
                "the Idempotency-Key starts with a quote but is not a valid quoted string",
            ),
            KeyHeaderError::ControlCharacter => {
                f.write_str("the Idempotency-Key holds a control character")
            }
        }
    }
}

impl std::error::Error for KeyHeaderError {}

fn trim_whitespace(mut value: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = value {
        value = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = value {
        value = rest;
    }
    value
}

fn is_control(byte: u8) -> bool {
    byte < 0x20 || byte == 0x7f
}

/// The content of a structured-field string: `"` then printable ASCII in which `"` and
/// `\` appear only escaped by a `\`, then `"`, with nothing after it.
fn unquote(value: &[u8]) -> Result<Vec<u8>, KeyHeaderError> {
    let mut key = Vec::with_capacity(value.len());
    let mut bytes = value.iter().skip(1);
    while let Some(&byte) = bytes.next() {
        match byte {
            b'\\' => match bytes.next() {
                Some(&escaped @ (b'"' | b'\\')) => key.push(escaped),
                _ => return Err(KeyHeaderError::BadQuoting),
            },
            b'"' => {
                return if bytes.next().is_none() {
                    Ok(key)
                } else {
                    Err(KeyHeaderError::BadQuoting)
                };
            }
            0x20..=0x7e => key.push(byte),
            _ => return Err(KeyHeaderError::BadQuoting),
        }
    }
    // No closing quote.
    Err(KeyHeaderError::BadQuoting)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(IDEMPOTENCY_KEY, HeaderValue::from_bytes(value).unwrap());
        }
        map
    }

    fn parse(value: &[u8]) -> Result<Vec<u8>, KeyHeaderError> {
        IdempotencyKey::parse(value).map(|key| key.as_bytes().to_vec())
    }

    #[test]
    fn absent_header_is_no_key() {
        assert_eq!(IdempotencyKey::from_headers(&HeaderMap::new()), Ok(None));
    }

    #[test]
    fn header_name_is_matched_whatever_its_case() {
        // HeaderMap lowercases names on the way in; these are the spellings clients send.
        for name in [
            "Idempotency-Key",
            "IDEMPOTENCY-KEY",
            "idempotency-key",
            "iDeMpOtEnCy-KeY",
        ] {
            let mut map = HeaderMap::new();
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_static("k1"),
            );
            let key = IdempotencyKey::from_headers(&map).unwrap().unwrap();
            assert_eq!(key.as_bytes(), b"k1", "{name}");
        }
    }

    #[test]
    fn quoted_and_bare_forms_are_the_same_key() {
        assert_eq!(parse(b"\"abc\""), parse(b"abc"));
        assert_eq!(parse(b"\"a\\\"b\""), Ok(b"a\"b".to_vec()));
        assert_eq!(parse(b"\"a\\\\b\""), Ok(b"a\\b".to_vec()));
        assert_eq!(parse(b"\"with space\""), parse(b"with space"));
        assert_eq!(parse(b"  \"k\"\t"), Ok(b"k".to_vec()));
        assert_eq!(parse(b" k "), Ok(b"k".to_vec()));
    }

    #[test]
    fn bare_values_are_opaque_bytes() {
        // Quotes inside a bare value, commas, UTF-8: all kept as sent.
        assert_eq!(parse(b"ab\"c"), Ok(b"ab\"c".to_vec()));
        assert_eq!(parse(b"a, b"), Ok(b"a, b".to_vec()));
        assert_eq!(parse("clé".as_bytes()), Ok("clé".as_bytes().to_vec()));
    }

    #[test]
    fn length_is_counted_in_bytes_from_1_to_255() {
        assert_eq!(parse(b"x"), Ok(b"x".to_vec()));
        let longest = vec![b'k'; MAX_KEY_BYTES];
        assert_eq!(parse(&longest), Ok(longest.clone()));
        let too_long = vec![b'k'; MAX_KEY_BYTES + 1];
        assert_eq!(parse(&too_long), Err(KeyHeaderError::TooLong { len: 256 }));
        // 128 two-byte characters: 128 characters, 256 bytes.
        let wide = "é".repeat(128);
        assert_eq!(
            parse(wide.as_bytes()),
            Err(KeyHeaderError::TooLong { len: 256 })
        );
        // The limit applies to the key, not to its quoted spelling.
        let mut quoted = b"\"".to_vec();
        quoted.extend(std::iter::repeat_n(b'q', MAX_KEY_BYTES));
        quoted.push(b'"');
        assert_eq!(parse(&quoted).map(|key| key.len()), Ok(MAX_KEY_BYTES));
    }

    #[test]
    fn empty_keys_are_refused() {
        assert_eq!(parse(b""), Err(KeyHeaderError::Empty));
        assert_eq!(parse(b"   "), Err(KeyHeaderError::Empty));
        assert_eq!(parse(b"\"\""), Err(KeyHeaderError::Empty));
    }

    #[test]
    fn malformed_quoting_is_refused() {
        for value in [
            &b"\"abc"[..],
            b"\"",
            b"\"a\\b\"",
            b"\"ab\"c",
            b"\"ab\"\"",
            b"\"a\\\"",
            "\"clé\"".as_bytes(),
            b"\"a\tb\"",
        ] {
            assert_eq!(
                parse(value),
                Err(KeyHeaderError::BadQuoting),
                "{}",
                String::from_utf8_lossy(value)
            );
        }
    }

    #[test]
    fn control_characters_in_bare_values_are_refused() {
        assert_eq!(parse(b"a\tb"), Err(KeyHeaderError::ControlCharacter));
    }

    #[test]
    fn a_repeated_header_is_refused() {
        assert_eq!(
            IdempotencyKey::from_headers(&headers(&[b"a", b"a"])),
            Err(KeyHeaderError::Repeated)
        );
        assert_eq!(
            IdempotencyKey::from_headers(&headers(&[b"a"]))
                .unwrap()
                .map(|key| key.len()),
            Some(1)
        );
    }

    #[test]
    fn debug_never_shows_the_key() {
        let key = IdempotencyKey::parse(b"secret-key").unwrap();
        assert_eq!(format!("{key:?}"), "IdempotencyKey(10 bytes)");
        assert!(!key.is_empty());
    }

    #[test]
    fn errors_read_as_sentences_for_the_problem_detail() {
        assert!(
            KeyHeaderError::TooLong { len: 300 }
                .to_string()
                .contains("300 bytes")
        );
        assert!(
            KeyHeaderError::Repeated
                .to_string()
                .contains("more than once")
        );
    }
}
