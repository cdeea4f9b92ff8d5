//! Faults: the server stopped mid-run and started again, the listener's connection
//! terminated while waiters wait, a statement timeout, an exhausted pool, and restarts
//! (of the server, clean and killed, and of the service) that keep the records. Tests
//! that stop or kill a server start their own cluster.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Backend, Claim, Error, Response};
use idemkit_postgres::{PostgresBackend, PostgresError};
use pg_harness::PgCluster;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use support::{Scratch, psql};

const LONG: Duration = Duration::from_secs(3600);

fn cluster() -> Option<PgCluster> {
    if !pg_harness::available() {
        return None;
    }
    Some(PgCluster::start_new().expect("a private cluster starts"))
}

async fn on(cluster: &PgCluster) -> PostgresBackend {
    PostgresBackend::builder()
        .url(&cluster.url())
        .migrate(true)
        .operation_timeout(Duration::from_secs(3))
        .build()
        .await
        .unwrap()
}

fn postgres_error(error: &Error) -> &PostgresError {
    let Error::Storage(source) = error else {
        panic!("not a storage error: {error:?}");
    };
    source
        .downcast_ref::<PostgresError>()
        .expect("a PostgresError")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stopped_mid_run_is_a_storage_error_and_the_backend_recovers() {
    let Some(cluster) = cluster() else {
        return;
    };
    let backend = on(&cluster).await;
    let Claim::New(token) = Backend::claim(&backend, "k", "fp", 1, LONG).await.unwrap() else {
        panic!();
    };
    cluster.stop().unwrap();
    let started = Instant::now();
    let error = Backend::complete(
        &backend,
        "k",
        &token,
        Arc::new(Response::new(200, "x")),
        LONG,
    )
    .await
    .unwrap_err();
    postgres_error(&error);
    assert!(started.elapsed() < Duration::from_secs(10), "no hang");
    let error = Backend::claim(&backend, "other", "fp", 1, LONG)
        .await
        .unwrap_err();
    assert_eq!(postgres_error(&error).operation(), "claim");
    cluster.start().unwrap();
    // Without a restart of the backend: the pool reconnects, the claim was kept.
    let deadline = Instant::now() + Duration::from_secs(30);
    let stored = loop {
        match Backend::complete(
            &backend,
            "k",
            &token,
            Arc::new(Response::new(200, "x")),
            LONG,
        )
        .await
        {
            Ok(stored) => break stored,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(error) => panic!("did not recover: {error}"),
        }
    };
    assert!(
        stored,
        "the claim survived the restart and its token still holds it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_survive_restarts_of_the_database_and_of_the_service() {
    let Some(cluster) = cluster() else {
        return;
    };
    let backend = on(&cluster).await;
    for key in ["clean", "crash"] {
        let Claim::New(token) = Backend::claim(&backend, key, "fp", 1, LONG).await.unwrap() else {
            panic!();
        };
        assert!(
            Backend::complete(
                &backend,
                key,
                &token,
                Arc::new(Response::new(201, key)),
                LONG
            )
            .await
            .unwrap()
        );
    }
    drop(backend); // the service goes away
    cluster.stop().unwrap();
    cluster.start().unwrap();
    let backend = on(&cluster).await; // and comes back
    let Claim::Completed(record) = Backend::claim(&backend, "clean", "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!("replayed after a clean restart");
    };
    assert_eq!(record.response().body, "clean");
    drop(backend);
    cluster.kill().unwrap();
    cluster.start().unwrap();
    let backend = on(&cluster).await;
    let Claim::Completed(record) = Backend::claim(&backend, "crash", "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!("replayed after a crash of the server");
    };
    assert_eq!(record.response().body, "crash");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn waiters_survive_the_listener_being_terminated() {
    let Some(scratch) = Scratch::new("terminate") else {
        return;
    };
    let backend = scratch.builder().build().await.unwrap();
    let Claim::New(token) = Backend::claim(&backend, "k", "fp", 1, LONG).await.unwrap() else {
        panic!();
    };
    let waiters: Vec<_> = (0..10)
        .map(|_| {
            let backend = backend.clone();
            tokio::spawn(async move { Backend::wait_for_completion(&backend, "k", LONG).await })
        })
        .collect();
    let pid_sql = format!(
        "SELECT pid FROM pg_stat_activity WHERE application_name = '{}'",
        backend.listener_application_name()
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while psql(&scratch.url, &pid_sql).is_empty() || !backend.listening() {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let old = psql(&scratch.url, &pid_sql);
    psql(&scratch.url, &format!("SELECT pg_terminate_backend({old})"));
    // It reconnects and listens again, on a new connection.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = psql(&scratch.url, &pid_sql);
        if !now.is_empty() && now != old && backend.listening() {
            break;
        }
        assert!(Instant::now() < deadline, "the listener did not come back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Past the waiters' poll back-off: a prompt wake-up is the new listener's.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let completed = Instant::now();
    assert!(
        Backend::complete(
            &backend,
            "k",
            &token,
            Arc::new(Response::new(200, "x")),
            LONG
        )
        .await
        .unwrap()
    );
    for waiter in waiters {
        assert!(waiter.await.unwrap().unwrap().is_some());
    }
    let took = completed.elapsed();
    assert!(
        took < Duration::from_millis(900),
        "woken by NOTIFY, took {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_timeout_is_a_storage_error_and_the_next_call_works() {
    let Some(scratch) = Scratch::new("stmt_timeout") else {
        return;
    };
    scratch.builder().build().await.unwrap(); // migrates
    let options: PgConnectOptions = scratch.url.parse().unwrap();
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options.options([("statement_timeout", "300")]))
        .await
        .unwrap();
    let backend = PostgresBackend::builder()
        .pool(pool)
        .table(&scratch.table)
        .build()
        .await
        .unwrap();
    let Claim::New(token) = Backend::claim(&backend, "k", "fp", 1, LONG).await.unwrap() else {
        panic!();
    };
    // Another session holds the row: the completion waits on its lock past the timeout.
    let mut holder =
        sqlx::PgConnection::connect_with(&scratch.url.parse::<PgConnectOptions>().unwrap())
            .await
            .unwrap();
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT 1 FROM {} WHERE key = 'k' FOR UPDATE",
        scratch.table
    )))
    .execute(&mut holder)
    .await
    .unwrap();
    let error = Backend::complete(
        &backend,
        "k",
        &token,
        Arc::new(Response::new(200, "x")),
        LONG,
    )
    .await
    .unwrap_err();
    assert!(postgres_error(&error).is_timeout(), "{error}");
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    assert!(
        Backend::complete(
            &backend,
            "k",
            &token,
            Arc::new(Response::new(200, "x")),
            LONG
        )
        .await
        .unwrap()
    );
}

use sqlx::Connection;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_pool_is_a_storage_error_and_nothing_leaks() {
    let Some(scratch) = Scratch::new("exhausted") else {
        return;
    };
    let timeout = Duration::from_secs(1);
    let backend = scratch
        .builder()
        .max_connections(1)
        .operation_timeout(timeout)
        .build()
        .await
        .unwrap();
    let held = backend.pool().acquire().await.unwrap();
    for _ in 0..3 {
        let started = Instant::now();
        let error = Backend::claim(&backend, "k", "fp", 1, LONG)
            .await
            .unwrap_err();
        assert!(postgres_error(&error).is_timeout(), "{error}");
        assert!(started.elapsed() >= timeout, "it waited for the pool");
    }
    drop(held);
    // The pool's one connection serves claims again. Each try gets a key of its own and
    // the operation timeout: on a busy machine a commit can take longer than that (the
    // machine's server shares its disk with the clusters other tests start), and a claim
    // that timed out may still have been written.
    let deadline = Instant::now() + Duration::from_secs(60);
    for attempt in 0.. {
        match Backend::claim(&backend, &format!("k{attempt}"), "fp", 1, LONG).await {
            Ok(Claim::New(_)) => break,
            Ok(other) => panic!("a fresh key was {other:?}"),
            Err(error) => {
                assert!(postgres_error(&error).is_timeout(), "{error}");
                assert!(
                    Instant::now() < deadline,
                    "the pool never served again: {error}"
                );
            }
        }
    }
    assert!(
        backend.pool().size() <= 1,
        "no connection beyond the pool's"
    );
}
