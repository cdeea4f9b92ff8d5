//! [`Claim`]: what an attempt to claim a key found.

use crate::record::Record;
use crate::token::ClaimToken;

/// What an attempt to claim a key found, and so what the caller should do next.
///
/// Every variant is public, so a backend written outside this crate builds its answers
/// directly (see [`Record::claimed`] for the records it carries).
#[must_use = "a claim either grants the right to run or carries a record to act on"]
#[derive(Clone, Debug)]
pub enum Claim {
    /// The key was free: the caller now holds it and should run the operation.
    New(ClaimToken),
    /// The previous holder's lease had lapsed: the caller took the key over with a new
    /// token, and the old token is fenced out.
    Reclaimed(ClaimToken),
    /// Another executor holds a live lease: wait for it, or tell the client to retry.
    InFlight(Record),
    /// The operation already ran: replay this record's response.
    Completed(Record),
}

impl Claim {
    /// The caller's token, for [`Claim::New`] and [`Claim::Reclaimed`].
    pub fn token(&self) -> Option<&ClaimToken> {
        match self {
            Claim::New(token) | Claim::Reclaimed(token) => Some(token),
            Claim::InFlight(_) | Claim::Completed(_) => None,
        }
    }

    /// The record found, for [`Claim::InFlight`] and [`Claim::Completed`].
    pub fn record(&self) -> Option<&Record> {
        match self {
            Claim::InFlight(record) | Claim::Completed(record) => Some(record),
            Claim::New(_) | Claim::Reclaimed(_) => None,
        }
    }
}
