//! The server-side scripts: claim, complete, release and renew each change a record in
//! one atomic step, and read fetches it; each judges time by the server's `TIME`.
//!
//! They are sent by SHA1 (`EVALSHA`); a server that does not know one (restarted, failed
//! over, a new cluster node) answers `NOSCRIPT`, and the client loads it and sends it
//! again. The record's layout is described at the top of `scripts/prelude.lua`.

use std::sync::LazyLock;

use redis::Script;

/// One Lua source per operation, each after the shared prelude.
macro_rules! script {
    ($file:literal) => {
        concat!(include_str!("scripts/prelude.lua"), include_str!($file))
    };
}

pub(crate) const CLAIM: &str = script!("scripts/claim.lua");
pub(crate) const COMPLETE: &str = script!("scripts/complete.lua");
pub(crate) const RELEASE: &str = script!("scripts/release.lua");
pub(crate) const RENEW: &str = script!("scripts/renew.lua");
pub(crate) const READ: &str = script!("scripts/read.lua");

/// The five scripts, hashed once per process.
pub(crate) struct Scripts {
    pub(crate) claim: Script,
    pub(crate) complete: Script,
    pub(crate) release: Script,
    pub(crate) renew: Script,
    pub(crate) read: Script,
}

impl Scripts {
    /// Every script.
    pub(crate) fn all(&self) -> [&Script; 5] {
        [
            &self.claim,
            &self.complete,
            &self.release,
            &self.renew,
            &self.read,
        ]
    }
}

pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    claim: Script::new(CLAIM),
    complete: Script::new(COMPLETE),
    release: Script::new(RELEASE),
    renew: Script::new(RENEW),
    read: Script::new(READ),
});

#[cfg(test)]
mod tests;
