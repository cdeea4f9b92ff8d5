//! Rows that are not records: reported, never replayed.

use std::fmt;
use std::sync::Arc;

/// A row under a key that this version cannot read as a record: a claim token of the
/// wrong size, a status out of range, headers that do not decode, a value of the wrong
/// type (written by hand, or damaged).
///
/// The backend treats it as absent, as the other idemkit stores do: a read sees no
/// record, and the next claim of the key overwrites it and runs the operation as new. It
/// is never replayed and never an error. Each sighting is logged (a `tracing` warning)
/// and handed to the callback set with
/// [`SqliteBuilder::on_corrupt_record`](crate::SqliteBuilder::on_corrupt_record). A file or table
/// this version does not understand as a whole is another matter: it is refused at open
/// ([`OpenError`](crate::OpenError)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CorruptRecord {
    /// The idempotency key the row was found under.
    pub key: String,
    /// The row's key column (the same as `key`).
    pub storage_key: String,
    /// What was wrong with it.
    pub reason: String,
    /// Whether a claim has just overwritten it (otherwise a read only saw it as absent).
    pub overwritten: bool,
}

impl fmt::Display for CorruptRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the row of key {:?} is not a record ({}); {}",
            self.storage_key,
            self.reason,
            if self.overwritten {
                "a claim overwrote it"
            } else {
                "treated as absent"
            }
        )
    }
}

/// What the user asked to be called with for each corrupt record.
pub(crate) type OnCorrupt = Arc<dyn Fn(&CorruptRecord) + Send + Sync + 'static>;

/// Logs a corrupt row of `key` and hands it to `callback`.
pub(crate) fn report(key: &str, reason: String, overwritten: bool, callback: Option<&OnCorrupt>) {
    let record = CorruptRecord {
        key: key.to_owned(),
        storage_key: key.to_owned(),
        reason,
        overwritten,
    };
    tracing::warn!(
        target: "idemkit_sqlite",
        key = %record.storage_key,
        reason = %record.reason,
        overwritten = record.overwritten,
        "a row is not a record; treated as absent",
    );
    if let Some(callback) = callback {
        callback(&record);
    }
}
