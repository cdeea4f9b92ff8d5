//! Records on the file: kept across a restart, read back in flight and completed,
//! counted and purged in bounded batches by the operator's side, the file shrinking
//! after a purge, and the table created, found current, or kept apart by name.

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures_lite::future::block_on;
use idemkit_core::{BlockingBackend, Claim, ManualClock, Operator, Response, State};
use idemkit_sqlite::{Migration, SqliteBackend, Synchronous};

use support::ScratchFile;

const HOUR: Duration = Duration::from_secs(3600);

fn new_claim(backend: &SqliteBackend, key: &str, lease: Duration) -> idemkit_core::ClaimToken {
    match BlockingBackend::claim(backend, key, "fp", 3, lease).unwrap() {
        Claim::New(token) => token,
        other => panic!("expected a new claim of {key}, got {other:?}"),
    }
}

/// A completed result and a claim in flight written by one backend are there, exactly,
/// for a backend opened on the file after the first is gone (a restart).
#[test]
fn records_are_kept_across_a_restart() {
    let file = ScratchFile::new("restart");
    let (done, held) = {
        let backend = SqliteBackend::open(file.path()).unwrap();
        let done = new_claim(&backend, "done", HOUR);
        let response = Response::new(201, &b"created\0binary"[..])
            .with_header("content-type", "text/plain")
            .with_header("x-empty", "");
        assert!(
            BlockingBackend::complete(&backend, "done", &done, Arc::new(response), HOUR).unwrap()
        );
        let held = new_claim(&backend, "held", HOUR);
        (done, held)
    };
    let backend = SqliteBackend::open(file.path()).unwrap();
    let record = BlockingBackend::get(&backend, "done")
        .unwrap()
        .expect("kept");
    assert_eq!(record.state(), State::Completed);
    assert_eq!(record.claim_token(), &done);
    assert_eq!(record.fingerprint(), "fp");
    assert_eq!(record.fingerprint_version(), 3);
    let response = record.response().unwrap();
    assert_eq!(response.status, 201);
    assert_eq!(&response.body[..], b"created\0binary");
    assert_eq!(response.header("content-type"), Some(&b"text/plain"[..]));
    assert_eq!(response.header("x-empty"), Some(&b""[..]));
    match BlockingBackend::claim(&backend, "done", "fp", 3, HOUR).unwrap() {
        Claim::Completed(replay) => assert_eq!(replay.response().status, 201),
        other => panic!("expected a replay, got {other:?}"),
    }
    // The claim in flight is read back too (what `idemkit inspect` shows), and its token
    // still holds it.
    let record = BlockingBackend::get(&backend, "held")
        .unwrap()
        .expect("kept");
    assert_eq!(record.state(), State::Claimed);
    assert_eq!(record.claim_token(), &held);
    assert!(record.lease_until() > BlockingBackend::now(&backend));
    assert!(BlockingBackend::renew(&backend, "held", &held, HOUR).unwrap());
}

/// A read that lands between a completion's commit and the completion's return gets the
/// allocation the completer stored, as every later read does: no reader keeps a copy of
/// its own. (A read that decoded the row before the completion remembered its response
/// kept a second allocation, and every read after it shared the completer's: two hundred
/// waiters woken at once could end up holding two different ones.)
#[test]
fn a_read_racing_a_completion_shares_the_completers_response() {
    let file = ScratchFile::new("racing-read");
    let backend = SqliteBackend::open(file.path()).unwrap();
    for round in 0..200 {
        let key = format!("k{round}");
        let token = new_claim(&backend, &key, HOUR);
        let response = Arc::new(Response::new(200, format!("receipt {round}")));
        std::thread::scope(|scope| {
            // Reads the row until it is completed: often just after the commit, before
            // the completion has returned.
            let reader = scope.spawn(|| {
                loop {
                    let record = BlockingBackend::get(&backend, &key).unwrap().unwrap();
                    if record.state() == State::Completed {
                        return record;
                    }
                }
            });
            let stored =
                BlockingBackend::complete(&backend, &key, &token, Arc::clone(&response), HOUR);
            assert!(stored.unwrap());
            let record = reader.join().unwrap();
            assert!(
                Arc::ptr_eq(record.shared_response().unwrap(), &response),
                "round {round}: the reader holds a response of its own"
            );
        });
    }
}

/// By default every commit is flushed before it is acknowledged (`synchronous=FULL`),
/// and the level asked for is the one the file is written with.
#[test]
fn the_default_loses_nothing_acknowledged() {
    let file = ScratchFile::new("synchronous");
    let backend = SqliteBackend::open(file.path()).unwrap();
    assert_eq!(backend.synchronous().unwrap(), Synchronous::Full);
    let normal = SqliteBackend::builder(file.path())
        .synchronous(Synchronous::Normal)
        .build()
        .unwrap();
    assert_eq!(normal.synchronous().unwrap(), Synchronous::Normal);
    let connection = rusqlite::Connection::open(file.path()).unwrap();
    let mode: String = connection
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

/// The operator's counts follow the records' states on the backend's clock, and a purge
/// deletes at most its limit per call, only what is gone, until fewer than the limit
/// are left.
#[test]
fn stats_count_by_state_and_purge_works_in_bounded_batches() {
    let file = ScratchFile::new("operator");
    let clock = ManualClock::new();
    let grace = Duration::from_secs(10);
    let backend = SqliteBackend::builder(file.path())
        .reclaim_grace(grace)
        .clock(clock.clone())
        .build()
        .unwrap();
    let short = Duration::from_secs(1);
    for i in 0..25 {
        let key = format!("expiring-{i}");
        let token = new_claim(&backend, &key, HOUR);
        let response = Arc::new(Response::new(200, "r"));
        assert!(BlockingBackend::complete(&backend, &key, &token, response, short).unwrap());
    }
    new_claim(&backend, "lapsing", short);
    new_claim(&backend, "abandoned", short);
    let token = new_claim(&backend, "kept", HOUR);
    assert!(
        BlockingBackend::complete(
            &backend,
            "kept",
            &token,
            Arc::new(Response::new(200, "k")),
            HOUR
        )
        .unwrap()
    );
    clock.advance(Duration::from_secs(2));
    new_claim(&backend, "running", HOUR);

    let stats = block_on(Operator::stats(&backend)).unwrap();
    assert_eq!(stats.in_flight, 1, "{stats:?}");
    assert_eq!(stats.lapsed, 2, "{stats:?}");
    assert_eq!(stats.completed, 1, "{stats:?}");
    // The last claim (this backend's 29th) did not purge on its way: only every 16th does.
    assert_eq!(stats.purgeable, 25, "{stats:?}");
    assert_eq!(stats.oldest_claim, Some(Duration::ZERO));
    assert_eq!(stats.nearest_expiry, Some(HOUR - Duration::from_secs(2)));
    assert!(stats.size_bytes.unwrap() > 0);

    assert_eq!(block_on(Operator::purge_batch(&backend, 10)).unwrap(), 10);
    assert_eq!(block_on(Operator::purge_batch(&backend, 10)).unwrap(), 10);
    assert_eq!(block_on(Operator::purge_batch(&backend, 10)).unwrap(), 5);
    assert_eq!(block_on(Operator::purge_batch(&backend, 10)).unwrap(), 0);
    assert_eq!(
        backend.records().unwrap(),
        4,
        "only what was gone was purged"
    );

    clock.advance(grace);
    let stats = backend.stats_blocking().unwrap();
    assert_eq!((stats.lapsed, stats.purgeable), (0, 2), "{stats:?}");
    assert_eq!(backend.purge_batch_blocking(100).unwrap(), 2);
    assert!(BlockingBackend::get(&backend, "lapsing").unwrap().is_none());
    assert!(BlockingBackend::get(&backend, "kept").unwrap().is_some());
}

/// After many large results expire and are purged, the file gives the pages back: it
/// holds about what its live records need, not its peak.
#[test]
fn a_purged_file_gives_its_pages_back() {
    let file = ScratchFile::new("vacuum");
    let clock = ManualClock::new();
    let backend = SqliteBackend::builder(file.path())
        .clock(clock.clone())
        .build()
        .unwrap();
    let pages = || -> (i64, i64) {
        let connection = rusqlite::Connection::open(file.path()).unwrap();
        let count = connection
            .query_row("PRAGMA page_count", [], |row| row.get(0))
            .unwrap();
        let free = connection
            .query_row("PRAGMA freelist_count", [], |row| row.get(0))
            .unwrap();
        (count, free)
    };
    let body = vec![7u8; 16 * 1024];
    for i in 0..300 {
        let key = format!("big-{i}");
        let token = new_claim(&backend, &key, HOUR);
        let response = Arc::new(Response::new(200, body.clone()));
        assert!(
            BlockingBackend::complete(&backend, &key, &token, response, Duration::from_secs(1))
                .unwrap()
        );
    }
    let (peak, _) = pages();
    assert!(
        peak > 1000,
        "300 bodies of 16 KiB take over 1000 pages: {peak}"
    );
    clock.advance(Duration::from_secs(2));
    while backend.purge_batch_blocking(50).unwrap() == 50 {}
    let (after, free) = pages();
    assert!(after < peak / 10, "{after} pages left of {peak}");
    assert!(free < 50, "{free} free pages kept");
}

/// A burst of writes held back by a long read grows the write-ahead log far past its
/// checkpoint size; once the reader is gone and a checkpoint empties the log, the log
/// file is cut back (`journal_size_limit`), not kept at its peak.
#[test]
fn the_write_ahead_log_is_cut_back_after_a_burst() {
    let file = ScratchFile::new("wal-size");
    let backend = SqliteBackend::open(file.path()).unwrap();
    let wal = {
        let mut name = file.path().as_os_str().to_owned();
        name.push("-wal");
        std::path::PathBuf::from(name)
    };
    let reader = rusqlite::Connection::open(file.path()).unwrap();
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM idemkit_records;")
        .unwrap();
    let body = vec![3u8; 32 * 1024];
    for i in 0..400 {
        let key = format!("burst-{i}");
        let token = new_claim(&backend, &key, HOUR);
        let response = Arc::new(Response::new(200, body.clone()));
        assert!(BlockingBackend::complete(&backend, &key, &token, response, HOUR).unwrap());
    }
    let peak = std::fs::metadata(&wal).unwrap().len();
    assert!(
        peak > 12 * 1024 * 1024,
        "the reader held the log back: {peak}"
    );
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    // Writes go on: an automatic checkpoint empties the log, and the next write starts
    // it over, cut back to the limit.
    let mut size = peak;
    for i in 0..2000 {
        let key = format!("after-{i}");
        let token = new_claim(&backend, &key, HOUR);
        let response = Arc::new(Response::new(200, "small"));
        assert!(BlockingBackend::complete(&backend, &key, &token, response, HOUR).unwrap());
        size = std::fs::metadata(&wal).unwrap().len();
        if size <= 4 * 1024 * 1024 + 64 * 1024 {
            break;
        }
    }
    assert!(size <= 4 * 1024 * 1024 + 64 * 1024, "{size} of {peak} kept");
}

/// A capacity limit counts every row and refuses a new key when full; nothing is
/// evicted; an expired record makes room on the next claim.
#[test]
fn a_full_file_refuses_new_keys_and_evicts_nothing() {
    let file = ScratchFile::new("capacity");
    let clock = ManualClock::new();
    let backend = SqliteBackend::builder(file.path())
        .max_records(3)
        .clock(clock.clone())
        .build()
        .unwrap();
    for key in ["a", "b"] {
        new_claim(&backend, key, HOUR);
    }
    let c = new_claim(&backend, "c", HOUR);
    assert!(
        BlockingBackend::complete(
            &backend,
            "c",
            &c,
            Arc::new(Response::new(200, "c")),
            Duration::from_secs(5)
        )
        .unwrap()
    );
    match BlockingBackend::claim(&backend, "d", "fp", 1, HOUR) {
        Err(idemkit_core::Error::Full { max_size: 3 }) => {}
        other => panic!("expected Full, got {other:?}"),
    }
    for key in ["a", "b", "c"] {
        assert!(
            BlockingBackend::get(&backend, key).unwrap().is_some(),
            "{key} was kept"
        );
    }
    clock.advance(Duration::from_secs(6));
    new_claim(&backend, "d", HOUR);
    assert_eq!(backend.records().unwrap(), 3);
}

/// Migrate creates the table in a file that has none, then finds it current; a backend
/// opened on it agrees; two tables in one file keep their records apart.
#[test]
fn migrate_reports_what_it_did_and_tables_are_apart() {
    let file = ScratchFile::new("migrate");
    assert_eq!(
        SqliteBackend::migrate(file.path(), "idemkit_records").unwrap(),
        Migration::Created
    );
    assert_eq!(
        SqliteBackend::migrate(file.path(), "idemkit_records").unwrap(),
        Migration::AlreadyCurrent
    );
    assert_eq!(
        Migration::Created.to_string(),
        "created at schema version 1"
    );
    let default = SqliteBackend::builder(file.path())
        .require_table()
        .build()
        .unwrap();
    assert_eq!(default.table().as_str(), "idemkit_records");
    let other = SqliteBackend::builder(file.path())
        .table("other_records")
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(
        SqliteBackend::migrate(file.path(), "other_records").unwrap(),
        Migration::AlreadyCurrent
    );
    new_claim(&default, "k", HOUR);
    new_claim(&other, "k", HOUR);
    assert_eq!(default.records().unwrap(), 1);
    assert_eq!(other.records().unwrap(), 1);
    assert_eq!(default.storage_key("k"), "k");
}
