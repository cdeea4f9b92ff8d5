//! The request fingerprint: what a retry must repeat to be answered with the stored
//! response. A key reused with another fingerprint is refused, never replayed.

use http::HeaderMap;
use http::header::{CONTENT_TYPE, HeaderName};
use http::request::Parts;
use idemkit_core::Fingerprint;

use crate::canonical::{Target, canonical_body, canonical_query};

/// The version of the fingerprint algorithm below, stored with every record: a record
/// written under another version is never compared with this one.
pub(crate) const FINGERPRINT_VERSION: u32 = 1;

/// The fingerprint of a request: the length-prefixed SHA-256 of its method (uppercase),
/// canonical path, canonical query and canonical body, in that order, then for each of
/// `named_headers` in the order given, its name, its number of values (4 bytes,
/// big-endian) and each value.
pub(crate) fn request_fingerprint(
    target: &Target<'_>,
    parts: &Parts,
    body: &[u8],
    named_headers: &[HeaderName],
) -> Fingerprint {
    let (method, path) = (&target.method, &target.path);
    let query = canonical_query(parts.uri.query().unwrap_or(""));
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .map(|value| value.as_bytes());
    let body = canonical_body(content_type, body);
    let mut fields: Vec<&[u8]> = vec![method.as_bytes(), path.as_bytes(), &query, &body];
    let counts = header_counts(&parts.headers, named_headers);
    for (name, count) in named_headers.iter().zip(&counts) {
        fields.push(name.as_str().as_bytes());
        fields.push(count.as_slice());
        fields.extend(
            parts
                .headers
                .get_all(name)
                .iter()
                .map(|value| value.as_bytes()),
        );
    }
    Fingerprint::new(fields)
}

fn header_counts(headers: &HeaderMap, names: &[HeaderName]) -> Vec<[u8; 4]> {
    names
        .iter()
        .map(|name| {
            let count = headers.get_all(name).iter().count();
            u32::try_from(count).unwrap_or(u32::MAX).to_be_bytes()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{Method, Request};

    /// The fingerprint of a request with this head.
    fn request_fingerprint(parts: &Parts, body: &[u8], named: &[HeaderName]) -> Fingerprint {
        let target = Target::of(&parts.method, parts.uri.path());
        super::request_fingerprint(&target, parts, body, named)
    }

    fn parts(method: &str, uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut builder = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap().into_parts().0
    }

    fn fingerprint(method: &str, uri: &str, headers: &[(&str, &str)], body: &str) -> Fingerprint {
        request_fingerprint(&parts(method, uri, headers), body.as_bytes(), &[])
    }

    #[test]
    fn it_is_the_length_prefixed_hash_of_method_path_query_and_body() {
        let expected = Fingerprint::new(["POST", "/a/b", "x=1&y=2", "payload"]);
        assert_eq!(
            fingerprint("POST", "//a/b/?y=2&x=1", &[], "payload"),
            expected
        );
    }

    #[test]
    fn method_path_query_and_body_each_change_it() {
        let base = fingerprint("POST", "/r?q=1", &[], "x");
        assert_ne!(base, fingerprint("PATCH", "/r?q=1", &[], "x"));
        assert_ne!(base, fingerprint("POST", "/s?q=1", &[], "x"));
        assert_ne!(base, fingerprint("POST", "/r?q=2", &[], "x"));
        assert_ne!(base, fingerprint("POST", "/r?q=1", &[], "y"));
        assert_eq!(base, fingerprint("POST", "/r/?q=1", &[], "x"));
    }

    #[test]
    fn json_bodies_match_whatever_their_key_order() {
        let json = [("content-type", "application/json")];
        assert_eq!(
            fingerprint("POST", "/r", &json, r#"{"a":1,"b":2}"#),
            fingerprint("POST", "/r", &json, r#"{ "b": 2, "a": 1 }"#)
        );
        assert_ne!(
            fingerprint("POST", "/r", &json, r#"{"name": "x"}"#),
            fingerprint("POST", "/r", &json, r#"{"name": "y"}"#)
        );
        // Without the content type the bytes themselves count.
        assert_ne!(
            fingerprint("POST", "/r", &[], r#"{"a":1,"b":2}"#),
            fingerprint("POST", "/r", &[], r#"{ "b": 2, "a": 1 }"#)
        );
    }

    #[test]
    fn headers_count_only_when_named() {
        let usd = parts("POST", "/r", &[("x-currency", "USD")]);
        let eur = parts("POST", "/r", &[("x-currency", "EUR")]);
        let none = parts("POST", "/r", &[]);
        assert_eq!(
            request_fingerprint(&usd, b"", &[]),
            request_fingerprint(&eur, b"", &[])
        );
        let named = [HeaderName::from_static("x-currency")];
        let usd_fp = request_fingerprint(&usd, b"", &named);
        assert_ne!(usd_fp, request_fingerprint(&eur, b"", &named));
        assert_ne!(usd_fp, request_fingerprint(&none, b"", &named));
        assert_eq!(
            usd_fp,
            request_fingerprint(&parts("POST", "/r", &[("X-Currency", "USD")]), b"", &named)
        );
        // An absent header differs from an empty one, and values cannot slide across.
        let empty = parts("POST", "/r", &[("x-currency", "")]);
        assert_ne!(
            request_fingerprint(&empty, b"", &named),
            request_fingerprint(&none, b"", &named)
        );
        let two = parts("POST", "/r", &[("x-a", "1"), ("x-a", "2")]);
        let one = parts("POST", "/r", &[("x-a", "1"), ("x-b", "2")]);
        let names = [
            HeaderName::from_static("x-a"),
            HeaderName::from_static("x-b"),
        ];
        assert_ne!(
            request_fingerprint(&two, b"", &names),
            request_fingerprint(&one, b"", &names)
        );
    }

    #[test]
    fn extension_methods_are_uppercased() {
        let lower = parts("purge", "/r", &[]);
        assert_eq!(lower.method, Method::from_bytes(b"purge").unwrap());
        assert_eq!(
            request_fingerprint(&lower, b"", &[]),
            Fingerprint::new(["PURGE", "/r", "", ""])
        );
    }
}
