//! Whether a JSON body is already in canonical form, so that it can be hashed as it was
//! sent instead of being written again.
//!
//! Most clients send compact JSON, and many send it already sorted (a serializer of a
//! map ordered by name, or of a struct whose fields are). Reading such a body costs one
//! pass with no output; writing its canonical form costs a buffer, a copy of every value
//! and the reordering of every object. The check accepts a subset of the canonical form
//! that it can judge in one pass, and anything outside it goes to the full writer:
//!
//! - no whitespace anywhere;
//! - every object's names in strictly increasing bytewise order (so none repeats);
//! - strings without a backslash or a control character (an escape may be canonical,
//!   but which escapes are is the writer's business);
//! - integers only (no fraction, no exponent), without leading zeros, and not `-0`;
//! - `true`, `false`, `null`, arrays, nesting no deeper than the writer allows.
//!
//! Every body it accepts is one the writer ([`super::json::canonical_json`]) would write
//! back byte for byte (a property test holds it to that).

use super::json::MAX_DEPTH;

/// Whether `body` is JSON already in the canonical form, within the subset above. A
/// `false` says nothing about the body: it may still be canonical, or not JSON at all.
pub(crate) fn is_canonical(body: &[u8]) -> bool {
    let mut check = Check { input: body, at: 0 };
    check.value(0) && check.at == body.len()
}

/// The bytes a string holds as they are, with no second look: ASCII, but neither a
/// control character, `"` nor `\\`.
const PLAIN: [bool; 256] = {
    let mut plain = [false; 256];
    let mut byte = 0x20;
    while byte < 0x80 {
        plain[byte] = byte != b'"' as usize && byte != b'\\' as usize;
        byte += 1;
    }
    plain
};

/// One pass over the body, `at` the next byte to read.
struct Check<'a> {
    input: &'a [u8],
    at: usize,
}

impl<'a> Check<'a> {
    fn peek(&self) -> Option<u8> {
        self.input.get(self.at).copied()
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
    fn value(&mut self, depth: usize) -> bool {
        match self.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.integer(),
            _ => false,
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let matches = self.input[self.at..].starts_with(word);
        self.at += word.len();
        matches
    }

    fn array(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        self.at += 1;
        if self.eat(b']') {
            return true;
        }
        loop {
            if !self.value(depth) {
                return false;
            }
            if self.eat(b']') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    fn object(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        self.at += 1;
        if self.eat(b'}') {
            return true;
        }
        let mut previous: Option<&[u8]> = None;
        loop {
            if self.peek() != Some(b'"') {
                return false;
            }
            let Some(name) = self.string() else {
                return false;
            };
            // Strictly after the previous name: sorted, and no name twice.
            if previous.is_some_and(|previous| previous >= name) {
                return false;
            }
            previous = Some(name);
            if !self.eat(b':') || !self.value(depth) {
                return false;
            }
            if self.eat(b'}') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    /// A string without escapes or control characters, its opening quote next: its
    /// bytes between the quotes, which are valid UTF-8.
    fn string(&mut self) -> Option<&'a [u8]> {
        let input = self.input;
        let start = self.at + 1;
        // The run of bytes that need no second look, found with one table lookup each;
        // UTF-8 is checked only if the run stops at a byte that is not ASCII (a call to
        // the validator costs more than most names are long).
        let run = input
            .get(start..)?
            .iter()
            .position(|&byte| !PLAIN[usize::from(byte)])?;
        let mut end = start + run;
        if input[end] >= 0x80 {
            end += input[end..]
                .iter()
                .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
            std::str::from_utf8(&input[start..end]).ok()?;
        }
        if input[end] != b'"' {
            return None;
        }
        self.at = end + 1;
        Some(&input[start..end])
    }

    /// An integer as the writer writes it: digits without a leading zero, `-` before
    /// any but zero; no fraction or exponent after it.
    fn integer(&mut self) -> bool {
        let negative = self.eat(b'-');
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        let digits = &self.input[start..self.at];
        let canonical = match digits {
            [] => false,
            [b'0'] => !negative,
            [first, ..] => *first != b'0',
        };
        canonical && !matches!(self.peek(), Some(b'.' | b'e' | b'E'))
    }
}

#[cfg(test)]
mod tests {
    use super::super::json::canonical_json;
    use super::*;

    #[test]
    fn compact_sorted_json_is_canonical() {
        for body in [
            r#"{"amount":2500,"currency":"eur","source":"card_4242"}"#,
            r#"{"a":[1,-2,0,true,false,null,{}],"b":{"c":"café"},"bb":[]}"#,
            r#"[]"#,
            r#""text""#,
            r#"-17"#,
            r#"0"#,
            r#"{"":0,"a":{"":[[]]}}"#,
        ] {
            assert!(is_canonical(body.as_bytes()), "{body}");
            assert_eq!(
                canonical_json(body.as_bytes()).as_deref(),
                Some(body.as_bytes()),
                "{body}"
            );
        }
    }

    #[test]
    fn anything_outside_the_subset_is_left_to_the_writer() {
        for body in [
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":1}"#,
            r#"{ "a":1}"#,
            r#"{"a":1} "#,
            r#" {"a":1}"#,
            r#"{"a" :1}"#,
            "[1,\n2]",
            r#"-0"#,
            r#"01"#,
            r#"1.5"#,
            r#"1e2"#,
            r#"1E2"#,
            r#"-"#,
            r#""\u0041""#,
            r#""a\"b""#,
            "\"tab\there\"",
            r#""open"#,
            r#"tru"#,
            r#"nul"#,
            r#"[1,]"#,
            r#"{"a":1,}"#,
            r#"{"a"}"#,
            r#"{1:2}"#,
            r#"1 2"#,
            r#""#,
        ] {
            assert!(!is_canonical(body.as_bytes()), "{body}");
        }
        // Bytes that are not UTF-8 inside a string.
        assert!(!is_canonical(b"\"\xff\""));
    }

    #[test]
    fn nesting_is_bounded_as_the_writer_bounds_it() {
        let at_limit = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(is_canonical(at_limit.as_bytes()));
        let past = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(!is_canonical(past.as_bytes()));
        assert_eq!(canonical_json(past.as_bytes()), None);
    }

    proptest::proptest! {
        /// Bodies strung together from JSON's tokens and near misses, most of them not
        /// JSON: whatever the check accepts, the writer writes back unchanged.
        #[test]
        fn whatever_it_accepts_the_writer_leaves_as_it_is(
            tokens in proptest::collection::vec(
                proptest::sample::select(&[
                    "{", "}", "[", "]", ",", ":", " ", "\"a\"", "\"b\"", "\"\"",
                    "\"\\u0061\"", "\"\\\"\"", "\"", "0", "1", "-", "-0", "01", "1.0",
                    "1e2", "2E0", "true", "nul", "\u{e9}",
                ][..]),
                0..12,
            )
        ) {
            let body = tokens.concat().into_bytes();
            if is_canonical(&body) {
                proptest::prop_assert_eq!(canonical_json(&body), Some(body));
            }
        }

        /// The canonical form of a plain value with one byte inserted, replaced or
        /// taken out: near misses of every kind, each judged as the writer judges it.
        #[test]
        fn a_canonical_body_edited_by_one_byte_is_judged_as_the_writer_judges_it(
            value in plain_value(),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            edit in 0..3u8,
            byte in proptest::sample::select(&b"{}[]\",:-019.eE \\\n\x01\xff"[..]),
        ) {
            let mut body = canonical_json(&serde_json::to_vec(&value).unwrap()).unwrap();
            let at = at.index(body.len() + 1);
            match edit {
                0 => body.insert(at, byte),
                1 if at < body.len() => body[at] = byte,
                _ if at < body.len() => {
                    body.remove(at);
                }
                _ => body.push(byte),
            }
            if is_canonical(&body) {
                proptest::prop_assert_eq!(canonical_json(&body), Some(body));
            }
        }

        /// Integers, names and nesting of any shape: the canonical form of a value
        /// without escapes is accepted, and so passes the check, not the writer.
        #[test]
        fn the_canonical_form_of_a_plain_value_is_accepted(value in plain_value()) {
            let text = serde_json::to_vec(&value).unwrap();
            let canonical = canonical_json(&text).unwrap();
            proptest::prop_assert!(is_canonical(&canonical));
        }
    }

    /// A JSON value of integers, booleans, nulls and strings that need no escape.
    fn plain_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let text = "[a-z\u{e9}\u{1f600} ]{0,6}";
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            text.prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(text, inner, 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }
}
