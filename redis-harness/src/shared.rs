//! One server per test binary, for the tests that do not hurt it.

use std::sync::OnceLock;

use crate::server::RedisServer;
use crate::skip::available;

/// The server this test binary's well-behaved tests share, started on first use; `None`
/// when Redis is not installed (see [`available`]: a skip, or a panic when required).
///
/// It is never killed, restarted or paused: a test that does that starts its own
/// [`RedisServer`]. It lives until the process ends; its watchdog stops it then.
pub fn shared() -> Option<&'static RedisServer> {
    if !available() {
        return None;
    }
    static SERVER: OnceLock<RedisServer> = OnceLock::new();
    Some(SERVER.get_or_init(|| match RedisServer::start() {
        Ok(server) => server,
        Err(error) => panic!("could not start the shared test redis-server: {error}"),
    }))
}
