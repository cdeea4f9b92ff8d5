//! The machine's own PostgreSQL server, for tests that do not stop it.

use std::net::{TcpStream, ToSocketAddrs};
use std::sync::OnceLock;
use std::time::Duration;

use crate::skip::skip;

/// The machine's server: `127.0.0.1:5432`, database `test`, user `postgres`, trust auth.
pub const MACHINE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The environment variable that names another server instead of [`MACHINE_URL`].
pub const URL_VAR: &str = "IDEMKIT_POSTGRES_URL";

/// The URL of the machine's server when something answers there (`None` and a skip
/// message otherwise, or a panic with `IDEMKIT_REQUIRE_POSTGRES=1`).
///
/// Tests given this server only read and write: they never stop or restart it, and each
/// keeps to a table of its own ([`unique_name`](crate::unique_name)).
pub fn machine() -> Option<String> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    let url = URL
        .get_or_init(|| {
            let url = std::env::var(URL_VAR).unwrap_or_else(|_| MACHINE_URL.to_owned());
            reachable(&url).then_some(url)
        })
        .clone();
    if url.is_none() {
        skip(
            "the PostgreSQL tests on the machine's server",
            "nothing answers at the machine's PostgreSQL address",
        );
    }
    url
}

/// Whether the host and port of `url` accept a TCP connection.
fn reachable(url: &str) -> bool {
    let Some(rest) = url.split_once("://").map(|(_, rest)| rest) else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let host_port = if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:5432")
    };
    host_port
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .is_some_and(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok())
}
