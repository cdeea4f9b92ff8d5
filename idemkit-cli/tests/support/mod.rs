//! What the command's tests share: running the built `idemkit` binary, the HTTP
//! conformance server's binary in a child process, and plain HTTP/1.1 requests to it.
#![allow(dead_code)] // each test binary uses a part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// What one run of the command gave.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Standard output as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {self:?}"))
    }
}

/// Runs the built `idemkit` with `args`.
pub fn idemkit(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_idemkit"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the idemkit binary runs");
    Run {
        code: output.status.code().expect("an exit code, not a signal"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A namespace no other test (or process) uses.
pub fn namespace(tag: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "cli-{tag}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The scope the conformance server's scope function gives a caller whose `X-Identity`
/// header is `identity`: `identity:` and its bytes in hex.
pub fn identity_scope(identity: &str) -> String {
    let hex: String = identity.bytes().map(|byte| format!("{byte:02x}")).collect();
    format!("identity:{hex}")
}

/// A loopback port nothing listens on (bound, then let go).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The HTTP conformance server's binary, `idemkit-conformance-server` of idemkit-tower
/// (feature `conformance-server`), built once per test process by the cargo that runs
/// the tests: Cargo hands a test only the binaries of its own package. After `cargo test
/// --workspace --all-features` built it, this finds it at once.
fn conformance_server_binary() -> &'static std::path::Path {
    static BINARY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            // The workspace's features, as `cargo test --workspace --all-features`
            // resolves them: what that run built is found as it is, not rebuilt.
            .args([
                "build",
                "--quiet",
                "--message-format=json",
                "--workspace",
                "--all-features",
                "--bin=idemkit-conformance-server",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "cargo could not build idemkit-conformance-server"
        );
        // The last artifact message naming an executable is the binary's.
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .rev()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find_map(|message| message["executable"].as_str().map(Into::into))
            .expect("cargo names the built executable")
    })
}

/// The HTTP conformance server (idemkit-tower's `idemkit-conformance-server`) in a child
/// process. Killed when dropped.
pub struct ConformanceServer {
    child: Child,
    pub address: SocketAddr,
}

impl ConformanceServer {
    /// Starts a server with `args` on a free loopback port; waits until it listens.
    pub fn start(args: &[&str]) -> ConformanceServer {
        let mut all = vec!["--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut child = Command::new(conformance_server_binary())
            .args(all)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server process starts");
        let stdout = child.stdout.take().unwrap();
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            // Read every line (the server prints one per event) so it never blocks.
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find("listening on ") {
                    let _ = sender.send(line[at + "listening on ".len()..].trim().to_owned());
                }
            }
        });
        // Generous: the machine is shared with other builds.
        match receiver.recv_timeout(Duration::from_secs(60)) {
            Ok(address) => ConformanceServer {
                child,
                address: address.parse().expect("a socket address"),
            },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the conformance server did not say where it listens");
            }
        }
    }
}

impl Drop for ConformanceServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP/1.1 answer: status, headers (names lowercase) and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Sends one request over a fresh loopback connection and reads the whole answer (the
/// server closes the connection, as asked).
pub fn http(
    address: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut stream = TcpStream::connect(address).expect("the server accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse_answer(&raw)
}

fn parse_answer(raw: &[u8]) -> Answer {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("a complete head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|window| window == b"\r\n")
            .expect("a chunk size line");
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
            .expect("a hex chunk size");
        rest = &rest[line_end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}
