//! [`TableName`]: the table's name, checked to be a plain identifier.

use std::fmt;

/// The table a backend keeps its records in, unless told otherwise.
pub const DEFAULT_TABLE: &str = "idemkit_records";

/// A table name this crate refuses: it must be 1 to 63 bytes of lowercase ASCII letters,
/// digits and underscores, not starting with a digit, so that it is a PostgreSQL
/// identifier that needs no quoting and means the same in SQL and in `LISTEN`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid table name {name:?}: use 1 to 63 lowercase ASCII letters, digits and \
     underscores, not starting with a digit"
)]
pub struct InvalidTable {
    /// The name refused.
    pub name: String,
}

/// A validated table name (see [`InvalidTable`] for the rule).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TableName(String);

impl TableName {
    pub(crate) fn new(name: &str) -> Result<TableName, InvalidTable> {
        let bytes = name.as_bytes();
        let valid = (1..=63).contains(&bytes.len())
            && !bytes[0].is_ascii_digit()
            && bytes
                .iter()
                .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if valid {
            Ok(TableName(name.to_owned()))
        } else {
            Err(InvalidTable {
                name: name.to_owned(),
            })
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_lowercase_identifiers_pass() {
        for good in ["idemkit_records", "a", "_x1", &"t".repeat(63)] {
            assert_eq!(TableName::new(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            "1abc",
            "Records",
            "a-b",
            "a b",
            "x;drop table y",
            "\"q\"",
            "s.t",
            "é",
            &"t".repeat(64),
        ] {
            assert!(TableName::new(bad).is_err(), "{bad:?} passed");
        }
    }
}
