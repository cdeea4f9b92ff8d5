//! Records against a real server: the database's clock judges, claims race across
//! backends, responses keep their headers, purge works in bounded batches, stats count
//! by state, bad input is a clear error, and waits use one listener per backend.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{Backend, BlockingBackend, Claim, Error, Operator, Response, State};
use idemkit_postgres::{PostgresBackend, PostgresError};
use support::{Scratch, psql};

const LONG: Duration = Duration::from_secs(3600);

async fn backend(prefix: &str) -> Option<(Scratch, PostgresBackend)> {
    let scratch = Scratch::new(prefix)?;
    let backend = scratch.builder().build().await.unwrap();
    Some((scratch, backend))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_are_judged_by_the_databases_clock() {
    let Some((scratch, backend)) = backend("clock").await else {
        return;
    };
    let Claim::New(first) = Backend::claim(&backend, "k", "fp", 1, LONG).await.unwrap() else {
        panic!("new");
    };
    // Nothing local changes; the database says the lease ended a second ago.
    psql(
        &scratch.url,
        &format!(
            "UPDATE {} SET lease_until = clock_timestamp() - interval '1 second'",
            scratch.table
        ),
    );
    let second = Backend::claim(&backend, "k", "fp", 1, LONG).await.unwrap();
    let Claim::Reclaimed(second) = second else {
        panic!("the database's lapsed lease is reclaimed: {second:?}");
    };
    assert!(
        !Backend::complete(
            &backend,
            "k",
            &first,
            Arc::new(Response::new(200, "old")),
            LONG
        )
        .await
        .unwrap()
    );
    // And a lease the database extends holds, whatever this side thinks.
    psql(
        &scratch.url,
        &format!(
            "UPDATE {} SET lease_until = clock_timestamp() + interval '1 hour'",
            scratch.table
        ),
    );
    let third = Backend::claim(&backend, "k", "fp", 1, Duration::ZERO)
        .await
        .unwrap();
    assert!(matches!(third, Claim::InFlight(_)), "{third:?}");
    assert!(
        Backend::complete(
            &backend,
            "k",
            &second,
            Arc::new(Response::new(200, "new")),
            LONG
        )
        .await
        .unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_backends_racing_for_keys_never_both_win() {
    let Some((scratch, a)) = backend("race").await else {
        return;
    };
    let b = scratch.builder().build().await.unwrap();
    for round in 0..20 {
        let key = format!("key-{round}");
        let claims: Vec<_> = (0..8)
            .map(|i| {
                let backend = if i % 2 == 0 { a.clone() } else { b.clone() };
                let key = key.clone();
                tokio::spawn(
                    async move { Backend::claim(&backend, &key, "fp", 1, LONG).await.unwrap() },
                )
            })
            .collect();
        let mut winners = 0;
        for claim in claims {
            match claim.await.unwrap() {
                Claim::New(_) => winners += 1,
                Claim::InFlight(_) => {}
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(winners, 1, "round {round}");
    }
}

#[tokio::test]
async fn a_stored_response_keeps_repeated_headers_in_order_and_binary_bodies() {
    let Some((_scratch, backend)) = backend("headers").await else {
        return;
    };
    let Claim::New(token) = Backend::claim(&backend, "k", "fp", 1, LONG).await.unwrap() else {
        panic!();
    };
    let response = Response::new(201, vec![0u8, 255, 1, 2])
        .with_header("set-cookie", "a=1")
        .with_header("x-other", "z")
        .with_header("set-cookie", &b"b=\xff"[..]);
    assert!(
        Backend::complete(&backend, "k", &token, Arc::new(response.clone()), LONG)
            .await
            .unwrap()
    );
    // Another backend decodes it from the row, not from this process's memory.
    let other = PostgresBackend::builder()
        .pool(backend.pool().clone())
        .table(backend.table())
        .build()
        .await
        .unwrap();
    let Claim::Completed(replay) = Backend::claim(&other, "k", "fp", 1, LONG).await.unwrap() else {
        panic!();
    };
    assert_eq!(replay.response(), &response);
    assert!(replay.same_request());
}

#[tokio::test]
async fn get_returns_claims_in_flight_for_inspection() {
    let Some((_scratch, backend)) = backend("inspect").await else {
        return;
    };
    let Claim::New(token) = Backend::claim(&backend, "k", "fp", 7, LONG).await.unwrap() else {
        panic!();
    };
    let record = Backend::get(&backend, "k")
        .await
        .unwrap()
        .expect("the claim");
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claim_token(), &token);
    assert_eq!(record.fingerprint_version(), 7);
    assert_eq!(backend.storage_key("k"), "k");
}

#[tokio::test]
async fn input_postgres_cannot_hold_is_a_clear_storage_error() {
    let Some((_scratch, backend)) = backend("nul").await else {
        return;
    };
    let error = Backend::claim(&backend, "a\0b", "fp", 1, LONG)
        .await
        .unwrap_err();
    let Error::Storage(source) = &error else {
        panic!("{error:?}");
    };
    assert!(source.to_string().contains("NUL"), "{source}");
    // A key of 100 kB works (its notification is the empty, wake-all payload).
    let long = "k".repeat(100_000);
    let Claim::New(token) = Backend::claim(&backend, &long, "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!();
    };
    let waiter = {
        let (backend, long) = (backend.clone(), long.clone());
        tokio::spawn(async move { Backend::wait_for_completion(&backend, &long, LONG).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        Backend::complete(
            &backend,
            &long,
            &token,
            Arc::new(Response::new(200, "ok")),
            LONG
        )
        .await
        .unwrap()
    );
    assert!(waiter.await.unwrap().unwrap().is_some());
}

/// Rows made gone by the database's clock: `n` expired results.
fn expire_all(scratch: &Scratch) {
    psql(
        &scratch.url,
        &format!(
            "UPDATE {} SET purge_after = clock_timestamp() - interval '1 second', \
             lease_until = clock_timestamp() - interval '1 second'",
            scratch.table
        ),
    );
}

async fn fill(backend: &PostgresBackend, n: usize) {
    for i in 0..n {
        let key = format!("k{i}");
        let Claim::New(token) = Backend::claim(backend, &key, "fp", 1, LONG).await.unwrap() else {
            panic!();
        };
        if i % 2 == 0 {
            Backend::complete(
                backend,
                &key,
                &token,
                Arc::new(Response::new(200, "x")),
                LONG,
            )
            .await
            .unwrap();
        }
    }
}

#[tokio::test]
async fn purge_deletes_gone_rows_in_bounded_batches_and_nothing_live() {
    let Some((scratch, backend)) = backend("purge").await else {
        return;
    };
    fill(&backend, 25).await;
    expire_all(&scratch);
    // Live rows beside the gone ones stay.
    let Claim::New(_) = Backend::claim(&backend, "live-claim", "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!();
    };
    let stats = backend.stats().await.unwrap();
    assert_eq!((stats.purgeable, stats.in_flight), (25, 1));
    assert_eq!(backend.purge_batch(10).await.unwrap(), 10);
    assert_eq!(backend.purge_batch(10).await.unwrap(), 10);
    assert_eq!(
        backend.purge_batch(10).await.unwrap(),
        5,
        "fewer than the limit: done"
    );
    assert_eq!(backend.purge_batch(10).await.unwrap(), 0);
    assert_eq!(
        psql(&scratch.url, &format!("SELECT key FROM {}", scratch.table)),
        "live-claim"
    );
    // On demand, all at once in batches.
    fill(&backend, 12).await;
    expire_all(&scratch);
    assert_eq!(backend.purge(5).await.unwrap(), 13);
}

#[tokio::test]
async fn the_background_purger_empties_gone_rows() {
    let Some((scratch, backend)) = backend("purger").await else {
        return;
    };
    fill(&backend, 6).await;
    expire_all(&scratch);
    let purger = tokio::spawn(backend.clone().run_purger(Duration::from_millis(50)));
    let deadline = Instant::now() + Duration::from_secs(30);
    while psql(
        &scratch.url,
        &format!("SELECT count(*) FROM {}", scratch.table),
    ) != "0"
    {
        assert!(
            Instant::now() < deadline,
            "the purger did not empty the table"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    purger.abort();
}

#[tokio::test]
async fn stats_count_records_by_state() {
    let Some((scratch, backend)) = backend("stats").await else {
        return;
    };
    fill(&backend, 4).await; // k0, k2 completed; k1, k3 in flight
    let Claim::New(_) = Backend::claim(&backend, "lapsing", "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!();
    };
    psql(
        &scratch.url,
        &format!(
            "UPDATE {} SET lease_until = clock_timestamp() - interval '1 second' WHERE key = 'lapsing'",
            scratch.table
        ),
    );
    let stats = backend.stats().await.unwrap();
    assert_eq!(stats.in_flight, 2);
    assert_eq!(stats.lapsed, 1);
    assert_eq!(stats.completed, 2);
    assert_eq!(stats.purgeable, 0);
    assert!(
        stats
            .oldest_claim
            .is_some_and(|age| age < Duration::from_secs(600))
    );
    assert!(stats.nearest_expiry.is_some_and(|left| left <= LONG));
    assert!(stats.size_bytes.is_some_and(|size| size > 0));
}

/// Connections of this backend's listener, by its application name.
fn listeners(scratch: &Scratch, backend: &PostgresBackend) -> String {
    psql(
        &scratch.url,
        &format!(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{}'",
            backend.listener_application_name()
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_waiters_share_one_listen_connection_and_never_exhaust_the_pool() {
    let Some(scratch) = Scratch::new("waiters") else {
        return;
    };
    // A pool of two: a hundred waiters must not hold its connections while they wait.
    let backend = scratch.builder().max_connections(2).build().await.unwrap();
    let Claim::New(token) = Backend::claim(&backend, "k", "fp", 1, LONG).await.unwrap() else {
        panic!();
    };
    let waiters: Vec<_> = (0..100)
        .map(|_| {
            let backend = backend.clone();
            tokio::spawn(async move { Backend::wait_for_completion(&backend, "k", LONG).await })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while backend.watched_keys() == 0 || !backend.listening() {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the waiters' poll back-off grow past a second: a prompt wake-up below is the
    // notification's, not a re-read's.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(listeners(&scratch, &backend), "1", "one LISTEN connection");
    // The pool still serves other work.
    let Claim::New(_) = Backend::claim(&backend, "other", "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!();
    };
    let completed = Instant::now();
    assert!(
        Backend::complete(
            &backend,
            "k",
            &token,
            Arc::new(Response::new(200, "done")),
            LONG
        )
        .await
        .unwrap()
    );
    for waiter in waiters {
        let record = waiter
            .await
            .unwrap()
            .unwrap()
            .expect("woken with the record");
        assert_eq!(record.response().unwrap().body, "done");
    }
    let took = completed.elapsed();
    assert!(
        took < Duration::from_millis(900),
        "woken by NOTIFY, took {took:?}"
    );
    assert_eq!(backend.watched_keys(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_in_another_backend_is_woken_by_a_completion_here() {
    let Some((scratch, a)) = backend("cross").await else {
        return;
    };
    let b = scratch.builder().build().await.unwrap();
    let Claim::New(token) = Backend::claim(&a, "k", "fp", 1, LONG).await.unwrap() else {
        panic!();
    };
    let waiter = tokio::spawn(async move { Backend::wait_for_completion(&b, "k", LONG).await });
    tokio::time::sleep(Duration::from_secs(3)).await;
    let completed = Instant::now();
    assert!(
        Backend::complete(&a, "k", &token, Arc::new(Response::new(200, "x")), LONG)
            .await
            .unwrap()
    );
    assert!(waiter.await.unwrap().unwrap().is_some());
    assert!(completed.elapsed() < Duration::from_millis(900));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_returns_at_once_on_a_lapsed_lease_and_never_past_its_timeout() {
    let Some((scratch, backend)) = backend("lapse").await else {
        return;
    };
    let Claim::New(_) = Backend::claim(&backend, "dead", "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!();
    };
    psql(
        &scratch.url,
        &format!(
            "UPDATE {} SET lease_until = clock_timestamp() - interval '1 second'",
            scratch.table
        ),
    );
    let started = Instant::now();
    assert!(
        Backend::wait_for_completion(&backend, "dead", LONG)
            .await
            .unwrap()
            .is_none()
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let Claim::New(_) = Backend::claim(&backend, "alive", "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!();
    };
    let started = Instant::now();
    let timeout = Duration::from_millis(700);
    assert!(
        Backend::wait_for_completion(&backend, "alive", timeout)
            .await
            .unwrap()
            .is_none()
    );
    let took = started.elapsed();
    assert!(
        took >= timeout && took < timeout + Duration::from_secs(2),
        "{took:?}"
    );
}

#[test]
fn blocking_code_outside_any_runtime_works() {
    let Some(scratch) = Scratch::new("blocking") else {
        return;
    };
    let backend = scratch.builder().build_blocking().unwrap();
    let Claim::New(token) = BlockingBackend::claim(&backend, "k", "fp", 1, LONG).unwrap() else {
        panic!();
    };
    assert!(BlockingBackend::renew(&backend, "k", &token, LONG).unwrap());
    assert!(
        BlockingBackend::complete(
            &backend,
            "k",
            &token,
            Arc::new(Response::new(200, "b")),
            LONG
        )
        .unwrap()
    );
    let record = BlockingBackend::wait_for_completion(&backend, "k", LONG)
        .unwrap()
        .unwrap();
    assert_eq!(record.response().unwrap().body, "b");
}

#[tokio::test]
async fn errors_carry_a_postgres_error_source() {
    let error = PostgresBackend::builder()
        .url("postgres://nobody@127.0.0.1:1/none")
        .operation_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap_err();
    let idemkit_postgres::BuildError::Database(Error::Storage(source)) = &error else {
        panic!("{error:?}");
    };
    assert!(source.downcast_ref::<PostgresError>().is_some());
}

/// `NOTIFY` serialises commits across the whole server, so a completion nobody waits for
/// sends none; one with a waiter (in any process) does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_waited_on_key_is_notified() {
    let Some((scratch, backend)) = backend("notify").await else {
        return;
    };
    let mut listener = sqlx::postgres::PgListener::connect(&scratch.url)
        .await
        .unwrap();
    listener.listen(&scratch.table).await.unwrap();
    let Claim::New(token) = Backend::claim(&backend, "quiet", "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!();
    };
    assert!(
        Backend::complete(
            &backend,
            "quiet",
            &token,
            Arc::new(Response::new(200, "q")),
            LONG
        )
        .await
        .unwrap()
    );
    let Claim::New(token) = Backend::claim(&backend, "waited", "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!();
    };
    let waiter = {
        let backend = backend.clone();
        tokio::spawn(async move { Backend::wait_for_completion(&backend, "waited", LONG).await })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while psql(
        &scratch.url,
        &format!("SELECT waiters FROM {} WHERE key = 'waited'", scratch.table),
    ) != "t"
    {
        assert!(Instant::now() < deadline, "the waiter never marked the key");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        Backend::complete(
            &backend,
            "waited",
            &token,
            Arc::new(Response::new(200, "w")),
            LONG
        )
        .await
        .unwrap()
    );
    assert!(waiter.await.unwrap().unwrap().is_some());
    // The first notification on the channel is the waited-on key's: "quiet" sent none.
    let first = tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .expect("a notification")
        .unwrap();
    assert_eq!(first.payload(), "waited");
    let more = tokio::time::timeout(Duration::from_millis(300), listener.recv()).await;
    assert!(more.is_err(), "an extra notification: {more:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_backend_closes_its_listen_connection() {
    let Some((scratch, backend)) = backend("drop").await else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !backend.listening() {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(listeners(&scratch, &backend), "1");
    let name = backend.listener_application_name().to_owned();
    drop(backend);
    let sql = format!("SELECT count(*) FROM pg_stat_activity WHERE application_name = '{name}'");
    while psql(&scratch.url, &sql) != "0" {
        assert!(
            Instant::now() < deadline,
            "the LISTEN connection was left open"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A waiter re-reads on each notification of its key, and only of its key: five
/// notifications 100 ms apart make five reads in half a second, where its polls (a
/// second apart by then) make at most one; five of another key make none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_are_demultiplexed_to_the_keys_waiters() {
    let Some((scratch, backend)) = backend("demux").await else {
        return;
    };
    let Claim::New(token) = Backend::claim(&backend, "mine", "fp", 1, LONG)
        .await
        .unwrap()
    else {
        panic!();
    };
    let waiter = {
        let backend = backend.clone();
        tokio::spawn(async move { Backend::wait_for_completion(&backend, "mine", LONG).await })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !backend.listening() || backend.watched_keys() == 0 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Past the poll back-off: re-reads come a second apart now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let notify = |key: &str| {
        psql(
            &scratch.url,
            &format!("SELECT pg_notify('{}', '{key}')", scratch.table),
        )
    };
    let before = backend.reads();
    let started = Instant::now();
    for _ in 0..5 {
        notify("someone-else");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let others = backend.reads() - before;
    // Polls come at most a second apart: each psql may take long on a loaded machine,
    // so the polls the time taken allows are not counted against the waiter.
    let polls = started.elapsed().as_secs() + 1;
    assert!(
        others <= polls,
        "{others} re-reads for another key's notifications in {:?}",
        started.elapsed()
    );
    let before = backend.reads();
    for _ in 0..5 {
        notify("mine");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mine = backend.reads() - before;
    assert!(
        mine >= 4,
        "only {mine} re-reads for five notifications of the key"
    );
    assert!(
        Backend::complete(
            &backend,
            "mine",
            &token,
            Arc::new(Response::new(200, "x")),
            LONG
        )
        .await
        .unwrap()
    );
    assert!(waiter.await.unwrap().unwrap().is_some());
}

/// The next notification on `listener`'s channel within ten seconds, as its payload.
async fn next_notification(listener: &mut sqlx::postgres::PgListener) -> String {
    tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .expect("a notification")
        .unwrap()
        .payload()
        .to_owned()
}

/// Marks `key`'s row as waited on, as a waiter in another process does before its read.
fn mark_waited_on(scratch: &Scratch, key: &str) {
    psql(
        &scratch.url,
        &format!(
            "UPDATE {} SET waiters = true WHERE key = '{key}'",
            scratch.table
        ),
    );
}

/// Lapses `key`'s lease (within the reclaim grace), as a stalled owner's would.
fn lapse(scratch: &Scratch, key: &str) {
    psql(
        &scratch.url,
        &format!(
            "UPDATE {} SET lease_until = clock_timestamp() - interval '1 second' WHERE key = '{key}'",
            scratch.table
        ),
    );
}

/// Complete, release and a reclaim each send a `NOTIFY` with the key on the table's
/// channel when the key is waited on; the same changes of keys nobody waits for send
/// none (by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_release_and_a_reclaim_notify_waited_on_keys_with_the_key() {
    let Some((scratch, backend)) = backend("notify3").await else {
        return;
    };
    let mut listener = sqlx::postgres::PgListener::connect(&scratch.url)
        .await
        .unwrap();
    listener.listen(&scratch.table).await.unwrap();
    let claim = |key: &'static str| {
        let backend = backend.clone();
        async move {
            match Backend::claim(&backend, key, "fp", 1, LONG).await.unwrap() {
                Claim::New(token) | Claim::Reclaimed(token) => token,
                other => panic!("{other:?}"),
            }
        }
    };
    let response = Arc::new(Response::new(200, "x"));
    // Unwatched: silent.
    let token = claim("c0").await;
    assert!(
        Backend::complete(&backend, "c0", &token, response.clone(), LONG)
            .await
            .unwrap()
    );
    let token = claim("r0").await;
    assert!(Backend::release(&backend, "r0", &token).await.unwrap());
    claim("t0").await;
    lapse(&scratch, "t0");
    claim("t0").await;
    // Watched: each sends its key.
    let token = claim("c1").await;
    mark_waited_on(&scratch, "c1");
    assert!(
        Backend::complete(&backend, "c1", &token, response.clone(), LONG)
            .await
            .unwrap()
    );
    assert_eq!(next_notification(&mut listener).await, "c1");
    let token = claim("r1").await;
    mark_waited_on(&scratch, "r1");
    assert!(Backend::release(&backend, "r1", &token).await.unwrap());
    assert_eq!(next_notification(&mut listener).await, "r1");
    claim("t1").await;
    mark_waited_on(&scratch, "t1");
    lapse(&scratch, "t1");
    let Claim::Reclaimed(_) = Backend::claim(&backend, "t1", "fp", 1, LONG).await.unwrap() else {
        panic!("not a reclaim");
    };
    assert_eq!(next_notification(&mut listener).await, "t1");
    let more = tokio::time::timeout(Duration::from_millis(300), listener.recv()).await;
    assert!(more.is_err(), "an extra notification: {more:?}");
}

/// With `notify_every_key(true)`, complete, release and a reclaim notify their key even
/// when nobody waits on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_every_key_notifies_keys_nobody_waits_on() {
    let Some(scratch) = Scratch::new("notifyall") else {
        return;
    };
    let backend = scratch
        .builder()
        .notify_every_key(true)
        .build()
        .await
        .unwrap();
    let mut listener = sqlx::postgres::PgListener::connect(&scratch.url)
        .await
        .unwrap();
    listener.listen(&scratch.table).await.unwrap();
    let Claim::New(token) = Backend::claim(&backend, "c", "fp", 1, LONG).await.unwrap() else {
        panic!();
    };
    assert!(
        Backend::complete(
            &backend,
            "c",
            &token,
            Arc::new(Response::new(200, "x")),
            LONG
        )
        .await
        .unwrap()
    );
    assert_eq!(next_notification(&mut listener).await, "c");
    let Claim::New(token) = Backend::claim(&backend, "r", "fp", 1, LONG).await.unwrap() else {
        panic!();
    };
    assert!(Backend::release(&backend, "r", &token).await.unwrap());
    assert_eq!(next_notification(&mut listener).await, "r");
    let Claim::New(_) = Backend::claim(&backend, "t", "fp", 1, LONG).await.unwrap() else {
        panic!();
    };
    lapse(&scratch, "t");
    let Claim::Reclaimed(_) = Backend::claim(&backend, "t", "fp", 1, LONG).await.unwrap() else {
        panic!("not a reclaim");
    };
    assert_eq!(next_notification(&mut listener).await, "t");
}
