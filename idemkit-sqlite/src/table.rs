//! [`TableName`]: the name of the records' table, checked to be a plain identifier so it
//! can be written into SQL as is.

use std::fmt;

use crate::error::OpenError;

/// The records' table name: ASCII letters, digits and `_`, not starting with a digit, at
/// most 64 characters. The table's companion (schema version, record count) is
/// `<name>_meta`.
///
/// ```
/// use idemkit_sqlite::TableName;
///
/// assert_eq!(TableName::new("orders_idem").unwrap().as_str(), "orders_idem");
/// assert!(TableName::new("x; DROP TABLE y").is_err());
/// assert!(TableName::new("1st").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TableName(String);

impl TableName {
    /// The default table, `idemkit_records`.
    pub const DEFAULT: &'static str = "idemkit_records";

    /// `name`, if it is a plain identifier (see the type's docs); SQLite's own tables
    /// (`sqlite_...`) are refused too.
    pub fn new(name: &str) -> Result<TableName, OpenError> {
        let mut chars = name.chars();
        let plain = matches!(chars.next(), Some(first) if first.is_ascii_alphabetic() || first == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && name.len() <= 64
            && !name.to_ascii_lowercase().starts_with("sqlite_");
        if plain {
            Ok(TableName(name.to_owned()))
        } else {
            Err(OpenError::InvalidTable {
                name: name.to_owned(),
            })
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The companion table's name.
    pub(crate) fn meta(&self) -> String {
        format!("{}_meta", self.0)
    }
}

impl Default for TableName {
    fn default() -> TableName {
        TableName(TableName::DEFAULT.to_owned())
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
    fn only_plain_identifiers_are_table_names() {
        for good in ["idemkit_records", "_x", "T9", &"a".repeat(64)] {
            assert!(TableName::new(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "9a",
            "a-b",
            "a b",
            "a\"b",
            "ä",
            "sqlite_master",
            &"a".repeat(65),
        ] {
            assert!(
                matches!(TableName::new(bad), Err(OpenError::InvalidTable { .. })),
                "{bad}"
            );
        }
    }
}
