//! Claim+complete pairs per second through rusqlite and through sqlx's SQLite driver, with
//! the statements idemkit-sqlite runs for a pair (a write transaction that reads the key
//! and inserts the claim, then one that stores the response fenced by the token) and the
//! same pragmas (WAL, the `synchronous` level given, a busy timeout), on one connection,
//! one pair at a time, in rounds of one batch each (which goes first alternating).
//!
//! Each connection prints the `synchronous` level and journal mode it got, to show the
//! two run with the same pragmas.
//!
//! Run: `cargo run --release -- [full|normal]` in this directory.

use std::time::{Duration, Instant};

use sqlx::ConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};

const PAIRS: u64 = 300;
const ROUNDS: usize = 11;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS records (
    key TEXT PRIMARY KEY NOT NULL, token BLOB NOT NULL, deadline INTEGER NOT NULL,
    completed_at INTEGER, status INTEGER, body BLOB) WITHOUT ROWID";
const SELECT: &str = "SELECT token, deadline, completed_at FROM records WHERE key = ?1";
const INSERT: &str = "INSERT INTO records (key, token, deadline) VALUES (?1, ?2, ?3)";
const UPDATE: &str = "UPDATE records SET completed_at = ?3, status = 200, body = ?4 WHERE key = ?1 AND token = ?2 AND completed_at IS NULL";

fn rusqlite_pairs(path: &str, sync: &str, first: u64) -> Duration {
    let mut connection = rusqlite::Connection::open(path).unwrap();
    connection.busy_timeout(Duration::from_secs(5)).unwrap();
    let _: String = connection
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .unwrap();
    connection.pragma_update(None, "synchronous", sync).unwrap();
    connection.execute_batch(SCHEMA).unwrap();
    if first == 0 {
        let level: i64 = connection
            .query_row("PRAGMA synchronous", [], |row| row.get(0))
            .unwrap();
        let mode: String = connection
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        eprintln!("rusqlite connection: synchronous={level} journal_mode={mode}");
    }
    let start = Instant::now();
    for n in first..first + PAIRS {
        let key = format!("key-{n}");
        let token = n.to_be_bytes();
        let transaction = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        let found = transaction
            .prepare_cached(SELECT)
            .unwrap()
            .query_row([&key], |_| Ok(()))
            .is_ok();
        assert!(!found);
        transaction
            .prepare_cached(INSERT)
            .unwrap()
            .execute(rusqlite::params![key, &token[..], 1_i64])
            .unwrap();
        transaction.commit().unwrap();
        let transaction = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        let stored = transaction
            .prepare_cached(UPDATE)
            .unwrap()
            .execute(rusqlite::params![key, &token[..], 2_i64, &b"ok"[..]])
            .unwrap();
        assert_eq!(stored, 1);
        transaction.commit().unwrap();
    }
    start.elapsed()
}

async fn sqlx_pairs(path: &str, sync: SqliteSynchronous, first: u64) -> Duration {
    let mut connection = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(sync)
        .busy_timeout(Duration::from_secs(5))
        .connect()
        .await
        .unwrap();
    sqlx::query(SCHEMA).execute(&mut connection).await.unwrap();
    let (level,): (i64,) = sqlx::query_as("PRAGMA synchronous")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    let (mode,): (String,) = sqlx::query_as("PRAGMA journal_mode")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    if first == 0 {
        eprintln!("sqlx connection: synchronous={level} journal_mode={mode}");
    }
    let start = Instant::now();
    for n in first..first + PAIRS {
        let key = format!("key-{n}");
        let token = n.to_be_bytes().to_vec();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut connection)
            .await
            .unwrap();
        let found = sqlx::query(SELECT)
            .bind(&key)
            .fetch_optional(&mut connection)
            .await
            .unwrap();
        assert!(found.is_none());
        sqlx::query(INSERT)
            .bind(&key)
            .bind(&token)
            .bind(1_i64)
            .execute(&mut connection)
            .await
            .unwrap();
        sqlx::query("COMMIT")
            .execute(&mut connection)
            .await
            .unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut connection)
            .await
            .unwrap();
        let stored = sqlx::query(UPDATE)
            .bind(&key)
            .bind(&token)
            .bind(2_i64)
            .bind(&b"ok"[..])
            .execute(&mut connection)
            .await
            .unwrap();
        assert_eq!(stored.rows_affected(), 1);
        sqlx::query("COMMIT")
            .execute(&mut connection)
            .await
            .unwrap();
    }
    start.elapsed()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let level = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "normal".to_owned());
    let (pragma, sync) = match level.as_str() {
        "full" => ("FULL", SqliteSynchronous::Full),
        _ => ("NORMAL", SqliteSynchronous::Normal),
    };
    let dir = std::env::temp_dir().join(format!("sqlite-client-choice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ours, theirs) = (dir.join("rusqlite.db"), dir.join("sqlx.db"));
    let mut ratios = Vec::new();
    println!("synchronous={pragma}: pairs per second, one at a time");
    for round in 0..ROUNDS {
        let first = round as u64 * PAIRS;
        // Which goes first alternates, so neither always gets the quieter turn.
        let (rusqlite, sqlx);
        if round % 2 == 0 {
            rusqlite =
                PAIRS as f64 / rusqlite_pairs(ours.to_str().unwrap(), pragma, first).as_secs_f64();
            sqlx = PAIRS as f64
                / sqlx_pairs(theirs.to_str().unwrap(), sync, first)
                    .await
                    .as_secs_f64();
        } else {
            sqlx = PAIRS as f64
                / sqlx_pairs(theirs.to_str().unwrap(), sync, first)
                    .await
                    .as_secs_f64();
            rusqlite =
                PAIRS as f64 / rusqlite_pairs(ours.to_str().unwrap(), pragma, first).as_secs_f64();
        }
        println!(
            "round {}: rusqlite {rusqlite:.0}, sqlx {sqlx:.0}: {:.2}x",
            round + 1,
            rusqlite / sqlx
        );
        ratios.push(rusqlite / sqlx);
    }
    ratios.sort_by(f64::total_cmp);
    println!("median rusqlite / sqlx: {:.2}x", ratios[ratios.len() / 2]);
    let _ = std::fs::remove_dir_all(&dir);
}
