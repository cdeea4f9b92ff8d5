//! [`Response`]: the result of an operation, as stored and replayed.

use bytes::Bytes;

use crate::body::Body;

/// The result of an operation, as a store keeps it and every replay returns it.
///
/// The header values are [`Bytes`], the buffer type of the Rust HTTP stack, and the body
/// is a [`Body`]: up to 22 bytes inline, a larger body in the buffer it was built from
/// (not copied; [`Body`] says how each kind is kept). A stored response is shared (an
/// `Arc<Response>`) by the store and every replay. A `Response` is 56 bytes, so that
/// shared allocation, with its two counts, is 72 bytes and fits the allocator's 80-byte
/// chunk: with a small inline body, a stored response costs one such chunk and nothing
/// else.
///
/// ```
/// use idemkit_core::Response;
///
/// let response = Response::new(201, r#"{"id":7}"#).with_header("content-type", "application/json");
/// assert_eq!(response.status, 201);
/// assert_eq!(response.header("Content-Type"), Some(&b"application/json"[..]));
/// assert_eq!(response.body, r#"{"id":7}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Response {
    /// A status code, HTTP-style (the executor caches 2xx by default).
    pub status: u16,
    /// Header names and values, in order; a name may repeat.
    pub headers: Vec<(String, Bytes)>,
    /// The body (compares with strings and byte slices by content).
    pub body: Body,
}

impl Response {
    /// A response with this status and body and no headers.
    pub fn new(status: u16, body: impl Into<Body>) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// This response with one more header (after those it has).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<Bytes>) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The value of the first header named `name` (compared ASCII case-insensitively).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_takes_56_bytes() {
        // The status (2, padded to 8), the header Vec (24) and the body (24): an
        // `Arc<Response>` then asks for 72 bytes, which glibc serves from an 80-byte chunk.
        assert_eq!(std::mem::size_of::<Response>(), 56);
    }
}
