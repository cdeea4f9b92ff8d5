//! Zero-padded decimal fields, as a record stores its numbers (see the layout at the top
//! of `scripts/library.lua`), written without the formatting machinery: every claim and
//! completion writes several, and `format!` costs more than the rest of building them.

/// Appends `number` to `out` as decimal digits, zero-padded on the left to `width` (a
/// number with more digits is written whole, as `format!("{number:0width$}")` writes it).
pub(crate) fn push_padded(out: &mut String, number: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut at = digits.len();
    let mut rest = number;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for _ in digits.len() - at..width {
        out.push('0');
    }
    out.push_str(std::str::from_utf8(&digits[at..]).expect("decimal digits are ASCII"));
}

/// `number` zero-padded to `width` digits, as [`push_padded`] writes it.
pub(crate) fn padded(number: u64, width: usize) -> String {
    let mut out = String::with_capacity(width.max(20));
    push_padded(&mut out, number, width);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_format_writes_them() {
        let numbers = [0, 1, 9, 10, 999, 1_000, 123_456_789, u64::from(u32::MAX), u64::MAX];
        for number in numbers {
            for width in [0, 1, 3, 10, 16, 20, 35] {
                assert_eq!(
                    padded(number, width),
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
