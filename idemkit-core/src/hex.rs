//! Lowercase hex digits, written from a table: the names the executors store under and
//! every claim token are hex text, written on every claim and completion, and the
//! formatting machinery costs several times as much per byte.

/// The two lowercase hex digits of every byte.
const PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0u8; 2]; 256];
    let mut byte = 0;
    while byte < 256 {
        pairs[byte] = [DIGITS[byte >> 4], DIGITS[byte & 0x0f]];
        byte += 1;
    }
    pairs
};

/// `bytes` as lowercase hex digits: `N` bytes give `2 * N` digits, written into `out`,
/// which must hold exactly that many.
pub(crate) fn write_lower<'out, const N: usize>(bytes: &[u8; N], out: &'out mut [u8]) -> &'out str {
    assert_eq!(out.len(), 2 * N, "two hex digits per byte");
    write_pairs(bytes, out);
    std::str::from_utf8(out).expect("hex digits are ASCII")
}

/// The digit pairs of `bytes` into the first `2 * bytes.len()` bytes of `out`.
fn write_pairs(bytes: &[u8], out: &mut [u8]) {
    for (pair, &byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&PAIRS[usize::from(byte)]);
    }
}

/// The 32 bytes that `hex`'s 64 lowercase hex digits stand for, or `None` if `hex` is
/// of another length or holds any other byte (an uppercase digit included).
///
/// Each digit's value is worked out arithmetically, with no table and no branch, and
/// judged once at the end, then the values are paired: the compiler turns both loops
/// into vector instructions.
pub(crate) fn read_lower(hex: &[u8]) -> Option<[u8; 32]> {
    let hex: &[u8; 64] = hex.try_into().ok()?;
    let mut values = [0u8; 64];
    let mut others = 0u8;
    for (value, &byte) in values.iter_mut().zip(hex) {
        let (digit, other) = value_of(byte);
        *value = digit;
        others |= other;
    }
    if others != 0 {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (byte, pair) in bytes.iter_mut().zip(values.chunks_exact(2)) {
        *byte = (pair[0] << 4) | pair[1];
    }
    Some(bytes)
}

/// The value of a lowercase hex digit, and 0; or any value, and 1 for any other byte.
fn value_of(byte: u8) -> (u8, u8) {
    let digit = byte.wrapping_sub(b'0');
    let letter = byte.wrapping_sub(b'a');
    let (is_digit, is_letter) = (digit < 10, letter < 6);
    let value = if is_digit {
        digit
    } else {
        letter.wrapping_add(10)
    };
    (value & 0x0f, u8::from(!(is_digit | is_letter)))
}

/// Whether `hex` is the 64 lowercase hex digits of `bytes`: written out on the stack from
/// the table and compared whole, which costs less than comparing pair by pair. The first
/// byte's pair is compared first: most names a store compares are not the one it looks
/// for (it tries the record it wrote last before its table), and that pair tells them
/// apart but once in 256 without writing out the rest.
pub(crate) fn is_lower_of(bytes: &[u8; 32], hex: &[u8]) -> bool {
    hex.len() == 64 && hex[..2] == PAIRS[usize::from(bytes[0])] && {
        let mut digits = [0u8; 64];
        write_pairs(bytes, &mut digits);
        digits[..] == *hex
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_is_written_as_its_two_lowercase_hex_digits() {
        for byte in 0..=255u8 {
            let mut out = [0u8; 2];
            assert_eq!(write_lower(&[byte], &mut out), format!("{byte:02x}"));
        }
        let bytes: [u8; 32] = std::array::from_fn(|i| (i * 8 + 7) as u8);
        let expected: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(write_lower(&bytes, &mut [0u8; 64]), expected);
    }

    #[test]
    fn lowercase_digits_read_back_to_their_bytes_and_nothing_else_does() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i * 8 + 7) as u8);
        let digits = write_lower(&bytes, &mut [0u8; 64]).to_owned();
        assert_eq!(read_lower(digits.as_bytes()), Some(bytes));
        assert!(is_lower_of(&bytes, digits.as_bytes()));
        for byte in 0..=255u8 {
            let value = b"0123456789abcdef".iter().position(|&digit| digit == byte);
            // The byte as the last digit, then as the first.
            let mut last = digits.clone().into_bytes();
            last[63] = byte;
            let mut first = digits.clone().into_bytes();
            first[0] = byte;
            let (mut low, mut high) = (bytes, bytes);
            if let Some(value) = value {
                low[31] = (low[31] & 0xf0) | value as u8;
                high[0] = (high[0] & 0x0f) | ((value as u8) << 4);
            }
            assert_eq!(read_lower(&last), value.map(|_| low), "{byte:#04x}");
            assert_eq!(read_lower(&first), value.map(|_| high), "{byte:#04x}");
        }
        let upper = digits.to_ascii_uppercase();
        assert_eq!(read_lower(upper.as_bytes()), None, "uppercase digits");
        assert!(!is_lower_of(&bytes, upper.as_bytes()));
        assert_eq!(read_lower(&digits.as_bytes()[..62]), None, "too short");
        assert!(!is_lower_of(&bytes, &digits.as_bytes()[..62]));
        let mut other = digits.clone().into_bytes();
        other[63] = if other[63] == b'0' { b'1' } else { b'0' };
        assert!(!is_lower_of(&bytes, &other), "one digit off");
    }
}
