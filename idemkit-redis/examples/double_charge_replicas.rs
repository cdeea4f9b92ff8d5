//! The double-charge demo in replica mode: a payment endpoint guarded by idemkit on
//! Redis, its retries spread over several OS processes that share one Redis, as the
//! replicas of a service behind a load balancer would.
//!
//! ```text
//! cargo run --release -p idemkit-redis --example double_charge_replicas
//! cargo run --release -p idemkit-redis --example double_charge_replicas -- --url redis://127.0.0.1:6379/
//! ```
//!
//! Without `--url` it starts a private `redis-server` on a free loopback port (so
//! `redis-server` must be installed) and stops it at the end. It plays three scenes,
//! each replica a process of its own, prints what happened, and exits non-zero if any
//! invariant breaks:
//!
//! 1. 50 retries of one charge, arriving over 250 ms at four replicas: the card is
//!    charged once, every caller gets the same receipt, 49 are replays.
//! 2. A replica claims a charge, charges the card and is killed before it records the
//!    result. Once its lease lapses, a retry at another replica takes the key over and
//!    the card is still charged once (the card network's own idempotency key catches the
//!    second attempt; idemkit's part is that exactly one replica holds the key at a time).
//! 3. The same key with another amount, at yet another replica, is refused, never
//!    answered with the stored receipt.
//!
//! The fake card network keeps its ledger in Redis too, under keys of its own.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_core::{AsyncIdempotency, Fingerprint, Key, Policy, Response, RunError};
use idemkit_redis::RedisBackend;
use redis::AsyncCommands;

const REPLICAS: usize = 4;
const RETRIES: usize = 50;
/// Short, so that scene 2 needs only a couple of seconds for the dead replica's lease.
const LEASE: Duration = Duration::from_secs(2);
/// Every wait for a process is bounded by this.
const PATIENCE: Duration = Duration::from_secs(60);

/// A card network that takes a while to answer and, like a real payment API, accepts an
/// idempotency key of its own. Its ledger lives in Redis, apart from idemkit's records.
struct Gateway {
    ledger: redis::aio::MultiplexedConnection,
    prefix: String,
}

impl Gateway {
    async fn connect(url: &str, namespace: &str) -> Gateway {
        let client = redis::Client::open(url).expect("a Redis URL");
        let ledger = client
            .get_multiplexed_async_connection()
            .await
            .expect("the card network reaches Redis");
        Gateway {
            ledger,
            prefix: format!("card-network:{namespace}"),
        }
    }

    async fn charge(&self, order: &Key, card: &str, cents: u64) -> Response {
        let mut ledger = self.ledger.clone();
        let attempts = format!("{}:attempts:{order}", self.prefix);
        let attempt: u64 = ledger.incr(&attempts, 1).await.expect("ledger");
        let _: bool = ledger.expire(&attempts, 3600).await.expect("ledger");
        tokio::time::sleep(Duration::from_millis(150)).await;
        let receipt_key = format!("{}:receipt:{order}", self.prefix);
        let fresh = format!(
            "receipt #{attempt} from pid {}: {card} charged {cents} cents",
            std::process::id()
        );
        let _: bool = redis::cmd("SET")
            .arg(&receipt_key)
            .arg(&fresh)
            .arg("NX")
            .arg("EX")
            .arg(3600)
            .query_async(&mut ledger)
            .await
            .map(|reply: Option<String>| reply.is_some())
            .expect("ledger");
        let receipt: String = ledger.get(&receipt_key).await.expect("ledger");
        Response::new(201, receipt).with_header("content-type", "text/plain")
    }

    async fn attempts(&self, order: &Key) -> u64 {
        let mut ledger = self.ledger.clone();
        let attempts: Option<u64> = ledger
            .get(format!("{}:attempts:{order}", self.prefix))
            .await
            .expect("ledger");
        attempts.unwrap_or(0)
    }
}

fn order(idempotency_key: &str) -> Key {
    Key::new(["POST /charges", idempotency_key])
}

fn charge_of(card: &str, cents: u64) -> Fingerprint {
    Fingerprint::new([card.as_bytes(), &cents.to_be_bytes()])
}

/// What one replica process does, named on its command line.
async fn replica(url: &str, namespace: &str, role: &[String]) {
    let backend = RedisBackend::builder()
        .url(url)
        .namespace(namespace)
        .build()
        .await
        .expect("the replica connects to Redis");
    let policy = Policy::builder()
        .lease_ttl(LEASE)
        .wait_timeout(Duration::from_secs(10))
        .build()
        .expect("a valid policy");
    let idempotency = Arc::new(AsyncIdempotency::with_policy(backend, policy));
    let gateway = Arc::new(Gateway::connect(url, namespace).await);
    match role {
        // `retry <first> <count>`: retries number first.. of order-1001, 5 ms apart.
        [what, first, count] if what == "retry" => {
            let (first, count): (u32, u32) = (first.parse().unwrap(), count.parse().unwrap());
            let retries: Vec<_> = (first..first + count)
                .map(|retry| {
                    let (idempotency, gateway) = (idempotency.clone(), gateway.clone());
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(5) * retry).await;
                        let key = order("order-1001");
                        let outcome = idempotency
                            .run(&key, &charge_of("4242", 4_999), || async {
                                Ok::<_, std::convert::Infallible>(
                                    gateway.charge(&key, "4242", 4_999).await,
                                )
                            })
                            .await;
                        report(&outcome);
                    })
                })
                .collect();
            for retry in retries {
                retry.await.expect("a retry task");
            }
        }
        // `crash`: charges order-2002, says so, and hangs until it is killed.
        [what] if what == "crash" => {
            let key = order("order-2002");
            let _ = idempotency
                .run(&key, &charge_of("5555", 1_250), || async {
                    gateway.charge(&key, "5555", 1_250).await;
                    println!("charged");
                    std::future::pending::<Result<Response, std::convert::Infallible>>().await
                })
                .await;
        }
        // `retry-crashed`: retries order-2002 once.
        [what] if what == "retry-crashed" => {
            let key = order("order-2002");
            let outcome = idempotency
                .run(&key, &charge_of("5555", 1_250), || async {
                    Ok::<_, std::convert::Infallible>(gateway.charge(&key, "5555", 1_250).await)
                })
                .await;
            report(&outcome);
        }
        // `other-amount`: order-1001's key, another amount.
        [what] if what == "other-amount" => {
            let key = order("order-1001");
            let outcome = idempotency
                .run(&key, &charge_of("4242", 5_000), || async {
                    Ok::<_, std::convert::Infallible>(gateway.charge(&key, "4242", 5_000).await)
                })
                .await;
            report(&outcome);
        }
        other => panic!("unknown replica role {other:?}"),
    }
}

/// Prints `outcome <decision> <receipt>` for the parent to read.
fn report(outcome: &Result<idemkit_core::Outcome, RunError<std::convert::Infallible>>) {
    match outcome {
        Ok(outcome) => println!(
            "outcome {:?} {}",
            outcome.decision,
            String::from_utf8_lossy(&outcome.response.body)
        ),
        Err(error) => println!("outcome {:?} -", error.decision()),
    }
}

/// Starts a replica process with `role`.
fn start(url: &str, namespace: &str, role: &[&str]) -> Child {
    Command::new(std::env::current_exe().expect("this program's path"))
        .args(["--replica", url, namespace])
        .args(role)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("a replica process starts")
}

/// Waits (bounded) for a replica and returns its `outcome` lines as (decision, receipt).
fn outcomes(child: Child) -> Vec<(String, String)> {
    let give_up = Instant::now() + PATIENCE;
    let mut child = child;
    while child.try_wait().expect("a replica").is_none() {
        if Instant::now() > give_up {
            let _ = child.kill();
            panic!("a replica did not finish within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("a replica's output");
    assert!(
        output.status.success(),
        "a replica failed: {}",
        output.status
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("outcome "))
        .map(|line| {
            let (decision, receipt) = line.split_once(' ').unwrap_or((line, ""));
            (decision.to_owned(), receipt.to_owned())
        })
        .collect()
}

/// Collects broken invariants instead of stopping at the first.
#[derive(Default)]
struct Checks {
    failed: Vec<String>,
}

impl Checks {
    fn check(&mut self, ok: bool, what: &str) {
        println!("  [{}] {what}", if ok { "ok" } else { "FAILED" });
        if !ok {
            self.failed.push(what.to_owned());
        }
    }
}

async fn play(url: &str) -> Checks {
    let namespace = format!("double-charge-{}", std::process::id());
    let gateway = Gateway::connect(url, &namespace).await;
    let mut checks = Checks::default();

    println!(
        "Scene 1: {RETRIES} retries of one charge over 250 ms, spread over {REPLICAS} replica processes"
    );
    let per_replica = RETRIES.div_ceil(REPLICAS);
    let replicas: Vec<Child> = (0..REPLICAS)
        .map(|replica| {
            let first = replica * per_replica;
            let count = per_replica.min(RETRIES - first);
            start(
                url,
                &namespace,
                &["retry", &first.to_string(), &count.to_string()],
            )
        })
        .collect();
    let results: Vec<(String, String)> = replicas.into_iter().flat_map(outcomes).collect();
    let new = results
        .iter()
        .filter(|(decision, _)| decision == "New")
        .count();
    let waited = results
        .iter()
        .filter(|(decision, _)| decision == "ReplayedAfterWait")
        .count();
    let replayed = results
        .iter()
        .filter(|(decision, _)| decision == "Replayed" || decision == "ReplayedAfterWait")
        .count();
    println!(
        "  {} answers: {new} ran the charge, {replayed} replays ({waited} of them waited for the charge in flight)",
        results.len()
    );
    if let Some((_, receipt)) = results.first() {
        println!("  receipt: {receipt}");
    }
    let one = order("order-1001");
    checks.check(results.len() == RETRIES, "every retry got an answer");
    checks.check(
        gateway.attempts(&one).await == 1,
        "the card network saw one charge",
    );
    checks.check(
        new == 1 && replayed == RETRIES - 1,
        "one run, every other retry a replay",
    );
    checks.check(
        results.iter().all(|(_, receipt)| *receipt == results[0].1),
        "every caller got the same receipt",
    );

    println!(
        "Scene 2: a replica charges, is killed before recording it, and a retry lands elsewhere"
    );
    let mut crasher = start(url, &namespace, &["crash"]);
    let said = crasher.stdout.take().expect("the crasher's output");
    let charged = BufReader::new(said)
        .lines()
        .map_while(Result::ok)
        .any(|line| line == "charged");
    let _ = crasher.kill();
    let _ = crasher.wait();
    checks.check(
        charged,
        "the crashing replica charged the card before it died",
    );
    let retry = outcomes(start(url, &namespace, &["retry-crashed"]));
    let two = order("order-2002");
    println!("  the retry: {retry:?}");
    checks.check(
        matches!(retry.as_slice(), [(decision, _)] if decision == "Reclaimed"),
        "the retry took over the dead replica's key once its lease lapsed",
    );
    checks.check(
        gateway.attempts(&two).await == 2
            && retry
                .first()
                .is_some_and(|(_, receipt)| receipt.starts_with("receipt #1 ")),
        "two attempts reached the card network, which charged once (its receipt #1)",
    );

    println!("Scene 3: the first key again, with another amount, at another replica");
    let other = outcomes(start(url, &namespace, &["other-amount"]));
    println!("  the answer: {other:?}");
    checks.check(
        matches!(other.as_slice(), [(decision, receipt)] if decision == "PayloadMismatch" && receipt == "-"),
        "refused as a payload mismatch, the stored receipt not returned",
    );
    checks.check(
        gateway.attempts(&one).await == 1,
        "the card was not charged again",
    );
    checks
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    if let [flag, url, namespace, role @ ..] = args.as_slice()
        && flag == "--replica"
    {
        runtime.block_on(replica(url, namespace, role));
        return;
    }
    let given = match args.as_slice() {
        [] => None,
        [flag, url] if flag == "--url" => Some(url.clone()),
        _ => {
            eprintln!("usage: double_charge_replicas [--url redis://HOST:PORT/]");
            std::process::exit(2);
        }
    };
    // Our own server unless one was given: private, on a free loopback port, stopped
    // when `own` is dropped.
    let own = match given {
        Some(_) => None,
        None => Some(redis_harness::RedisServer::start().unwrap_or_else(|error| {
            eprintln!("could not start redis-server (is it installed?): {error}");
            std::process::exit(2);
        })),
    };
    let url = given.unwrap_or_else(|| own.as_ref().expect("our server").url());
    println!("Replicas share the Redis at {url}\n");
    let checks = runtime.block_on(play(&url));
    drop(own);
    if checks.failed.is_empty() {
        println!("\nAll invariants held.");
    } else {
        println!(
            "\n{} invariant(s) broken: {:?}",
            checks.failed.len(),
            checks.failed
        );
        std::process::exit(1);
    }
}
