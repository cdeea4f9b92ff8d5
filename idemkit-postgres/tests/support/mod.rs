//! What the PostgreSQL tests share: a table of their own on the machine's server,
//! dropped when the test is done.
#![allow(dead_code)] // each test binary uses its own part

use std::process::Command;
use std::time::Duration;

use idemkit_postgres::{PostgresBackend, PostgresBuilder};

/// Runs `sql` with `psql` on `url` and returns its unaligned output.
pub fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-XAtqc", sql])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql failed on {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A table name of its own, dropped (with the tables named in `also`) on drop.
pub struct Scratch {
    pub url: String,
    pub table: String,
    pub also: Vec<String>,
}

impl Scratch {
    /// A fresh name on the machine's server, or `None` (a skip) when there is none.
    pub fn new(prefix: &str) -> Option<Scratch> {
        let url = pg_harness::machine()?;
        Some(Scratch {
            url,
            table: pg_harness::unique_name(prefix),
            also: Vec::new(),
        })
    }

    /// Leaves the table to whoever drops it.
    pub fn forget(mut self) {
        self.table.clear();
        self.also.clear();
    }

    /// A builder for a backend on this table, migrated at build.
    pub fn builder(&self) -> PostgresBuilder {
        PostgresBackend::builder()
            .url(&self.url)
            .table(&self.table)
            .migrate(true)
            // Generous: many tests run at once on a shared, busy machine.
            .operation_timeout(Duration::from_secs(20))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.table.is_empty() {
            return; // forgotten
        }
        let mut tables = vec![self.table.clone()];
        tables.extend(self.also.iter().cloned());
        let _ = Command::new("psql")
            .args([
                &self.url,
                "-XAtqc",
                &format!("DROP TABLE IF EXISTS {}", tables.join(", ")),
            ])
            .output();
    }
}
