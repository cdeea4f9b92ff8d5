//! [`Body`]: a response's body, kept inline when small.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use bytes::Bytes;

/// The most bytes a [`Body`] keeps inline, without an allocation of its own.
const INLINE: usize = 22;

/// The most bytes a [`Body`] keeps in an allocation of their exact size (bytes it copied,
/// or a `Vec`'s buffer); more are kept as a shared [`Bytes`], so that [`Body::to_bytes`]
/// never copies more than this.
const EXACT: usize = 1024;

/// A response's body: up to 22 bytes kept inline, a larger one in an allocation of its
/// own or as a shared [`Bytes`].
///
/// Why not `Bytes` itself: most stored bodies are small (`ok`, an id, a short JSON
/// object), and a `Bytes` built from a caller's `Vec` keeps that `Vec`'s buffer, one
/// allocation per record held for as long as the record is. Inline, a small body costs
/// the record nothing beyond its `Response`, and the `Response` is 56 bytes (a `Bytes`
/// body made it 64), so its shared `Arc` fits the allocator's 80-byte chunk.
///
/// A larger body is kept the cheapest way it can be without copying what it was given:
///
/// - a `Bytes` is kept as it is (boxed, so the `Body` stays 24 bytes), never copied;
/// - a `Vec<u8>` (or `String`, or `Box<[u8]>`) of up to 1 KiB becomes one allocation of
///   exactly its bytes (a `Vec` with spare capacity is shrunk to its length), with no
///   `Bytes` or box around it; a larger one becomes a `Bytes` over the same buffer;
/// - [`Body::copy_from_slice`] copies up to 1 KiB into one allocation of exactly that
///   size, and a larger slice into a new `Bytes`.
///
/// Every replay shares the stored `Response`, and so the body with it, however it is kept.
///
/// A `Body` reads as a byte slice (`Deref<Target = [u8]>`) and compares with strings,
/// byte slices, `Vec`s and `Bytes` by content, however it is kept:
///
/// ```
/// use idemkit_core::{Body, Bytes, Response};
///
/// let response = Response::new(200, "ok");
/// assert_eq!(response.body, "ok");
/// assert_eq!(&response.body[..], b"ok");
///
/// let large = Bytes::from(vec![7_u8; 1024]);
/// let body = Body::from(large.clone());
/// assert_eq!(body.as_ptr(), large.as_ptr()); // shared, not copied
/// assert_eq!(Bytes::from(body), large);
/// ```
#[derive(Clone)]
pub struct Body(Repr);

#[derive(Clone)]
enum Repr {
    /// `bytes[..len]`; `len <= INLINE`.
    Inline { len: u8, bytes: [u8; INLINE] },
    /// More than `INLINE` and at most `EXACT` bytes, owned in an allocation of their size.
    Exact(Box<[u8]>),
    /// More than `INLINE` bytes (an empty or short `Bytes` is copied inline instead).
    Shared(Box<Bytes>),
}

impl Body {
    /// The empty body.
    pub const fn new() -> Body {
        Body(Repr::Inline {
            len: 0,
            bytes: [0; INLINE],
        })
    }

    /// A body of `bytes`, copied: inline if they fit, else into one allocation of their
    /// exact size (up to 1 KiB) or into a new `Bytes` (more).
    pub fn copy_from_slice(bytes: &[u8]) -> Body {
        // A copy is a `Vec` of exactly their length, kept as any such `Vec` is.
        Body::inline(bytes).unwrap_or_else(|| Body::from(bytes.to_vec()))
    }

    /// A body of `bytes` that holds no more memory than it needs: up to 1 KiB copied
    /// (inline, or into one allocation of exactly their size), more shared (a reference
    /// count, no copy).
    ///
    /// For a body to be kept long, taken from a buffer someone else made: a `Bytes` keeps
    /// its whole buffer alive, a `Vec`'s spare capacity or the larger buffer it is a
    /// slice of, which a short body kept this way does not.
    ///
    /// ```
    /// use idemkit_core::{Body, Bytes};
    ///
    /// let mut text = String::with_capacity(4096);
    /// text.push_str("a body of more than twenty-two bytes, in a buffer of 4 KiB");
    /// let bytes = Bytes::from(text);
    /// let kept = Body::compact(&bytes);
    /// assert_eq!(kept, bytes);
    /// assert_ne!(kept.as_ptr(), bytes.as_ptr()); // copied: the 4 KiB buffer can go
    ///
    /// let large = Bytes::from(vec![7_u8; 4096]);
    /// assert_eq!(Body::compact(&large).as_ptr(), large.as_ptr()); // shared
    /// ```
    pub fn compact(bytes: &Bytes) -> Body {
        if bytes.len() <= EXACT {
            Body::copy_from_slice(bytes)
        } else {
            Body::from(Bytes::clone(bytes))
        }
    }

    /// A body of `bytes` if they fit inline.
    fn inline(bytes: &[u8]) -> Option<Body> {
        let len = u8::try_from(bytes.len())
            .ok()
            .filter(|&len| usize::from(len) <= INLINE)?;
        let mut inline = [0; INLINE];
        inline[..bytes.len()].copy_from_slice(bytes);
        Some(Body(Repr::Inline { len, bytes: inline }))
    }

    /// The body as a byte slice.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Exact(exact) => exact,
            Repr::Shared(shared) => shared,
        }
    }

    /// The body as `Bytes`, for the HTTP stack: a body kept as `Bytes` is shared (a
    /// reference count, no copy), any other is copied (at most 1 KiB: see [`Body`]).
    pub fn to_bytes(&self) -> Bytes {
        match &self.0 {
            Repr::Shared(shared) => Bytes::clone(shared),
            Repr::Inline { .. } | Repr::Exact(_) => Bytes::copy_from_slice(self.as_bytes()),
        }
    }

    /// Whether the body is kept inline (no allocation of its own): bodies of at most 22
    /// bytes are.
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }
}

impl Default for Body {
    fn default() -> Body {
        Body::new()
    }
}

impl Deref for Body {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Body {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Debug for Body {
    /// As `Bytes` shows itself: `b"..."` with escapes, however the body is kept.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("b\"")?;
        for &byte in self.as_bytes() {
            match byte {
                b'\n' => f.write_str("\\n")?,
                b'\r' => f.write_str("\\r")?,
                b'\t' => f.write_str("\\t")?,
                b'\0' => f.write_str("\\0")?,
                b'\\' | b'"' => write!(f, "\\{}", char::from(byte))?,
                0x20..=0x7e => write!(f, "{}", char::from(byte))?,
                _ => write!(f, "\\x{byte:02x}")?,
            }
        }
        f.write_str("\"")
    }
}

impl From<Bytes> for Body {
    /// Keeps a body of more than 22 bytes as the `Bytes` given (no copy), and copies a
    /// smaller one inline, dropping the caller's buffer.
    fn from(bytes: Bytes) -> Body {
        Body::inline(&bytes).unwrap_or_else(|| Body(Repr::Shared(Box::new(bytes))))
    }
}

impl From<Vec<u8>> for Body {
    /// Copies a small `Vec` inline; keeps a larger one's buffer (no copy): shrunk to its
    /// length (a `realloc`, giving back any spare capacity) if it is at most 1 KiB, as a
    /// `Bytes` if it is more.
    fn from(bytes: Vec<u8>) -> Body {
        Body::inline(&bytes).unwrap_or_else(|| {
            if bytes.len() <= EXACT {
                Body(Repr::Exact(bytes.into_boxed_slice()))
            } else {
                Body(Repr::Shared(Box::new(Bytes::from(bytes))))
            }
        })
    }
}

impl From<String> for Body {
    /// As from the string's bytes.
    fn from(text: String) -> Body {
        Body::from(text.into_bytes())
    }
}

impl From<Box<[u8]>> for Body {
    /// As from a `Vec` of the same bytes (no copy unless they fit inline).
    fn from(bytes: Box<[u8]>) -> Body {
        Body::from(Vec::from(bytes))
    }
}

impl From<&'static [u8]> for Body {
    /// Small bodies inline; a larger one refers to the static bytes (no copy).
    fn from(bytes: &'static [u8]) -> Body {
        Body::inline(bytes)
            .unwrap_or_else(|| Body(Repr::Shared(Box::new(Bytes::from_static(bytes)))))
    }
}

impl From<&'static str> for Body {
    /// Small bodies inline; a larger one refers to the static text (no copy).
    fn from(text: &'static str) -> Body {
        Body::from(text.as_bytes())
    }
}

impl<const N: usize> From<&'static [u8; N]> for Body {
    /// As from the slice.
    fn from(bytes: &'static [u8; N]) -> Body {
        Body::from(&bytes[..])
    }
}

impl From<Body> for Bytes {
    /// See [`Body::to_bytes`]; a body's own allocation or `Bytes` is moved out, not
    /// copied.
    fn from(body: Body) -> Bytes {
        match body.0 {
            Repr::Inline { .. } => body.to_bytes(),
            Repr::Exact(exact) => Bytes::from(exact),
            Repr::Shared(shared) => *shared,
        }
    }
}

impl From<Body> for Vec<u8> {
    /// The body's bytes in a `Vec` of their own.
    fn from(body: Body) -> Vec<u8> {
        body.as_bytes().to_vec()
    }
}

impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Body {}

impl PartialOrd for Body {
    fn partial_cmp(&self, other: &Body) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Body {
    fn cmp(&self, other: &Body) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for Body {
    /// As the byte slice hashes, so a `Body` and its `[u8]` borrow agree.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

/// `Body == other` and `other == Body` by content, for each type a body is compared with.
macro_rules! eq_by_content {
    ($($other:ty),* $(,)?) => {$(
        impl PartialEq<$other> for Body {
            fn eq(&self, other: &$other) -> bool {
                self.as_bytes() == AsRef::<[u8]>::as_ref(other)
            }
        }

        impl PartialEq<Body> for $other {
            fn eq(&self, other: &Body) -> bool {
                AsRef::<[u8]>::as_ref(self) == other.as_bytes()
            }
        }
    )*};
}

eq_by_content!([u8], str, Vec<u8>, String, Bytes, &[u8], &str);

impl<const N: usize> PartialEq<[u8; N]> for Body {
    fn eq(&self, other: &[u8; N]) -> bool {
        self.as_bytes() == other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Body {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self.as_bytes() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_takes_24_bytes() {
        assert_eq!(std::mem::size_of::<Body>(), 24);
    }

    #[test]
    fn up_to_22_bytes_are_inline_and_more_are_shared() {
        for len in [0, 1, 21, 22] {
            let body = Body::from(vec![b'x'; len]);
            assert!(body.is_inline(), "{len} bytes");
            assert_eq!(body.len(), len);
            assert!(Body::from(Bytes::from(vec![b'x'; len])).is_inline());
        }
        let large = Bytes::from(vec![b'x'; 23]);
        let body = Body::from(large.clone());
        assert!(!body.is_inline());
        assert_eq!(body.as_ptr(), large.as_ptr());
        assert_eq!(body.to_bytes().as_ptr(), large.as_ptr());
    }

    #[test]
    fn a_large_static_body_is_referred_to_not_copied() {
        static LARGE: &str = "a static body of more than twenty-two bytes";
        assert_eq!(Body::from(LARGE).as_ptr(), LARGE.as_ptr());
        assert!(Body::from("short").is_inline());
    }

    #[test]
    fn a_large_vec_keeps_its_buffer() {
        for len in [23, 100, EXACT, EXACT + 1, 1 << 20] {
            let vec = vec![3_u8; len];
            let pointer = vec.as_ptr();
            let body = Body::from(vec);
            assert_eq!(body.as_ptr(), pointer, "{len} bytes");
            // Up to 1 KiB, the buffer is the body's own, with no `Bytes` or box around it.
            assert_eq!(
                matches!(body.0, Repr::Exact(_)),
                len <= EXACT,
                "{len} bytes"
            );
            // Moved out as `Bytes`, the buffer goes with it.
            assert_eq!(Bytes::from(body).as_ptr(), pointer, "{len} bytes");
        }
    }

    #[test]
    fn a_vec_with_spare_capacity_keeps_only_its_bytes() {
        let mut vec = Vec::with_capacity(4096);
        vec.extend_from_slice(&[5_u8; 100]);
        let body = Body::from(vec);
        let Repr::Exact(exact) = &body.0 else {
            panic!("a 100-byte Vec is kept in an allocation of its own");
        };
        // A boxed slice's allocation is exactly its length: the spare 3,996 bytes are gone.
        assert_eq!(exact.len(), 100);
        assert_eq!(body, [5_u8; 100]);
    }

    #[test]
    fn a_copied_body_is_exact_up_to_1_kib_and_shared_beyond() {
        for len in [23, EXACT] {
            let bytes = vec![9_u8; len];
            let body = Body::copy_from_slice(&bytes);
            assert!(matches!(body.0, Repr::Exact(_)), "{len} bytes");
            assert_ne!(body.as_ptr(), bytes.as_ptr());
            // Copied out for the HTTP stack, each time: at most 1 KiB.
            assert_ne!(body.to_bytes().as_ptr(), body.as_ptr());
            assert_eq!(body.to_bytes(), bytes);
        }
        let body = Body::copy_from_slice(&[9_u8; EXACT + 1]);
        assert!(matches!(body.0, Repr::Shared(_)));
        // Beyond 1 KiB, shared with the HTTP stack, never copied again.
        assert_eq!(body.to_bytes().as_ptr(), body.as_ptr());
    }

    #[test]
    fn a_compact_body_holds_none_of_a_small_bodys_buffer() {
        for len in [0, 22, 23, EXACT] {
            let mut vec = Vec::with_capacity(8192);
            vec.resize(len, b'c');
            let bytes = Bytes::from(vec);
            let body = Body::compact(&bytes);
            assert_eq!(body, bytes);
            // Copied (inline or exact), so dropping `bytes` frees the 8 KiB buffer.
            assert!(!matches!(body.0, Repr::Shared(_)), "{len} bytes");
        }
        let large = Bytes::from(vec![b'c'; EXACT + 1]);
        let body = Body::compact(&large);
        assert_eq!(body.as_ptr(), large.as_ptr());
    }

    #[test]
    fn bodies_compare_by_content_however_kept() {
        let text = "a body of more than twenty-two bytes";
        let shared = Body::from(Bytes::copy_from_slice(text.as_bytes()));
        assert_eq!(shared, Body::copy_from_slice(text.as_bytes()));
        assert_eq!(shared, text);
        assert_eq!(text, shared);
        assert_eq!(shared, text.to_owned());
        assert_eq!(shared, text.as_bytes().to_vec());
        assert_eq!(shared, Bytes::from(text));
        assert_eq!(Body::from("ok"), *b"ok");
        assert_eq!(Body::from("ok"), b"ok");
        assert_ne!(Body::from("ok"), "ko");
        assert_eq!(Body::default(), "");
    }

    #[test]
    fn debug_reads_like_bytes() {
        assert_eq!(
            format!("{:?}", Body::from(&b"o\n\0\"\xffk"[..])),
            format!("{:?}", Bytes::from_static(b"o\n\0\"\xffk"))
        );
        let large = "x".repeat(30);
        assert_eq!(
            format!("{:?}", Body::from(large.clone())),
            format!("{:?}", Bytes::from(large))
        );
    }
}
