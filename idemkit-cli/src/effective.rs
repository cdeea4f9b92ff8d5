//! The effective key of a client's raw key: the name under which the HTTP layer stores
//! the record of a request. It is computed by the layer itself
//! (`IdempotencyLayer::effective_key`), from a request head built of the parts the
//! operator gives, so it cannot drift from what the layer does.

use http::{Method, Request};
use idemkit_core::InMemoryBackend;
use idemkit_tower::{IDEMPOTENCY_KEY, IdempotencyLayer, KeyError};

use crate::failure::Failure;

/// The request parts that name a record, besides the client's key.
#[derive(Clone, Debug)]
pub struct RequestParts<'a> {
    /// What the layer's scope function returns for the request, or the value of its
    /// scope header; `None` (or empty) for a layer without one, or a single-tenant one,
    /// whose scope is empty.
    pub scope: Option<&'a str>,
    /// The request's method.
    pub method: &'a str,
    /// The request's path (a query is allowed and, as in the layer, not part of it).
    pub path: &'a str,
}

/// The effective key the HTTP layer computes for a request with the Idempotency-Key
/// `raw` and these parts.
pub fn effective_key(raw: &str, parts: &RequestParts<'_>) -> Result<String, Failure> {
    let method = Method::from_bytes(parts.method.as_bytes()).map_err(|_| {
        Failure::usage(format!("`{}` is not an HTTP method", parts.method))
            .remedy("give the request's method, e.g. --method POST")
    })?;
    if !parts.path.starts_with('/') {
        return Err(
            Failure::usage(format!("the path `{}` does not start with /", parts.path))
                .remedy("give the request's path as the server saw it, e.g. --path /charges"),
        );
    }
    let request = Request::builder()
        .method(method)
        .uri(parts.path)
        .header(IDEMPOTENCY_KEY, raw)
        .body(())
        .map_err(|error| {
            Failure::usage(format!(
                "cannot form a request with the key `{raw}` and the path `{}`: {error}",
                parts.path
            ))
            .remedy("give the key as the client sent it in its Idempotency-Key header, and the path without spaces or control characters")
        })?;
    let (head, ()) = request.into_parts();
    let builder = IdempotencyLayer::builder(InMemoryBackend::new());
    let layer = match parts.scope.filter(|scope| !scope.is_empty()) {
        Some(scope) => {
            let scope = scope.to_owned();
            builder.scope(move |_| Some(scope.clone()))
        }
        None => builder.single_tenant(),
    }
    .build()
    .map_err(|error| Failure::usage(format!("cannot build the HTTP layer: {error}")))?;
    match layer.effective_key(&head) {
        Ok(key) => Ok(key.as_str().to_owned()),
        Err(KeyError::Invalid(why)) => Err(Failure::usage(format!(
            "`{raw}` is not a key the HTTP layer accepts: {why}"
        ))
        .remedy(
            "give the key as the client sent it in its Idempotency-Key header (1 to 255 bytes)",
        )),
        Err(other) => Err(Failure::usage(format!(
            "cannot compute the effective key of `{raw}`: {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(scope: Option<&'a str>, method: &'a str, path: &'a str) -> RequestParts<'a> {
        RequestParts {
            scope,
            method,
            path,
        }
    }

    #[test]
    fn it_names_one_record_per_key_scope_method_and_path() {
        let key = effective_key("K1", &parts(Some("tenant-a"), "POST", "/resources/")).unwrap();
        assert_eq!(key.len(), 64);
        assert!(
            key.bytes()
                .all(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase())
        );
        // What the records written by the layer are found by is tested over HTTP, against
        // the conformance server (tests/); here, that every part tells records apart.
        for other in [
            effective_key("K2", &parts(Some("tenant-a"), "POST", "/resources")),
            effective_key("K1", &parts(Some("tenant-b"), "POST", "/resources")),
            effective_key("K1", &parts(Some("tenant-a"), "PUT", "/resources")),
            effective_key("K1", &parts(Some("tenant-a"), "POST", "/other")),
        ] {
            assert_ne!(other.unwrap(), key);
        }
        let unscoped = effective_key("K1", &parts(None, "POST", "/r")).unwrap();
        assert_eq!(
            unscoped,
            effective_key("K1", &parts(Some(""), "POST", "/r")).unwrap()
        );
        assert_ne!(
            unscoped,
            effective_key("K1", &parts(Some("s"), "POST", "/r")).unwrap()
        );
    }

    #[test]
    fn quoted_keys_lowercase_methods_and_queries_name_the_same_record() {
        let plain = effective_key("k-1", &parts(Some("s"), "POST", "/a")).unwrap();
        assert_eq!(
            plain,
            effective_key("\"k-1\"", &parts(Some("s"), "POST", "/a")).unwrap()
        );
        assert_eq!(
            plain,
            effective_key("k-1", &parts(Some("s"), "POST", "/a?x=1")).unwrap()
        );
        assert_eq!(
            plain,
            effective_key("k-1", &parts(Some("s"), "POST", "//a/")).unwrap()
        );
        assert_ne!(
            plain,
            effective_key("k-1", &parts(Some("s"), "PATCH", "/a")).unwrap()
        );
    }

    #[test]
    fn keys_and_parts_the_layer_refuses_are_usage_errors() {
        let long = "x".repeat(256);
        for (key, method, path) in [
            ("", "POST", "/a"),
            (long.as_str(), "POST", "/a"),
            ("\"open", "POST", "/a"),
            ("k", "PO ST", "/a"),
            ("k", "POST", "a"),
            ("k", "POST", "/a b"),
            ("k\n", "POST", "/a"),
        ] {
            let failure = effective_key(key, &parts(None, method, path)).unwrap_err();
            assert_eq!(
                failure.kind,
                crate::failure::Kind::Usage,
                "{key:?} {method} {path}"
            );
        }
    }
}
