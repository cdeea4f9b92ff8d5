//! The canonical form of a request path, shared by the effective key and the
//! fingerprint so that `/orders/`, `//orders` and `/orders` name one resource.

use std::borrow::Cow;

use super::percent::uppercase_escapes;

/// `path` with runs of `/` collapsed to one, the trailing `/` removed (except for the
/// root, `/`), and the hex digits of its percent-escapes in uppercase. Nothing is
/// decoded: `%2F` stays distinct from `/`. An empty path is the root. A path already in
/// that form (the usual case) is returned as it is.
pub(crate) fn canonical_path(path: &str) -> Cow<'_, str> {
    if is_canonical(path) {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(rewrite(path))
    }
}

fn is_canonical(path: &str) -> bool {
    let bytes = path.as_bytes();
    let trailing_slash = bytes.len() > 1 && bytes.ends_with(b"/");
    let repeated_slash = bytes.windows(2).any(|pair| pair == b"//");
    let lowercase_escape = bytes.windows(3).any(|triple| {
        triple[0] == b'%'
            && triple[1..].iter().all(u8::is_ascii_hexdigit)
            && triple[1..].iter().any(u8::is_ascii_lowercase)
    });
    !(bytes.is_empty() || trailing_slash || repeated_slash || lowercase_escape)
}

fn rewrite(path: &str) -> String {
    let mut collapsed = String::with_capacity(path.len().max(1));
    let mut previous_was_slash = false;
    for character in path.chars() {
        let is_slash = character == '/';
        if !(is_slash && previous_was_slash) {
            collapsed.push(character);
        }
        previous_was_slash = is_slash;
    }
    if collapsed.len() > 1 && collapsed.ends_with('/') {
        collapsed.pop();
    }
    if collapsed.is_empty() {
        collapsed.push('/');
    }
    uppercase_escapes(&collapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_slashes_collapse() {
        assert_eq!(canonical_path("//a///b"), "/a/b");
        assert_eq!(canonical_path("///"), "/");
    }

    #[test]
    fn a_trailing_slash_goes_except_at_the_root() {
        assert_eq!(canonical_path("/a/b/"), "/a/b");
        assert_eq!(canonical_path("/a/b//"), "/a/b");
        assert_eq!(canonical_path("/"), "/");
        assert_eq!(canonical_path(""), "/");
    }

    #[test]
    fn escapes_are_uppercased_not_decoded() {
        assert_eq!(canonical_path("/a%2fb"), "/a%2Fb");
        assert_ne!(canonical_path("/a%2Fb"), canonical_path("/a/b"));
    }

    #[test]
    fn canonical_paths_are_borrowed_as_they_are() {
        for path in ["/", "/a/b", "/a%2Fb", "*", "/100%"] {
            assert!(matches!(canonical_path(path), Cow::Borrowed(_)), "{path}");
        }
        for path in ["", "//a", "/a/", "/a%2fb"] {
            assert!(matches!(canonical_path(path), Cow::Owned(_)), "{path}");
        }
    }

    #[test]
    fn distinct_resources_stay_distinct() {
        assert_ne!(canonical_path("/orders/1"), canonical_path("/orders/2"));
        assert_ne!(canonical_path("/Orders"), canonical_path("/orders"));
        assert_eq!(canonical_path("*"), "*");
    }
}
