//! The stored form of a response's headers: one blob, each header as its name's length
//! (4 bytes, big-endian), the name, its value's length and the value. The status and the
//! body have columns of their own, so the body is stored as is, never copied into a
//! larger encoding.

use idemkit_core::Bytes;

/// The headers as one blob.
pub(crate) fn encode_headers(headers: &[(String, Bytes)]) -> Vec<u8> {
    let size = headers
        .iter()
        .map(|(name, value)| 8 + name.len() + value.len())
        .sum();
    let mut blob = Vec::with_capacity(size);
    for (name, value) in headers {
        put(&mut blob, name.as_bytes());
        put(&mut blob, value);
    }
    blob
}

fn put(blob: &mut Vec<u8>, part: &[u8]) {
    // A header longer than 4 GiB cannot reach here: no HTTP stack builds one.
    let len = u32::try_from(part.len()).unwrap_or(u32::MAX);
    blob.extend_from_slice(&len.to_be_bytes());
    blob.extend_from_slice(&part[..len as usize]);
}

/// The headers of a blob [`encode_headers`] wrote; `Err` says what is wrong with one
/// that it did not.
pub(crate) fn decode_headers(mut blob: &[u8]) -> Result<Vec<(String, Bytes)>, String> {
    let mut headers = Vec::new();
    while !blob.is_empty() {
        let name = take(&mut blob)?;
        let name = std::str::from_utf8(name)
            .map_err(|_| "a header name is not UTF-8".to_owned())?
            .to_owned();
        let value = Bytes::copy_from_slice(take(&mut blob)?);
        headers.push((name, value));
    }
    Ok(headers)
}

fn take<'b>(blob: &mut &'b [u8]) -> Result<&'b [u8], String> {
    let (len, rest) = blob
        .split_first_chunk::<4>()
        .ok_or_else(|| "a header length is cut short".to_owned())?;
    let len = u32::from_be_bytes(*len) as usize;
    if rest.len() < len {
        return Err(format!("a header of {len} bytes has {} left", rest.len()));
    }
    let (part, rest) = rest.split_at(len);
    *blob = rest;
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_damage_is_named() {
        let headers = vec![
            ("content-type".to_owned(), Bytes::from_static(b"text/plain")),
            ("x-empty".to_owned(), Bytes::new()),
            ("x-binary".to_owned(), Bytes::from_static(&[0, 255, 10])),
        ];
        let blob = encode_headers(&headers);
        assert_eq!(decode_headers(&blob).unwrap(), headers);
        assert_eq!(decode_headers(&[]).unwrap(), vec![]);
        assert!(decode_headers(&blob[..blob.len() - 1]).is_err());
        assert!(decode_headers(&[0, 0]).is_err());
        assert!(decode_headers(&[0, 0, 0, 1, 0xff, 0, 0, 0, 0]).is_err());
    }
}
