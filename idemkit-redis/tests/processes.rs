//! Across processes: two OS processes race on the same keys through one server, and
//! each key runs once.
//!
//! The test re-runs its own binary twice as the racers (the `racer` test, which does
//! nothing unless the environment names a server). Each racer runs every key through
//! the async executor with many tasks at once; the operation counts its runs in Redis
//! (`INCR`, outside the backend's namespace) and answers with its process's name. The
//! parent then checks that every key ran exactly once and that both processes returned
//! the one answer that ran.

mod support;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{AsyncIdempotency, Decision, Fingerprint, Key, Policy, Response};
use idemkit_redis::RedisBackend;
use redis::AsyncCommands;
use redis_harness::RedisServer;
use support::HANG_GUARD;

const KEYS: usize = 200;
const TASKS: usize = 16;
const URL_VAR: &str = "IDEMKIT_RACER_URL";
const NAME_VAR: &str = "IDEMKIT_RACER_NAME";
const NAMESPACE_VAR: &str = "IDEMKIT_RACER_NAMESPACE";

#[test]
fn two_processes_racing_on_the_same_keys_run_each_key_once() {
    if std::env::var_os(URL_VAR).is_some() || !redis_harness::available() {
        return;
    }
    let server = RedisServer::start().expect("a test server starts");
    let namespace = support::namespace("race");
    let racers: Vec<_> = ["left", "right"]
        .into_iter()
        .map(|name| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "racer", "--nocapture", "--test-threads=1"])
                .env(URL_VAR, server.url())
                .env(NAME_VAR, name)
                .env(NAMESPACE_VAR, &namespace)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("a racer starts")
        })
        .collect();
    let give_up = Instant::now() + HANG_GUARD * 2;
    let outputs: Vec<String> = racers
        .into_iter()
        .map(|mut racer| {
            while racer.try_wait().unwrap().is_none() {
                if Instant::now() > give_up {
                    let _ = racer.kill();
                    panic!("a racer hung");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let output = racer.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(
                output.status.success(),
                "a racer failed: {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            );
            stdout
        })
        .collect();

    // Every key ran once, whichever process ran it.
    let client = redis::Client::open(server.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let mut ran_by_left = 0;
    for key in 0..KEYS {
        let runs: i64 = redis::Commands::get(&mut con, format!("runs:{namespace}:{key}")).unwrap();
        assert_eq!(runs, 1, "key {key} ran {runs} times");
    }
    // Both processes got the same answer for every key: that of the one run.
    let answers: Vec<HashMap<usize, (String, String)>> =
        outputs.iter().map(|stdout| parse(stdout)).collect();
    for key in 0..KEYS {
        let (left_body, left_decision) = &answers[0][&key];
        let (right_body, right_decision) = &answers[1][&key];
        assert_eq!(left_body, right_body, "key {key}");
        let ran_here = |decision: &str, name: &str| decision == "New" && left_body == name;
        assert!(
            ran_here(left_decision, "left") ^ ran_here(right_decision, "right"),
            "key {key}: exactly one process ran it ({left_decision}, {right_decision})"
        );
        ran_by_left += usize::from(left_decision == "New");
    }
    // With both starting together on 200 keys, it is all but impossible for one process
    // to win every key; if it did, the test did not race.
    assert!(
        ran_by_left > 0 && ran_by_left < KEYS,
        "one process ran all {KEYS} keys: no race happened ({ran_by_left})"
    );
}

/// `key body decision` lines.
fn parse(stdout: &str) -> HashMap<usize, (String, String)> {
    let answers: HashMap<usize, (String, String)> = stdout
        .lines()
        // The test harness's "test racer ... " may share the first line.
        .filter_map(|line| line.find("answer ").map(|at| &line[at + "answer ".len()..]))
        .map(|line| {
            let mut parts = line.split(' ');
            let key = parts.next().unwrap().parse().unwrap();
            let body = parts.next().unwrap().to_owned();
            let decision = parts.next().unwrap().to_owned();
            (key, (body, decision))
        })
        .collect();
    assert_eq!(
        answers.len(),
        KEYS,
        "a racer answered for every key: {stdout}"
    );
    answers
}

/// One racer: runs every key, prints `answer <key> <body> <decision>` per key.
#[test]
fn racer() {
    let (Ok(url), Ok(name), Ok(namespace)) = (
        std::env::var(URL_VAR),
        std::env::var(NAME_VAR),
        std::env::var(NAMESPACE_VAR),
    ) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let backend = RedisBackend::builder()
            .url(&url)
            .namespace(&namespace)
            .build()
            .await
            .unwrap();
        let policy = Policy::builder()
            .wait_timeout(Duration::from_secs(30))
            .build()
            .expect("a valid policy");
        let idempotency = Arc::new(AsyncIdempotency::with_policy(backend, policy));
        let counter = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        // Start together: both racers wait (bounded) until both are connected.
        let mut ready = counter.clone();
        let _: i64 = ready.incr(format!("ready:{namespace}"), 1).await.unwrap();
        let give_up = Instant::now() + HANG_GUARD;
        loop {
            let both: i64 = ready.get(format!("ready:{namespace}")).await.unwrap();
            if both >= 2 {
                break;
            }
            assert!(Instant::now() < give_up, "the other racer never came");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let idempotency = idempotency.clone();
                let counter = counter.clone();
                let (name, namespace) = (name.clone(), namespace.clone());
                tokio::spawn(async move {
                    let mut answers = Vec::new();
                    // The racers go through the keys from opposite ends, so that even
                    // a racer the machine starts late still meets the other mid-way
                    // and wins some keys.
                    let keys: Vec<usize> = (task..KEYS).step_by(TASKS).collect();
                    let keys: Vec<usize> = if name == "left" {
                        keys
                    } else {
                        keys.into_iter().rev().collect()
                    };
                    for key in keys {
                        let mut counter = counter.clone();
                        let runs = format!("runs:{namespace}:{key}");
                        let body = name.clone();
                        let outcome = idempotency
                            .run(
                                &Key::new([key.to_string()]),
                                &Fingerprint::new(["same"]),
                                || async move {
                                    let _: i64 = counter.incr(runs, 1).await.unwrap();
                                    // Long enough that the other process often arrives
                                    // mid-run, and that one racer alone cannot finish
                                    // every key before a late one starts.
                                    tokio::time::sleep(Duration::from_millis(20)).await;
                                    Ok::<_, std::convert::Infallible>(Response::new(200, body))
                                },
                            )
                            .await
                            .unwrap();
                        let body = String::from_utf8(outcome.response.body.to_vec()).unwrap();
                        let decision = match outcome.decision {
                            Decision::New => "New",
                            Decision::Replayed => "Replayed",
                            Decision::ReplayedAfterWait => "ReplayedAfterWait",
                            other => panic!("key {key}: {other:?}"),
                        };
                        answers.push(format!("answer {key} {body} {decision}"));
                    }
                    answers
                })
            })
            .collect();
        for task in tasks {
            for line in task.await.unwrap() {
                println!("{line}");
            }
        }
    });
}
