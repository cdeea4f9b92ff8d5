//! The stored form of a response's headers: every pair in order, repeated names kept.
//!
//! Each pair is the name's length (4 bytes, big-endian), the name (UTF-8), the value's
//! length, the value (any bytes). No headers is the empty string. The client encodes and
//! decodes; the scripts store the bytes as they are.

use bytes::{BufMut, Bytes};

/// Stored header bytes that do not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MalformedHeaders;

/// The stored form of `headers`.
pub(crate) fn encode<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in headers {
        put_part(&mut out, name.as_bytes());
        put_part(&mut out, value);
    }
    out
}

fn put_part(out: &mut Vec<u8>, part: &[u8]) {
    // A header longer than 4 GiB cannot be held by Redis either (512 MB per value).
    out.put_u32(part.len() as u32);
    out.put_slice(part);
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
