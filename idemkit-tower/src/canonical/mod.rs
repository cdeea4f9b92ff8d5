//! Canonical forms of the parts of a request that name it: its path, its query and its
//! body. Two requests that mean the same thing but are spelled differently (keys in
//! another order, `%2f` for `%2F`, a trailing slash) get the same canonical form, so a
//! retry that a client library re-serialized still matches its first attempt.

mod json;
mod json_check;
mod media_type;
mod multipart;
mod path;
mod percent;

use std::borrow::Cow;

use http::Method;

pub(crate) use media_type::{essence as media_type_essence, is as media_type_is};
pub(crate) use path::canonical_path;

/// What a request acts on, in canonical form: its method, uppercase, and its canonical
/// path. Both the effective key and the fingerprint start from it.
#[derive(Debug)]
pub(crate) struct Target<'a> {
    pub(crate) method: Cow<'a, str>,
    pub(crate) path: Cow<'a, str>,
}

impl<'a> Target<'a> {
    pub(crate) fn of(method: &'a Method, path: &'a str) -> Target<'a> {
        let method = method.as_str();
        Target {
            method: if method.bytes().any(|byte| byte.is_ascii_lowercase()) {
                Cow::Owned(method.to_ascii_uppercase())
            } else {
                Cow::Borrowed(method)
            },
            path: canonical_path(path),
        }
    }
}

/// The canonical form of a query string (without its `?`): decoded once, parameters
/// sorted by name then value, encoded again with uppercase hex escapes.
pub(crate) fn canonical_query(query: &str) -> Vec<u8> {
    percent::canonical_pairs(query.as_bytes())
}

/// Which canonicalization a body went through. It is part of the fingerprint, so a
/// body read one way never matches a body read another way whose bytes happen to agree
/// (the canonical JSON of one request and the raw bytes of another, say).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// `application/json`, parsed and written in canonical form.
    Json,
    /// `application/x-www-form-urlencoded`, its fields sorted.
    Form,
    /// `multipart/form-data`, its parts sorted.
    Multipart,
    /// Anything else, or a body that cannot be put in canonical form: its bytes as sent.
    Raw,
}

impl BodyKind {
    /// The label the fingerprint records.
    pub(crate) fn label(self) -> &'static str {
        match self {
            BodyKind::Json => "json",
            BodyKind::Form => "form",
            BodyKind::Multipart => "multipart",
            BodyKind::Raw => "raw",
        }
    }
}

/// A request body in canonical form, and how it got there.
#[derive(Debug)]
pub(crate) struct CanonicalBody<'a> {
    pub(crate) kind: BodyKind,
    pub(crate) bytes: Cow<'a, [u8]>,
}

/// The canonical form of a request body, chosen by its `Content-Type`:
///
/// - `application/json`: members sorted, numbers exact, no whitespace (see
///   [`json::canonical_json`]); a body already in that form is borrowed as it is (see
///   [`json_check`]);
/// - `application/x-www-form-urlencoded`: as a query string;
/// - `multipart/form-data`: parts sorted, each part's headers that say what it is kept
///   and its content hashed (see [`multipart::canonical_multipart`]);
/// - anything else, or a body that does not parse as its type claims (or that a parser
///   could read two ways, like a JSON object that repeats a name): the raw bytes.
///
/// It never fails: a body that cannot be read as its type is hashed as it is.
pub(crate) fn canonical_body<'a>(content_type: Option<&[u8]>, body: &'a [u8]) -> CanonicalBody<'a> {
    let raw = CanonicalBody {
        kind: BodyKind::Raw,
        bytes: Cow::Borrowed(body),
    };
    let Some(content_type) = content_type else {
        return raw;
    };
    let (kind, canonical) = if media_type::is(content_type, "application/json") {
        // A body already in canonical form is hashed as it was sent.
        if json_check::is_canonical(body) {
            return CanonicalBody {
                kind: BodyKind::Json,
                bytes: Cow::Borrowed(body),
            };
        }
        (BodyKind::Json, json::canonical_json(body))
    } else if media_type::is(content_type, "application/x-www-form-urlencoded") {
        (BodyKind::Form, Some(percent::canonical_pairs(body)))
    } else if media_type::is(content_type, "multipart/form-data") {
        let canonical = media_type::parameter(content_type, "boundary")
            .and_then(|boundary| multipart::canonical_multipart(body, &boundary));
        (BodyKind::Multipart, canonical)
    } else {
        (BodyKind::Raw, None)
    };
    match canonical {
        Some(bytes) => CanonicalBody {
            kind,
            bytes: Cow::Owned(bytes),
        },
        None => raw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_the_uppercase_method_and_the_canonical_path() {
        let extension = Method::from_bytes(b"purge").unwrap();
        let target = Target::of(&extension, "//a/");
        assert_eq!((&*target.method, &*target.path), ("PURGE", "/a"));
        let target = Target::of(&Method::POST, "/a");
        assert!(matches!(target.method, Cow::Borrowed("POST")));
    }

    #[test]
    fn json_bodies_are_canonical_only_when_declared_json() {
        let body = br#"{ "b":1, "a":2 }"#;
        let json = canonical_body(Some(b"application/json; charset=utf-8"), body);
        assert_eq!(json.kind, BodyKind::Json);
        assert_eq!(json.bytes.as_ref(), br#"{"a":2,"b":1}"#);
        let text = canonical_body(Some(b"text/plain"), body);
        assert_eq!((text.kind, text.bytes.as_ref()), (BodyKind::Raw, &body[..]));
        let none = canonical_body(None, body);
        assert_eq!((none.kind, none.bytes.as_ref()), (BodyKind::Raw, &body[..]));
    }

    #[test]
    fn a_body_that_does_not_parse_falls_back_to_its_bytes_as_raw() {
        let body = b"{not json";
        for content_type in [
            &b"application/json"[..],
            b"multipart/form-data; boundary=b",
            b"multipart/form-data",
        ] {
            let canonical = canonical_body(Some(content_type), body);
            assert_eq!(canonical.kind, BodyKind::Raw);
            assert_eq!(canonical.bytes.as_ref(), body);
        }
        // A JSON object that repeats a name is read as its bytes, not canonicalized.
        let repeated = br#"{"a":1,"a":2}"#;
        let canonical = canonical_body(Some(b"application/json"), repeated);
        assert_eq!(
            (canonical.kind, canonical.bytes.as_ref()),
            (BodyKind::Raw, &repeated[..])
        );
    }

    #[test]
    fn each_kind_has_its_own_label() {
        let labels = [
            BodyKind::Json,
            BodyKind::Form,
            BodyKind::Multipart,
            BodyKind::Raw,
        ]
        .map(BodyKind::label);
        assert_eq!(labels, ["json", "form", "multipart", "raw"]);
    }

    #[test]
    fn form_bodies_are_sorted_like_queries() {
        let content_type = Some(&b"application/x-www-form-urlencoded"[..]);
        let form = canonical_body(content_type, b"b=2&a=1");
        assert_eq!(form.kind, BodyKind::Form);
        assert_eq!(form.bytes, canonical_body(content_type, b"a=1&b=2").bytes);
        assert_eq!(canonical_query("b=2&a=%2f"), b"a=%2F&b=2");
    }

    #[test]
    fn multipart_bodies_use_their_boundary() {
        let body = b"--zz\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n--zz--";
        let canonical = canonical_body(Some(b"multipart/form-data; boundary=zz"), body);
        assert_eq!(canonical.kind, BodyKind::Multipart);
        assert_ne!(canonical.bytes.as_ref(), body);
        let other = canonical_body(Some(b"multipart/form-data; boundary=other"), body);
        assert_eq!(
            (other.kind, other.bytes.as_ref()),
            (BodyKind::Raw, &body[..])
        );
    }
}
