//! Talking to a test server through `redis-cli`: enough for setup and fault injection,
//! without a client library in the harness.

use std::fmt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `redis-cli` failed to run, or the server answered with an error.
#[derive(Debug)]
pub struct CliError(pub String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}

/// How long one `redis-cli` call may take before it is killed: a paused server must not
/// hang the test that asks it something.
const CLI_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs one command with `redis-cli` against `127.0.0.1:port` and returns its reply as
/// `redis-cli` prints it raw (one line per element). A server error reply, or no
/// server, is an `Err` (`-e` makes `redis-cli` exit non-zero then).
pub fn redis_cli(port: u16, args: &[&str]) -> Result<String, CliError> {
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-e"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| CliError(format!("redis-cli did not run: {error}")))?;
    // Replies here are small: they fit the pipes, so waiting before reading is safe.
    let deadline = Instant::now() + CLI_TIMEOUT;
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(CliError(format!(
                "redis-cli -p {port} {}: no answer within {CLI_TIMEOUT:?}",
                args.join(" ")
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let output = child
        .wait_with_output()
        .map_err(|error| CliError(format!("redis-cli did not finish: {error}")))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        return Err(CliError(format!(
            "redis-cli -p {port} {}: {}{}",
            args.join(" "),
            stdout.trim(),
            stderr.trim()
        )));
    }
    Ok(stdout)
}
