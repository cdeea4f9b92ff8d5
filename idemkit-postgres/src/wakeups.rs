//! Wake-ups: one `LISTEN` connection per backend, its notifications demultiplexed to
//! the waiters of this process by key.
//!
//! A waiter registers its key here before it reads the record, so a completion that
//! lands after the read is sure to wake it. The listener is its own connection (not one
//! of the pool's: waiters never take connections from the pool while they wait). When
//! it is lost it reconnects, listens again and wakes every waiter, which re-reads: what
//! was notified meanwhile is not lost, only late.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use event_listener::{Event, EventListener};
use parking_lot::Mutex;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};

use crate::runtime::{Spawner, Timers, sleep};

/// The waiters of one key: woken together.
#[derive(Default)]
struct Watch {
    event: Event,
    users: usize,
}

/// The keys this process waits on, and the listener's state.
#[derive(Default)]
pub(crate) struct Wakeups {
    watches: Mutex<HashMap<String, Arc<Mutex<Watch>>>>,
    /// Set when the backend is dropped: the listener task ends.
    closed: AtomicBool,
    close: Event,
    /// Whether the listener is connected and listening right now.
    listening: AtomicBool,
}

/// A waiter's registration on one key; dropping it unregisters.
pub(crate) struct Registration {
    wakeups: Arc<Wakeups>,
    key: String,
    watch: Arc<Mutex<Watch>>,
}

impl Registration {
    /// A listener for the key's next wake-up: take it before reading, await it after.
    pub(crate) fn listen(&self) -> EventListener {
        self.watch.lock().event.listen()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut watches = self.wakeups.watches.lock();
        let mut watch = self.watch.lock();
        watch.users -= 1;
        if watch.users == 0 {
            watches.remove(&self.key);
        }
    }
}

impl Wakeups {
    /// Registers a waiter on `key`.
    pub(crate) fn register(self: &Arc<Self>, key: &str) -> Registration {
        let mut watches = self.watches.lock();
        let watch = watches.entry(key.to_owned()).or_default().clone();
        watch.lock().users += 1;
        Registration {
            wakeups: self.clone(),
            key: key.to_owned(),
            watch,
        }
    }

    /// How many keys have waiters.
    pub(crate) fn watched(&self) -> usize {
        self.watches.lock().len()
    }

    /// Whether the listener is connected and listening.
    pub(crate) fn listening(&self) -> bool {
        self.listening.load(Ordering::Acquire)
    }

    /// Wakes the waiters of `key`; an empty payload (a key too long to send) wakes all.
    fn wake(&self, key: &str) {
        if key.is_empty() {
            return self.wake_all();
        }
        let watch = self.watches.lock().get(key).cloned();
        if let Some(watch) = watch {
            watch.lock().event.notify(usize::MAX);
        }
    }

    /// Wakes every waiter, so each re-reads its record.
    pub(crate) fn wake_all(&self) {
        let watches: Vec<_> = self.watches.lock().values().cloned().collect();
        for watch in watches {
            watch.lock().event.notify(usize::MAX);
        }
    }

    /// Stops the listener task.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.close.notify(usize::MAX);
    }

    /// Starts the listener task on `spawner`: it connects with `options` (under the
    /// application name `application_name`), listens on `channel`, and wakes waiters.
    pub(crate) fn start(
        self: &Arc<Self>,
        spawner: &Spawner,
        options: PgConnectOptions,
        channel: String,
        retry: Duration,
    ) {
        let wakeups = self.clone();
        spawner.spawn(async move { wakeups.run(options, channel, retry).await });
    }

    async fn run(self: Arc<Self>, options: PgConnectOptions, channel: String, retry: Duration) {
        while !self.closed.load(Ordering::Acquire) {
            let closing = self.close.listen();
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            let session = async {
                let outcome = self.session(&options, &channel).await;
                self.listening.store(false, Ordering::Release);
                // Whatever was notified while there was no listener: re-read.
                self.wake_all();
                if let Err(error) = outcome {
                    tracing::warn!(%error, "idemkit-postgres: the LISTEN connection failed; reconnecting");
                }
                sleep(Timers::Auto, retry).await;
            };
            futures_lite::future::or(session, closing).await;
        }
    }

    /// One connection's life: listen, then wake waiters until it fails.
    async fn session(&self, options: &PgConnectOptions, channel: &str) -> Result<(), sqlx::Error> {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .acquire_timeout(Duration::from_secs(5))
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with(options.clone());
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.ignore_pool_close_event(true);
        listener.listen(channel).await?;
        self.listening.store(true, Ordering::Release);
        // Anything that completed before the listen: re-read.
        self.wake_all();
        loop {
            match listener.try_recv().await? {
                Some(notification) => self.wake(notification.payload()),
                None => {
                    // The connection was lost and has been re-established (listening
                    // again); notifications in between are lost, so re-read.
                    self.wake_all();
                }
            }
        }
    }
}
