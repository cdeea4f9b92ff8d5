//! [`RedisServer`]: one private `redis-server` process on a loopback port.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::cli::{CliError, redis_cli};
use crate::ports::free_port;
use crate::watchdog::Watchdog;

/// How long a starting server has to answer `PING`.
const READY_WITHIN: Duration = Duration::from_secs(20);
/// How many ports to try when a start fails (another process took the port first).
const START_ATTEMPTS: usize = 5;

/// A `redis-server` child process on `127.0.0.1` with no persistence, stopped on drop.
///
/// Its port stays the same across [`kill`](Self::kill) and [`restart`](Self::restart),
/// so clients that reconnect find it again.
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    extra_args: Vec<String>,
    process: Mutex<Option<Running>>,
}

struct Running {
    child: Child,
    _watchdog: Option<Watchdog>,
}

impl RedisServer {
    /// Starts a standalone server on a free loopback port.
    pub fn start() -> io::Result<RedisServer> {
        RedisServer::start_with(&[], false)
    }

    /// Starts a server with these extra `redis-server` arguments (`["--maxmemory-policy",
    /// "allkeys-lru"]`). With `with_bus`, the port + 10000 is free too (a cluster node's
    /// bus).
    pub fn start_with(extra_args: &[&str], with_bus: bool) -> io::Result<RedisServer> {
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            let Some(port) = free_port(with_bus) else {
                return Err(io::Error::other("no free loopback port found"));
            };
            let server = RedisServer {
                port,
                dir: scratch_dir(port)?,
                extra_args: extra_args.iter().map(|arg| arg.to_string()).collect(),
                process: Mutex::new(None),
            };
            match server.launch() {
                Ok(()) => return Ok(server),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| io::Error::other("redis-server did not start")))
    }

    /// The server's port on `127.0.0.1`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL a client connects with: `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The server's scratch directory (its log is `redis.log` there).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs one command on the server with `redis-cli`; see [`redis_cli`].
    pub fn cli(&self, args: &[&str]) -> Result<String, CliError> {
        redis_cli(self.port, args)
    }

    /// Whether the server process is running (it may be paused).
    pub fn is_running(&self) -> bool {
        let mut process = self.lock();
        match process.as_mut() {
            Some(running) => matches!(running.child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Whether the server answers `PING` within half a second right now (a paused or
    /// killed server does not).
    pub fn answers_ping(&self) -> bool {
        ping(self.port)
    }

    /// Kills the server at once (SIGKILL): every connection drops, every key is lost.
    pub fn kill(&self) {
        if let Some(mut running) = self.lock().take() {
            let _ = running.child.kill();
            let _ = running.child.wait();
        }
    }

    /// Kills the server if it runs, then starts it again, empty, on the same port.
    pub fn restart(&self) -> io::Result<()> {
        self.kill();
        // The port was just ours; a few tries cover a slow release of the socket.
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            match self.launch() {
                Ok(()) => return Ok(()),
                Err(error) => last_error = Some(error),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(last_error.unwrap_or_else(|| io::Error::other("redis-server did not restart")))
    }

    /// Freezes the server process (SIGSTOP): connections stay open but nothing is
    /// answered until [`resume`](Self::resume).
    pub fn pause(&self) -> io::Result<()> {
        self.signal("-STOP")
    }

    /// Lets a [paused](Self::pause) server run again (SIGCONT).
    pub fn resume(&self) -> io::Result<()> {
        self.signal("-CONT")
    }

    fn signal(&self, signal: &str) -> io::Result<()> {
        let process = self.lock();
        let Some(running) = process.as_ref() else {
            return Err(io::Error::other("the server is not running"));
        };
        let status = Command::new("kill")
            .args([signal, &running.child.id().to_string()])
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("kill {signal} failed: {status}")))
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Running>> {
        self.process
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts the process and waits until it answers `PING`.
    fn launch(&self) -> io::Result<()> {
        let mut child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--logfile", "redis.log", "--daemonize", "no"])
            // Fault tests use DEBUG SLEEP; Redis 7 refuses DEBUG unless enabled.
            .args(["--enable-debug-command", "local"])
            .args(&self.extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let watchdog = Watchdog::start(child.id(), &self.dir);
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = child.try_wait()? {
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = pipe.read_to_string(&mut stderr);
                }
                return Err(io::Error::other(format!(
                    "redis-server on port {} exited ({status}): {} {}",
                    self.port,
                    stderr.trim(),
                    self.log_tail()
                )));
            }
            if ping(self.port) {
                break;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(io::Error::other(format!(
                    "redis-server on port {} did not answer PING within {READY_WITHIN:?}: {}",
                    self.port,
                    self.log_tail()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        *self.lock() = Some(Running {
            child,
            _watchdog: watchdog,
        });
        Ok(())
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether something on `127.0.0.1:port` answers `PING` with `+PONG` right now.
fn ping(port: u16) -> bool {
    let attempt = || -> io::Result<bool> {
        let timeout = Duration::from_millis(500);
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let mut stream = TcpStream::connect_timeout(&address, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.write_all(b"PING\r\n")?;
        let mut reply = [0u8; 7];
        stream.read_exact(&mut reply)?;
        Ok(&reply == b"+PONG\r\n")
    };
    attempt().unwrap_or(false)
}

/// A fresh directory for one server's files, under the system's temporary directory.
fn scratch_dir(port: u16) -> io::Result<PathBuf> {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let made = MADE.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "idemkit-redis-{}-{port}-{made}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
