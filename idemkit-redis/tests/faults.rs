//! Faults on a real server: killed during a wait and during a run, restarted, paused
//! past the command timeout (`DEBUG SLEEP`, `CLIENT PAUSE`, a frozen process). Each
//! outcome is an error or a correct result, never a hang or a panic, and afterwards the
//! same backend works again without being rebuilt. Each test has a server of its own.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use idemkit_core::{
    AsyncIdempotency, Backend, BlockingBackend, Claim, Decision, Fingerprint, Key, Response,
    RunError,
};
use idemkit_redis::RedisBackend;
use redis_harness::RedisServer;
use support::{
    HANG_GUARD, LEASE, builder, is_storage, is_timeout, server, until_working,
    until_working_blocking,
};

/// After a fault: a whole claim, wait, complete, replay cycle on fresh keys works,
/// wake-ups included.
async fn works_end_to_end(backend: &RedisBackend) {
    until_working(backend).await;
    let Claim::New(token) = Backend::claim(backend, "after", "fp", 1, LEASE)
        .await
        .unwrap()
    else {
        panic!("a fresh key after the fault was not new");
    };
    let waiter = support::spawn_waiter(backend, "after", Duration::from_secs(30));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let response = Arc::new(Response::new(200, "after the fault"));
    assert!(
        Backend::complete(backend, "after", &token, response.clone(), LEASE)
            .await
            .unwrap()
    );
    let woken = tokio::time::timeout(HANG_GUARD, waiter)
        .await
        .expect("the waiter hung")
        .unwrap()
        .unwrap()
        .expect("the waiter saw the completion");
    assert_eq!(woken.response(), Some(&*response));
    let Claim::Completed(replay) = Backend::claim(backend, "after", "fp", 1, LEASE)
        .await
        .unwrap()
    else {
        panic!("no replay after the fault");
    };
    assert_eq!(replay.response(), &*response);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_during_a_wait_then_restarted() {
    let Some(server) = server() else { return };
    let backend = builder(&server.url(), "kill-wait").build().await.unwrap();
    let Claim::New(_) = Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap() else {
        panic!("not new");
    };
    let waiter = support::spawn_waiter(&backend, "k", Duration::from_secs(30));
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.kill();
    let outcome = tokio::time::timeout(HANG_GUARD, waiter)
        .await
        .expect("the wait hung after the server died")
        .unwrap();
    match outcome {
        Err(error) => assert!(is_storage(&error), "{error}"),
        // Nothing completed the key: no record is the only other correct answer.
        Ok(record) => assert!(record.is_none(), "{record:?}"),
    }
    server.restart().unwrap();
    works_end_to_end(&backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_during_a_run_then_restarted() {
    let Some(server) = server() else { return };
    let server = Arc::new(server);
    let backend = builder(&server.url(), "kill-run").build().await.unwrap();
    let idempotency = AsyncIdempotency::new(backend.clone());
    let key = Key::new(["kill-run"]);
    let fingerprint = Fingerprint::new(["request"]);
    let runs = Arc::new(AtomicUsize::new(0));
    let op = |server: Arc<RedisServer>, runs: Arc<AtomicUsize>| {
        move || async move {
            runs.fetch_add(1, Ordering::SeqCst);
            server.kill();
            Ok::<_, std::convert::Infallible>(Response::new(200, "charged"))
        }
    };
    let outcome = tokio::time::timeout(
        HANG_GUARD,
        idempotency.run(&key, &fingerprint, op(server.clone(), runs.clone())),
    )
    .await
    .expect("the run hung after the server died");
    // The result could not be stored, so it must not be reported stored.
    match outcome {
        Err(RunError::StorageFailed(error)) => assert!(is_storage(&error), "{error}"),
        other => panic!("expected a storage failure, got {other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    server.restart().unwrap();
    until_working(&backend).await;
    // The restarted server has no persistence: the key is free again, runs once more,
    // and is replayed from then on.
    let again = idempotency
        .run(&key, &fingerprint, || async {
            Ok::<_, std::convert::Infallible>(Response::new(200, "charged again"))
        })
        .await
        .unwrap();
    assert_eq!(again.decision, Decision::New);
    let replay = idempotency
        .run(&key, &fingerprint, || async {
            Ok::<_, std::convert::Infallible>(Response::new(500, "must not run"))
        })
        .await
        .unwrap();
    assert_eq!(replay.decision, Decision::Replayed);
    assert_eq!(replay.response.body, "charged again");
    works_end_to_end(&backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_between_operations() {
    let Some(server) = server() else { return };
    let backend = builder(&server.url(), "restart").build().await.unwrap();
    until_working(&backend).await;
    for _ in 0..3 {
        server.restart().unwrap();
        works_end_to_end(&backend).await;
        Backend::get(&backend, "after").await.unwrap();
        server.restart().unwrap();
        until_working(&backend).await;
    }
}

/// The names of the function libraries on `server`, from `FUNCTION LIST` through
/// redis-cli (each library's name is the line after `library_name`).
fn libraries(server: &RedisServer) -> Vec<String> {
    let listing = server.cli(&["FUNCTION", "LIST"]).unwrap();
    let lines: Vec<&str> = listing.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|pair| pair[0] == "library_name")
        .map(|pair| pair[1].to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_forgot_the_functions_gets_them_again_within_the_same_call() {
    let Some(server) = server() else { return };
    let backend = builder(&server.url(), "flushed").build().await.unwrap();
    assert_eq!(libraries(&server), ["idemkit"]);
    for round in 0..2 {
        server.cli(&["FUNCTION", "FLUSH"]).unwrap();
        assert!(libraries(&server).is_empty());
        // Every operation's first call after the flush works: the backend loads the
        // library and sends the call again, within the one operation.
        let key = format!("after-flush-{round}");
        let Claim::New(token) = Backend::claim(&backend, &key, "fp", 1, LEASE)
            .await
            .unwrap()
        else {
            panic!("not new");
        };
        server.cli(&["FUNCTION", "FLUSH"]).unwrap();
        let response = Arc::new(Response::new(200, "stored"));
        assert!(
            Backend::complete(&backend, &key, &token, response, LEASE)
                .await
                .unwrap()
        );
        server.cli(&["FUNCTION", "FLUSH"]).unwrap();
        assert!(Backend::get(&backend, &key).await.unwrap().is_some());
        assert_eq!(libraries(&server), ["idemkit"]);
    }
    // After a restart (no persistence: the functions are gone) the same holds.
    server.restart().unwrap();
    until_working(&backend).await;
    works_end_to_end(&backend).await;
    assert_eq!(libraries(&server), ["idemkit"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_replaces_another_version_of_the_library_and_never_adds_one() {
    let Some(server) = server() else { return };
    // What another release of idemkit-redis would have loaded: the same library name, a
    // version function that answers something else.
    let other = "#!lua name=idemkit\n\
        redis.register_function{function_name = 'idemkit_version', \
        callback = function() return 'another-version' end, flags = {'no-writes'}}";
    server.cli(&["FUNCTION", "LOAD", other]).unwrap();
    let backend = builder(&server.url(), "versions").build().await.unwrap();
    assert_eq!(libraries(&server), ["idemkit"]);
    let version = server.cli(&["FCALL", "idemkit_version", "0"]).unwrap();
    assert_ne!(version.trim(), "another-version");
    works_end_to_end(&backend).await;
    // A second backend of this version finds it loaded (its version function says so)
    // and loads nothing.
    let loads = || {
        let stats = server.cli(&["INFO", "commandstats"]).unwrap();
        stats
            .lines()
            .find_map(|line| line.strip_prefix("cmdstat_function|load:calls="))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |calls| calls.parse::<u64>().unwrap())
    };
    let before = loads();
    let again = builder(&server.url(), "versions").build().await.unwrap();
    until_working(&again).await;
    assert_eq!(loads(), before, "the library was loaded again");
    assert_eq!(libraries(&server), ["idemkit"]);
    assert_eq!(
        server.cli(&["FCALL", "idemkit_version", "0"]).unwrap(),
        version
    );
}

/// Runs `pause` (which blocks the server for about three seconds) on a thread, and while
/// it lasts, claims fresh keys again and again: each claim is a timeout error or a
/// correct claim, and at least one meets the pause. Afterwards the backend works, and a
/// claim that timed out does not hold its key: it may have landed late, under a token
/// only the backend saw, so the backend gives that token back once the server answers.
/// The keys are free again well before their lease (a minute) would have lapsed.
async fn paused_past_the_command_timeout(tag: &str, pause: fn(&RedisServer)) {
    let Some(server) = server() else { return };
    let server = Arc::new(server);
    let backend = builder(&server.url(), tag)
        .command_timeout(Duration::from_millis(300))
        .build()
        .await
        .unwrap();
    until_working(&backend).await;
    let pausing = {
        let server = server.clone();
        thread::spawn(move || pause(&server))
    };
    let mut timed_out = Vec::new();
    let mut won = Vec::new();
    // Bounded: the pause ends after a few seconds, and each claim after 300 ms at most.
    while !pausing.is_finished() && timed_out.len() + won.len() < 200 {
        let key = format!("paused-{}", timed_out.len() + won.len());
        let claimed =
            tokio::time::timeout(HANG_GUARD, Backend::claim(&backend, &key, "fp", 1, LEASE))
                .await
                .expect("a claim hung on a paused server");
        match claimed {
            Err(error) if is_timeout(&error) => timed_out.push(key),
            Err(error) => panic!("a paused server is a timeout, not {error}"),
            Ok(Claim::New(token)) => won.push((key, token)),
            Ok(other) => panic!("a fresh key: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pausing.join().unwrap();
    assert!(
        !timed_out.is_empty(),
        "no claim met the pause ({} won)",
        won.len()
    );
    works_end_to_end(&backend).await;
    for (key, token) in won {
        assert!(
            Backend::release(&backend, &key, &token).await.unwrap(),
            "{key}: a claim that answered holds its key"
        );
    }
    // Well under the lease: only a release by the backend frees these keys this soon.
    let deadline = std::time::Instant::now() + LEASE / 4;
    for key in timed_out {
        loop {
            match Backend::claim(&backend, &key, "fp", 1, LEASE).await {
                Ok(Claim::New(_) | Claim::Reclaimed(_)) => break,
                Ok(Claim::InFlight(_)) | Err(_) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                other => panic!("{key}: its timed-out claim still holds it: {other:?}"),
            }
        }
    }
}

/// A completion whose reply never came leaves the claim held; the backend gives it back
/// once the server answers again, so a retry runs instead of meeting the key in flight
/// for the whole lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_completion_gives_its_claim_back_once_the_server_answers() {
    let Some(server) = server() else { return };
    let backend = builder(&server.url(), "failed-completion")
        .command_timeout(Duration::from_millis(300))
        .build()
        .await
        .unwrap();
    let Claim::New(token) = Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap() else {
        panic!("not new");
    };
    server.pause().unwrap();
    let completed = Backend::complete(
        &backend,
        "k",
        &token,
        Arc::new(Response::new(200, "lost")),
        LEASE,
    )
    .await;
    let resumed = server.resume();
    let error = completed.expect_err("a frozen server answered");
    resumed.unwrap();
    assert!(is_timeout(&error), "{error}");
    until_working(&backend).await;
    let deadline = std::time::Instant::now() + LEASE / 4;
    loop {
        match Backend::claim(&backend, "k", "fp", 1, LEASE).await {
            // Run anew (the completion did not land) or replayed (it landed late): both
            // mean the retry did not wait out the lease.
            Ok(Claim::New(_) | Claim::Reclaimed(_) | Claim::Completed(_)) => break,
            Ok(Claim::InFlight(_)) | Err(_) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("the failed completion's claim still holds the key: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_by_debug_sleep() {
    paused_past_the_command_timeout("debug-sleep", |server| {
        server.cli(&["DEBUG", "SLEEP", "3"]).unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_by_client_pause() {
    paused_past_the_command_timeout("client-pause", |server| {
        server.cli(&["CLIENT", "PAUSE", "3000", "ALL"]).unwrap();
        thread::sleep(Duration::from_millis(3_000));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_on_a_frozen_server_ends_by_its_timeout() {
    let Some(server) = server() else { return };
    let backend = builder(&server.url(), "frozen").build().await.unwrap();
    let Claim::New(token) = Backend::claim(&backend, "k", "fp", 1, LEASE).await.unwrap() else {
        panic!("not new");
    };
    let waiter = support::spawn_waiter(&backend, "k", Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.pause().unwrap();
    let outcome = tokio::time::timeout(HANG_GUARD, waiter).await;
    server.resume().unwrap();
    match outcome
        .expect("the wait outlived its timeout on a frozen server")
        .unwrap()
    {
        Err(error) => assert!(is_storage(&error), "{error}"),
        Ok(record) => assert!(record.is_none(), "nothing completed: {record:?}"),
    }
    until_working(&backend).await;
    assert!(
        Backend::complete(
            &backend,
            "k",
            &token,
            Arc::new(Response::new(200, "ok")),
            LEASE
        )
        .await
        .unwrap(),
        "the claim made before the freeze is still held"
    );
    works_end_to_end(&backend).await;
}

#[test]
fn blocking_calls_fail_while_the_server_is_down_and_work_after() {
    let Some(server) = server() else { return };
    let backend = builder(&server.url(), "blocking").build_blocking().unwrap();
    until_working_blocking(&backend);
    server.kill();
    let claimed = BlockingBackend::claim(&backend, "down", "fp", 1, LEASE);
    assert!(
        matches!(&claimed, Err(error) if is_storage(error)),
        "{claimed:?}"
    );
    let waited = BlockingBackend::wait_for_completion(&backend, "down", Duration::from_secs(1));
    assert!(
        matches!(&waited, Err(error) if is_storage(error)) || matches!(waited, Ok(None)),
        "{waited:?}"
    );
    server.restart().unwrap();
    until_working_blocking(&backend);
    let Claim::New(token) = BlockingBackend::claim(&backend, "down", "fp", 1, LEASE).unwrap()
    else {
        panic!("the restarted server has no record");
    };
    let response = Arc::new(Response::new(200, "ok"));
    assert!(BlockingBackend::complete(&backend, "down", &token, response.clone(), LEASE).unwrap());
    let record = BlockingBackend::get(&backend, "down").unwrap().unwrap();
    assert_eq!(record.response(), Some(&*response));
}

#[test]
fn smol_calls_fail_while_the_server_is_down_and_work_after() {
    let Some(server) = server() else { return };
    smol::block_on(async {
        let backend = builder(&server.url(), "smol").build().await.unwrap();
        until_working(&backend).await;
        server.kill();
        let claimed = Backend::claim(&backend, "down", "fp", 1, LEASE).await;
        assert!(
            matches!(&claimed, Err(error) if is_storage(error)),
            "{claimed:?}"
        );
        server.restart().unwrap();
        until_working(&backend).await;
        let Claim::New(_) = Backend::claim(&backend, "down", "fp", 1, LEASE)
            .await
            .unwrap()
        else {
            panic!("the restarted server has no record");
        };
    });
}
