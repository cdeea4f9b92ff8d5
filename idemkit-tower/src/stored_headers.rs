//! Which response headers are stored with a response and sent again on replay.
//!
//! A replay goes to whoever repeats the key, so a stored header must be safe to hand
//! to a second caller and still true on a later connection: `Location` and `ETag` are;
//! a session cookie, credentials, and headers that describe one connection are not.

use bytes::Bytes;
use http::header::{self, HeaderName};
use http::{HeaderMap, HeaderValue};

/// The allow and deny lists that pick the response headers stored for replay.
///
/// A header is stored when its name is on the allow list and not on the deny list.
/// Some headers are never stored, whatever the lists say: `Set-Cookie` (a session
/// handed to one client must not be handed to another), `Content-Length` (the replay
/// sets its own), and the headers that describe one connection (`Connection`,
/// `Keep-Alive`, `Proxy-Authenticate`, `Proxy-Authorization`, `Proxy-Connection`, `TE`,
/// `Trailer`, `Transfer-Encoding`, `Upgrade`, and any header named in `Connection`).
///
/// By default the allow list is `Content-Type`, `Content-Encoding`, `Content-Language`,
/// `Content-Disposition`, `Location`, `ETag`, `Last-Modified`, `Link` and
/// `Cache-Control`, and the deny list is `Set-Cookie`, `Authorization`,
/// `WWW-Authenticate` and `Vary` (a replay ignores what `Vary` names, so it would
/// mislead a cache).
///
/// ```
/// use http::header::{HeaderName, ETAG, SET_COOKIE};
/// use idemkit_tower::StoredHeaders;
///
/// let request_id = HeaderName::from_static("x-request-id");
/// let stored = StoredHeaders::default().allow(request_id.clone()).deny(ETAG);
/// assert!(stored.is_stored(&request_id));
/// assert!(!stored.is_stored(&ETAG));
/// // Allowing Set-Cookie does not make it stored.
/// assert!(!StoredHeaders::default().allow(SET_COOKIE).is_stored(&SET_COOKIE));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredHeaders {
    allow: Vec<HeaderName>,
    deny: Vec<HeaderName>,
}

impl Default for StoredHeaders {
    fn default() -> StoredHeaders {
        StoredHeaders {
            allow: vec![
                header::CONTENT_TYPE,
                header::CONTENT_ENCODING,
                header::CONTENT_LANGUAGE,
                header::CONTENT_DISPOSITION,
                header::LOCATION,
                header::ETAG,
                header::LAST_MODIFIED,
                header::LINK,
                header::CACHE_CONTROL,
            ],
            deny: vec![
                header::SET_COOKIE,
                header::AUTHORIZATION,
                header::WWW_AUTHENTICATE,
                header::VARY,
            ],
        }
    }
}

/// Headers no list can make stored.
const NEVER_STORED: [HeaderName; 11] = [
    header::SET_COOKIE,
    header::CONTENT_LENGTH,
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

impl StoredHeaders {
    /// Lists with nothing allowed and nothing denied: no header is stored until one is
    /// allowed.
    pub fn none() -> StoredHeaders {
        StoredHeaders {
            allow: Vec::new(),
            deny: Vec::new(),
        }
    }

    /// These lists with `name` allowed (and taken off the deny list).
    pub fn allow(mut self, name: HeaderName) -> StoredHeaders {
        self.deny.retain(|denied| *denied != name);
        if !self.allow.contains(&name) {
            self.allow.push(name);
        }
        self
    }

    /// These lists with `name` denied (and taken off the allow list).
    pub fn deny(mut self, name: HeaderName) -> StoredHeaders {
        self.allow.retain(|allowed| *allowed != name);
        if !self.deny.contains(&name) {
            self.deny.push(name);
        }
        self
    }

    /// The allowed names, in the order they were allowed.
    pub fn allowed(&self) -> &[HeaderName] {
        &self.allow
    }

    /// The denied names, in the order they were denied.
    pub fn denied(&self) -> &[HeaderName] {
        &self.deny
    }

    /// Whether a header named `name` is stored (unless a `Connection` header names it).
    pub fn is_stored(&self, name: &HeaderName) -> bool {
        !NEVER_STORED.contains(name) && self.allow.contains(name) && !self.deny.contains(name)
    }

    /// The stored header name `name` as a [`HeaderName`], for a replay: the allowed
    /// name it spells, cloned (no parse; a stored name is written as `HeaderName` spells
    /// it), or else `name` parsed (a name allowed when it was stored and no longer, or
    /// stored by another program); `None` if it is not a valid header name.
    pub(crate) fn name_of(&self, name: &str) -> Option<HeaderName> {
        match self.allow.iter().find(|allowed| allowed.as_str() == name) {
            Some(allowed) => Some(allowed.clone()),
            None => HeaderName::from_bytes(name.as_bytes()).ok(),
        }
    }

    /// The headers of `headers` to store, in their order, repeated names kept.
    pub(crate) fn select(&self, headers: &HeaderMap) -> Vec<(String, Bytes)> {
        let connection_scoped = connection_scoped(headers);
        let mut selected = Vec::new();
        for (name, value) in headers {
            let kept = self.is_stored(name)
                && !connection_scoped
                    .iter()
                    .any(|scoped| scoped.eq_ignore_ascii_case(name.as_str()));
            if kept {
                // Room for exactly one more: the list is kept for as long as its record,
                // and most responses store one header (`Content-Type`), which this
                // allocates once. Collecting into room for four held 224 bytes a record,
                // and shrinking it after cost a reallocation; a response that stores
                // several headers reallocates once for each after the first (counting
                // them first instead cost the one-header case 200 instructions more).
                selected.reserve_exact(1);
                selected.push((name.as_str().to_owned(), stored_value(value)));
            }
        }
        selected
    }
}

/// Header values so common that a record keeps them as static bytes: the content types
/// axum's responses set (`String`, `Html`, `Json`, bytes) and a few more. Such a value
/// costs a record no allocation of its own (about 48 bytes otherwise), a replay no
/// write to a reference count that every other replay of the key writes too, and no
/// check of its bytes: the replay hands on the value built here.
static COMMON_VALUES: [HeaderValue; 8] = [
    HeaderValue::from_static("application/json"),
    HeaderValue::from_static("text/plain; charset=utf-8"),
    HeaderValue::from_static("text/html; charset=utf-8"),
    HeaderValue::from_static("application/octet-stream"),
    HeaderValue::from_static("application/problem+json"),
    HeaderValue::from_static("application/json; charset=utf-8"),
    HeaderValue::from_static("text/plain"),
    HeaderValue::from_static("text/html"),
];

/// `value` as stored: one of [`COMMON_VALUES`] as its static bytes, any other copied.
fn stored_value(value: &HeaderValue) -> Bytes {
    let value = value.as_bytes();
    COMMON_VALUES
        .iter()
        .find(|common| common.as_bytes() == value)
        .map_or_else(
            || Bytes::copy_from_slice(value),
            |common| Bytes::from_static(common.as_bytes()),
        )
}

/// The header value to replay for the stored `value`, or `None` if it is not one.
///
/// A value [`stored_value`] kept as one of [`COMMON_VALUES`] holds that constant's own
/// bytes, so it is known by its address and length (equal bytes at an equal address)
/// and its value is handed on as built. Any other value (copied, or read from a record
/// another program wrote) is checked again.
pub(crate) fn replayed_value(value: &Bytes) -> Option<HeaderValue> {
    let common = COMMON_VALUES.iter().find(|common| {
        let common = common.as_bytes();
        common.as_ptr() == value.as_ptr() && common.len() == value.len()
    });
    match common {
        Some(common) => Some(common.clone()),
        None => HeaderValue::from_maybe_shared(value.clone()).ok(),
    }
}

/// The header names listed in `Connection`: they describe this connection only.
fn connection_scoped(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn response_headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn names(selected: &[(String, Bytes)]) -> Vec<&str> {
        selected.iter().map(|(name, _)| name.as_str()).collect()
    }

    #[test]
    fn defaults_keep_the_safe_headers_and_drop_the_rest() {
        let headers = response_headers(&[
            ("content-type", "application/json"),
            ("location", "/resources/abc123"),
            ("etag", "\"v1\""),
            ("set-cookie", "session=secret-value"),
            ("authorization", "Bearer t"),
            ("www-authenticate", "Basic"),
            ("vary", "accept"),
            ("content-length", "12"),
            ("transfer-encoding", "chunked"),
            ("x-custom", "1"),
            ("cache-control", "no-store"),
            ("link", "</a>; rel=next"),
            ("last-modified", "Tue, 01 Dec 2026 00:00:00 GMT"),
            ("content-encoding", "gzip"),
            ("content-language", "fr"),
            ("content-disposition", "inline"),
        ]);
        let selected = StoredHeaders::default().select(&headers);
        assert_eq!(
            names(&selected),
            [
                "content-type",
                "location",
                "etag",
                "cache-control",
                "link",
                "last-modified",
                "content-encoding",
                "content-language",
                "content-disposition",
            ]
        );
        assert_eq!(selected[2].1, Bytes::from_static(b"\"v1\""));
    }

    #[test]
    fn the_selection_holds_no_spare_room() {
        let headers = response_headers(&[("content-type", "text/plain"), ("x-custom", "1")]);
        let selected = StoredHeaders::default().select(&headers);
        assert_eq!(names(&selected), ["content-type"]);
        assert_eq!(selected.capacity(), 1);
        let selected = StoredHeaders::default().select(&response_headers(&[("x-custom", "1")]));
        assert_eq!(selected.capacity(), 0);
        let headers = response_headers(&[
            ("content-type", "text/plain"),
            ("content-length", "2"),
            ("etag", "\"v1\""),
            ("content-language", "en"),
        ]);
        let selected = StoredHeaders::default().select(&headers);
        assert_eq!(
            names(&selected),
            ["content-type", "etag", "content-language"]
        );
        assert_eq!(selected.capacity(), 3);
    }

    #[test]
    fn a_stored_common_value_is_replayed_as_its_constant() {
        for common in &COMMON_VALUES {
            let headers = response_headers(&[("content-type", common.to_str().unwrap())]);
            let stored = &StoredHeaders::default().select(&headers)[0].1;
            let replayed = replayed_value(stored).unwrap();
            assert_eq!(&replayed, common);
            // The constant's own bytes, not a copy.
            assert_eq!(replayed.as_bytes().as_ptr(), common.as_bytes().as_ptr());
        }
    }

    #[test]
    fn any_other_stored_value_is_checked_again() {
        // The same bytes as a constant, elsewhere (a record read from another store):
        // a value of their own, equal to the constant.
        let copied = Bytes::copy_from_slice(b"application/json");
        let replayed = replayed_value(&copied).unwrap();
        assert_eq!(replayed, "application/json");
        assert_eq!(replayed.as_bytes().as_ptr(), copied.as_ptr());
        // A constant's prefix starts at its address but is not the constant.
        let prefix = Bytes::from_static(COMMON_VALUES[1].as_bytes()).slice(..10);
        assert_eq!(replayed_value(&prefix).unwrap(), "text/plain");
        // Bytes no header value may hold are not replayed.
        assert_eq!(replayed_value(&Bytes::from_static(b"a\nb")), None);
        assert_eq!(replayed_value(&Bytes::from_static(b"a\x7fb")), None);
    }

    #[test]
    fn common_values_are_kept_as_static_bytes_and_others_copied() {
        for common in &COMMON_VALUES {
            let common = common.to_str().unwrap();
            let headers = response_headers(&[("content-type", common)]);
            let selected = StoredHeaders::default().select(&headers);
            assert_eq!(selected[0].1, common);
            // The constant's own bytes: no allocation for the record.
            assert_eq!(selected[0].1.as_ptr(), common.as_ptr(), "{common}");
        }
        let headers = response_headers(&[("content-type", "application/vnd.api+json")]);
        let value = headers[header::CONTENT_TYPE].as_bytes().as_ptr();
        let selected = StoredHeaders::default().select(&headers);
        assert_eq!(selected[0].1, "application/vnd.api+json");
        assert_ne!(
            selected[0].1.as_ptr(),
            value,
            "copied, not the response's buffer"
        );
        // Compared whole, not as a prefix.
        let headers = response_headers(&[("content-type", "text/plain; charset=latin1")]);
        let selected = StoredHeaders::default().select(&headers);
        assert_eq!(selected[0].1, "text/plain; charset=latin1");
    }

    #[test]
    fn repeated_headers_are_all_kept_in_order() {
        let headers = response_headers(&[("link", "</1>"), ("etag", "e"), ("link", "</2>")]);
        let selected = StoredHeaders::default().select(&headers);
        let values: Vec<&[u8]> = selected.iter().map(|(_, value)| value.as_ref()).collect();
        // HeaderMap groups a name's values together, in the order they were added.
        assert_eq!(values, [&b"</1>"[..], b"</2>", b"e"]);
    }

    #[test]
    fn set_cookie_and_hop_by_hop_headers_are_never_stored() {
        let mut stored = StoredHeaders::none();
        for name in &NEVER_STORED {
            stored = stored.allow(name.clone());
            assert!(!stored.is_stored(name), "{name}");
        }
        let headers = response_headers(&[
            ("connection", "x-session-hint, close"),
            ("x-session-hint", "a"),
        ]);
        let stored = StoredHeaders::none().allow(HeaderName::from_static("x-session-hint"));
        assert!(stored.select(&headers).is_empty());
    }

    #[test]
    fn a_stored_name_reads_back_as_the_header_it_names() {
        let custom = HeaderName::from_static("x-request-id");
        let stored = StoredHeaders::default().allow(custom.clone());
        assert_eq!(stored.name_of("content-type"), Some(header::CONTENT_TYPE));
        assert_eq!(stored.name_of("x-request-id"), Some(custom));
        // Not allowed now, or spelled by another program: parsed.
        assert_eq!(stored.name_of("set-cookie"), Some(header::SET_COOKIE));
        assert_eq!(stored.name_of("Content-Type"), Some(header::CONTENT_TYPE));
        assert_eq!(
            stored.name_of("x-other"),
            Some(HeaderName::from_static("x-other"))
        );
        assert_eq!(stored.name_of("not a name"), None);
        assert_eq!(stored.name_of(""), None);
    }

    #[test]
    fn both_lists_can_be_changed_at_run_time() {
        let custom = HeaderName::from_static("x-request-id");
        let stored = StoredHeaders::default()
            .allow(custom.clone())
            .allow(header::VARY)
            .deny(header::ETAG);
        assert!(stored.is_stored(&custom));
        assert!(stored.is_stored(&header::VARY));
        assert!(!stored.is_stored(&header::ETAG));
        assert!(stored.denied().contains(&header::ETAG));
        assert!(!stored.denied().contains(&header::VARY));
        assert!(stored.allowed().contains(&custom));
        assert!(!StoredHeaders::none().is_stored(&header::CONTENT_TYPE));
    }
}
