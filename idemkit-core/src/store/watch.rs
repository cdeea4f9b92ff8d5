//! [`Watch`]: what a waiter on a key needs to know.

use std::time::Duration;

use crate::record::Record;

/// What a waiter on a key finds (see [`Store::watch`](crate::Store::watch)): whether to
/// stop waiting, and if not, for how long the claim it waits on is sure to stay.
#[derive(Clone, Debug)]
pub enum Watch {
    /// No record, or one that is gone.
    Absent,
    /// The operation finished: replay this.
    Completed(Record),
    /// A claim whose lease lapsed: its owner has probably crashed.
    Lapsed,
    /// A claim whose lease is live for `lease_left` more.
    Claimed {
        /// How long until the lease lapses, if nobody renews it.
        lease_left: Duration,
    },
}
