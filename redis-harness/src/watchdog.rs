//! A watchdog process per server: it kills the server once the process that started it
//! is gone, so a test binary that dies without running destructors leaves no
//! `redis-server` behind.

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running watchdog; dropping it stops it (the server is then the owner's to stop).
pub(crate) struct Watchdog(Child);

impl Watchdog {
    /// Watches this process; when it is gone, sends SIGKILL to `server_pid` and removes
    /// `dir`. Checks once a second. `None` if `sh` could not be started (the server then
    /// only stops on drop).
    pub(crate) fn start(server_pid: u32, dir: &Path) -> Option<Watchdog> {
        let owner = std::process::id();
        let script = format!(
            "while kill -0 {owner} 2>/dev/null; do sleep 1; done; \
             kill -9 {server_pid} 2>/dev/null; sleep 1; rm -rf \"$0\""
        );
        Command::new("sh")
            .args(["-c", &script])
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()
            .map(Watchdog)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
