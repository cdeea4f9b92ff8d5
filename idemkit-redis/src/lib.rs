//! idemkit on Redis: one idempotency key runs once across every process that shares a
//! Redis server, on tokio, smol or plain threads.
//!
//! [`RedisBackend`] implements the core's async [`Backend`](idemkit_core::Backend) and
//! [`BlockingBackend`](idemkit_core::BlockingBackend) with the same meaning as the
//! in-memory backend, but the server judges: a claim is atomic across every replica of
//! a service, leases and expiry follow the server's clock, and a waiter in one process
//! is woken by a completion in another.
//!
//! ```no_run
//! use std::convert::Infallible;
//! use idemkit_core::{AsyncIdempotency, Decision, Fingerprint, Key, Response};
//! use idemkit_redis::RedisBackend;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let backend = RedisBackend::connect("redis://127.0.0.1:6379/").await?;
//! let idempotency = AsyncIdempotency::new(backend);
//! let key = Key::new(["charge", "client-key-7"]);
//! let fingerprint = Fingerprint::new(["4242", "4999"]);
//! let outcome = idempotency
//!     .run(&key, &fingerprint, || async { Ok::<_, Infallible>(Response::new(200, "charged")) })
//!     .await?;
//! assert!(matches!(outcome.decision, Decision::New | Decision::Replayed));
//! # Ok(()) }
//! ```
//!
//! Blocking code uses the same backend through [`Idempotency`](idemkit_core::Idempotency)
//! ([`RedisBackend::connect_blocking`] builds one from blocking code; see
//! [Runtimes](#runtimes) for what its connections run on).
//!
//! # How it works
//!
//! - **One key per record.** The record of key `k` is one string at `<namespace>:{k}`
//!   (see [`RedisBackend::storage_key`]), written together with its expiry by one `SET
//!   ... PX`: a fixed header (a layout version, the state, the claim token, the
//!   instants, the lengths), then the fingerprint, the headers and the body. The braces
//!   are a Redis Cluster hash tag. Records of the previous layout (a hash per record, as
//!   idemkit-redis wrote them before) are still read, completed, renewed, released,
//!   replayed, counted and purged; a write rewrites them in the current layout. The
//!   reverse does not hold: an older version reads a record of this layout as a corrupt
//!   value (and would run its key again), and an older process that connects later
//!   loads its own library over this one, so upgrade every process sharing a server
//!   together.
//! - **A free key costs one plain command.** A claim is first one `SET ... NX PX ...
//!   GET`, which runs no script: a free key is then claimed, and a completed record comes
//!   back, to be replayed at once if it has more than a second left by this client's
//!   mapping of the server's clock (which every function's reply keeps within 100 ms).
//!   The claim it writes holds no time (the client does not know the server's): the
//!   key's expiry, which the server set by its own clock, tells when it was made, and
//!   the functions read it from there (`PEXPIRETIME`). A claim that finds another claim,
//!   a record near its end, or anything it cannot replay, asks the claim function, which
//!   judges by the server's `TIME`.
//! - **One function per operation.** Claim (past a free key), complete, release and
//!   renew are each one call of a function of a Redis Functions library (Redis 7),
//!   atomic on the server, called with `FCALL` (a completion that one function leaves to
//!   the other, below, takes two). The library is loaded once per server, under the one
//!   name `idemkit` (`FUNCTION LOAD REPLACE`: a newer version replaces the older,
//!   `FUNCTION LIST` never grows), when a backend connects and finds another version or
//!   none, and again, then the call resent once, when a server answers that it does not
//!   have it (restarted without persistence, `FUNCTION FLUSH`, a new cluster node). Two
//!   versions of this crate on one server share whichever library was loaded last. Each
//!   function reads the time with the server's `TIME`, and a claim's start is the
//!   server's too: the clients' clocks never decide a lease. Fencing is the core's:
//!   complete, release and renew act only for the claim token that holds the key.
//! - **A completion is handed its claim's parts.** A backend keeps the fields each claim
//!   of its own plain `SET` wrote (its lease, how long its record is kept, its
//!   fingerprint; at most 1 KiB of them) until it completes, releases or renews the
//!   claim, and at least until 2,048 newer claims have been kept (it keeps at most
//!   4,096).
//!   Its completion hands them to `idemkit_complete_own_claim`, so the server only
//!   checks the claim and dates the result. That function writes the record first
//!   (`SET ... GET`) and checks the claim it replaced after, putting back anything
//!   that was not this claim exactly as it was, expiry included: one command fewer
//!   for the completion that almost always finds its claim (a refused one writes
//!   twice, which keyspace notifications, `WATCH` and client-side caching see). A
//!   claim renewed since, or a key without expiry, is left to `idemkit_complete`,
//!   which cuts the same parts out of the claim, as it does for every claim the
//!   backend does not hold.
//! - **Everything expires.** A claim's key expires after its lease plus the reclaim
//!   grace (a renewal moves both), a result's after its time to live. Durations longer
//!   than about 50 years are shortened to that.
//! - **Counts and purge for operators.** [`RedisBackend`] implements
//!   [`Operator`](idemkit_core::Operator) (what `idemkit stats` and `idemkit purge` use)
//!   by walking its namespace with `SCAN`, judged by the server's clock. Since every
//!   record expires by itself, a purge only finds records whose key outlived them (a TTL
//!   removed by hand, a restore without TTLs); a Redis Cluster is not walked.
//! - **Waiters are woken by the server.** Release, a claim that replaces a record, and
//!   the completion of a claim a waiter watches publish on a channel named like the key
//!   (a waiter's read marks the claim watched, and the completion of a claim no one
//!   watched publishes nothing). Each backend holds one subscription
//!   connection and subscribes it to the keys its waiters wait on, then demultiplexes to
//!   in-process events. A waiter subscribes before it reads, returns at once when the
//!   owner's lease has lapsed, re-reads on a 50 ms to 1 s backoff in case a message was
//!   lost, and never waits past its timeout. A lost subscription connection reconnects,
//!   and its waiters subscribe again.
//! - **Corrupt records are absent.** A value at a record's key that this version cannot
//!   read (another type, another program's data, another format, damage) is treated as no
//!   record and overwritten by the next claim; it is never replayed and never an error.
//!   The server checks what it decides on (the layout, the state, the instants, the
//!   lengths); this client checks every other field when it decodes a record, and a
//!   record that fails there is corrupt in the same way.
//!   Each one is logged with `tracing` and handed to
//!   [`RedisBuilder::on_corrupt_record`]'s callback ([`CorruptRecord`]). Every field counts
//!   alike: headers that do not decode and a status outside HTTP's 100-999 are both
//!   corrupt. So `complete` stores only HTTP statuses, and refuses any other with an error.
//! - **Failures are errors.** A server that is down, a lost connection, or no reply within
//!   the [command timeout](RedisBuilder::command_timeout) is a
//!   [`Error::Storage`](idemkit_core::Error::Storage) carrying a [`RedisError`], so the
//!   executor's `OnStorageError` decides. The connections reconnect by themselves when the
//!   server is back. An operation reported done was done.
//! - **A claim nobody knows is given back.** A claim whose reply was lost (a timeout, a
//!   dropped connection) may still have landed, holding the key for a token only this
//!   backend ever saw; a completion that failed leaves its claim held. Either way the
//!   backend releases that token in the background once the server answers again
//!   (fenced: a completion that landed after all stays), so a retry runs instead of
//!   meeting a key in flight for a whole lease.
//! - **Time on this side.** Each function's reply carries the server's time; the
//!   instants of a [`Record`](idemkit_core::Record) are the server's mapped onto this
//!   machine's monotonic clock relative to such a reply, so they are off by at most a
//!   round trip (and a record replayed from a plain `SET`, whose reply carries no time,
//!   by at most the mapping's 100 ms tolerance).
//!
//! # What Redis cannot promise
//!
//! Say it plainly: this backend is as durable as the Redis behind it.
//!
//! - **Eviction.** With a `maxmemory` limit and any `maxmemory-policy` but `noeviction`,
//!   Redis may drop keys that have a TTL, and every key here has one: an evicted claim
//!   lets a duplicate run, an evicted result runs again. The builder checks the policy at
//!   connect and warns ([`EvictionCheck`]; it can refuse instead). Use `noeviction`.
//! - **Replication is asynchronous.** A write acknowledged by a master can be lost if the
//!   master fails before a replica has it; after a failover, a claim may be gone and its
//!   key run twice. [`RedisBuilder::wait_for_replicas`] makes every write wait for replicas
//!   (`WAIT`), which narrows the window but does not close it.
//! - **Persistence.** A server restarted without persistence has forgotten every claim and
//!   result. Run it with AOF (`appendfsync everysec` loses up to a second).
//! - **The server's clock.** `TIME` is the server's wall clock: a clock step on the server
//!   (not a slew) lengthens or shortens every lease by the step. In a cluster each node
//!   judges its own keys by its own clock.
//! - **Pub/sub delivers at most once.** A wake-up lost to a disconnection costs a waiter
//!   at most a second (its re-read), never a wrong answer.
//!
//! # Runtimes
//!
//! Runtimes are cargo features, as in the `redis` crate: `tokio` (the default) and
//! `smol`. Compile only the one you use (`default-features = false, features =
//! ["smol"]` for smol); with neither, the crate does not compile. A smol build compiles
//! no tokio runtime, I/O or timer; it still lists `tokio` with only its `sync` part,
//! which the `redis` crate's async support always depends on (redis 1.8).
//!
//! A backend runs on one runtime, chosen when it is built and never by where it happens
//! to be polled: its connections (driven by the `redis` crate), its background work
//! (a release nobody waits for, an unsubscribe) and its time limits. Name it with
//! [`RedisBuilder::runtime`], or take the default:
//!
//! - **Feature `tokio` (alone or with `smol`):** the tokio runtime [`RedisBuilder::build`] or
//!   [`RedisBuilder::build_blocking`] is called in (it needs its I/O and time drivers, as
//!   `#[tokio::main]` gives). Outside one, a tokio runtime of the backend's own: one
//!   worker thread, shut down (without waiting) when the last clone of the backend, of
//!   its [timer](idemkit_core::Backend::timer), or of a task it spawned is gone.
//! - **Only feature `smol`:** `SmolRuntime`: smol's global executor and async-io's
//!   reactor, which run on threads of their own.
//! - **Both features:** tokio as above, unless `.runtime(SmolRuntime)` is given.
//!
//! Whatever the runtime, the backend serves every caller: tasks of tokio or smol, and
//! blocking code, whose calls (through [`BlockingBackend`](idemkit_core::BlockingBackend))
//! block on the async operation with `futures_lite::future::block_on` on the caller's
//! thread. Each operation is driven so that the `redis` crate finds the backend's
//! runtime: on tokio, the runtime's handle is entered around every poll; on smol (with
//! both features compiled in), an operation polled inside a tokio runtime runs as a task
//! of smol's executor, where the `redis` crate, which looks for a tokio context, does not
//! see one. Nothing here is global: no `redis::aio::prefer_tokio`/`prefer_smol` is
//! called (and calling one yourself overrides this choice for the whole process).
//!
//! Blocking calls park their thread: make them from threads, not from inside an async
//! task, and never from the thread of a single-threaded tokio runtime the backend runs
//! on, which its connections need.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

#[cfg(not(any(feature = "tokio", feature = "smol")))]
compile_error!(
    "idemkit-redis needs an async runtime for its connections: enable its feature \
     `tokio` (the default) or `smol`"
);

/// Its items only with a runtime feature: without one, the `compile_error!` above is the
/// only error, not a cascade of missing `redis::aio` items.
macro_rules! with_a_runtime {
    ($($item:item)*) => { $( #[cfg(any(feature = "tokio", feature = "smol"))] $item )* };
}

with_a_runtime! {
    mod backend;
    mod builder;
    mod claim_fields;
    mod commands;
    mod corrupt;
    mod digits;
    mod error;
    mod headers;
    mod joined_arg;
    mod layout;
    mod operator;
    mod own_claims;
    mod record;
    mod releases;
    mod reply;
    mod responses;
    mod runtime;
    mod scripts;
    mod server_clock;
    mod token;
    mod traits;
    mod wait;
    mod wakeups;

    pub use backend::RedisBackend;
    pub use builder::{BuildError, RedisBuilder, EvictionCheck};
    pub use corrupt::CorruptRecord;
    pub use error::RedisError;
    pub use layout::InvalidNamespace;
    pub use runtime::RuntimeChoice;

    /// The `redis` crate this one is built on, whose types are part of this API
    /// ([`RedisBuilder::client`], [`RedisBuilder::connection_manager`], [`RedisError`]'s causes...).
    pub use redis;

    /// tokio as the backend's runtime, for [`RedisBuilder::runtime`] (from `idemkit-tokio`).
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub use idemkit_tokio::TokioRuntime;

    /// smol as the backend's runtime, for [`RedisBuilder::runtime`] (from `idemkit-smol`).
    #[cfg(feature = "smol")]
    #[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
    pub use idemkit_smol::SmolRuntime;

    impl RedisBackend {
        /// A builder, to set the server and everything else: see [`RedisBuilder`].
        pub fn builder() -> RedisBuilder {
            RedisBuilder::new()
        }

        /// A backend on the server at `url` with the defaults (namespace `idemkit`, 60 s
        /// reclaim grace, 1 s command timeout).
        pub async fn connect(url: &str) -> Result<RedisBackend, BuildError> {
            RedisBuilder::new().url(url).build().await
        }

        /// [`RedisBackend::connect`] for blocking code.
        pub fn connect_blocking(url: &str) -> Result<RedisBackend, BuildError> {
            RedisBuilder::new().url(url).build_blocking()
        }
    }
}

/// This crate's README, whose example is compiled as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
