//! Wake-ups on a real server: a publish wakes the key's waiters and no other; the last
//! waiter's departure unsubscribes; a lost connection wakes everyone and the
//! subscription comes back once the server does. On tokio and without a runtime.

use std::time::{Duration, Instant};

use event_listener::EventListener;
use redis_harness::RedisServer;

use super::*;
use idemkit_core::{ThreadTimer, Timer};

use crate::runtime::{OnRuntime, within};

/// Generous: a wake-up that takes this long is a lost wake-up.
const PATIENCE: Duration = Duration::from_secs(20);

fn options() -> SubscriberOptions {
    SubscriberOptions {
        connect_timeout: Duration::from_secs(1),
        max_reconnect_delay: Duration::from_millis(200),
    }
}

fn publish(server: &RedisServer, channel: &str) {
    server.cli(&["PUBLISH", channel, "completed"]).unwrap();
}

fn subscribers(server: &RedisServer, channel: &str) -> String {
    server.cli(&["PUBSUB", "NUMSUB", channel]).unwrap()
}

async fn fires(listener: EventListener) -> bool {
    within(&ThreadTimer, PATIENCE, listener).await.is_ok()
}

async fn quiet(listener: EventListener) -> bool {
    within(&ThreadTimer, Duration::from_millis(300), listener)
        .await
        .is_err()
}

/// Retries `ensure_subscribed` until it succeeds (the connection may be coming back).
async fn subscribe_patiently(watcher: &Watcher) {
    let give_up = Instant::now() + PATIENCE;
    while let Err(error) = within(
        &ThreadTimer,
        Duration::from_secs(2),
        watcher.ensure_subscribed(),
    )
    .await
    .unwrap_or_else(|_| Err((redis::ErrorKind::Io, "timed out").into()))
    {
        assert!(Instant::now() < give_up, "never resubscribed: {error}");
        ThreadTimer.sleep(Duration::from_millis(100)).await;
    }
}

async fn a_publish_wakes_its_channels_waiters_only(server: &RedisServer, runtime: &OnRuntime) {
    let client = redis::Client::open(server.url()).unwrap();
    let wakeups = Wakeups::for_server(&client, &options(), runtime).unwrap();
    let mine = wakeups.watch("t:{mine}");
    let theirs = wakeups.watch("t:{theirs}");
    let also_mine = wakeups.watch("t:{mine}");
    assert_eq!(wakeups.watched(), 2);
    for watcher in [&mine, &theirs] {
        watcher.ensure_subscribed().await.unwrap();
        assert!(watcher.is_subscribed());
    }
    let (one, two, other) = (mine.listen(), also_mine.listen(), theirs.listen());
    publish(server, "t:{mine}");
    assert!(fires(one).await);
    assert!(fires(two).await, "every waiter of the key");
    assert!(quiet(other).await, "no other key's");

    drop((mine, also_mine, theirs));
    assert_eq!(wakeups.watched(), 0);
    let give_up = Instant::now() + PATIENCE;
    while subscribers(server, "t:{mine}") != "t:{mine}\n0\n" {
        assert!(
            Instant::now() < give_up,
            "the last waiter's leaving unsubscribes"
        );
        ThreadTimer.sleep(Duration::from_millis(50)).await;
    }
}

async fn a_lost_connection_wakes_and_the_subscription_returns(
    server: &RedisServer,
    runtime: &OnRuntime,
) {
    let client = redis::Client::open(server.url()).unwrap();
    let wakeups = Wakeups::for_server(&client, &options(), runtime).unwrap();
    let watcher = wakeups.watch("t:{outage}");
    watcher.ensure_subscribed().await.unwrap();
    let listener = watcher.listen();
    server.kill();
    assert!(fires(listener).await, "a lost connection wakes the waiters");
    assert!(!watcher.is_subscribed());
    server.restart().unwrap();
    subscribe_patiently(&watcher).await;
    let listener = watcher.listen();
    publish(server, "t:{outage}");
    assert!(
        fires(listener).await,
        "wake-ups work again after the restart"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_tokio() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let runtime = OnRuntime::resolve(None).unwrap();
    a_publish_wakes_its_channels_waiters_only(server, &runtime).await;
    let own = RedisServer::start().unwrap();
    a_lost_connection_wakes_and_the_subscription_returns(&own, &runtime).await;
}

#[test]
fn without_a_runtime() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    // The default runtime outside tokio: a tokio runtime of its own, or smol.
    let runtime = OnRuntime::resolve(None).unwrap();
    let publishing = a_publish_wakes_its_channels_waiters_only(server, &runtime);
    futures_lite::future::block_on(runtime.drive_here(publishing));
    let own = RedisServer::start().unwrap();
    let losing = a_lost_connection_wakes_and_the_subscription_returns(&own, &runtime);
    futures_lite::future::block_on(runtime.drive_here(losing));
}

#[test]
fn on_a_cluster() {
    if !redis_harness::available() {
        return;
    }
    let cluster = redis_harness::RedisCluster::start().unwrap();
    let nodes: Vec<redis::ConnectionInfo> = cluster
        .urls()
        .iter()
        .map(|url| redis::IntoConnectionInfo::into_connection_info(url.as_str()).unwrap())
        .collect();
    let runtime = OnRuntime::resolve(None).unwrap();
    futures_lite::future::block_on(runtime.drive_here(async {
        let wakeups = Wakeups::for_cluster(&nodes, &options(), &runtime)
            .await
            .unwrap();
        let watcher = wakeups.watch("t:{cluster}");
        watcher.ensure_subscribed().await.unwrap();
        // Published on every node in turn: a cluster forwards it to every subscriber.
        for node in cluster.nodes() {
            let listener = watcher.listen();
            publish(node, "t:{cluster}");
            assert!(fires(listener).await, "a publish on port {}", node.port());
        }
    }));
}
