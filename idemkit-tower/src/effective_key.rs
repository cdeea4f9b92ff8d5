//! The effective key: the name under which a request's record is stored. It combines
//! the caller's scope, the method, the path and the client's key, so the same client
//! key sent by two tenants, or to two endpoints, names two records.

use idemkit_core::Key;

use crate::canonical::Target;
use crate::fingerprint::FINGERPRINT_VERSION;

/// The length-prefixed SHA-256 of the client's key, the caller's scope, the method
/// (uppercase), the canonical path and the fingerprint version (4 bytes, big-endian), in
/// that order. The length prefixes keep any two different tuples apart, whatever bytes
/// the key or the scope hold.
///
/// The version is part of the name so that a request fingerprinted one way never meets a
/// record fingerprinted another way: the executor would refuse it as another request
/// (it cannot compare the two), though it may be a retry of the very same one. After an
/// upgrade that changes the version, a retry of a request first run before the upgrade
/// finds no record and runs again; the old record expires on its own.
pub(crate) fn effective_key(key: &[u8], scope: &str, target: &Target<'_>) -> Key {
    Key::new([
        key,
        scope.as_bytes(),
        target.method.as_bytes(),
        target.path.as_bytes(),
        &FINGERPRINT_VERSION.to_be_bytes(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_header::IdempotencyKey;
    use http::Method;

    /// The effective key of a request with this key, scope, method and path.
    fn effective_key(key: &IdempotencyKey, scope: &str, method: &Method, path: &str) -> Key {
        super::effective_key(key.as_bytes(), scope, &Target::of(method, path))
    }

    fn key(text: &str) -> IdempotencyKey {
        IdempotencyKey::parse(text.as_bytes()).unwrap()
    }

    #[test]
    fn it_is_the_length_prefixed_hash_of_key_scope_method_path_and_version() {
        assert_eq!(
            effective_key(&key("K1"), "tenant-a", &Method::POST, "/resources/"),
            Key::new([
                &b"K1"[..],
                b"tenant-a",
                b"POST",
                b"/resources",
                &FINGERPRINT_VERSION.to_be_bytes()
            ])
        );
        // Records of the first fingerprint version are under other names.
        assert_ne!(
            effective_key(&key("K1"), "tenant-a", &Method::POST, "/resources/"),
            Key::new(["K1", "tenant-a", "POST", "/resources"])
        );
    }

    #[test]
    fn two_tenants_never_share_a_key() {
        let a = effective_key(&key("K8"), "tenant-A:user-1", &Method::POST, "/r");
        let b = effective_key(&key("K8"), "tenant-B:user-2", &Method::POST, "/r");
        assert_ne!(a, b);
        // Moving bytes between the client's key and the scope gives another key.
        assert_ne!(
            effective_key(&key("ab"), "c", &Method::POST, "/r"),
            effective_key(&key("a"), "bc", &Method::POST, "/r")
        );
        assert_ne!(
            effective_key(&key("k"), "", &Method::POST, "/r"),
            effective_key(&key("k"), "POST", &Method::POST, "/r")
        );
    }

    #[test]
    fn method_and_path_are_part_of_it() {
        let base = effective_key(&key("k"), "s", &Method::POST, "/a");
        assert_ne!(base, effective_key(&key("k"), "s", &Method::PATCH, "/a"));
        assert_ne!(base, effective_key(&key("k"), "s", &Method::POST, "/b"));
        assert_eq!(base, effective_key(&key("k"), "s", &Method::POST, "//a/"));
    }

    #[test]
    fn quoted_and_bare_keys_name_one_record() {
        assert_eq!(
            effective_key(&key("\"k-1\""), "s", &Method::POST, "/a"),
            effective_key(&key("k-1"), "s", &Method::POST, "/a")
        );
    }
}
