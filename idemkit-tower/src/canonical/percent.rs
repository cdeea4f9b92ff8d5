//! Percent-encoding, and the canonical form of `name=value&...` lists (query strings and
//! form bodies): decoded once, sorted, encoded again one way.

/// `bytes` with every `%xx` escape decoded and, when `plus_is_space`, every `+` read as
/// a space (the form encoding's convention). A `%` not followed by two hex digits is
/// kept as a literal `%`.
pub(crate) fn decode(bytes: &[u8], plus_is_space: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        match byte {
            b'%' => match (
                hex_value(bytes.get(index + 1)),
                hex_value(bytes.get(index + 2)),
            ) {
                (Some(high), Some(low)) => {
                    out.push(high << 4 | low);
                    index += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if plus_is_space => out.push(b' '),
            _ => out.push(byte),
        }
        index += 1;
    }
    out
}

/// Appends `bytes` to `out`, every byte but the unreserved ones (letters, digits,
/// `-._~`) written as `%XX` in uppercase hex.
pub(crate) fn encode_into(bytes: &[u8], out: &mut Vec<u8>) {
    for &byte in bytes {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte);
        } else {
            out.push(b'%');
            out.push(HEX_UPPER[usize::from(byte >> 4)]);
            out.push(HEX_UPPER[usize::from(byte & 0x0f)]);
        }
    }
}

/// The canonical form of a `name=value&name=value` list: each name and value decoded
/// once (`+` is a space), the pairs sorted by name then value (bytewise), and written
/// back as `name=value` joined by `&`, encoded by [`encode_into`]. Empty segments are
/// dropped; a segment without `=` is a name with an empty value.
pub(crate) fn canonical_pairs(list: &[u8]) -> Vec<u8> {
    // Most keyed requests have no query (a POST with a body), and an empty form body
    // neither: nothing to split or sort.
    if list.is_empty() {
        return Vec::new();
    }
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = list
        .split(|&byte| byte == b'&')
        .filter(|segment| !segment.is_empty())
        .map(|segment| {
            let (name, value) = match segment.iter().position(|&byte| byte == b'=') {
                Some(at) => (&segment[..at], &segment[at + 1..]),
                None => (segment, &b""[..]),
            };
            (decode(name, true), decode(value, true))
        })
        .collect();
    pairs.sort_unstable();
    let mut out = Vec::with_capacity(list.len());
    for (index, (name, value)) in pairs.iter().enumerate() {
        if index > 0 {
            out.push(b'&');
        }
        encode_into(name, &mut out);
        out.push(b'=');
        encode_into(value, &mut out);
    }
    out
}

/// `text` with the hex digits of every well-formed `%xx` escape in uppercase, nothing
/// else changed (nothing decoded: in a path `%2F` and `/` differ).
pub(crate) fn uppercase_escapes(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    let mut copied = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && hex_value(bytes.get(index + 1)).is_some()
            && hex_value(bytes.get(index + 2)).is_some()
        {
            out.push_str(&text[copied..index]);
            out.push('%');
            out.push(char::from(bytes[index + 1].to_ascii_uppercase()));
            out.push(char::from(bytes[index + 2].to_ascii_uppercase()));
            index += 3;
            copied = index;
        } else {
            index += 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

fn hex_value(byte: Option<&u8>) -> Option<u8> {
    match byte? {
        byte @ b'0'..=b'9' => Some(byte - b'0'),
        byte @ b'a'..=b'f' => Some(byte - b'a' + 10),
        byte @ b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &str) -> String {
        String::from_utf8(canonical_pairs(list.as_bytes())).unwrap()
    }

    #[test]
    fn decode_reads_escapes_and_keeps_stray_percents() {
        assert_eq!(decode(b"a%2fb%2Fc", false), b"a/b/c");
        assert_eq!(decode(b"100%", false), b"100%");
        assert_eq!(decode(b"%zz%4", false), b"%zz%4");
        assert_eq!(decode(b"a+b", false), b"a+b");
        assert_eq!(decode(b"a+b", true), b"a b");
        assert_eq!(decode(b"%00%ff", false), [0, 0xff]);
    }

    #[test]
    fn encode_writes_uppercase_hex_for_all_but_unreserved() {
        let mut out = Vec::new();
        encode_into(b"aZ09-._~ /?&=\xff", &mut out);
        assert_eq!(out, b"aZ09-._~%20%2F%3F%26%3D%FF");
    }

    #[test]
    fn pairs_are_sorted_by_name_then_value() {
        assert_eq!(pairs("b=2&a=9&a=1"), "a=1&a=9&b=2");
        assert_eq!(pairs("a=1&b=2"), pairs("b=2&a=1"));
    }

    #[test]
    fn pairs_compare_decoded_so_spellings_of_one_value_agree() {
        assert_eq!(pairs("q=a%2fb"), pairs("q=a%2Fb"));
        assert_eq!(pairs("q=a/b"), pairs("q=a%2Fb"));
        assert_eq!(pairs("q=a+b"), pairs("q=a%20b"));
        assert_eq!(pairs("q=a+b"), "q=a%20b");
        assert_eq!(pairs("n%61me=v"), "name=v");
    }

    #[test]
    fn pairs_keep_distinct_values_distinct() {
        assert_ne!(pairs("q=a%26b"), pairs("q=a&b"));
        assert_ne!(pairs("q=1"), pairs("q=2"));
        assert_ne!(pairs("a=1&b=2"), pairs("a=1b=2"));
    }

    #[test]
    fn empty_segments_vanish_and_bare_names_have_empty_values() {
        assert_eq!(pairs("&&a=1&"), "a=1");
        assert_eq!(pairs("flag"), "flag=");
        assert_eq!(pairs(""), "");
        assert_eq!(pairs("=v"), "=v");
    }

    #[test]
    fn uppercase_escapes_touches_only_escape_digits() {
        assert_eq!(uppercase_escapes("/a%2fb%3a"), "/a%2Fb%3A");
        assert_eq!(uppercase_escapes("/abc"), "/abc");
        assert_eq!(uppercase_escapes("/%zz/%4"), "/%zz/%4");
        assert_eq!(uppercase_escapes("/caf%c3%a9"), "/caf%C3%A9");
    }
}
