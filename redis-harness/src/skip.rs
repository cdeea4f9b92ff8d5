//! Whether the Redis tests can run here, and what happens when they cannot.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The environment variable that turns a missing `redis-server` from a skip into a
/// failure (set to `1`; CI sets it).
pub const REQUIRE_VAR: &str = "IDEMKIT_REQUIRE_REDIS";

fn installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        ["redis-server", "redis-cli"].iter().all(|program| {
            Command::new(program)
                .arg("--version")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        })
    })
}

fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|value| value == "1")
}

/// Whether `redis-server` and `redis-cli` are on `PATH`.
///
/// When they are not: with `IDEMKIT_REQUIRE_REDIS=1` this panics; otherwise it prints,
/// once per process, a line saying the Redis tests are skipped and returns false.
/// The line goes straight to standard error, past the test harness's output capture,
/// so a passing run still shows it.
pub fn available() -> bool {
    if installed() {
        return true;
    }
    assert!(
        !required(),
        "{REQUIRE_VAR}=1 but redis-server or redis-cli is not on PATH (install Redis 7: \
         `apt-get install redis-server`)"
    );
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        // Not `eprintln!`: the test harness captures that for tests that pass.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the Redis tests need redis-server and redis-cli on PATH, which are not \
             installed here (set {REQUIRE_VAR}=1 to make this a failure)"
        );
    });
    false
}
