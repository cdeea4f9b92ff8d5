//! On a three-master Redis Cluster that the test creates on loopback: keys spread over
//! every master, each script touches one slot, waiters are woken whichever node holds
//! the key, every key expires, and a script cache flushed on every node is reloaded.

mod support;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{AsyncIdempotency, Backend, Claim, Decision, Fingerprint, Key, Response};
use redis_harness::RedisCluster;
use support::{HANG_GUARD, LEASE, namespace};

const KEYS: usize = 60;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_works_on_a_three_master_cluster() {
    if !redis_harness::available() {
        return;
    }
    let cluster = RedisCluster::start().expect("the test cluster forms");
    let build = || {
        idemkit_redis::RedisBackend::builder()
            .cluster(cluster.urls())
            .namespace(namespace("cluster"))
            .command_timeout(Duration::from_secs(2))
    };
    let backend = build().build().await.unwrap();
    // A second backend (as another process would have) on the same namespace.
    let other = build()
        .namespace(backend.namespace())
        .build()
        .await
        .unwrap();

    // Runs through the executor, on keys spread over the slots.
    let idempotency = AsyncIdempotency::new(backend.clone());
    let fingerprint = Fingerprint::new(["request"]);
    for i in 0..KEYS {
        let key = Key::new(["cluster", &i.to_string()]);
        let first = idempotency
            .run(&key, &fingerprint, || async move {
                Ok::<_, Infallible>(Response::new(200, format!("ran {i}")))
            })
            .await
            .unwrap();
        assert_eq!(first.decision, Decision::New);
        let replay = AsyncIdempotency::new(other.clone())
            .run(&key, &fingerprint, || async {
                Ok::<_, Infallible>(Response::new(500, "must not run"))
            })
            .await
            .unwrap();
        assert_eq!(replay.decision, Decision::Replayed);
        assert_eq!(replay.response.body, format!("ran {i}"));
    }
    // Every master holds some of them.
    for node in cluster.nodes() {
        let held: usize = node.cli(&["DBSIZE"]).unwrap().trim().parse().unwrap();
        assert!(held > 0, "node {} holds no record", node.port());
    }

    // A waiter on one backend is woken by a completion from the other, for keys on
    // every node.
    for i in 0..6 {
        let key = format!("wake-{i}");
        let Claim::New(token) = Backend::claim(&backend, &key, "fp", 1, LEASE)
            .await
            .unwrap()
        else {
            panic!("not new");
        };
        let waiter = support::spawn_waiter(&other, &key, Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(100)).await;
        let response = Arc::new(Response::new(200, key.clone()));
        assert!(
            Backend::complete(&backend, &key, &token, response.clone(), LEASE)
                .await
                .unwrap()
        );
        let record = tokio::time::timeout(HANG_GUARD, waiter)
            .await
            .expect("the waiter hung")
            .unwrap()
            .unwrap()
            .expect("woken with the record");
        assert_eq!(record.response(), Some(&*response));
    }

    // Scripts forgotten by every node are loaded again on first use.
    for node in cluster.nodes() {
        node.cli(&["SCRIPT", "FLUSH"]).unwrap();
    }
    for i in 0..KEYS {
        let key = Key::new(["cluster", &i.to_string()]);
        assert!(matches!(
            Backend::claim(&other, key.as_str(), "request", 1, LEASE).await,
            Ok(Claim::Completed(_))
        ));
    }

    // Everything written expires, on every node.
    for node in cluster.nodes() {
        for key in node.cli(&["KEYS", "*"]).unwrap().lines() {
            let ttl: i64 = node.cli(&["PTTL", key]).unwrap().trim().parse().unwrap();
            assert!(ttl > 0 || ttl == -2, "{key} on {} has no TTL", node.port());
        }
    }
}
