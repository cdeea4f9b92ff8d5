//! An effect and its record in one transaction, with an `orders` table: racing
//! duplicates across two backends make one row; a stalled owner whose lease was taken
//! over commits nothing; a process killed mid-transaction leaves no row and its retry
//! makes one.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use idemkit_core::{Backend, Claim, Response};
use idemkit_postgres::{Committed, PostgresBackend, Started};
use support::{Scratch, psql};

const LONG: Duration = Duration::from_secs(3600);

/// A scratch records table plus an `orders` table beside it.
fn orders(prefix: &str) -> Option<(Scratch, String)> {
    let mut scratch = Scratch::new(prefix)?;
    let orders = format!("{}_orders", scratch.table);
    psql(
        &scratch.url,
        &format!("CREATE TABLE {orders} (key text NOT NULL, made_by text NOT NULL)"),
    );
    scratch.also.push(orders.clone());
    Some((scratch, orders))
}

fn count(scratch: &Scratch, orders: &str, key: &str) -> i64 {
    psql(
        &scratch.url,
        &format!("SELECT count(*) FROM {orders} WHERE key = '{key}'"),
    )
    .parse()
    .unwrap()
}

/// Runs the order `key` through the transaction API until it is stored or replayed:
/// the response and whether this call made it.
async fn place(backend: &PostgresBackend, orders: &str, key: &str, who: &str) -> (Response, bool) {
    loop {
        match backend
            .begin(key, "order-fp", 1, Duration::from_secs(30))
            .await
            .expect("begin")
        {
            Started::Run(mut run) => {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO {orders} (key, made_by) VALUES ($1, $2)"
                )))
                .bind(key)
                .bind(who)
                .execute(run.connection())
                .await
                .expect("insert");
                let response = Response::new(201, format!("made by {who}"));
                match run.commit(response.clone(), LONG).await.expect("commit") {
                    Committed::Stored => return (response, true),
                    Committed::Fenced => continue,
                }
            }
            Started::Found(Claim::Completed(replay)) => {
                return (replay.response().clone(), false);
            }
            Started::Found(_) => {
                if let Some(record) = Backend::wait_for_completion(backend, key, LONG)
                    .await
                    .expect("wait")
                {
                    return (record.response().unwrap().clone(), false);
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_racing_duplicates_across_two_backends_make_one_row() {
    let Some((scratch, orders)) = orders("tx_race") else {
        return;
    };
    let a = scratch.builder().build().await.unwrap();
    let b = scratch.builder().build().await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let backend = if i % 2 == 0 { a.clone() } else { b.clone() };
        let orders = orders.clone();
        tasks.push(tokio::spawn(async move {
            place(&backend, &orders, "order-1", &format!("task-{i}")).await
        }));
    }
    let mut made = 0;
    let mut bodies = std::collections::HashSet::new();
    for task in tasks {
        let (response, mine) = task.await.unwrap();
        made += usize::from(mine);
        bodies.insert(response.body.clone());
    }
    assert_eq!(made, 1, "exactly one task ran the handler");
    assert_eq!(
        bodies.len(),
        1,
        "every duplicate got the one stored response"
    );
    assert_eq!(count(&scratch, &orders, "order-1"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_owner_whose_lease_was_taken_over_commits_no_row() {
    let Some((scratch, orders)) = orders("tx_stalled") else {
        return;
    };
    let backend = scratch.builder().build().await.unwrap();
    let Started::Run(mut stalled) = backend
        .begin("order-2", "order-fp", 1, Duration::from_millis(200))
        .await
        .unwrap()
    else {
        panic!("the first begin runs");
    };
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {orders} (key, made_by) VALUES ('order-2', 'stalled')"
    )))
    .execute(stalled.connection())
    .await
    .unwrap();
    // The owner stalls past its lease; another executor takes the key over and commits.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (response, mine) = place(&backend, &orders, "order-2", "successor").await;
    assert!(mine, "the successor reclaimed and ran");
    assert_eq!(response.body, "made by successor");
    // The stalled owner's commit is refused by the fence and rolled back.
    let outcome = stalled
        .commit(Response::new(201, "made by stalled"), LONG)
        .await
        .unwrap();
    assert_eq!(outcome, Committed::Fenced);
    assert_eq!(count(&scratch, &orders, "order-2"), 1);
    assert_eq!(
        psql(
            &scratch.url,
            &format!("SELECT made_by FROM {orders} WHERE key = 'order-2'")
        ),
        "successor"
    );
    let record = Backend::get(&backend, "order-2").await.unwrap().unwrap();
    assert_eq!(record.response().unwrap().body, "made by successor");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_rolls_back_and_frees_the_key_at_once() {
    let Some((scratch, orders)) = orders("tx_abort") else {
        return;
    };
    let backend = scratch.builder().build().await.unwrap();
    let Started::Run(mut run) = backend.begin("order-3", "order-fp", 1, LONG).await.unwrap() else {
        panic!("runs");
    };
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {orders} (key, made_by) VALUES ('order-3', 'aborted')"
    )))
    .execute(run.connection())
    .await
    .unwrap();
    assert!(run.abort().await.unwrap(), "the claim was released");
    assert_eq!(count(&scratch, &orders, "order-3"), 0);
    let (_, mine) = place(&backend, &orders, "order-3", "retry").await;
    assert!(mine, "the retry runs at once");
    assert_eq!(count(&scratch, &orders, "order-3"), 1);
}

/// The child side of the kill test: claims, inserts the order inside the transaction,
/// says so on stdout, and hangs until killed. Runs only when the parent starts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_that_is_killed_mid_transaction() {
    let (Ok(url), Ok(table)) = (
        std::env::var("IDEMKIT_PG_CHILD_URL"),
        std::env::var("IDEMKIT_PG_CHILD_TABLE"),
    ) else {
        return;
    };
    let orders = format!("{table}_orders");
    let backend = PostgresBackend::builder()
        .url(&url)
        .table(&table)
        .build()
        .await
        .unwrap();
    let Started::Run(mut run) = backend
        .begin("order-4", "order-fp", 1, Duration::from_millis(500))
        .await
        .unwrap()
    else {
        panic!("the child runs first");
    };
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {orders} (key, made_by) VALUES ('order-4', 'killed')"
    )))
    .execute(run.connection())
    .await
    .unwrap();
    println!("INSERTED");
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    std::future::pending::<()>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_mid_transaction_leaves_no_row_and_its_retry_makes_one() {
    let Some((scratch, orders)) = orders("tx_killed") else {
        return;
    };
    // Migrated here, so the child finds the table.
    let backend = scratch.builder().build().await.unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_that_is_killed_mid_transaction",
            "--nocapture",
        ])
        .env("IDEMKIT_PG_CHILD_URL", &scratch.url)
        .env("IDEMKIT_PG_CHILD_TABLE", &scratch.table)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        let n = std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert!(n > 0, "the child ended before inserting");
        if line.contains("INSERTED") {
            break;
        }
    }
    // The key is in flight (the claim committed); the insert is not visible.
    let claim = Backend::claim(&backend, "order-4", "order-fp", 1, LONG)
        .await
        .unwrap();
    assert!(matches!(claim, Claim::InFlight(_)), "{claim:?}");
    assert_eq!(count(&scratch, &orders, "order-4"), 0);
    child.kill().unwrap();
    child.wait().unwrap();
    // The server rolls the dead session's transaction back: still no row.
    assert_eq!(count(&scratch, &orders, "order-4"), 0);
    // The retry waits out the dead owner's lease, reclaims and runs once.
    let (response, mine) = place(&backend, &orders, "order-4", "retry").await;
    assert!(mine);
    assert_eq!(response.body, "made by retry");
    assert_eq!(count(&scratch, &orders, "order-4"), 1);
}
