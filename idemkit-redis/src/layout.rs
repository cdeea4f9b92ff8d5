//! Where a record lives: one Redis key per idempotency key, `<namespace>:{<key>}`.
//!
//! The braces are a Redis Cluster hash tag: the slot of the record is the slot of the
//! idempotency key alone, so every script touches exactly one slot. Wake-ups for a
//! record are published on a channel named exactly like its key (channels and keys are
//! separate namespaces in Redis).

use std::fmt;

/// Why a namespace was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidNamespace(&'static str);

impl fmt::Display for InvalidNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid key namespace: {}", self.0)
    }
}

impl std::error::Error for InvalidNamespace {}

/// The key layout of one backend.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    /// `<namespace>:{`, the part every key starts with.
    prefix: Box<str>,
}

impl Layout {
    /// The default namespace.
    pub(crate) const DEFAULT_NAMESPACE: &'static str = "idemkit";

    /// Keys under `namespace`: not empty, and without `{` or `}`, which would move the
    /// hash tag out of the idempotency key (and every record into one slot).
    pub(crate) fn new(namespace: &str) -> Result<Layout, InvalidNamespace> {
        if namespace.is_empty() {
            return Err(InvalidNamespace("it is empty"));
        }
        if namespace.contains(['{', '}']) {
            return Err(InvalidNamespace(
                "it contains a brace, which would make it the Redis Cluster hash tag",
            ));
        }
        Ok(Layout {
            prefix: format!("{namespace}:{{").into_boxed_str(),
        })
    }

    /// The Redis key of the record of `key`. Distinct keys give distinct Redis keys: the
    /// prefix and the closing brace are fixed, so the key is read back unambiguously.
    pub(crate) fn storage_key(&self, key: &str) -> String {
        let mut storage_key = String::with_capacity(self.prefix.len() + key.len() + 1);
        storage_key.push_str(&self.prefix);
        storage_key.push_str(key);
        storage_key.push('}');
        storage_key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_namespaced_and_hash_tagged() {
        let layout = Layout::new("orders").unwrap();
        assert_eq!(layout.storage_key("abc"), "orders:{abc}");
        assert_eq!(
            Layout::new(Layout::DEFAULT_NAMESPACE)
                .unwrap()
                .storage_key("k"),
            "idemkit:{k}"
        );
    }

    #[test]
    fn the_hash_tag_is_the_key_whatever_the_namespace() {
        let layout = Layout::new("svc:a").unwrap();
        let a = layout.storage_key("0123");
        let slot = redis::cluster_routing::Slot::for_key;
        assert_eq!(slot(a.as_bytes()), slot(b"0123"));
    }

    #[test]
    fn namespaces_that_would_break_the_tag_are_refused() {
        assert!(Layout::new("").is_err());
        assert!(Layout::new("a{b").is_err());
        assert!(Layout::new("a}b").is_err());
    }
}
