//! The stored form of a response's headers: every pair in order, repeated names kept.
//!
//! Each pair is the name's length (4 bytes, big-endian), the name (UTF-8), the value's
//! length, the value (any bytes). No headers is the empty string. The client encodes and
//! decodes; the scripts store the bytes as they are.

use std::io::Write;

use bytes::Bytes;
use redis::{RedisWrite, ToRedisArgs};

/// Stored header bytes that do not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MalformedHeaders;

/// The stored form of `headers` (the tests' encoder: a completion writes it straight
/// into its command, [`HeadersAndBody`]).
#[cfg(test)]
pub(crate) fn encode<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    write_stored(
        headers
            .into_iter()
            .map(|(name, value)| (name.as_bytes(), value)),
        |bytes| out.extend_from_slice(bytes),
    );
    out
}

/// Writes the stored form of `headers`, a piece at a time, with `write`.
fn write_stored<'a>(
    headers: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    mut write: impl FnMut(&[u8]),
) {
    for (name, value) in headers {
        for part in [name, value] {
            // A header longer than 4 GiB cannot be held by Redis either (512 MB per
            // value).
            write(&(part.len() as u32).to_be_bytes());
            write(part);
        }
    }
}

/// The length of the stored form of `headers`.
pub(crate) fn encoded_len(headers: &[(String, Bytes)]) -> usize {
    headers
        .iter()
        .map(|(name, value)| 8 + name.len() + value.len())
        .sum()
}

/// One command argument: the stored form of `headers` followed by `body`, as a
/// completion sends them, written straight into the command (no buffer of its own).
pub(crate) struct HeadersAndBody<'a> {
    /// The response's headers.
    pub(crate) headers: &'a [(String, Bytes)],
    /// The response's body.
    pub(crate) body: &'a [u8],
}

impl ToRedisArgs for HeadersAndBody<'_> {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        let mut arg = out.writer_for_next_arg();
        let mut write = |bytes: &[u8]| {
            arg.write_all(bytes)
                .expect("a command's arguments are written to memory");
        };
        write_stored(
            self.headers
                .iter()
                .map(|(name, value)| (name.as_bytes(), &value[..])),
            &mut write,
        );
        write(self.body);
    }
}

/// The headers stored in `blob`; values share its memory.
pub(crate) fn decode(blob: &Bytes) -> Result<Vec<(String, Bytes)>, MalformedHeaders> {
    let mut headers = Vec::new();
    let mut at = 0;
    while at < blob.len() {
        let name = take_part(blob, &mut at)?;
        let value = take_part(blob, &mut at)?;
        let name = String::from_utf8(name.to_vec()).map_err(|_| MalformedHeaders)?;
        headers.push((name, value));
    }
    Ok(headers)
}

fn take_part(blob: &Bytes, at: &mut usize) -> Result<Bytes, MalformedHeaders> {
    let length_end = at.checked_add(4).ok_or(MalformedHeaders)?;
    let length = blob.get(*at..length_end).ok_or(MalformedHeaders)?;
    let length = u32::from_be_bytes(length.try_into().map_err(|_| MalformedHeaders)?) as usize;
    let end = length_end.checked_add(length).ok_or(MalformedHeaders)?;
    if end > blob.len() {
        return Err(MalformedHeaders);
    }
    *at = end;
    Ok(blob.slice(length_end..end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(headers: &[(&str, &[u8])]) -> Vec<(String, Bytes)> {
        let blob = Bytes::from(encode(headers.iter().copied()));
        decode(&blob).unwrap()
    }

    #[test]
    fn each_part_is_its_length_in_four_bytes_big_endian_then_its_bytes() {
        assert_eq!(
            encode([("a", &b"bc"[..]), ("", &b""[..])]),
            b"\0\0\0\x01a\0\0\0\x02bc\0\0\0\0\0\0\0\0"
        );
    }

    #[test]
    fn a_completions_argument_is_the_stored_headers_then_the_body() {
        let headers = vec![
            (
                "content-type".to_string(),
                Bytes::from_static(b"text/plain"),
            ),
            ("x-empty".to_string(), Bytes::new()),
            ("set-cookie".to_string(), Bytes::from_static(b"a=1")),
        ];
        let stored = encode(
            headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_ref())),
        );
        assert_eq!(encoded_len(&headers), stored.len());
        for body in [&b""[..], b"the body"] {
            let arg = HeadersAndBody {
                headers: &headers,
                body,
            };
            assert_eq!(arg.to_redis_args(), [[&stored[..], body].concat()]);
        }
        let none = HeadersAndBody {
            headers: &[],
            body: b"",
        };
        assert_eq!(
            none.to_redis_args(),
            [Vec::<u8>::new()],
            "one empty argument"
        );
    }

    #[test]
    fn repeated_names_order_and_raw_values_survive() {
        let headers: [(&str, &[u8]); 4] = [
            ("set-cookie", b"a=1"),
            ("Set-Cookie", b"b=2"),
            ("set-cookie", b"a=1"),
            ("x-raw", &[0, 255, b'\r', b'\n']),
        ];
        let back = round_trip(&headers);
        assert_eq!(back.len(), 4);
        for ((name, value), (back_name, back_value)) in headers.iter().zip(&back) {
            assert_eq!(name, back_name);
            assert_eq!(value, back_value);
        }
    }

    #[test]
    fn no_headers_is_the_empty_string_and_empty_parts_survive() {
        assert!(encode([]).is_empty());
        assert!(decode(&Bytes::new()).unwrap().is_empty());
        let back = round_trip(&[("", b"")]);
        assert_eq!(back, vec![(String::new(), Bytes::new())]);
    }

    #[test]
    fn damaged_bytes_do_not_decode() {
        let good = encode([("a", &b"b"[..])]);
        for cut in 1..good.len() {
            assert_eq!(
                decode(&Bytes::copy_from_slice(&good[..cut])),
                Err(MalformedHeaders),
                "cut at {cut}"
            );
        }
        let mut huge = good.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(decode(&Bytes::from(huge)), Err(MalformedHeaders));
        let not_utf8 = encode([(std::str::from_utf8(b"ok").unwrap(), &b"v"[..])]);
        let mut bad = not_utf8.clone();
        bad[4] = 0xff;
        assert_eq!(decode(&Bytes::from(bad)), Err(MalformedHeaders));
        assert_eq!(
            decode(&Bytes::from_static(b"garbage")),
            Err(MalformedHeaders)
        );
    }
}
