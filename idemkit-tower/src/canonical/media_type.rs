//! Just enough of a `Content-Type` parser to pick a body's canonical form: its media
//! type, and one named parameter (a multipart body's `boundary`).

/// The media type of a `Content-Type` value (`type/subtype`), trimmed, without
/// parameters, as written (compare it without regard to case, see [`is`]).
pub(crate) fn essence(content_type: &[u8]) -> &[u8] {
    let end = content_type
        .iter()
        .position(|&byte| byte == b';')
        .unwrap_or(content_type.len());
    trim(&content_type[..end])
}

/// Whether a `Content-Type` value names `media_type` (lowercase `type/subtype`),
/// whatever its case and parameters.
pub(crate) fn is(content_type: &[u8], media_type: &str) -> bool {
    essence(content_type).eq_ignore_ascii_case(media_type.as_bytes())
}

/// The value of the parameter `name` (matched without regard to case) of a
/// `Content-Type` value, unquoted; `None` if absent or malformed.
pub(crate) fn parameter(content_type: &[u8], name: &str) -> Option<Vec<u8>> {
    let mut rest = &content_type[content_type.iter().position(|&byte| byte == b';')? + 1..];
    loop {
        rest = trim(rest);
        let equals = rest.iter().position(|&byte| byte == b'=' || byte == b';');
        let (param_name, after_name) = match equals {
            Some(at) if rest[at] == b'=' => (trim(&rest[..at]), &rest[at + 1..]),
            // A parameter without a value: skip it.
            Some(at) => {
                rest = &rest[at + 1..];
                continue;
            }
            None => return None,
        };
        let (value, after_value) = read_value(trim(after_name))?;
        if param_name.eq_ignore_ascii_case(name.as_bytes()) {
            return Some(value);
        }
        let next = after_value.iter().position(|&byte| byte == b';')?;
        rest = &after_value[next + 1..];
    }
}

/// A parameter value, a token or a quoted string, and what follows it.
fn read_value(text: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    if text.first() == Some(&b'"') {
        let mut value = Vec::new();
        let mut index = 1;
        while index < text.len() {
            match text[index] {
                b'\\' => {
                    value.push(*text.get(index + 1)?);
                    index += 2;
                }
                b'"' => return Some((value, &text[index + 1..])),
                byte => {
                    value.push(byte);
                    index += 1;
                }
            }
        }
        None
    } else {
        let end = text
            .iter()
            .position(|&byte| byte == b';')
            .unwrap_or(text.len());
        let value = trim(&text[..end]);
        (!value.is_empty()).then(|| (value.to_vec(), &text[end..]))
    }
}

pub(crate) fn trim(mut text: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = text {
        text = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = text {
        text = rest;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn essence_is_the_media_type_without_parameters_compared_without_case() {
        assert_eq!(
            essence(b"Application/JSON; charset=utf-8"),
            b"Application/JSON"
        );
        assert_eq!(essence(b"  text/plain  "), b"text/plain");
        assert_eq!(essence(b""), b"");
        assert!(is(b"Application/JSON; charset=utf-8", "application/json"));
        assert!(is(b"text/event-stream", "text/event-stream"));
        assert!(!is(b"application/json-seq", "application/json"));
    }

    #[test]
    fn parameters_are_found_by_name_in_either_form() {
        let value = b"multipart/form-data; charset=utf-8; Boundary=\"a;b \\\"c\"";
        assert_eq!(parameter(value, "boundary").unwrap(), b"a;b \"c");
        assert_eq!(parameter(value, "charset").unwrap(), b"utf-8");
        assert_eq!(
            parameter(b"multipart/form-data;boundary=xyz", "boundary").unwrap(),
            b"xyz"
        );
    }

    #[test]
    fn absent_or_broken_parameters_are_none() {
        assert_eq!(parameter(b"multipart/form-data", "boundary"), None);
        assert_eq!(
            parameter(b"multipart/form-data; boundary=", "boundary"),
            None
        );
        assert_eq!(
            parameter(b"multipart/form-data; boundary=\"open", "boundary"),
            None
        );
        assert_eq!(
            parameter(b"x/y; flag; boundary=b", "boundary").unwrap(),
            b"b"
        );
    }
}
