//! The conformance server in a child process, so a test can crash it, restart it, run
//! two of them, and read the event lines it prints.
//!
//! The child is this very test binary, started again with the server's arguments in
//! an environment variable: [`child_entry`] (called from a `#[test]` of each test
//! binary) runs the server instead of returning when it finds them.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use super::client::{Call, send};

/// Where the child finds its arguments (separated by newlines).
const ARGS_VARIABLE: &str = "IDEMKIT_TOWER_CONFORMANCE_SERVER_ARGS";

/// The name of the `#[test]` that calls [`child_entry`] in each test binary.
pub const CHILD_TEST_NAME: &str = "conformance_server_child";

/// How long a child may take to say it listens. Generous: the machine is shared.
const START_LIMIT: Duration = Duration::from_secs(60);

/// In the child, runs the conformance server (`serve`, given the arguments the parent
/// passed) and never returns; elsewhere, returns at once.
pub fn child_entry(serve: impl FnOnce(Vec<String>) -> std::process::ExitCode) {
    let Ok(args) = std::env::var(ARGS_VARIABLE) else {
        return;
    };
    let code = serve(args.lines().map(str::to_owned).collect());
    std::process::exit(if code == std::process::ExitCode::SUCCESS {
        0
    } else {
        1
    });
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
        let mut all: Vec<&str> = vec!["--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut child = Command::new(std::env::current_exe().expect("the test binary's path"))
            .args([
                CHILD_TEST_NAME,
                "--exact",
                "--nocapture",
                "--quiet",
                "--test-threads=1",
            ])
            .env(ARGS_VARIABLE, all.join("\n"))
            .stdin(Stdio::null())
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
                // The test harness may have written on the same line first.
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
    let mut all: Vec<&str> = vec!["--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let started = std::time::Instant::now();
    let mut child = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([
            CHILD_TEST_NAME,
            "--exact",
            "--nocapture",
            "--quiet",
            "--test-threads=1",
        ])
        .env(ARGS_VARIABLE, all.join("\n"))
        .stdin(Stdio::null())
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
