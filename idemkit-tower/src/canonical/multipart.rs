//! The canonical form of a `multipart/form-data` body: its parts sorted, each part
//! named by what says what it is (its field name, its file names, its `Content-Type`)
//! and its content replaced by its SHA-256, so that the order in which a client wrote
//! independent fields does not change a fingerprint, while two parts that a handler
//! reads differently never agree.

use sha2::{Digest, Sha256};

use super::media_type;

/// One field of a form: what its headers say it is, and its content.
struct Part<'a> {
    /// The `name` of its `Content-Disposition`.
    name: Vec<u8>,
    /// Its `filename`, if any.
    filename: Option<Vec<u8>>,
    /// Its `filename*` (RFC 6266's encoded file name), if any, as sent.
    filename_ext: Option<Vec<u8>>,
    /// Its `Content-Type` header, trimmed, if any.
    content_type: Option<Vec<u8>>,
    content: &'a [u8],
}

impl Part<'_> {
    /// What the canonical form writes of this part, in order: everything but the
    /// content, then the content's digest.
    fn fields(&self) -> [Option<&[u8]>; 4] {
        [
            Some(&self.name),
            self.filename.as_deref(),
            self.filename_ext.as_deref(),
            self.content_type.as_deref(),
        ]
    }
}

/// The canonical form of a multipart body split by `boundary`; `None` when the body is
/// not well-formed multipart, or a part repeats its `Content-Disposition` or
/// `Content-Type` header (the caller then uses the raw bytes).
///
/// The form is, for each part sorted by name, file name, encoded file name, content
/// type, then content: the name, then for each of the file name, the encoded file name
/// (`filename*`) and the part's `Content-Type` a presence byte and the value, then the
/// 32-byte SHA-256 of the content; every value is prefixed by its length, so that no
/// two lists of parts share a form.
pub(crate) fn canonical_multipart(body: &[u8], boundary: &[u8]) -> Option<Vec<u8>> {
    if boundary.is_empty() || boundary.len() > 70 {
        return None;
    }
    let mut parts = split_parts(body, boundary)?;
    parts.sort_unstable_by(|a, b| (a.fields(), a.content).cmp(&(b.fields(), b.content)));
    let mut out = Vec::with_capacity(parts.len() * 80);
    for part in &parts {
        push_prefixed(&part.name, &mut out);
        for field in &part.fields()[1..] {
            match field {
                Some(value) => {
                    out.push(1);
                    push_prefixed(value, &mut out);
                }
                None => out.push(0),
            }
        }
        out.extend_from_slice(&Sha256::digest(part.content));
    }
    Some(out)
}

fn push_prefixed(field: &[u8], out: &mut Vec<u8>) {
    // Fields come from a body under the request cap, far below 4 GiB.
    let len = u32::try_from(field.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(field);
}

/// The parts between the first delimiter line and the closing one.
fn split_parts<'a>(body: &'a [u8], boundary: &[u8]) -> Option<Vec<Part<'a>>> {
    let mut delimiter = b"\r\n--".to_vec();
    delimiter.extend_from_slice(boundary);
    // The first delimiter may open the body, without the line break before it.
    let mut position = if body.starts_with(&delimiter[2..]) {
        delimiter.len() - 2
    } else {
        find(body, &delimiter)? + delimiter.len()
    };
    let mut parts = Vec::new();
    loop {
        let rest = &body[position..];
        if rest.starts_with(b"--") {
            return Some(parts);
        }
        // Transport padding, then the end of the delimiter line.
        let padding = rest
            .iter()
            .take_while(|&&byte| byte == b' ' || byte == b'\t')
            .count();
        if !rest[padding..].starts_with(b"\r\n") {
            return None;
        }
        let start = position + padding + 2;
        let length = find(&body[start..], &delimiter)?;
        parts.push(parse_part(&body[start..start + length])?);
        position = start + length + delimiter.len();
    }
}

/// A part: header lines, an empty line, the content.
fn parse_part(part: &[u8]) -> Option<Part<'_>> {
    let (headers, content) = if let Some(content) = part.strip_prefix(b"\r\n") {
        (&b""[..], content)
    } else {
        let end = find(part, b"\r\n\r\n")?;
        (&part[..end], &part[end + 4..])
    };
    let mut disposition = None;
    let mut content_type = None;
    for line in headers.split(|&byte| byte == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&byte| byte == b':')?;
        let name = media_type::trim(&line[..colon]);
        let value = &line[colon + 1..];
        // A repeated header could be read either way: no canonical form.
        if name.eq_ignore_ascii_case(b"content-disposition") {
            if disposition.replace(value).is_some() {
                return None;
            }
        } else if name.eq_ignore_ascii_case(b"content-type")
            && content_type.replace(media_type::trim(value)).is_some()
        {
            return None;
        }
    }
    let disposition = disposition?;
    if !media_type::is(disposition, "form-data") {
        return None;
    }
    Some(Part {
        name: media_type::parameter(disposition, "name")?,
        filename: media_type::parameter(disposition, "filename"),
        filename_ext: media_type::parameter(disposition, "filename*"),
        content_type: content_type.map(<[u8]>::to_vec),
        content,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(parts: &[(&str, Option<&str>, &str)]) -> Vec<u8> {
        let mut body = b"preamble\r\n".to_vec();
        for (name, filename, content) in parts {
            body.extend_from_slice(b"--XyZ\r\nContent-Disposition: form-data; name=\"");
            body.extend_from_slice(name.as_bytes());
            body.push(b'"');
            if let Some(filename) = filename {
                body.extend_from_slice(b"; filename=\"");
                body.extend_from_slice(filename.as_bytes());
                body.push(b'"');
            }
            body.extend_from_slice(b"\r\nContent-Type: text/plain\r\n\r\n");
            body.extend_from_slice(content.as_bytes());
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b"--XyZ--\r\nepilogue");
        body
    }

    fn canonical(parts: &[(&str, Option<&str>, &str)]) -> Vec<u8> {
        canonical_multipart(&form(parts), b"XyZ").unwrap()
    }

    #[test]
    fn field_order_does_not_matter() {
        assert_eq!(
            canonical(&[("a", None, "1"), ("b", None, "2")]),
            canonical(&[("b", None, "2"), ("a", None, "1")])
        );
    }

    #[test]
    fn names_contents_and_file_names_do_matter() {
        let base = canonical(&[("a", None, "1")]);
        assert_ne!(base, canonical(&[("a", None, "2")]));
        assert_ne!(base, canonical(&[("b", None, "1")]));
        assert_ne!(base, canonical(&[("a", Some("f.txt"), "1")]));
        assert_ne!(base, canonical(&[("a", None, "1"), ("a", None, "1")]));
        assert_ne!(
            canonical(&[("a", Some("x"), "1")]),
            canonical(&[("a", Some("y"), "1")])
        );
    }

    #[test]
    fn content_may_hold_line_breaks_and_the_boundary_off_a_line_start() {
        // The delimiter is a line break, two dashes and the boundary; anything short of
        // that is content.
        let content = "line\r\n-XyZ\r\nx--XyZ\r\nmore";
        let canonical_form = canonical(&[("a", None, content)]);
        let digest = Sha256::digest(content.as_bytes());
        assert!(canonical_form.ends_with(digest.as_slice()));
    }

    /// A one-part form whose part has these header lines.
    fn part_with(headers: &str) -> Vec<u8> {
        let body = format!("--b\r\n{headers}\r\n\r\nsame content\r\n--b--");
        canonical_multipart(body.as_bytes(), b"b").unwrap()
    }

    #[test]
    fn a_parts_content_type_and_file_names_are_part_of_the_form() {
        let plain = part_with("Content-Disposition: form-data; name=f");
        let typed = part_with("Content-Disposition: form-data; name=f\r\nContent-Type: text/plain");
        let json =
            part_with("Content-Disposition: form-data; name=f\r\nContent-Type: application/json");
        let named = part_with("Content-Disposition: form-data; name=f; filename=a.txt");
        let other_name = part_with("Content-Disposition: form-data; name=f; filename=b.txt");
        let encoded = part_with("Content-Disposition: form-data; name=f; filename*=UTF-8''a.txt");
        let encoded_other =
            part_with("Content-Disposition: form-data; name=f; filename*=UTF-8''%E2%82%AC.txt");
        let both = part_with(
            "Content-Disposition: form-data; name=f; filename=a.txt; filename*=UTF-8''a.txt",
        );
        let all = [
            &plain,
            &typed,
            &json,
            &named,
            &other_name,
            &encoded,
            &encoded_other,
            &both,
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // Header names are matched without regard to case; the same part, the same form.
        assert_eq!(
            typed,
            part_with("content-disposition: form-data; name=f\r\ncontent-type:  text/plain ")
        );
        // A value cannot slide from one field into the next.
        assert_ne!(
            part_with("Content-Disposition: form-data; name=f; filename=x"),
            part_with("Content-Disposition: form-data; name=f\r\nContent-Type: x")
        );
    }

    #[test]
    fn a_part_that_repeats_a_header_that_says_what_it_is_has_no_form() {
        for headers in [
            "Content-Disposition: form-data; name=f\r\nContent-Disposition: form-data; name=g",
            "Content-Disposition: form-data; name=f\r\nContent-Type: a/b\r\nContent-Type: c/d",
        ] {
            let body = format!("--b\r\n{headers}\r\n\r\nv\r\n--b--");
            assert_eq!(
                canonical_multipart(body.as_bytes(), b"b"),
                None,
                "{headers}"
            );
        }
    }

    #[test]
    fn the_body_may_open_with_the_delimiter() {
        let body = b"--b\r\nContent-Disposition: form-data; name=x\r\n\r\nv\r\n--b--";
        assert!(canonical_multipart(body, b"b").is_some());
        // No headers at all: the part has no name, so the body is not a form.
        assert_eq!(canonical_multipart(b"--b\r\n\r\nv\r\n--b--", b"b"), None);
    }

    #[test]
    fn malformed_bodies_have_no_canonical_form() {
        assert_eq!(canonical_multipart(b"no delimiter at all", b"b"), None);
        assert_eq!(
            canonical_multipart(
                b"--b\r\nContent-Disposition: form-data; name=x\r\n\r\nv",
                b"b"
            ),
            None,
            "no closing delimiter"
        );
        assert_eq!(
            canonical_multipart(b"--bjunk\r\n\r\n--b--", b"b"),
            None,
            "text after the delimiter"
        );
        assert_eq!(
            canonical_multipart(
                b"--b\r\nContent-Disposition: attachment; name=x\r\n\r\nv\r\n--b--",
                b"b"
            ),
            None,
            "not form-data"
        );
        assert_eq!(canonical_multipart(b"--\r\n", b""), None, "empty boundary");
    }
}
