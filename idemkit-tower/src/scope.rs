//! The caller's scope: who is asking. It is part of the effective key, so the same
//! client key sent by two tenants names two records.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http::request::Parts;
use http::{HeaderMap, HeaderName};

/// A function from a request's head to its caller's identity.
pub(crate) type ScopeFn = Arc<dyn Fn(&Parts) -> Option<String> + Send + Sync>;

/// Where the scope comes from.
#[derive(Clone, Default)]
pub(crate) enum Scope {
    /// None configured: every caller shares one namespace, and the layer says so loudly.
    #[default]
    Unset,
    /// The operator declared the service single-tenant: one namespace, no warning.
    SingleTenant,
    /// A function of the request head.
    Caller(ScopeFn),
    /// The value of one request header, borrowed from the request.
    Header(HeaderName),
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Unset => f.write_str("Unset"),
            Scope::SingleTenant => f.write_str("SingleTenant"),
            Scope::Caller(_) => f.write_str("Caller(..)"),
            Scope::Header(name) => f.debug_tuple("Header").field(name).finish(),
        }
    }
}

impl Scope {
    /// The scope of a request: the empty string when there is no scope, the function's
    /// answer or the header's value otherwise; `None` when neither found an identity,
    /// which the layer refuses rather than share a namespace.
    pub(crate) fn of<'a>(&self, parts: &'a Parts) -> Option<Cow<'a, str>> {
        match self {
            Scope::Unset | Scope::SingleTenant => Some(Cow::Borrowed("")),
            Scope::Caller(scope) => scope(parts)
                .filter(|identity| !identity.is_empty())
                .map(Cow::Owned),
            Scope::Header(name) => header_identity(&parts.headers, name).map(Cow::Borrowed),
        }
    }
}

/// The identity in header `name`: its one value, as text, if not empty. A header sent
/// twice names no one: an authentication layer in front may have checked either value,
/// and taking the other would file one caller's records under another's name.
fn header_identity<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok().filter(|identity| !identity.is_empty())
}

/// The text of the shared-namespace warning.
pub(crate) const SHARED_NAMESPACE_WARNING: &str = "idemkit-tower: no scope is configured, \
so every caller shares ONE idempotency namespace: two callers (tenants, users, API keys) \
that send the same Idempotency-Key to the same endpoint are served each other's stored \
responses. Give the layer the caller's identity with `.scope(|parts| ...)`, or, if this \
service really has a single caller, say so with `.single_tenant()`.";

static WARNED: AtomicBool = AtomicBool::new(false);

/// Warns, once per process, that a layer runs with no scope. Through `tracing` when a
/// subscriber listens for it, on standard error otherwise, so it cannot go unseen.
/// Returns whether this call was the one that warned.
pub(crate) fn warn_shared_namespace_once() -> bool {
    if WARNED.swap(true, Ordering::Relaxed) {
        return false;
    }
    if tracing::enabled!(target: "idemkit_tower", tracing::Level::WARN) {
        tracing::warn!(target: "idemkit_tower", "{SHARED_NAMESPACE_WARNING}");
    } else {
        eprintln!("WARNING: {SHARED_NAMESPACE_WARNING}");
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;

    fn parts(tenant: Option<&str>) -> Parts {
        let mut request = Request::builder().uri("/r");
        if let Some(tenant) = tenant {
            request = request.header("x-tenant", tenant);
        }
        request.body(()).unwrap().into_parts().0
    }

    fn by_header() -> Scope {
        Scope::Caller(Arc::new(|parts: &Parts| {
            parts
                .headers
                .get("x-tenant")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        }))
    }

    #[test]
    fn without_a_function_everyone_shares_the_empty_scope() {
        assert_eq!(Scope::Unset.of(&parts(Some("a"))).as_deref(), Some(""));
        assert_eq!(Scope::SingleTenant.of(&parts(None)).as_deref(), Some(""));
    }

    #[test]
    fn a_function_names_the_caller_and_an_empty_answer_is_no_identity() {
        let scope = by_header();
        assert_eq!(scope.of(&parts(Some("acme"))).as_deref(), Some("acme"));
        assert_eq!(scope.of(&parts(None)), None);
        assert_eq!(scope.of(&parts(Some(""))), None);
        assert_eq!(format!("{scope:?}"), "Caller(..)");
    }

    fn header() -> Scope {
        Scope::Header(HeaderName::from_static("x-tenant"))
    }

    #[test]
    fn a_header_names_the_caller_as_the_same_function_would_without_a_copy() {
        let request = parts(Some("acme"));
        let identity = header().of(&request);
        assert!(
            matches!(identity, Some(Cow::Borrowed("acme"))),
            "{identity:?}"
        );
        for tenant in [Some("acme"), Some("tenant 7"), None, Some("")] {
            let request = parts(tenant);
            assert_eq!(
                header().of(&request),
                by_header().of(&request),
                "{tenant:?}"
            );
        }
        assert_eq!(format!("{:?}", header()), r#"Header("x-tenant")"#);
    }

    #[test]
    fn a_header_sent_twice_or_not_as_text_names_no_one() {
        let mut twice = parts(Some("acme"));
        twice
            .headers
            .append("x-tenant", http::HeaderValue::from_static("globex"));
        assert_eq!(header().of(&twice), None);
        // Whichever value an authentication layer checked, the other is not taken.
        let mut same_twice = parts(Some("acme"));
        same_twice
            .headers
            .append("x-tenant", http::HeaderValue::from_static("acme"));
        assert_eq!(header().of(&same_twice), None);

        let mut not_text = parts(None);
        not_text.headers.insert(
            "x-tenant",
            http::HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        );
        assert_eq!(header().of(&not_text), None);
        assert_eq!(by_header().of(&not_text), None);
    }

    #[test]
    fn the_warning_is_given_once_per_process() {
        // Other tests in this binary may have warned first; after this call, no
        // further call warns.
        let _ = warn_shared_namespace_once();
        assert!(!warn_shared_namespace_once());
        assert!(!warn_shared_namespace_once());
        assert!(SHARED_NAMESPACE_WARNING.contains(".scope("));
    }
}
