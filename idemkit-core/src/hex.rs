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
    for (pair, &byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&PAIRS[usize::from(byte)]);
    }
    std::str::from_utf8(out).expect("hex digits are ASCII")
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
}
