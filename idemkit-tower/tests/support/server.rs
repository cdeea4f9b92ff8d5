//! The conformance server in a child process, so a test can crash it, restart it, run
//! two of them, and read the event lines it prints.
//!
//! The child is the crate's `idemkit-conformance-server` binary (feature
//! `conformance-server`), which cargo builds for the tests that need it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use super::client::{Call, send};

/// How long a child may take to say it listens. Generous: the machine is shared.
const START_LIMIT: Duration = Duration::from_secs(60);

/// The conformance server binary. Read when a server starts rather than with `env!`, so
/// that a test binary that includes this module but starts no server (it is shared by
/// every test file) builds without the feature too.
fn server_binary() -> &'static str {
    match option_env!("CARGO_BIN_EXE_idemkit-conformance-server") {
        Some(path) => path,
        None => panic!(
            "the conformance server binary is built only with the `conformance-server` \
             feature: cargo test -p idemkit-tower --all-features"
        ),
    }
}

/// The server command with `args` after `--listen 127.0.0.1:0`.
fn server_command(args: &[&str]) -> Command {
    let mut command = Command::new(server_binary());
    command
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null());
    command
}

/// A running conformance server.
pub struct ServerProcess {
    child: Child,
    pub address: SocketAddr,
    lines: Arc<Mutex<Vec<String>>>,
}

impl ServerProcess {
    /// Starts a server with `args` (and `--listen 127.0.0.1:0`), and waits until it says
    /// where it listens.
    pub fn start(args: &[&str]) -> ServerProcess {
        let mut child = server_command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server process starts");
        let stdout = child.stdout.take().expect("a piped stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (listening, address) = mpsc::channel();
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find("listening on ") {
                    let address = &line[at + "listening on ".len()..];
                    let _ = listening.send(address.trim().to_owned());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let address = match address.recv_timeout(START_LIMIT) {
            Ok(address) => address.parse().expect("a socket address"),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the conformance server did not say where it listens");
            }
        };
        ServerProcess {
            child,
            address,
            lines,
        }
    }

    /// The server process's id (to stop and continue it).
    #[allow(dead_code)] // not every test binary pauses a server
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Every JSON line the server printed so far.
    pub fn events(&self) -> Vec<serde_json::Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line.starts_with('{'))
            .map(|line| serde_json::from_str(line).expect("an event line is JSON"))
            .collect()
    }

    /// How many times the handler ran, by `GET /_stats`.
    pub async fn handler_calls(&self) -> u64 {
        let reply = send(self.address, Call::get("/_stats"))
            .await
            .expect("/_stats answers");
        reply.json()["handler_calls"]
            .as_u64()
            .expect("a count of handler calls")
    }

    /// Waits (at most `limit`) for the process to exit by itself.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Runs a server with `args` (and `--listen 127.0.0.1:0`) that is expected not to
/// start: waits (at most `limit`, then kills it) for it to exit. Returns its exit status
/// (`None` if it was still running), what it wrote on standard error, and how long it ran.
#[allow(dead_code)] // only the tests of start-up errors use it
pub fn run_failing(args: &[&str], limit: Duration) -> (Option<ExitStatus>, String, Duration) {
    use std::io::Read;
    let started = std::time::Instant::now();
    let mut child = server_command(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server process starts");
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if started.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = started.elapsed();
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    (status, stderr, took)
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
