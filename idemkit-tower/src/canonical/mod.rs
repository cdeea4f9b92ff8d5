//! Canonical forms of the parts of a request that name it: its path, its query and its
//! body. Two requests that mean the same thing but are spelled differently (keys in
//! another order, `%2f` for `%2F`, a trailing slash) get the same canonical form, so a
//! retry that a client library re-serialized still matches its first attempt.

mod json;
mod media_type;
mod multipart;
mod path;
mod percent;

use std::borrow::Cow;

use http::Method;

pub(crate) use media_type::is as media_type_is;
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

/// The canonical form of a request body, chosen by its `Content-Type`:
///
/// - `application/json`: sorted keys, no whitespace;
/// - `application/x-www-form-urlencoded`: as a query string;
/// - `multipart/form-data`: parts sorted by name, each part's content hashed;
/// - anything else, or a body that does not parse as its type claims: the raw bytes.
///
/// It never fails: a body that cannot be read as its type is hashed as it is.
pub(crate) fn canonical_body<'a>(content_type: Option<&[u8]>, body: &'a [u8]) -> Cow<'a, [u8]> {
    let Some(content_type) = content_type else {
        return Cow::Borrowed(body);
    };
    let canonical = if media_type::is(content_type, "application/json") {
        json::canonical_json(body)
    } else if media_type::is(content_type, "application/x-www-form-urlencoded") {
        Some(percent::canonical_pairs(body))
    } else if media_type::is(content_type, "multipart/form-data") {
        media_type::parameter(content_type, "boundary")
            .and_then(|boundary| multipart::canonical_multipart(body, &boundary))
    } else {
        None
    };
    canonical.map_or(Cow::Borrowed(body), Cow::Owned)
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
        assert_eq!(
            canonical_body(Some(b"application/json; charset=utf-8"), body).as_ref(),
            br#"{"a":2,"b":1}"#
        );
        assert_eq!(canonical_body(Some(b"text/plain"), body).as_ref(), body);
        assert_eq!(canonical_body(None, body).as_ref(), body);
    }

    #[test]
    fn a_body_that_does_not_parse_falls_back_to_its_bytes() {
        let body = b"{not json";
        assert_eq!(
            canonical_body(Some(b"application/json"), body).as_ref(),
            body
        );
        assert_eq!(
            canonical_body(Some(b"multipart/form-data; boundary=b"), body).as_ref(),
            body
        );
        assert_eq!(
            canonical_body(Some(b"multipart/form-data"), body).as_ref(),
            body
        );
    }

    #[test]
    fn form_bodies_are_sorted_like_queries() {
        let content_type = Some(&b"application/x-www-form-urlencoded"[..]);
        assert_eq!(
            canonical_body(content_type, b"b=2&a=1").as_ref(),
            canonical_body(content_type, b"a=1&b=2").as_ref()
        );
        assert_eq!(canonical_query("b=2&a=%2f"), b"a=%2F&b=2");
    }

    #[test]
    fn multipart_bodies_use_their_boundary() {
        let body = b"--zz\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n--zz--";
        let canonical = canonical_body(Some(b"multipart/form-data; boundary=zz"), body);
        assert_ne!(canonical.as_ref(), body);
        assert_eq!(
            canonical_body(Some(b"multipart/form-data; boundary=other"), body).as_ref(),
            body
        );
    }
}
