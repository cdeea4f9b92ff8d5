//! Whether the PostgreSQL tests can run here, and what happens when they cannot.

use std::io::Write;
use std::sync::OnceLock;

use crate::programs::installed;

/// The environment variable that turns a missing PostgreSQL from a skip into a failure
/// (set to `1`; CI sets it).
pub const REQUIRE_VAR: &str = "IDEMKIT_REQUIRE_POSTGRES";

pub(crate) fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|value| value == "1")
}

/// Says once per process, past the test harness's output capture, that `what` is
/// skipped and why; panics instead when PostgreSQL is required.
pub(crate) fn skip(what: &str, why: &str) {
    assert!(!required(), "{REQUIRE_VAR}=1 but {why}");
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        // Not `eprintln!`: the test harness captures that for tests that pass.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {what}: {why} (set {REQUIRE_VAR}=1 to make this a failure)"
        );
    });
}

/// Whether `initdb` and `pg_ctl` are on `PATH` (and `runuser` when running as root), so
/// that a [`PgCluster`](crate::PgCluster) can start.
///
/// When they are not: with `IDEMKIT_REQUIRE_POSTGRES=1` this panics; otherwise it prints,
/// once per process, a line saying the tests are skipped and returns false.
pub fn available() -> bool {
    if installed() {
        return true;
    }
    skip(
        "the PostgreSQL tests that start their own cluster",
        "initdb and pg_ctl are not on PATH (install PostgreSQL 13 or later)",
    );
    false
}
