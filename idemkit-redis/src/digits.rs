//! Zero-padded decimal fields, as a record stores its numbers (see the layout at the top
//! of `scripts/library.lua`), written without the formatting machinery: every claim and
//! completion writes several, and `format!` costs more than the rest of building them.

/// Zeros to pad a field wider than [`Padded`] holds with, a slice at a time.
const ZEROS: &str = "0000000000000000000000000000000000000000";

/// The two decimal digits of every number below 100.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The most digits a [`Padded`] holds: a `u64`'s.
const MAX_DIGITS: usize = 20;

/// A number's decimal digits zero-padded to a width, on the stack: a record's number
/// field, written into a value or a command without an allocation of its own.
pub(crate) struct Padded {
    digits: [u8; MAX_DIGITS],
    start: usize,
}

impl Padded {
    /// `number` zero-padded on the left to `width` digits, at most [`MAX_DIGITS`] (a
    /// number with more digits than `width` is written whole).
    pub(crate) fn new(number: u64, width: usize) -> Padded {
        debug_assert!(width <= MAX_DIGITS, "{width} digits");
        let mut digits = [b'0'; MAX_DIGITS];
        let mut at = MAX_DIGITS;
        let mut rest = number;
        // Two digits a step, from a table.
        while rest >= 100 {
            let pair = 2 * (rest % 100) as usize;
            rest /= 100;
            at -= 2;
            digits[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        }
        if rest >= 10 {
            let pair = 2 * rest as usize;
            at -= 2;
            digits[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        } else {
            at -= 1;
            digits[at] = b'0' + rest as u8;
        }
        Padded {
            digits,
            start: at.min(MAX_DIGITS - width.min(MAX_DIGITS)),
        }
    }

    /// The digits.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }

    /// The digits as text.
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).expect("decimal digits are ASCII")
    }
}

/// Appends `number` to `out` as decimal digits, zero-padded on the left to `width` (a
/// number with more digits is written whole, as `format!("{number:0width$}")` writes it).
pub(crate) fn push_padded(out: &mut String, number: u64, width: usize) {
    let field = Padded::new(number, width.min(MAX_DIGITS));
    // Only a field wider than a `Padded` has zeros left to write.
    let mut zeros = width.saturating_sub(field.as_bytes().len());
    while zeros > 0 {
        let slice = zeros.min(ZEROS.len());
        out.push_str(&ZEROS[..slice]);
        zeros -= slice;
    }
    out.push_str(field.as_str());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `number` zero-padded to `width` digits, as [`push_padded`] writes it.
    fn padded(number: u64, width: usize) -> String {
        let mut out = String::with_capacity(width.max(20));
        push_padded(&mut out, number, width);
        out
    }

    #[test]
    fn numbers_are_written_as_format_writes_them() {
        let numbers = [
            0,
            1,
            9,
            10,
            99,
            100,
            999,
            1_000,
            123_456_789,
            u64::from(u32::MAX),
            1_000_000_000_000_000,
            u64::MAX,
        ];
        for number in numbers {
            for width in [0, 1, 3, 10, 16, 20, 35, 40, 41, 100] {
                assert_eq!(
                    padded(number, width),
                    format!("{number:0width$}"),
                    "{number} to {width}"
                );
            }
        }
        for number in numbers {
            for width in 0..=MAX_DIGITS {
                assert_eq!(
                    Padded::new(number, width).as_str(),
                    format!("{number:0width$}"),
                    "{number} to {width}"
                );
            }
        }
        let mut out = String::from("ik");
        push_padded(&mut out, 42, 4);
        push_padded(&mut out, 7, 1);
        assert_eq!(out, "ik00427");
    }
}
