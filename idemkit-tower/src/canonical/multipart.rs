//! The canonical form of a `multipart/form-data` body: its parts sorted by field name,
//! each part's content replaced by its SHA-256, so that the order in which a client
//! wrote independent fields does not change a fingerprint.

use sha2::{Digest, Sha256};

use super::media_type;

/// One field of a form.
struct Part<'a> {
    name: Vec<u8>,
    filename: Option<Vec<u8>>,
    content: &'a [u8],
}

/// The canonical form of a multipart body split by `boundary`; `None` when the body is
/// not well-formed multipart (the caller then uses the raw bytes).
///
/// The form is, for each part sorted by name, then file name, then content: the name,
/// the file name (if any) and the 32-byte SHA-256 of the content, each field prefixed
/// by its length so that no two lists of parts share a form.
pub(crate) fn canonical_multipart(body: &[u8], boundary: &[u8]) -> Option<Vec<u8>> {
    if boundary.is_empty() || boundary.len() > 70 {
        return None;
    }
    let mut parts = split_parts(body, boundary)?;
    parts.sort_unstable_by(|a, b| {
        (&a.name, &a.filename, a.content).cmp(&(&b.name, &b.filename, b.content))
    });
    let mut out = Vec::with_capacity(parts.len() * 80);
    for part in &parts {
        push_prefixed(&part.name, &mut out);
        match &part.filename {
            Some(filename) => {
                out.push(1);
                push_prefixed(filename, &mut out);
            }
            None => out.push(0),
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
    for line in headers.split(|&byte| byte == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&byte| byte == b':')?;
        if media_type::trim(&line[..colon]).eq_ignore_ascii_case(b"content-disposition") {
            disposition = Some(&line[colon + 1..]);
        }
    }
    let disposition = disposition?;
    if !media_type::is(disposition, "form-data") {
        return None;
    }
    Some(Part {
        name: media_type::parameter(disposition, "name")?,
        filename: media_type::parameter(disposition, "filename"),
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
        assert_eq!(canonical_form.len(), 4 + 1 + 1 + 32);
        let digest = Sha256::digest(content.as_bytes());
        assert_eq!(&canonical_form[6..], digest.as_slice());
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
