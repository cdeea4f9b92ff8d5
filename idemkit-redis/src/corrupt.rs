//! Values at a record's key that are not records: reported, never replayed.

use std::fmt;
use std::sync::Arc;

/// A value at a record's key that this version cannot read as a record: another type
/// (a plain string, a list), another program's hash, another format version, a record
/// with missing or malformed fields, or a stored response whose headers do not decode.
///
/// The backend treats it as absent: a read sees no record, and the next claim of the key
/// overwrites it and runs the operation as new. It is never replayed and never an error.
/// Each sighting is logged (a `tracing` warning) and handed to the callback set with
/// [`RedisBuilder::on_corrupt_record`](crate::RedisBuilder::on_corrupt_record).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CorruptRecord {
    /// The idempotency key the value was found under.
    pub key: String,
    /// The Redis key holding the value.
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
            "the value at redis key {:?} is not a record ({}); {}",
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

/// Logs `record` and hands it to `callback`.
pub(crate) fn report(record: CorruptRecord, callback: Option<&OnCorrupt>) {
    tracing::warn!(
        target: "idemkit_redis",
        storage_key = %record.storage_key,
        reason = %record.reason,
        overwritten = record.overwritten,
        "a value at a record's key is not a record; treated as absent",
    );
    if let Some(callback) = callback {
        callback(&record);
    }
}
