//! The server side: one Redis Functions library (`scripts/library.lua`) whose functions
//! claim, complete, release, renew and read a record, each in one atomic step judged by
//! the server's `TIME`. The record's layouts are described at the top of the library.
//!
//! The library is loaded once per server (`FUNCTION LOAD REPLACE`) and called with
//! `FCALL`, so no call rebuilds the helpers every script used to define on each run.
//! Its name is always `idemkit`: loading another version replaces the one loaded, and
//! `FUNCTION LIST` holds one idemkit library whatever versions were deployed. Its
//! `idemkit_version` function returns [`VERSION`], which a backend compares with its own
//! when it connects, loading its library only when they differ. A server that has
//! forgotten the library (restarted without persistence, `FUNCTION FLUSH`, a new cluster
//! node) answers "Function not found"; the backend then loads it and sends the call
//! again, once (see `Commands::run`).
//!
//! Two backends of different versions on one server share whichever library was loaded
//! last. For two versions to run side by side, the newer keeps the functions' names,
//! arguments and replies compatible with the older, or renames the functions it
//! changes, and writes no layout the older cannot read. This version does neither: the
//! client writes layout 3 claims itself, which an older library takes for corrupt values
//! (it refuses their completions and replaces them), and `idemkit_complete` answers the
//! completion of such a claim with its time as text, which an older client takes for a
//! bad reply; an older library has no `idemkit_complete_own_claim`, which this version
//! calls to complete the claims it wrote, so that on a server where an older process
//! loaded its library, this version's next completion of such a claim loads this one
//! over it (as any call of a function the server lacks does). An older process that
//! connects later also loads its library over this one. Every process sharing a server
//! is upgraded together.

use std::sync::LazyLock;

/// The library's source as written, with [`PLACEHOLDER`] where its version goes.
const TEMPLATE: &str = include_str!("scripts/library.lua");

/// Where the version goes in [`TEMPLATE`].
const PLACEHOLDER: &str = "__IDEMKIT_LIBRARY_VERSION__";

/// The library's version: the SHA1 of its source, so any change to the code is a new
/// version without anyone having to remember to bump a number.
pub(crate) static VERSION: LazyLock<String> =
    LazyLock::new(|| redis::Script::new(TEMPLATE).get_hash().to_owned());

/// The library as loaded, its version filled in.
pub(crate) static LIBRARY: LazyLock<String> =
    LazyLock::new(|| TEMPLATE.replace(PLACEHOLDER, &VERSION));

/// The library's name, stable across versions (the `#!lua name=` line of its source).
#[cfg(test)]
pub(crate) const LIBRARY_NAME: &str = "idemkit";

/// The functions the backend calls.
pub(crate) const CLAIM: &str = "idemkit_claim";
pub(crate) const COMPLETE: &str = "idemkit_complete";
/// The completion of a claim the client wrote itself, handed the parts it wrote.
pub(crate) const COMPLETE_OWN_CLAIM: &str = "idemkit_complete_own_claim";
pub(crate) const RELEASE: &str = "idemkit_release";
pub(crate) const RENEW: &str = "idemkit_renew";
pub(crate) const READ: &str = "idemkit_read";
/// A waiter's read, which asks for the completion's wake-up.
pub(crate) const WATCH: &str = "idemkit_watch";
/// The operator's reading of records by their fixed header (five fields per key).
pub(crate) const FIELDS: &str = "idemkit_fields";
/// The operator's delete of a record that is gone.
pub(crate) const PURGE: &str = "idemkit_purge";
/// Returns the loaded library's [`VERSION`].
pub(crate) const VERSION_FUNCTION: &str = "idemkit_version";

#[cfg(test)]
mod tests;
