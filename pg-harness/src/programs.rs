//! Running PostgreSQL's programs, as the `postgres` user when this process is root.

use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Whether this process runs as root (PostgreSQL refuses to).
pub(crate) fn is_root() -> bool {
    static ROOT: OnceLock<bool> = OnceLock::new();
    *ROOT.get_or_init(|| {
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
    })
}

/// `program` with `args`, run as `postgres` through `runuser` when this process is root.
pub(crate) fn command(program: &str, args: &[&str]) -> Command {
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--", program]).args(args);
        command
    } else {
        let mut command = Command::new(program);
        command.args(args);
        command
    }
}

fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether `initdb` and `pg_ctl` are installed (and `runuser`, when root).
pub(crate) fn installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| runs("initdb") && runs("pg_ctl") && (!is_root() || runs("runuser")))
}
