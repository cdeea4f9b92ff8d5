//! Waking waiters: one pub/sub connection per backend, demultiplexed to per-key
//! in-process events.
//!
//! Each record's wake-ups are published on a channel named like its key, so a process
//! hears only of the keys it waits on (a single channel for every key would send every
//! completion to every process). The connection is RESP3, where subscription pushes and
//! ordinary replies share one socket; the `redis` crate hands each push to
//! [`Registry::on_push`], which runs on the connection's task and never blocks.
//!
//! A waiter watches its key's channel for as long as it waits: the first waiter of a key
//! subscribes, the last one to leave unsubscribes (in the background). The server's own
//! confirmations are the truth about what is subscribed: an unsubscribe confirmation for
//! a key someone waits on, or a lost connection, marks its subscription lost and wakes
//! its waiters, who subscribe again before they read again. A confirmation for a key
//! nobody waits on any more is undone. So a lost subscription is restored by the next
//! step of each wait, and in between the waiter's poll is the floor.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use event_listener::{Event, EventListener};
use parking_lot::Mutex;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{ProtocolVersion, PushInfo, PushKind, RedisResult, Value};

use crate::runtime::OnRuntime;

/// The subscription connection.
#[derive(Clone)]
pub(crate) enum Subscriber {
    Server(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Subscriber {
    async fn subscribe(&self, channel: &str) -> RedisResult<()> {
        match self {
            Subscriber::Server(manager) => manager.clone().subscribe(channel).await,
            Subscriber::Cluster(cluster) => cluster.clone().subscribe(channel).await,
        }
    }

    async fn unsubscribe(&self, channel: &[u8]) -> RedisResult<()> {
        match self {
            Subscriber::Server(manager) => manager.clone().unsubscribe(channel).await,
            Subscriber::Cluster(cluster) => cluster.clone().unsubscribe(channel).await,
        }
    }
}

/// One key's waiters and what is known of its subscription.
struct Watch {
    event: Arc<Event>,
    waiters: usize,
    /// Bumped whenever the subscription may have been lost.
    epoch: u64,
    /// The epoch in which the server last confirmed the subscription: subscribed while
    /// it equals `epoch`.
    confirmed: Option<u64>,
}

impl Watch {
    fn lost(&mut self) {
        self.epoch += 1;
        self.event.notify(usize::MAX);
    }
}

/// What the push handler and the waiters share.
struct Registry {
    /// By channel; an entry exists exactly while some waiter watches the channel.
    watches: Mutex<HashMap<Box<[u8]>, Watch>>,
    subscriber: OnceLock<Subscriber>,
    /// The backend's runtime, which runs the unsubscribes nobody waits for.
    runtime: OnRuntime,
}

impl Registry {
    fn on_push(&self, push: PushInfo) {
        let channel = match push.data.first() {
            Some(Value::BulkString(channel)) => Some(channel.as_slice()),
            _ => None,
        };
        let mut watches = self.watches.lock();
        match (push.kind, channel) {
            (PushKind::Message, Some(channel)) => {
                if let Some(watch) = watches.get(channel) {
                    watch.event.notify(usize::MAX);
                }
            }
            (PushKind::Subscribe, Some(channel)) => match watches.get_mut(channel) {
                Some(watch) => watch.confirmed = Some(watch.epoch),
                // Its waiters left while the subscribe was on its way, or a reconnecting
                // cluster connection restored it: nobody needs it.
                None => {
                    drop(watches);
                    self.unsubscribe_later(channel.into());
                }
            },
            (PushKind::Unsubscribe, Some(channel)) => {
                if let Some(watch) = watches.get_mut(channel) {
                    watch.lost();
                }
            }
            (PushKind::Disconnection, _) => watches.values_mut().for_each(Watch::lost),
            _ => {}
        }
    }

    fn unsubscribe_later(&self, channel: Box<[u8]>) {
        let Some(subscriber) = self.subscriber.get().cloned() else {
            return;
        };
        self.runtime.spawn(async move {
            // A failure leaves a subscription nobody needs; a later confirmation or the
            // connection's end undoes it.
            let _ = subscriber.unsubscribe(&channel).await;
        });
    }
}

/// The wake-ups of one backend.
#[derive(Clone)]
pub(crate) struct Wakeups {
    registry: Arc<Registry>,
}

/// How the subscription connection connects.
pub(crate) struct SubscriberOptions {
    /// The longest a connection attempt may take.
    pub(crate) connect_timeout: Duration,
    /// The longest pause between reconnection attempts.
    pub(crate) max_reconnect_delay: Duration,
}

impl Wakeups {
    fn new(runtime: &OnRuntime) -> Wakeups {
        Wakeups {
            registry: Arc::new(Registry {
                watches: Mutex::new(HashMap::new()),
                subscriber: OnceLock::new(),
                runtime: runtime.clone(),
            }),
        }
    }

    /// The handler the `redis` crate calls with every push of the subscription
    /// connection. It holds the registry weakly: the connection does not keep the
    /// backend alive.
    fn push_handler(&self) -> impl Fn(PushInfo) -> Result<(), Infallible> + Send + Sync + 'static {
        let registry: Weak<Registry> = Arc::downgrade(&self.registry);
        move |push| {
            if let Some(registry) = registry.upgrade() {
                registry.on_push(push);
            }
            Ok(())
        }
    }

    /// Wake-ups over a connection to the server `client` connects to, made with RESP3
    /// whatever protocol `client` uses. It connects on first use and reconnects by
    /// itself; subscriptions are restored by the waiters (see the module docs).
    pub(crate) fn for_server(
        client: &redis::Client,
        options: &SubscriberOptions,
        runtime: &OnRuntime,
    ) -> RedisResult<Wakeups> {
        let wakeups = Wakeups::new(runtime);
        let info = client.get_connection_info().clone();
        let settings = info
            .redis_settings()
            .clone()
            .set_protocol(ProtocolVersion::RESP3);
        let client = redis::Client::open(info.set_redis_settings(settings))?;
        let config = ConnectionManagerConfig::new()
            .set_push_sender(wakeups.push_handler())
            .set_connection_timeout(Some(options.connect_timeout))
            .set_max_delay(options.max_reconnect_delay)
            // Each subscribe is bounded by its waiter instead.
            .set_response_timeout(None);
        let manager = ConnectionManager::new_lazy_with_config(client, config)?;
        wakeups.install(Subscriber::Server(manager));
        Ok(wakeups)
    }

    /// Wake-ups over a connection to the cluster whose nodes include `nodes`.
    pub(crate) async fn for_cluster(
        nodes: &[redis::ConnectionInfo],
        options: &SubscriberOptions,
        runtime: &OnRuntime,
    ) -> RedisResult<Wakeups> {
        let wakeups = Wakeups::new(runtime);
        let client = redis::cluster::ClusterClient::builder(nodes.to_vec())
            .use_protocol(ProtocolVersion::RESP3)
            .push_sender(wakeups.push_handler())
            .connection_timeout(options.connect_timeout)
            .build()?;
        let connection = client.get_async_connection().await?;
        wakeups.install(Subscriber::Cluster(connection));
        Ok(wakeups)
    }

    fn install(&self, subscriber: Subscriber) {
        // Only ever installed once, right after `new`.
        let _ = self.registry.subscriber.set(subscriber);
    }

    /// Starts watching `channel`. Register with [`Watcher::listen`] and subscribe with
    /// [`Watcher::ensure_subscribed`] before reading the record.
    pub(crate) fn watch(&self, channel: &str) -> Watcher {
        let mut watches = self.registry.watches.lock();
        let watch = watches
            .entry(channel.as_bytes().into())
            .or_insert_with(|| Watch {
                event: Arc::new(Event::new()),
                waiters: 0,
                epoch: 0,
                confirmed: None,
            });
        watch.waiters += 1;
        Watcher {
            registry: self.registry.clone(),
            channel: channel.into(),
            event: watch.event.clone(),
        }
    }

    /// How many channels have waiters right now.
    pub(crate) fn watched(&self) -> usize {
        self.registry.watches.lock().len()
    }
}

/// One waiter's watch on a channel; dropping it stops watching.
pub(crate) struct Watcher {
    registry: Arc<Registry>,
    channel: Box<str>,
    event: Arc<Event>,
}

impl Watcher {
    /// A listener that fires on the next wake-up of the channel (or a lost
    /// subscription). Register it before reading, so nothing slips in between.
    pub(crate) fn listen(&self) -> EventListener {
        self.event.listen()
    }

    /// Subscribes to the channel unless the server has confirmed the subscription and
    /// nothing has undone it since. `Ok` once subscribed: every message published from
    /// then on reaches this watcher's listeners.
    pub(crate) async fn ensure_subscribed(&self) -> RedisResult<()> {
        let epoch = {
            let watches = self.registry.watches.lock();
            match watches.get(self.channel.as_bytes()) {
                Some(watch) if watch.confirmed == Some(watch.epoch) => return Ok(()),
                Some(watch) => watch.epoch,
                None => return Ok(()),
            }
        };
        let Some(subscriber) = self.registry.subscriber.get() else {
            return Ok(());
        };
        subscriber.subscribe(&self.channel).await?;
        // The confirmation may reach the push handler after this reply; record it here
        // too, unless the subscription was lost meanwhile.
        if let Some(watch) = self
            .registry
            .watches
            .lock()
            .get_mut(self.channel.as_bytes())
            && watch.epoch == epoch
        {
            watch.confirmed = Some(epoch);
        }
        Ok(())
    }

    /// Whether the server has confirmed the subscription and nothing has undone it.
    pub(crate) fn is_subscribed(&self) -> bool {
        self.registry
            .watches
            .lock()
            .get(self.channel.as_bytes())
            .is_some_and(|watch| watch.confirmed == Some(watch.epoch))
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let mut watches = self.registry.watches.lock();
        let Some(watch) = watches.get_mut(self.channel.as_bytes()) else {
            return;
        };
        watch.waiters -= 1;
        if watch.waiters == 0 {
            watches.remove(self.channel.as_bytes());
            drop(watches);
            self.registry
                .unsubscribe_later(self.channel.as_bytes().into());
        }
    }
}

#[cfg(test)]
mod tests;
