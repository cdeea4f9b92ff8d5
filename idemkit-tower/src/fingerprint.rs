//! The request fingerprint: what a retry must repeat to be answered with the stored
//! response. A key reused with another fingerprint is refused, never replayed.

use http::HeaderMap;
use http::header::{CONTENT_TYPE, HeaderName};
use http::request::Parts;
use idemkit_core::Fingerprint;

use crate::canonical::{BodyKind, Target, canonical_body, canonical_query, media_type_essence};

/// The version of the fingerprint algorithm below, stored with every record and part of
/// the effective key, so that a record written under another version is never compared
/// with this one.
///
/// Version 2 compares JSON numbers exactly, reads a JSON object that repeats a name by
/// its raw bytes, and records what kind of body it read (JSON, form, multipart, raw) and
/// each multipart part's `Content-Type`, `filename` and `filename*`. Version 1 records
/// are left to expire: a request under version 2 never meets them.
pub(crate) const FINGERPRINT_VERSION: u32 = 2;

/// The fingerprint of a request: the length-prefixed SHA-256 of its method (uppercase),
/// canonical path, canonical query, the kind of its body (`json`, `form`, `multipart` or
/// `raw`), for a raw body its media type (lowercase, without parameters; empty if none),
/// and its canonical body, in that order; then for each of `named_headers` in the order
/// given, its name, its number of values (4 bytes, big-endian) and each value.
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
    // A raw body is read as its bytes whatever it claims to be; what it claims still
    // tells a handler how to read it, so two claims are two requests.
    let media_type = match body.kind {
        BodyKind::Raw => content_type
            .map(|value| media_type_essence(value).to_ascii_lowercase())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let fields: [&[u8]; 6] = [
        method.as_bytes(),
        path.as_bytes(),
        &query,
        body.kind.label().as_bytes(),
        &media_type,
        &body.bytes,
    ];
    if named_headers.is_empty() {
        // The usual setting: no list of header counts, and no chain of headers to walk.
        return Fingerprint::new(fields);
    }
    // Hashed as they are read: no list of fields is built.
    let counts = header_counts(&parts.headers, named_headers);
    let named = named_headers.iter().zip(&counts).flat_map(|(name, count)| {
        let values = parts
            .headers
            .get_all(name)
            .iter()
            .map(|value| value.as_bytes());
        [name.as_str().as_bytes(), count.as_slice()]
            .into_iter()
            .chain(values)
    });
    Fingerprint::new(fields.into_iter().chain(named))
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
        let expected = Fingerprint::new(["POST", "/a/b", "x=1&y=2", "raw", "", "payload"]);
        assert_eq!(
            fingerprint("POST", "//a/b/?y=2&x=1", &[], "payload"),
            expected
        );
    }

    #[test]
    fn an_empty_query_and_no_named_headers_hash_as_empty_fields() {
        let expected = Fingerprint::new(["POST", "/a", "", "raw", "", "p"]);
        assert_eq!(fingerprint("POST", "/a", &[], "p"), expected);
        // A query of empty segments is no query.
        assert_eq!(fingerprint("POST", "/a?&&", &[], "p"), expected);
        // A named header the request lacks still counts: its name and a count of zero.
        let named = [HeaderName::from_static("x-currency")];
        assert_eq!(
            request_fingerprint(&parts("POST", "/a", &[]), b"p", &named),
            Fingerprint::new(
                ["POST", "/a", "", "raw", "", "p"]
                    .map(str::as_bytes)
                    .into_iter()
                    .chain([&b"x-currency"[..], &0u32.to_be_bytes(),])
            )
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

    fn json(body: &str) -> Fingerprint {
        fingerprint("POST", "/r", &[("content-type", "application/json")], body)
    }

    #[test]
    fn json_numbers_match_only_when_they_are_the_same_decimal_value() {
        for (a, b) in [
            ("18446744073709551616", "18446744073709551617"),
            (
                "1000000000000000000000000000000",
                "1000000000000000000000000000001",
            ),
            ("-9223372036854775809", "-9223372036854775810"),
            ("0.1", "0.10000000000000000001"),
            ("18446744073709551616", "1.8446744073709552e19"),
            ("1", "1.0"),
            ("100", "1e2"),
        ] {
            assert_ne!(
                json(&format!(r#"{{"amount":{a}}}"#)),
                json(&format!(r#"{{"amount":{b}}}"#)),
                "{a} and {b}"
            );
        }
        for (a, b) in [
            ("1.50", "1.5"),
            ("1e2", "100.0"),
            ("-0", "0"),
            ("0.0", "-0.0"),
        ] {
            assert_eq!(
                json(&format!(r#"{{"amount":{a}}}"#)),
                json(&format!(r#"{{"amount":{b}}}"#)),
                "{a} and {b}"
            );
        }
    }

    #[test]
    fn a_json_object_that_repeats_a_name_matches_only_itself() {
        let repeated = r#"{"a":1,"a":2}"#;
        assert_eq!(json(repeated), json(repeated));
        for other in [
            r#"{"a":2}"#,
            r#"{"a":1}"#,
            r#"{"a":2,"a":1}"#,
            r#"{"a":1, "a":2}"#,
        ] {
            assert_ne!(json(repeated), json(other), "{other}");
        }
        // Nor does it match the same bytes sent as something else.
        assert_ne!(
            json(repeated),
            fingerprint("POST", "/r", &[("content-type", "text/plain")], repeated)
        );
    }

    #[test]
    fn what_a_body_is_counts_not_only_its_bytes() {
        let text = [("content-type", "text/plain")];
        // The canonical JSON of one equals the raw bytes of the other.
        assert_ne!(
            json(r#"{"b":1,"a":2}"#),
            fingerprint("POST", "/r", &text, r#"{"a":2,"b":1}"#)
        );
        assert_ne!(
            json(r#"{"a":2,"b":1}"#),
            fingerprint("POST", "/r", &[], r#"{"a":2,"b":1}"#)
        );
        // The canonical form of a form body equals the raw bytes of a text one.
        let form = [("content-type", "application/x-www-form-urlencoded")];
        assert_ne!(
            fingerprint("POST", "/r", &form, "b=2&a=1"),
            fingerprint("POST", "/r", &text, "a=1&b=2")
        );
        // Raw bodies of two media types differ; parameters and case do not count.
        let octets = [("content-type", "application/octet-stream")];
        assert_ne!(
            fingerprint("POST", "/r", &text, "x"),
            fingerprint("POST", "/r", &octets, "x")
        );
        assert_ne!(
            fingerprint("POST", "/r", &text, "x"),
            fingerprint("POST", "/r", &[], "x")
        );
        assert_eq!(
            fingerprint("POST", "/r", &text, "x"),
            fingerprint(
                "POST",
                "/r",
                &[("content-type", "Text/Plain; charset=utf-8")],
                "x"
            )
        );
        // A JSON body canonicalizes the same whatever its parameters.
        assert_eq!(
            json(r#"{"a":1}"#),
            fingerprint(
                "POST",
                "/r",
                &[("content-type", "application/json; charset=utf-8")],
                r#"{ "a" : 1 }"#
            )
        );
    }

    #[test]
    fn a_multipart_parts_headers_count() {
        let form = [("content-type", "multipart/form-data; boundary=b")];
        let body = |headers: &str| {
            format!("--b\r\nContent-Disposition: form-data; name=f{headers}\r\n\r\nv\r\n--b--")
        };
        let base = fingerprint("POST", "/r", &form, &body(""));
        assert_eq!(base, fingerprint("POST", "/r", &form, &body("")));
        for headers in [
            "\r\nContent-Type: application/json",
            "; filename=v.txt",
            "; filename*=UTF-8''v.txt",
        ] {
            assert_ne!(
                base,
                fingerprint("POST", "/r", &form, &body(headers)),
                "{headers}"
            );
        }
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
            Fingerprint::new(["PURGE", "/r", "", "raw", "", ""])
        );
    }
}
