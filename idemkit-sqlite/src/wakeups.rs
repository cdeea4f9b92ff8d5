//! Waking waiters: per-key events for completions in this process (the in-memory
//! backend's mechanism), and a watcher of the file's change counter for completions in
//! other processes.
//!
//! `PRAGMA data_version` on a connection changes whenever another connection (of this
//! process or another) commits to the file. One thread per backend reads it every
//! [`WATCH_INTERVAL`] while some waiter waits, and wakes every waiter when it moved; each
//! re-reads its own key. With no waiter the thread sleeps on a condition variable and
//! reads nothing, so an idle backend costs nothing.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use event_listener::{Event, EventListener};
use parking_lot::{Condvar, Mutex};
use rusqlite::Connection;

/// How often the watcher reads the change counter while someone waits: a completion in
/// another process wakes its waiters this long after it commits, at most, plus a read.
pub(crate) const WATCH_INTERVAL: Duration = Duration::from_millis(5);

/// One key's waiters.
struct Watch {
    event: Arc<Event>,
    waiters: usize,
}

#[derive(Default)]
struct Registry {
    watches: HashMap<Box<str>, Watch>,
    /// Whether the watcher thread runs.
    watching: bool,
    /// Set when the backend is dropped: the watcher thread ends.
    closed: bool,
}

#[derive(Default)]
struct Shared {
    registry: Mutex<Registry>,
    someone_waits: Condvar,
    /// How many times the watcher has read the change counter.
    reads: std::sync::atomic::AtomicU64,
}

/// The wake-ups of one backend.
#[derive(Default)]
pub(crate) struct Wakeups {
    shared: Arc<Shared>,
}

impl Wakeups {
    /// Starts watching `key`. `connect` opens the connection the watcher thread reads the
    /// change counter on, the first time anyone waits; if it fails, waiters still wake on
    /// this process's completions and re-read on their schedule.
    pub(crate) fn watch(
        &self,
        key: &str,
        connect: impl FnOnce() -> Option<Connection>,
    ) -> KeyWatch {
        let mut registry = self.shared.registry.lock();
        let watch = registry.watches.entry(key.into()).or_insert_with(|| Watch {
            event: Arc::new(Event::new()),
            waiters: 0,
        });
        watch.waiters += 1;
        let event = watch.event.clone();
        if !registry.watching
            && let Some(connection) = connect()
        {
            // The counter is read here, before the waiter's first read of its record, so
            // a commit in between is seen as a change.
            if let Ok(version) = data_version(&connection) {
                registry.watching = true;
                let shared = self.shared.clone();
                let spawned = std::thread::Builder::new()
                    .name("idemkit-sqlite-watch".to_owned())
                    .spawn(move || watch_file(&shared, &connection, version));
                if spawned.is_err() {
                    registry.watching = false;
                }
            }
        }
        self.shared.someone_waits.notify_all();
        KeyWatch {
            shared: self.shared.clone(),
            key: key.into(),
            event,
        }
    }

    /// Wakes the waiters of `key` (a completion, release or reclaim in this process).
    pub(crate) fn wake(&self, key: &str) {
        if let Some(watch) = self.shared.registry.lock().watches.get(key) {
            watch.event.notify(usize::MAX);
        }
    }

    /// How many keys have waiters.
    pub(crate) fn watched(&self) -> usize {
        self.shared.registry.lock().watches.len()
    }
}

impl Drop for Wakeups {
    fn drop(&mut self) {
        self.shared.registry.lock().closed = true;
        self.shared.someone_waits.notify_all();
    }
}

fn data_version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row("PRAGMA data_version", [], |row| row.get(0))
}

/// The watcher thread: while someone waits, reads the change counter every
/// [`WATCH_INTERVAL`] and wakes every waiter when it moved.
fn watch_file(shared: &Shared, connection: &Connection, mut seen: i64) {
    loop {
        {
            let mut registry = shared.registry.lock();
            while registry.watches.is_empty() && !registry.closed {
                shared.someone_waits.wait(&mut registry);
            }
            if registry.closed {
                registry.watching = false;
                return;
            }
        }
        std::thread::sleep(WATCH_INTERVAL);
        shared
            .reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // A failed read costs latency only: the waiters re-read on their schedule.
        let Ok(version) = data_version(connection) else {
            continue;
        };
        if version != seen {
            seen = version;
            let registry = shared.registry.lock();
            for watch in registry.watches.values() {
                watch.event.notify(usize::MAX);
            }
        }
    }
}

/// One waiter's watch on a key; dropping it stops watching.
pub(crate) struct KeyWatch {
    shared: Arc<Shared>,
    key: Box<str>,
    event: Arc<Event>,
}

impl KeyWatch {
    /// A listener that fires on the next wake-up of the key. Register it before reading
    /// the record, so a wake-up in between is not lost.
    pub(crate) fn listen(&self) -> EventListener {
        self.event.listen()
    }
}

impl Drop for KeyWatch {
    fn drop(&mut self) {
        let mut registry = self.shared.registry.lock();
        if let Some(watch) = registry.watches.get_mut(&self.key) {
            watch.waiters -= 1;
            if watch.waiters == 0 {
                registry.watches.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use event_listener::Listener;

    use super::*;

    fn reads(wakeups: &Wakeups) -> u64 {
        wakeups.shared.reads.load(Ordering::Relaxed)
    }

    #[test]
    fn the_counter_is_read_only_while_someone_waits() {
        let wakeups = Wakeups::default();
        let watch = wakeups.watch("k", || Connection::open_in_memory().ok());
        std::thread::sleep(WATCH_INTERVAL * 20);
        assert!(reads(&wakeups) > 0, "read while a waiter waits");
        drop(watch);
        assert_eq!(wakeups.watched(), 0);
        // The read in progress when the waiter left may still land: wait until the count
        // holds still (the watcher has parked), then watch it stay put.
        let mut idle = reads(&wakeups);
        for _ in 0..100 {
            std::thread::sleep(WATCH_INTERVAL * 10);
            let now = reads(&wakeups);
            if now == idle {
                break;
            }
            idle = now;
        }
        std::thread::sleep(WATCH_INTERVAL * 40);
        assert_eq!(reads(&wakeups), idle, "no reads with nobody waiting");
        let again = wakeups.watch("j", || panic!("the watcher runs already"));
        std::thread::sleep(WATCH_INTERVAL * 20);
        assert!(reads(&wakeups) > idle, "reads again once someone waits");
        drop(again);
    }

    #[test]
    fn a_wake_reaches_only_its_keys_waiters() {
        let wakeups = Wakeups::default();
        let (a, b) = (wakeups.watch("a", || None), wakeups.watch("b", || None));
        let (listen_a, listen_b) = (a.listen(), b.listen());
        wakeups.wake("a");
        assert!(listen_a.wait_timeout(Duration::from_secs(5)).is_some());
        assert!(listen_b.wait_timeout(Duration::from_millis(20)).is_none());
    }
}
