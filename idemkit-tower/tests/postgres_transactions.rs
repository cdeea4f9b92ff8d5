//! The layer over PostgreSQL, over real HTTP on loopback: the handler writes in the
//! request's transaction, which the layer commits with the stored response; duplicates
//! make one row; a handler whose claim was taken over gets its writes rolled back and
//! its client a problem+json refusal, never a 2xx.
#![cfg(feature = "postgres")]

use std::process::Command;
use std::time::Duration;

use axum::{Extension, Router, http::HeaderMap, http::StatusCode, routing::post};
use idemkit_core::{Heartbeat, Policy};
use idemkit_postgres::{PostgresBackend, RunTransaction};
use idemkit_tower::{IdempotencyLayer, PostgresTransactions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-XAtqc", sql])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

struct Tables {
    url: String,
    records: String,
    orders: String,
}

impl Drop for Tables {
    fn drop(&mut self) {
        let _ = Command::new("psql")
            .args([
                &self.url,
                "-XAtqc",
                &format!("DROP TABLE IF EXISTS {}, {}", self.records, self.orders),
            ])
            .output();
    }
}

/// The handler: inserts the order inside the request's transaction, then sleeps as long
/// as `x-sleep-ms` says (still inside it).
async fn create_order(
    Extension(run): Extension<RunTransaction>,
    Extension(orders): Extension<String>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, String) {
    let mut tx = run.begin().await.expect("the request's transaction");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {orders} (body) VALUES ($1)"
    )))
    .bind(&body)
    .execute(&mut *tx)
    .await
    .expect("insert");
    drop(tx);
    if let Some(ms) = headers
        .get("x-sleep-ms")
        .and_then(|v| v.to_str().ok()?.parse().ok())
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    (StatusCode::CREATED, format!("created {body}"))
}

async fn serve(lease: Duration) -> Option<(Tables, std::net::SocketAddr)> {
    let url = pg_harness::machine()?;
    let tables = Tables {
        url: url.clone(),
        records: pg_harness::unique_name("tower_records"),
        orders: pg_harness::unique_name("tower_orders"),
    };
    psql(&url, &format!("CREATE TABLE {} (body text)", tables.orders));
    let backend = PostgresBackend::builder()
        .url(&url)
        .table(&tables.records)
        .migrate(true)
        .build()
        .await
        .unwrap();
    let layer = IdempotencyLayer::builder(backend.clone())
        .single_tenant()
        .policy(
            Policy::builder()
                .lease_ttl(lease)
                .heartbeat(Heartbeat::Off)
                .wait_timeout(Duration::from_secs(20))
                .build()
                .expect("a valid policy"),
        )
        .run_hook(PostgresTransactions::new(&backend))
        .build()
        .unwrap();
    let app = Router::new()
        .route("/orders", post(create_order))
        .layer(layer)
        .layer(Extension(tables.orders.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Some((tables, address))
}

/// One POST over a fresh connection: status, content type, body.
async fn post_order(
    address: std::net::SocketAddr,
    key: &str,
    body: &str,
    sleep_ms: u64,
) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "POST /orders HTTP/1.1\r\nhost: test\r\nidempotency-key: {key}\r\nx-sleep-ms: {sleep_ms}\r\n\
         content-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    (status, content_type, body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn duplicates_behind_the_layer_make_one_row_committed_with_the_response() {
    let Some((tables, address)) = serve(Duration::from_secs(30)).await else {
        return;
    };
    let calls: Vec<_> = (0..10)
        .map(|_| tokio::spawn(post_order(address, "order-1", "book", 200)))
        .collect();
    for call in calls {
        let (status, _, body) = call.await.unwrap();
        assert_eq!((status, body.as_str()), (201, "created book"));
    }
    assert_eq!(
        psql(
            &tables.url,
            &format!("SELECT count(*) FROM {}", tables.orders)
        ),
        "1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_whose_claim_was_taken_over_is_rolled_back_and_refused() {
    let Some((tables, address)) = serve(Duration::from_millis(500)).await else {
        return;
    };
    // The first request stalls in its handler past its lease, inside its transaction.
    let stalled = tokio::spawn(post_order(address, "order-2", "stalled", 3000));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // A retry finds the lease lapsed, takes the key over and commits.
    let (status, _, body) = post_order(address, "order-2", "stalled", 0).await;
    assert_eq!((status, body.as_str()), (201, "created stalled"));
    // The stalled run's completion is fenced out: rolled back, and refused.
    let (status, content_type, body) = stalled.await.unwrap();
    assert!(
        !(200..300).contains(&status),
        "a 2xx for a rolled-back effect: {body}"
    );
    assert_eq!(status, 503);
    assert_eq!(content_type, "application/problem+json");
    assert!(body.contains("urn:idemkit:lease-lost"), "{body}");
    assert_eq!(
        psql(
            &tables.url,
            &format!("SELECT count(*) FROM {}", tables.orders)
        ),
        "1"
    );
}
