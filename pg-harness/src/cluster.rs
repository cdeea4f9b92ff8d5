//! [`PgCluster`]: a private PostgreSQL cluster on a loopback port.

use std::io;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::names::unique_name;
use crate::ports::free_port;
use crate::programs::{command, is_root};

/// How many ports to try when a start fails (another process took the port first).
const START_ATTEMPTS: usize = 5;
/// How long a starting server has to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// A PostgreSQL cluster of its own: `initdb` in a scratch directory, run by `pg_ctl` on
/// `127.0.0.1` at a free port, with trust authentication for the `postgres` user.
///
/// Its port and data stay the same across [`stop`](Self::stop), [`kill`](Self::kill)
/// and [`start`](Self::start), so clients that reconnect find it again with its data.
/// It runs with `fsync=off` (tests only): a killed server process keeps what it wrote,
/// as the machine itself does not crash. Dropping it stops it and removes its directory.
pub struct PgCluster {
    port: u16,
    dir: PathBuf,
    options: Vec<String>,
    /// Serialises start, stop and kill.
    control: Mutex<()>,
}

impl PgCluster {
    /// Makes a new cluster and starts it.
    pub fn start_new() -> io::Result<PgCluster> {
        PgCluster::start_new_with(&[])
    }

    /// Makes a new cluster and starts it with these extra server settings, each
    /// `name=value` (as `postgres -c` takes them), such as `"statement_timeout=100ms"`.
    pub fn start_new_with(settings: &[&str]) -> io::Result<PgCluster> {
        let dir = std::env::temp_dir().join(unique_name("pg-harness"));
        std::fs::create_dir_all(&dir)?;
        if is_root() {
            check(
                Command::new("chown")
                    .args(["postgres:", &dir.to_string_lossy()])
                    .output()?,
                "chown",
            )?;
        }
        let data = dir.join("data");
        check(
            command(
                "initdb",
                &[
                    "-D",
                    &data.to_string_lossy(),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ],
            )
            .stdin(Stdio::null())
            .output()?,
            "initdb",
        )?;
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            let Some(port) = free_port() else {
                return Err(io::Error::other("no free loopback port found"));
            };
            let cluster = PgCluster {
                port,
                dir: dir.clone(),
                options: settings.iter().map(|s| s.to_string()).collect(),
                control: Mutex::new(()),
            };
            match cluster.start() {
                Ok(()) => return Ok(cluster),
                Err(error) => {
                    // Not dropped: that would remove the directory the next try needs.
                    std::mem::forget(cluster);
                    last_error = Some(error);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last_error.unwrap_or_else(|| io::Error::other("postgres did not start")))
    }

    /// The port on `127.0.0.1`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of its `postgres` database as the `postgres` user.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The scratch directory (the server's log is `server.log` there).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Starts the server (again) on its port and waits until it accepts connections.
    pub fn start(&self) -> io::Result<()> {
        let _control = self.control.lock().unwrap_or_else(|e| e.into_inner());
        let mut options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off \
             -c max_connections=100",
            self.port,
            self.dir.to_string_lossy()
        );
        for setting in &self.options {
            options.push_str(" -c ");
            options.push_str(setting);
        }
        let log = self.dir.join("server.log");
        let output = command(
            "pg_ctl",
            &[
                "-D",
                &self.data().to_string_lossy(),
                "-l",
                &log.to_string_lossy(),
                "-o",
                &options,
                "-w",
                "-t",
                &READY_WITHIN.as_secs().to_string(),
                "start",
            ],
        )
        .stdin(Stdio::null())
        .output()?;
        check(output, "pg_ctl start")?;
        let deadline = Instant::now() + READY_WITHIN;
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                return Err(io::Error::other("postgres did not accept connections"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Stops the server cleanly and starts it again on the same port, data kept.
    pub fn restart(&self) -> io::Result<()> {
        self.stop()?;
        self.start()
    }

    /// Stops the server cleanly (`pg_ctl stop -m fast`: sessions are disconnected, data
    /// is kept).
    pub fn stop(&self) -> io::Result<()> {
        let _control = self.control.lock().unwrap_or_else(|e| e.into_inner());
        self.pg_ctl_stop("fast")
    }

    /// Kills the server's postmaster with `SIGKILL`, as a crash would; its data stays
    /// (the next [`start`](Self::start) recovers from the write-ahead log).
    pub fn kill(&self) -> io::Result<()> {
        let _control = self.control.lock().unwrap_or_else(|e| e.into_inner());
        let pid_file = std::fs::read_to_string(self.data().join("postmaster.pid"))?;
        let pid = pid_file
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        // The postmaster's own children (its backends), by id, killed with it so that
        // none lingers holding the shared memory a new start needs.
        let children = children_of(&pid);
        check(Command::new("kill").args(["-9", &pid]).output()?, "kill")?;
        for child in &children {
            let _ = Command::new("kill").args(["-9", child]).output();
        }
        let deadline = Instant::now() + READY_WITHIN;
        while children
            .iter()
            .chain([&pid])
            .any(|id| Path::new(&format!("/proc/{id}")).exists())
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let deadline = Instant::now() + READY_WITHIN;
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn pg_ctl_stop(&self, mode: &str) -> io::Result<()> {
        let output = command(
            "pg_ctl",
            &[
                "-D",
                &self.data().to_string_lossy(),
                "-m",
                mode,
                "-w",
                "stop",
            ],
        )
        .stdin(Stdio::null())
        .output()?;
        check(output, "pg_ctl stop")
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = self.pg_ctl_stop("immediate");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The ids of the processes whose parent is `pid`, from `/proc`.
fn children_of(pid: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // The fields after the command name, which is in parentheses: state, ppid.
            let after_name = &stat[stat.rfind(')')? + 1..];
            let parent = after_name.split_whitespace().nth(1)?;
            (parent == pid).then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

fn check(output: Output, what: &str) -> io::Result<()> {
    if output.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "{what} failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )))
}
