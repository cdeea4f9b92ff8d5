//! The connection the backend sends its commands on: one server through a reconnecting
//! connection manager, or a Redis Cluster.

use std::future::Future;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, Pipeline, RedisError, RedisResult, Value};

use crate::scripts;

/// A multiplexed, self-reconnecting connection to a server or a cluster. Clones share it.
#[derive(Clone)]
pub(crate) enum Commands {
    Server(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Commands {
    /// Sends `cmd`; a server's error reply is an `Err`.
    pub(crate) async fn send(&self, cmd: &Cmd) -> RedisResult<Value> {
        let reply = match self {
            Commands::Server(manager) => manager.clone().req_packed_command(cmd).await,
            Commands::Cluster(cluster) => cluster.clone().req_packed_command(cmd).await,
        };
        reply?.extract_error()
    }

    /// Sends `call`, an `FCALL` of one of the library's functions (see [`fcall`]), as
    /// [`Commands::with_library`] does.
    pub(crate) async fn run(&self, call: &Cmd) -> RedisResult<Value> {
        self.with_library(|| self.send(call)).await
    }

    /// Sends `pipeline`, which calls the library's functions, as
    /// [`Commands::with_library`] does: one reply per command.
    pub(crate) async fn run_pipeline(&self, pipeline: &Pipeline) -> RedisResult<Vec<Value>> {
        self.with_library(|| async {
            match self {
                Commands::Server(manager) => pipeline.query_async(&mut manager.clone()).await,
                Commands::Cluster(cluster) => pipeline.query_async(&mut cluster.clone()).await,
            }
        })
        .await
    }

    /// Awaits `send()`. A server that does not have the library ("Function not found":
    /// restarted without persistence, `FUNCTION FLUSH`, a new cluster node) is sent it
    /// with `FUNCTION LOAD REPLACE`, then `send()` is awaited again, once.
    async fn with_library<T, F, Sent>(&self, send: F) -> RedisResult<T>
    where
        F: Fn() -> Sent,
        Sent: Future<Output = RedisResult<T>>,
    {
        match send().await {
            Err(error) if function_missing(&error) => {
                self.load_library().await?;
                send().await
            }
            result => result,
        }
    }

    /// Makes sure the server runs this version of the library, when the backend is built:
    /// a server whose `idemkit_version` answers this version is left as it is; one without
    /// the library, or with another version, is sent this one (`FUNCTION LOAD REPLACE`,
    /// under the same name, so it replaces the other). A cluster is sent it on every
    /// master, whatever they hold (a version asked of one node says nothing of the
    /// others).
    pub(crate) async fn ensure_library(&self) -> RedisResult<()> {
        if let Commands::Server(_) = self {
            let mut version = redis::cmd("FCALL");
            version.arg(scripts::VERSION_FUNCTION).arg(0);
            match self.send(&version).await {
                Ok(Value::BulkString(loaded)) if loaded == scripts::VERSION.as_bytes() => {
                    return Ok(());
                }
                Ok(_) => {}
                Err(error) if function_missing(&error) => {}
                Err(error) => return Err(error),
            }
        }
        self.load_library().await
    }

    /// Loads the library (on every master of a cluster), replacing any version of it.
    pub(crate) async fn load_library(&self) -> RedisResult<()> {
        let mut load = redis::cmd("FUNCTION");
        load.arg("LOAD")
            .arg("REPLACE")
            .arg(scripts::LIBRARY.as_str());
        // A cluster routes `FUNCTION LOAD` to every master.
        self.send(&load).await.map(drop)
    }

    /// `WAIT replicas timeout` on the connection that wrote `key`: how many replicas
    /// acknowledged every write sent on it so far.
    pub(crate) async fn wait_for_replicas(
        &self,
        key: &str,
        replicas: u32,
        timeout: Duration,
    ) -> RedisResult<i64> {
        let mut wait = redis::cmd("WAIT");
        wait.arg(replicas).arg(timeout.as_millis() as u64);
        let reply = match self {
            Commands::Server(_) => self.send(&wait).await?,
            Commands::Cluster(cluster) => {
                // The node that owns the key's slot is the one that took the write.
                let route = Route::with_key(key.as_bytes(), SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                cluster
                    .clone()
                    .route_command(wait, routing)
                    .await?
                    .extract_error()?
            }
        };
        Ok(redis::from_redis_value(reply)?)
    }

    /// `CONFIG GET name` on the server, or on every master of a cluster: the values seen.
    /// An empty list means the server would not say (some managed services disable
    /// `CONFIG`).
    pub(crate) async fn config_values(&self, name: &str) -> RedisResult<Vec<String>> {
        let mut get = redis::cmd("CONFIG");
        get.arg("GET").arg(name);
        let reply = match self {
            Commands::Server(_) => self.send(&get).await?,
            Commands::Cluster(cluster) => {
                let routing = RoutingInfo::MultiNode((
                    redis::cluster_routing::MultipleNodeRoutingInfo::AllMasters,
                    None,
                ));
                cluster
                    .clone()
                    .route_command(get, routing)
                    .await?
                    .extract_error()?
            }
        };
        let mut strings = Vec::new();
        flatten(reply, &mut strings);
        // Replies are name/value pairs, per node; keep the values of `name`.
        Ok(strings
            .windows(2)
            .filter(|pair| pair[0].eq_ignore_ascii_case(name))
            .map(|pair| pair[1].clone())
            .collect())
    }
}

/// Every string in `value`, depth first (a node's reply, a map of nodes' replies...).
fn flatten(value: Value, out: &mut Vec<String>) {
    match value {
        Value::BulkString(bytes) => out.push(String::from_utf8_lossy(&bytes).into_owned()),
        Value::SimpleString(text) => out.push(text),
        Value::Array(items) | Value::Set(items) => {
            items.into_iter().for_each(|item| flatten(item, out));
        }
        Value::Map(pairs) => {
            for (key, value) in pairs {
                flatten(key, out);
                flatten(value, out);
            }
        }
        _ => {}
    }
}

/// Whether `error` is a server's answer to an `FCALL` of a function it does not have, or
/// the failure of a pipeline that holds one.
pub(crate) fn function_missing(error: &RedisError) -> bool {
    let not_found = |detail: Option<&str>| {
        detail.is_some_and(|detail| detail.starts_with("Function not found"))
    };
    // A pipeline's failure carries its commands' errors, and no detail of its own.
    not_found(error.detail())
        || error
            .clone()
            .into_server_errors()
            .is_some_and(|errors| errors.iter().any(|(_, error)| not_found(error.details())))
}

/// The start of an `FCALL` of `function` on the one key `key`; the caller adds the
/// arguments.
pub(crate) fn fcall(function: &str, key: &str) -> Cmd {
    fcall_with_room(function, key, 0, 0)
}

/// The most bytes a number argument takes (a `u64`'s digits).
pub(crate) const NUMBER_LEN: usize = 20;

/// [`fcall`] with room for `args` more arguments of `bytes` bytes in all, so that adding
/// them does not grow the command's buffers: a command starts empty and doubles as its
/// arguments arrive, which took a completion's client a reallocation per argument.
pub(crate) fn fcall_with_room(function: &str, key: &str, args: usize, bytes: usize) -> Cmd {
    let mut call = Cmd::with_capacity(
        4 + args,
        "FCALL".len() + function.len() + 1 + key.len() + bytes,
    );
    call.arg("FCALL").arg(function).arg(1).arg(key);
    call
}
