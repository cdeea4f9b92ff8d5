//! [`RedisBuilder`]: where the server is and how the backend uses it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{ConnectionInfo, IntoConnectionInfo};

use crate::backend::{Inner, RedisBackend, Replicas};
use crate::commands::Commands;
use crate::corrupt::{CorruptRecord, OnCorrupt};
use crate::error::{Cause, RedisError};
use crate::layout::Layout;
use crate::own_claims::OwnClaims;
use crate::responses::SharedResponses;
use crate::runtime::{Elapsed, OnRuntime, RuntimeChoice};
use crate::server_clock::ServerClock;
use crate::wakeups::{SubscriberOptions, Wakeups};

/// What to do when the server's `maxmemory-policy` may evict the backend's keys.
///
/// Every key the backend writes has a TTL, so every policy but `noeviction` may drop one
/// under memory pressure: a claim in flight that vanishes lets a duplicate run, a result
/// that vanishes is run again on the next retry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EvictionCheck {
    /// Log a warning at connect (the default).
    #[default]
    Warn,
    /// Refuse to build: [`BuildError::EvictingPolicy`].
    Refuse,
    /// Do not look (a server that refuses `CONFIG GET` is also only warned about).
    Skip,
}

/// Why a backend could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The configuration cannot work; the text says why (no server named, a URL that
    /// does not parse, a namespace with a brace, a zero timeout).
    Config(String),
    /// The server could not be reached, or failed while the backend set up. A refused
    /// connection says `connection refused`, and refused credentials the server's own
    /// `WRONGPASS ...` reply, as soon as they happen; only a server that does not answer
    /// waits out the connect timeout (`no reply within ...`).
    Connect(RedisError),
    /// The server's `maxmemory-policy` may evict keys and the builder was told to refuse
    /// that ([`EvictionCheck::Refuse`]).
    EvictingPolicy {
        /// The policy the server reported.
        policy: String,
    },
    /// The tokio runtime the backend would own (built outside one, with no runtime
    /// given: see [`RedisBuilder::runtime`]) could not be started.
    Runtime(std::io::Error),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Config(why) => write!(f, "invalid Redis backend configuration: {why}"),
            BuildError::Connect(error) => write!(f, "{error}"),
            BuildError::Runtime(error) => {
                write!(
                    f,
                    "could not start the Redis backend's tokio runtime: {error}"
                )
            }
            BuildError::EvictingPolicy { policy } => write!(
                f,
                "the Redis server's maxmemory-policy is {policy:?}, which may evict claims \
                 and results; set it to noeviction"
            ),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Connect(error) => Some(error),
            BuildError::Runtime(error) => Some(error),
            _ => None,
        }
    }
}

enum Target {
    Server {
        client: redis::Client,
        manager: Option<ConnectionManager>,
    },
    Cluster {
        nodes: Vec<ConnectionInfo>,
        connection: Option<ClusterConnection>,
    },
}

/// Configures a [`RedisBackend`]: the server (or cluster), the key namespace, the
/// reclaim grace, the command timeout, `WAIT`, the eviction check, and what to do with
/// corrupt records.
///
/// ```no_run
/// use std::time::Duration;
/// use idemkit_redis::RedisBackend;
///
/// # async fn build() -> Result<(), idemkit_redis::BuildError> {
/// let backend = RedisBackend::builder()
///     .url("redis://127.0.0.1:6379/")
///     .namespace("payments")
///     .command_timeout(Duration::from_millis(500))
///     .on_corrupt_record(|record| eprintln!("idempotency store: {record}"))
///     .build()
///     .await?;
/// # Ok(()) }
/// ```
#[must_use]
pub struct RedisBuilder {
    target: Result<Option<Target>, String>,
    namespace: String,
    reclaim_grace: Duration,
    command_timeout: Duration,
    connect_timeout: Duration,
    replicas: Option<Replicas>,
    eviction: EvictionCheck,
    on_corrupt: Option<OnCorrupt>,
    runtime: Option<RuntimeChoice>,
}

impl RedisBuilder {
    /// The namespace of [`RedisBuilder::new`]: `"idemkit"`.
    pub const DEFAULT_NAMESPACE: &'static str = Layout::DEFAULT_NAMESPACE;
    /// The reclaim grace of [`RedisBuilder::new`]: 60 s, as the in-memory backend's.
    pub const DEFAULT_RECLAIM_GRACE: Duration = Duration::from_secs(60);
    /// The command timeout of [`RedisBuilder::new`]: 1 s. A healthy server answers in well
    /// under a millisecond; a second means it is down, paused or unreachable.
    pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(1);
    /// The connect timeout of [`RedisBuilder::new`]: 5 s.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

    /// A builder with the defaults and no server yet: name one with [`RedisBuilder::url`],
    /// [`RedisBuilder::client`], [`RedisBuilder::connection_manager`], [`RedisBuilder::cluster`] or
    /// [`RedisBuilder::cluster_connection`].
    pub fn new() -> RedisBuilder {
        RedisBuilder {
            target: Ok(None),
            namespace: RedisBuilder::DEFAULT_NAMESPACE.to_owned(),
            reclaim_grace: RedisBuilder::DEFAULT_RECLAIM_GRACE,
            command_timeout: RedisBuilder::DEFAULT_COMMAND_TIMEOUT,
            connect_timeout: RedisBuilder::DEFAULT_CONNECT_TIMEOUT,
            replicas: None,
            eviction: EvictionCheck::default(),
            on_corrupt: None,
            runtime: None,
        }
    }

    fn target(mut self, target: Result<Target, String>) -> RedisBuilder {
        self.target = target.map(Some);
        self
    }

    /// One server, by URL: `redis://[user:password@]host:port/[db]`, `rediss://` for TLS
    /// (if the `redis` crate was built with it), `unix:///path`.
    pub fn url(self, url: &str) -> RedisBuilder {
        let client = redis::Client::open(url).map_err(|error| format!("bad URL {url:?}: {error}"));
        self.target(client.map(|client| Target::Server {
            client,
            manager: None,
        }))
    }

    /// One server, through a client you made (with your TLS, credentials, protocol...).
    pub fn client(self, client: redis::Client) -> RedisBuilder {
        self.target(Ok(Target::Server {
            client,
            manager: None,
        }))
    }

    /// One server, sending commands on a connection manager you already have (it keeps
    /// its own reconnection settings). `client` connects the backend's subscription
    /// connection, which a connection manager cannot share; it should reach the same
    /// server.
    pub fn connection_manager(
        self,
        client: redis::Client,
        manager: ConnectionManager,
    ) -> RedisBuilder {
        self.target(Ok(Target::Server {
            client,
            manager: Some(manager),
        }))
    }

    /// A Redis Cluster, by the URLs of some of its nodes.
    pub fn cluster<I, S>(self, nodes: I) -> RedisBuilder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.target(cluster_nodes(nodes).map(|nodes| Target::Cluster {
            nodes,
            connection: None,
        }))
    }

    /// A Redis Cluster, sending commands on a cluster connection you already have.
    /// `nodes` (URLs of some of its nodes) connect the backend's subscription connection.
    pub fn cluster_connection<I, S>(self, nodes: I, connection: ClusterConnection) -> RedisBuilder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.target(cluster_nodes(nodes).map(|nodes| Target::Cluster {
            nodes,
            connection: Some(connection),
        }))
    }

    /// The prefix of every key: `<namespace>:{<key>}`. Services sharing one Redis use
    /// one namespace each. It may not be empty or contain a brace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> RedisBuilder {
        self.namespace = namespace.into();
        self
    }

    /// How long a claim whose lease lapsed is kept, so that the next claim reports
    /// [`Claim::Reclaimed`](idemkit_core::Claim::Reclaimed) and a late completion by its
    /// owner can still land; afterwards the key expires.
    pub fn reclaim_grace(mut self, reclaim_grace: Duration) -> RedisBuilder {
        self.reclaim_grace = reclaim_grace;
        self
    }

    /// The longest one command may take, from sending it to its reply, including any
    /// reconnecting on the way. Past it, the operation fails with a storage error.
    pub fn command_timeout(mut self, command_timeout: Duration) -> RedisBuilder {
        self.command_timeout = command_timeout;
        self
    }

    /// The longest the first connection may take at build, and each attempt to
    /// reconnect after.
    pub fn connect_timeout(mut self, connect_timeout: Duration) -> RedisBuilder {
        self.connect_timeout = connect_timeout;
        self
    }

    /// After every write (a claim won, a result stored, a release, a renewal), waits
    /// until `replicas` replicas have acknowledged it, at most `timeout` (Redis `WAIT`).
    /// A write that reaches fewer is reported as a storage error although the server
    /// applied it.
    ///
    /// This narrows, but does not close, the window in which a failover loses an
    /// acknowledged write: Redis replication stays asynchronous. `WAIT` holds up the
    /// commands behind it on the backend's connection, so a lagging replica slows every
    /// operation of this backend.
    pub fn wait_for_replicas(mut self, replicas: u32, timeout: Duration) -> RedisBuilder {
        self.replicas = (replicas > 0).then_some(Replicas {
            count: replicas,
            timeout,
        });
        self
    }

    /// What to do when the server's `maxmemory-policy` may evict keys (checked at
    /// build, on every master of a cluster).
    pub fn eviction_check(mut self, check: EvictionCheck) -> RedisBuilder {
        self.eviction = check;
        self
    }

    /// Calls `callback` for every value found at a record's key that is not a record
    /// (see [`CorruptRecord`]), besides logging it. It runs on the task or thread of the
    /// operation that found it: keep it short.
    pub fn on_corrupt_record(
        mut self,
        callback: impl Fn(&CorruptRecord) + Send + Sync + 'static,
    ) -> RedisBuilder {
        self.on_corrupt = Some(Arc::new(callback));
        self
    }

    /// The async runtime the backend's connections, background work and time limits run
    /// on: `TokioRuntime` (feature `tokio`) or `SmolRuntime` (feature `smol`), both
    /// re-exported at the crate root. The backend then works from
    /// any caller: tasks of either runtime, or blocking code on plain threads.
    ///
    /// Without it: with the `tokio` feature, the tokio runtime [`RedisBuilder::build`] (or
    /// [`RedisBuilder::build_blocking`]) is called in, or, outside one, a tokio runtime of the
    /// backend's own (one worker thread), which lives as long as the backend's clones
    /// (and its [timer](idemkit_core::Backend::timer)); with only the `smol` feature,
    /// smol. See the crate docs' "Runtimes".
    ///
    /// ```no_run
    /// # #[cfg(feature = "tokio")] {
    /// use idemkit_redis::{RedisBackend, TokioRuntime};
    ///
    /// # fn build(handle: tokio::runtime::Handle) -> Result<(), idemkit_redis::BuildError> {
    /// // Blocking code whose connections run on an existing tokio runtime.
    /// let backend = RedisBackend::builder()
    ///     .url("redis://127.0.0.1:6379/")
    ///     .runtime(TokioRuntime::from(handle))
    ///     .build_blocking()?;
    /// # Ok(()) }
    /// # }
    /// ```
    pub fn runtime(mut self, runtime: impl Into<RuntimeChoice>) -> RedisBuilder {
        self.runtime = Some(runtime.into());
        self
    }

    /// Connects and checks the server, then returns the backend, on the runtime
    /// [`RedisBuilder::runtime`] names (or its default).
    pub async fn build(self) -> Result<RedisBackend, BuildError> {
        let runtime = OnRuntime::resolve(self.runtime.clone()).map_err(BuildError::Runtime)?;
        // Driven like every operation, so that the connections are made on `runtime`.
        runtime.clone().drive(self.build_on(runtime)).await
    }

    /// [`RedisBuilder::build`] for blocking code: blocks until connected. Outside a tokio
    /// runtime and with no [`RedisBuilder::runtime`], the connections run on a tokio runtime
    /// of the backend's own (feature `tokio`) or on smol (only the feature `smol`).
    pub fn build_blocking(self) -> Result<RedisBackend, BuildError> {
        futures_lite::future::block_on(self.build())
    }

    async fn build_on(self, runtime: OnRuntime) -> Result<RedisBackend, BuildError> {
        let target = self.target.map_err(BuildError::Config)?.ok_or_else(|| {
            BuildError::Config("no server: call url, client, connection_manager or cluster".into())
        })?;
        let layout =
            Layout::new(&self.namespace).map_err(|error| BuildError::Config(error.to_string()))?;
        if self.command_timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(BuildError::Config(
                "a timeout of zero lets nothing through".into(),
            ));
        }
        let options = SubscriberOptions {
            connect_timeout: self.connect_timeout,
            max_reconnect_delay: MAX_RECONNECT_DELAY,
        };
        let limit = self.connect_timeout;
        let (commands, wakeups) = match target {
            Target::Server { client, manager } => {
                let manager = match manager {
                    Some(manager) => manager,
                    None => {
                        // One plain attempt first: the manager retries a failed connect
                        // until the time limit, and would report a refused connection
                        // or a refused password as no reply in time. This one fails at
                        // once, in the server's or the system's own words.
                        let probing = client.get_multiplexed_async_connection();
                        match runtime.within(limit, probing).await {
                            Ok(Err(error))
                                if error.kind() == redis::ErrorKind::AuthenticationFailed =>
                            {
                                let asking = refusal_words(&client);
                                let words = runtime.within(limit, asking).await.ok().flatten();
                                let cause = Cause::Unauthorized { error, words };
                                return Err(BuildError::Connect(RedisError::new("connect", cause)));
                            }
                            probed => drop(connected(probed, limit)?),
                        }
                        let config = ConnectionManagerConfig::new()
                            .set_connection_timeout(Some(self.connect_timeout))
                            .set_max_delay(MAX_RECONNECT_DELAY)
                            // Each operation is bounded by the command timeout instead.
                            .set_response_timeout(None);
                        let connecting = ConnectionManager::new_with_config(client.clone(), config);
                        connected(runtime.within(limit, connecting).await, limit)?
                    }
                };
                let wakeups =
                    connected(Ok(Wakeups::for_server(&client, &options, &runtime)), limit)?;
                (Commands::Server(manager), wakeups)
            }
            Target::Cluster { nodes, connection } => {
                let connection = match connection {
                    Some(connection) => connection,
                    None => {
                        let connecting = async {
                            redis::cluster::ClusterClient::builder(nodes.clone())
                                .connection_timeout(self.connect_timeout)
                                .build()?
                                .get_async_connection()
                                .await
                        };
                        connected(runtime.within(limit, connecting).await, limit)?
                    }
                };
                let subscribing = Wakeups::for_cluster(&nodes, &options, &runtime);
                let wakeups = connected(runtime.within(limit, subscribing).await, limit)?;
                (Commands::Cluster(connection), wakeups)
            }
        };
        check_eviction(&commands, self.eviction, self.command_timeout, &runtime).await?;
        connected(
            runtime.within(limit, commands.ensure_library()).await,
            limit,
        )?;
        Ok(RedisBackend {
            inner: Arc::new(Inner {
                commands,
                wakeups,
                layout,
                namespace: self.namespace,
                reclaim_grace: self.reclaim_grace,
                command_timeout: self.command_timeout,
                replicas: self.replicas,
                on_corrupt: self.on_corrupt,
                clock: ServerClock::default(),
                responses: SharedResponses::default(),
                own_claims: OwnClaims::default(),
                runtime,
                releases: Arc::default(),
            }),
        })
    }
}

impl Default for RedisBuilder {
    fn default() -> RedisBuilder {
        RedisBuilder::new()
    }
}

impl fmt::Debug for RedisBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBuilder")
            .field("namespace", &self.namespace)
            .field("reclaim_grace", &self.reclaim_grace)
            .field("command_timeout", &self.command_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("eviction", &self.eviction)
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}

/// The value of a connection step that had `limit` to finish, or why it did not.
fn connected<T>(
    result: Result<redis::RedisResult<T>, Elapsed>,
    limit: Duration,
) -> Result<T, BuildError> {
    let cause = match result {
        Ok(Ok(value)) => return Ok(value),
        Ok(Err(error)) if error.kind() == redis::ErrorKind::AuthenticationFailed => {
            Cause::Unauthorized { error, words: None }
        }
        Ok(Err(error)) if error.is_connection_refusal() => Cause::Refused(error),
        Ok(Err(error)) => Cause::Redis(error),
        Err(Elapsed) => Cause::TimedOut(limit),
    };
    Err(BuildError::Connect(RedisError::new("connect", cause)))
}

/// The server's own reply to the URL's credentials (`WRONGPASS invalid username-password
/// pair or user is disabled.`), which the client library replaces with words of its own
/// when it refuses a connection: asked again on a connection that sends nothing before
/// the `AUTH`. `None` if it cannot be had (no password in the URL, the server gone, or
/// the credentials accepted this time).
async fn refusal_words(client: &redis::Client) -> Option<String> {
    let info = client.get_connection_info();
    let settings = info.redis_settings();
    let mut auth = redis::cmd("AUTH");
    if let Some(username) = settings.username() {
        auth.arg(username);
    }
    auth.arg(settings.password()?);
    // Nothing before the AUTH: a server that wants a password refuses the library's
    // CLIENT SETINFO with NOAUTH, which would hide the answer asked for.
    let bare = redis::RedisConnectionInfo::default().set_skip_set_lib_name();
    let bare = info.clone().set_redis_settings(bare);
    let mut connection = redis::Client::open(bare)
        .ok()?
        .get_multiplexed_async_connection()
        .await
        .ok()?;
    let refused = auth.query_async::<()>(&mut connection).await.err()?;
    Some(match (refused.code(), refused.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        _ => refused.to_string(),
    })
}

/// The longest pause between two reconnection attempts.
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(1);

fn cluster_nodes<I, S>(nodes: I) -> Result<Vec<ConnectionInfo>, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let nodes: Vec<ConnectionInfo> = nodes
        .into_iter()
        .map(|url| {
            let url = url.as_ref();
            url.into_connection_info()
                .map_err(|error| format!("bad URL {url:?}: {error}"))
        })
        .collect::<Result<_, _>>()?;
    if nodes.is_empty() {
        return Err("a cluster needs the URL of at least one node".into());
    }
    Ok(nodes)
}

/// Reads `maxmemory-policy` and acts on it as `check` says.
async fn check_eviction(
    commands: &Commands,
    check: EvictionCheck,
    limit: Duration,
    runtime: &OnRuntime,
) -> Result<(), BuildError> {
    if check == EvictionCheck::Skip {
        return Ok(());
    }
    let policies = match runtime
        .within(limit, commands.config_values("maxmemory-policy"))
        .await
    {
        Ok(Ok(policies)) if !policies.is_empty() => policies,
        Ok(Ok(_)) | Ok(Err(_)) | Err(Elapsed) => {
            tracing::warn!(
                target: "idemkit_redis",
                "could not read the Redis server's maxmemory-policy (CONFIG GET refused?): \
                 make sure it is noeviction, or claims and results may be evicted",
            );
            return Ok(());
        }
    };
    let Some(evicting) = policies.into_iter().find(|policy| policy != "noeviction") else {
        return Ok(());
    };
    if check == EvictionCheck::Refuse {
        return Err(BuildError::EvictingPolicy { policy: evicting });
    }
    tracing::warn!(
        target: "idemkit_redis",
        policy = %evicting,
        "the Redis server's maxmemory-policy may evict keys: a claim in flight that is \
         evicted lets a duplicate run; set maxmemory-policy to noeviction",
    );
    Ok(())
}
