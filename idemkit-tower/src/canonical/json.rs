//! The canonical form of a JSON body: parsed, then written compactly with every object's
//! members sorted by name, so that member order and insignificant whitespace do not
//! change a fingerprint, while every number keeps its exact decimal value.
//!
//! The parser is this crate's own, not a general JSON library's: a fingerprint must see
//! every digit of a number (a library reads numbers into `f64` or 64-bit integers, and
//! two numbers that round alike would fingerprint alike) and every member of an object
//! (a library keeps one of two members that share a name).

use std::borrow::Cow;

/// How deep arrays and objects may nest; deeper bodies have no canonical form.
pub(crate) const MAX_DEPTH: usize = 128;

/// The most digits a number's exponent may have once its leading zeros are dropped. Up
/// to this the exponent is held exactly in an `i128` (with room for the shift by the
/// number's own digit count); a longer one is not normalized, and its body has no
/// canonical form (it is fingerprinted by its raw bytes, so it matches only itself).
const MAX_EXPONENT_DIGITS: usize = 36;

/// `body` parsed as JSON and written back in canonical form; `None` if `body` is not
/// JSON (RFC 8259: UTF-8, no leading zeros, no lone surrogates, no trailing text), nests
/// deeper than 128 levels, has an object that repeats a member name, or holds a number
/// whose exponent has more than 36 digits. The caller then fingerprints the raw bytes.
///
/// The canonical form:
///
/// - objects have their members sorted by name (bytewise, after unescaping), with no
///   whitespace; a name repeated in one object has no canonical form at all, since a
///   parser may keep either member and `{"a":1,"a":2}` must never match `{"a":2}`;
/// - strings are compared after unescaping (`"\u0041"` is `"A"`) and written as UTF-8;
/// - an integer (a number with neither fraction nor exponent) is written with all its
///   digits, however many: `-0` is `0`;
/// - any other number is written as its exact decimal value, `0.DIGITSeN` with no
///   leading or trailing zero in `DIGITS` (zero is `0.0`): `1.50`, `15e-1` and `0.15e1`
///   agree, `0.1` and `0.10000000000000000001` do not;
/// - an integer and a number written with a fraction or an exponent never agree, even
///   of equal value: `1` and `1.0` differ, as do `100` and `1e2`.
pub(crate) fn canonical_json(body: &[u8]) -> Option<Vec<u8>> {
    let mut parser = Parser {
        input: body,
        at: 0,
        // Room for the body written once more: an object is reordered by writing it
        // again after its end (see `object`), so with a single length every body that
        // holds an object would grow the buffer once.
        out: Vec::with_capacity(body.len().saturating_mul(2)),
        members: Vec::new(),
    };
    parser.skip_whitespace();
    parser.value(0)?;
    parser.skip_whitespace();
    (parser.at == body.len()).then_some(parser.out)
}

/// A recursive descent over the body that writes the canonical form as it goes.
///
/// It allocates per body, not per value: names without escapes are borrowed from the
/// input, and every object shares `members`.
struct Parser<'a> {
    input: &'a [u8],
    at: usize,
    out: Vec<u8>,
    /// The members of the objects being read, innermost last: each object's are above
    /// those of the objects that hold it, and are taken off when it is written.
    members: Vec<Member<'a>>,
}

/// One member of an object being read: its name, and where its value was written.
struct Member<'a> {
    name: Cow<'a, str>,
    from: usize,
    to: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.input.get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Consumes `byte` if it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        if next {
            self.at += 1;
        }
        next
    }

    /// One value, nested `depth` levels deep.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => {
                let text = self.string()?;
                write_string(&mut self.out, &text);
                Some(())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if !self.input[self.at..].starts_with(word) {
            return None;
        }
        self.at += word.len();
        self.out.extend_from_slice(word);
        Some(())
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.out.push(b'[');
        self.skip_whitespace();
        if !self.eat(b']') {
            loop {
                self.skip_whitespace();
                self.value(depth)?;
                self.skip_whitespace();
                if self.eat(b']') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
                self.out.push(b',');
            }
        }
        self.out.push(b']');
        Some(())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        // Each member's value is written after the others; then the object is written
        // after them, its members in order of their names, and moved to where it
        // started.
        let start = self.out.len();
        let first = self.members.len();
        self.skip_whitespace();
        if !self.eat(b'}') {
            loop {
                self.skip_whitespace();
                if self.peek() != Some(b'"') {
                    return None;
                }
                let name = self.string()?;
                self.skip_whitespace();
                if !self.eat(b':') {
                    return None;
                }
                self.skip_whitespace();
                let from = self.out.len();
                self.value(depth)?;
                let to = self.out.len();
                self.members.push(Member { name, from, to });
                self.skip_whitespace();
                if self.eat(b'}') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        let members = &mut self.members[first..];
        members.sort_unstable_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        if members.windows(2).any(|pair| pair[0].name == pair[1].name) {
            return None;
        }
        let values_end = self.out.len();
        self.out.push(b'{');
        for (index, member) in members.iter().enumerate() {
            if index > 0 {
                self.out.push(b',');
            }
            write_string(&mut self.out, &member.name);
            self.out.push(b':');
            self.out.extend_from_within(member.from..member.to);
        }
        self.out.push(b'}');
        self.out.copy_within(values_end.., start);
        self.out.truncate(start + (self.out.len() - values_end));
        self.members.truncate(first);
        Some(())
    }

    /// A string, its opening quote next, unescaped: borrowed from the input unless it
    /// holds an escape.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.at += 1;
        let input = self.input;
        let mut text = Cow::Borrowed("");
        loop {
            let run = input[self.at..]
                .iter()
                .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
            let chunk = std::str::from_utf8(&input[self.at..self.at + run]).ok()?;
            if text.is_empty() {
                text = Cow::Borrowed(chunk);
            } else {
                text.to_mut().push_str(chunk);
            }
            self.at += run;
            match input[self.at] {
                b'"' => {
                    self.at += 1;
                    return Some(text);
                }
                b'\\' => {
                    self.at += 1;
                    let escaped = self.escape()?;
                    text.to_mut().push(escaped);
                }
                // A raw control character is not allowed in a JSON string.
                _ => return None,
            }
        }
    }

    /// The character of an escape, its backslash consumed.
    fn escape(&mut self) -> Option<char> {
        let byte = self.peek()?;
        self.at += 1;
        Some(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                match first {
                    0xD800..=0xDBFF => {
                        // A high surrogate must be followed by an escaped low one.
                        if !self.input[self.at..].starts_with(b"\\u") {
                            return None;
                        }
                        self.at += 2;
                        let second = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&second) {
                            return None;
                        }
                        let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                        char::from_u32(code)?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(first)?,
                }
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.input.get(self.at..self.at + 4)?;
        let mut value = 0;
        for &digit in digits {
            value = value * 16 + char::from(digit).to_digit(16)?;
        }
        self.at += 4;
        Some(value)
    }

    /// A number, written in canonical form (see [`canonical_json`]).
    fn number(&mut self) -> Option<()> {
        let negative = self.eat(b'-');
        let integer = self.digits();
        // No leading zeros: `0` alone, or a digit from 1 to 9 first.
        if integer.is_empty() || (integer.len() > 1 && integer[0] == b'0') {
            return None;
        }
        let fraction = if self.eat(b'.') {
            let fraction = self.digits();
            if fraction.is_empty() {
                return None;
            }
            Some(fraction)
        } else {
            None
        };
        let exponent = if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            let exponent_negative = if self.eat(b'-') {
                true
            } else {
                self.eat(b'+');
                false
            };
            let digits = self.digits();
            if digits.is_empty() {
                return None;
            }
            Some(parse_exponent(exponent_negative, digits)?)
        } else {
            None
        };
        match (fraction, exponent) {
            (None, None) => {
                if negative && integer != b"0" {
                    self.out.push(b'-');
                }
                self.out.extend_from_slice(integer);
            }
            (fraction, exponent) => {
                write_decimal(
                    &mut self.out,
                    negative,
                    integer,
                    fraction.unwrap_or(b""),
                    exponent.unwrap_or(0),
                );
            }
        }
        Some(())
    }

    /// The run of ASCII digits that comes next (possibly empty).
    fn digits(&mut self) -> &'a [u8] {
        let input = self.input;
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        &input[start..self.at]
    }
}

/// An exponent's value; `None` past [`MAX_EXPONENT_DIGITS`] significant digits, so that
/// a hostile `1e999...9` costs neither memory nor time.
fn parse_exponent(negative: bool, digits: &[u8]) -> Option<i128> {
    let significant = &digits[digits.iter().take_while(|&&d| d == b'0').count()..];
    if significant.len() > MAX_EXPONENT_DIGITS {
        return None;
    }
    let value = significant
        .iter()
        .fold(0i128, |value, &digit| value * 10 + i128::from(digit - b'0'));
    Some(if negative { -value } else { value })
}

/// Writes `±INTEGER.FRACTION × 10^exponent` as `0.DIGITSeN`: the significant digits,
/// without leading or trailing zeros, and the exponent that puts the point before them.
/// Zero (of either sign) is `0.0`.
fn write_decimal(
    out: &mut Vec<u8>,
    negative: bool,
    integer: &[u8],
    fraction: &[u8],
    exponent: i128,
) {
    let all = || integer.iter().chain(fraction).copied();
    let leading = all().take_while(|&digit| digit == b'0').count();
    let total = integer.len() + fraction.len();
    if leading == total {
        out.extend_from_slice(b"0.0");
        return;
    }
    let trailing = all().rev().take_while(|&digit| digit == b'0').count();
    // The value is 0.(all digits) × 10^(exponent + integer length); dropping the leading
    // zeros moves the point right past them.
    let lengths = i128::try_from(integer.len()).unwrap_or(i128::MAX) - leading as i128;
    let point = exponent + lengths;
    if negative {
        out.push(b'-');
    }
    out.extend_from_slice(b"0.");
    out.extend(all().skip(leading).take(total - leading - trailing));
    out.push(b'e');
    out.extend_from_slice(point.to_string().as_bytes());
}

/// Writes a string as a JSON string: UTF-8, with `"`, `\` and control characters
/// escaped. One spelling per string, so equal strings write equal bytes.
fn write_string(out: &mut Vec<u8>, text: &str) {
    let needs_escape = |byte: u8| byte < 0x20 || byte == b'"' || byte == b'\\';
    if text.bytes().any(needs_escape) {
        // Serializing a `&str` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(out, text);
    } else {
        // What serde_json writes for such a string: its bytes, between quotes.
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        String::from_utf8(canonical_json(text.as_bytes()).unwrap()).unwrap()
    }

    fn alike(a: &str, b: &str) -> bool {
        canonical_json(a.as_bytes()).unwrap() == canonical_json(b.as_bytes()).unwrap()
    }

    /// Any JSON value without floats (their text is not one spelling) and with unique
    /// names (serde_json's map keeps one per name).
    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    /// `value` as JSON text, each object's members in reverse order of their names if
    /// `reversed`, with spaces around every token if `spaced`.
    fn written(value: &serde_json::Value, reversed: bool, spaced: bool) -> String {
        use serde_json::Value;
        let gap = if spaced { " " } else { "" };
        match value {
            Value::Array(items) => {
                let items: Vec<_> = items
                    .iter()
                    .map(|item| written(item, reversed, spaced))
                    .collect();
                format!("[{gap}{}{gap}]", items.join(&format!("{gap},{gap}")))
            }
            Value::Object(members) => {
                let mut members: Vec<_> = members
                    .iter()
                    .map(|(name, value)| {
                        let name = serde_json::to_string(name).unwrap();
                        format!("{name}{gap}:{gap}{}", written(value, reversed, spaced))
                    })
                    .collect();
                if reversed {
                    members.reverse();
                }
                format!("{{{gap}{}{gap}}}", members.join(&format!("{gap},{gap}")))
            }
            leaf => serde_json::to_string(leaf).unwrap(),
        }
    }

    proptest::proptest! {
        #[test]
        fn a_value_has_one_canonical_form_whatever_its_order_and_spacing(value in json_value()) {
            let canonical = canonical_json(written(&value, false, false).as_bytes()).unwrap();
            let other = written(&value, true, true);
            proptest::prop_assert_eq!(&canonical_json(other.as_bytes()).unwrap(), &canonical);
            // The canonical form is its own canonical form, and means the same value.
            proptest::prop_assert_eq!(&canonical_json(&canonical).unwrap(), &canonical);
            let reread: serde_json::Value = serde_json::from_slice(&canonical).unwrap();
            proptest::prop_assert_eq!(reread, value);
        }

        #[test]
        fn any_string_is_written_as_serde_json_writes_it(text in proptest::prelude::any::<String>()) {
            let mut ours = Vec::new();
            write_string(&mut ours, &text);
            proptest::prop_assert_eq!(ours, serde_json::to_vec(&text).unwrap());
        }
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        for text in [
            "",
            "plain",
            "caf\u{e9} \u{1f600}",
            "q\"b\\",
            "tab\tnl\n\u{1}",
            "/",
        ] {
            let mut ours = Vec::new();
            write_string(&mut ours, text);
            assert_eq!(ours, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn objects_in_objects_and_arrays_are_each_put_in_order() {
        // Every object shares the parser's list of members and is reordered in place,
        // so siblings, parents and children must not see each other's members.
        assert_eq!(
            canonical(
                r#"{"z":[{"b":2,"a":1},{"d":{"f":6,"e":5},"c":3}],"y":"\u0041","\u0078":{}}"#
            ),
            r#"{"x":{},"y":"A","z":[{"a":1,"b":2},{"c":3,"d":{"e":5,"f":6}}]}"#
        );
        // A repeated name deep inside has no canonical form, as at the top.
        assert_eq!(canonical_json(br#"{"b":[{"a":1,"a":1}],"a":0}"#), None);
        assert!(alike(
            r#"{"b":{"d":1,"c":[]},"a":"x"}"#,
            r#"{"a":"x","b":{"c":[],"d":1}}"#
        ));
    }

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        assert_eq!(
            canonical(r#"{"b": 1, "a": [1, 2]}"#),
            r#"{"a":[1,2],"b":1}"#
        );
        assert_eq!(
            canonical("{ \"a\" :\n{\"z\":null, \"y\":true} }"),
            r#"{"a":{"y":true,"z":null}}"#
        );
    }

    #[test]
    fn array_order_and_values_do_matter() {
        assert_ne!(canonical("[1,2]"), canonical("[2,1]"));
        assert_ne!(canonical(r#"{"name":"x"}"#), canonical(r#"{"name":"y"}"#));
        assert_ne!(canonical(r#"{"a":1}"#), canonical(r#"{"a":1.0}"#));
    }

    #[test]
    fn strings_are_compared_unescaped_and_written_as_utf8() {
        assert_eq!(canonical(r#""\u0041""#), canonical(r#""A""#));
        assert_eq!(canonical(r#"{"k":"caf\u00e9"}"#), "{\"k\":\"café\"}");
        assert_eq!(canonical(r#""a\"b\\c\n""#), r#""a\"b\\c\n""#);
        assert_eq!(canonical(r#""\ud83d\ude00""#), "\"😀\"");
        assert_eq!(canonical(r#""\/\b\f\r\t""#), r#""/\b\f\r\t""#);
    }

    #[test]
    fn escaped_member_names_are_unescaped_then_sorted() {
        assert_eq!(canonical(r#"{"\u0062":1,"a":2}"#), r#"{"a":2,"b":1}"#);
    }

    #[test]
    fn keys_sort_by_code_point() {
        assert_eq!(
            canonical(r#"{"é":1,"z":2,"Z":3,"a":4}"#),
            "{\"Z\":3,\"a\":4,\"z\":2,\"é\":1}"
        );
    }

    #[test]
    fn an_object_that_repeats_a_name_has_no_canonical_form() {
        for body in [
            r#"{"a":1,"a":2}"#,
            r#"{"a":2,"a":2}"#,
            r#"{"b":0,"a":1,"b":3}"#,
            // The same name, spelled once escaped.
            r#"{"b":1,"\u0062":2}"#,
            // Deep inside.
            r#"[{"x":{"y":[{"k":1,"k":1}]}}]"#,
        ] {
            assert_eq!(canonical_json(body.as_bytes()), None, "{body}");
        }
        // The same name in two objects is no repetition.
        assert_eq!(canonical(r#"[{"a":1},{"a":2}]"#), r#"[{"a":1},{"a":2}]"#);
        assert_eq!(canonical(r#"{"a":{"a":1}}"#), r#"{"a":{"a":1}}"#);
    }

    #[test]
    fn scalars_and_nesting_are_written_compactly() {
        assert_eq!(
            canonical(
                r#" [ true , false , null , -1 , 18446744073709551615 , 2.5e3 , "" , [ ] , { } ] "#
            ),
            r#"[true,false,null,-1,18446744073709551615,0.25e4,"",[],{}]"#
        );
        assert_eq!(
            canonical(r#"{"z":{"b":[{"y":1,"x":2}],"a":0}}"#),
            r#"{"z":{"a":0,"b":[{"x":2,"y":1}]}}"#
        );
    }

    #[test]
    fn the_issues_pairs_of_numbers_stay_apart() {
        let pairs = [
            ("18446744073709551616", "18446744073709551617"),
            (
                "1000000000000000000000000000000",
                "1000000000000000000000000000001",
            ),
            ("-9223372036854775809", "-9223372036854775810"),
            ("0.1", "0.10000000000000000001"),
            ("18446744073709551616", "1.8446744073709552e19"),
            ("1", "1.0"),
        ];
        for (a, b) in pairs {
            assert!(!alike(a, b), "{a} and {b}");
            let (a, b) = (
                format!(r#"{{"amount":{a}}}"#),
                format!(r#"{{"amount":{b}}}"#),
            );
            assert!(!alike(&a, &b), "{a} and {b}");
        }
    }

    #[test]
    fn integers_keep_every_digit() {
        let big = "123456789012345678901234567890123456789012345678901234567890";
        assert_eq!(canonical(big), big);
        assert_eq!(canonical(&format!("-{big}")), format!("-{big}"));
        assert_eq!(canonical("-0"), "0");
        assert!(alike("0", "-0"));
        assert!(!alike("10", "1"));
    }

    #[test]
    fn other_numbers_agree_exactly_when_their_decimal_values_do() {
        for (a, b) in [
            ("1.5", "1.50"),
            ("1.5", "15e-1"),
            ("1.5", "0.15E+1"),
            ("1.5", "0.000015e5"),
            ("100.0", "1e2"),
            ("1e2", "1E0002"),
            ("0.0", "-0.0"),
            ("0.0", "0e10"),
            ("-0.0", "-0e-7"),
            ("12345678901234567890.5", "1234567890123456789050e-2"),
        ] {
            assert!(alike(a, b), "{a} and {b}");
        }
        for (a, b) in [
            ("1.5", "-1.5"),
            ("1.5", "1.05"),
            ("1e2", "1e3"),
            ("1e-2", "1e2"),
            ("0.1", "0.01"),
            ("2.0", "20.0"),
            ("1e400", "1e401"),
            ("1.7976931348623157e309", "1.7976931348623157e308"),
            ("5e-324", "4e-324"),
        ] {
            assert!(!alike(a, b), "{a} and {b}");
        }
        assert_eq!(canonical("2.5e3"), "0.25e4");
        assert_eq!(canonical("-0.00120"), "-0.12e-2");
        assert_eq!(canonical("0.0"), "0.0");
    }

    #[test]
    fn huge_exponents_are_held_exactly_or_refused_never_expanded() {
        let exponent = "9".repeat(MAX_EXPONENT_DIGITS);
        let at_limit = format!("1e{exponent}");
        assert_eq!(
            canonical(&at_limit),
            format!("0.1e1{}", "0".repeat(MAX_EXPONENT_DIGITS))
        );
        assert!(!alike(&at_limit, &format!("1e-{exponent}")));
        // Leading zeros of an exponent are not digits of its value.
        let padded = format!("1e{}{exponent}", "0".repeat(10_000));
        assert!(alike(&at_limit, &padded));
        // One digit more has no canonical form: the raw bytes are used.
        let over = format!("1e1{exponent}");
        assert_eq!(canonical_json(over.as_bytes()), None);
        // A body made of a megabyte of exponent is refused in one pass, without growing.
        let hostile = format!("[1e{}]", "7".repeat(1 << 20));
        let started = std::time::Instant::now();
        assert_eq!(canonical_json(hostile.as_bytes()), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // And long digit strings are written once, as they are.
        let long = format!("0.{}1", "0".repeat(1 << 20));
        let canonical_long = canonical(&long);
        assert!(canonical_long.len() < 64, "{canonical_long}");
        assert_eq!(canonical_long, format!("0.1e-{}", 1 << 20));
    }

    #[test]
    fn it_accepts_and_refuses_what_a_general_json_parser_does() {
        // Beyond repeated names and numbers out of `f64`'s range, which a general parser
        // reads lossily or refuses, the two agree on what is JSON.
        for body in [
            &b"{}"[..],
            b" [ ] ",
            b"\"\"",
            b"0",
            b"-0.0e-0",
            b"1E+2",
            b"[1,[2,[3,{\"a\":[{}]}]]]",
            b"{\"\":\"\"}",
            b"\"\\u00e9\\ud83d\\ude00\"",
            b"\"\xc3\xa9\"",
            b"\"\xed\xa0\x80\"",
            b"\"\xc3\"",
            b"\"\x7f\"",
            b"[1 2]",
            b"{\"a\" 1}",
            b"{\"a\":1 \"b\":2}",
            b"[-]",
            b"[--1]",
            b"[1e5.5]",
            b"[0x10]",
            b"[Infinity]",
            b"[true false]",
            b"nul",
            b"\"\\u12\"",
            b"\n\t\r 7 \n",
            b"\x0c7",
        ] {
            let general = serde_json::from_slice::<serde_json::Value>(body).is_ok();
            assert_eq!(
                canonical_json(body).is_some(),
                general,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn whitespace_never_changes_the_canonical_form() {
        let compact = r#"{"z":[1,2.50,{"b":null,"a":"x y"}],"a":{"n":-7e-3},"m":true}"#;
        let value: serde_json::Value = serde_json::from_str(compact).unwrap();
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        assert_eq!(canonical(compact), canonical(&pretty));
        assert_eq!(
            canonical(compact),
            r#"{"a":{"n":-0.7e-2},"m":true,"z":[1,0.25e1,{"a":"x y","b":null}]}"#
        );
    }

    #[test]
    fn what_is_not_json_has_no_canonical_form() {
        for body in [
            &b"{\"a\":"[..],
            b"not json",
            b"\xff",
            b"\"\xff\"",
            b"[NaN]",
            b"{} trailing",
            b"1 2",
            b"01",
            b"-01",
            b"00.5",
            b"1.",
            b".5",
            b"+1",
            b"1e",
            b"1e+",
            b"-",
            b"[1,]",
            b"{\"a\":1,}",
            b"{a:1}",
            b"\"\\ud800\"",
            b"\"\\udc00\"",
            b"\"\\ud800\\u0041\"",
            b"\"\\x\"",
            b"\"tab\there\"",
            b"tru",
            b"",
            b"\xef\xbb\xbf{}",
        ] {
            assert_eq!(
                canonical_json(body),
                None,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        // Nesting past the limit is refused rather than recursed into.
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(canonical_json(deep.as_bytes()), None);
        let limit = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(canonical_json(limit.as_bytes()).is_some());
        let past = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(canonical_json(past.as_bytes()), None);
    }
}
