//! Purge progress: a bar redrawn in place on a terminal, one plain line per batch
//! otherwise (a log, a pipe), nothing with `--json`.

use std::io::{IsTerminal, Write};

/// How wide the bar is, in characters.
const BAR_WIDTH: usize = 30;

/// Where progress goes.
#[derive(Debug)]
pub enum Progress {
    /// A bar on a terminal, redrawn after each batch.
    Bar { expected: u64 },
    /// One line per batch.
    Lines,
    /// Nothing (the result is printed as JSON at the end).
    Silent,
}

impl Progress {
    /// Progress for a purge expected to delete about `expected` records: a bar when
    /// standard output is a terminal, lines when it is not, nothing for JSON.
    pub fn new(expected: u64, json: bool) -> Progress {
        if json {
            Progress::Silent
        } else if std::io::stdout().is_terminal() {
            Progress::Bar { expected }
        } else {
            Progress::Lines
        }
    }

    /// Reports batch number `batch`, which deleted `deleted`, `total` so far.
    pub fn batch(&self, batch: u64, deleted: u64, total: u64) {
        let mut out = std::io::stdout().lock();
        match self {
            Progress::Bar { expected } => {
                let _ = write!(out, "\r{}", bar(total, *expected));
            }
            Progress::Lines => {
                let _ = writeln!(out, "batch {batch}: deleted {deleted} (total {total})");
            }
            Progress::Silent => {}
        }
        let _ = out.flush();
    }

    /// Ends the bar's line.
    pub fn finish(&self) {
        if let Progress::Bar { .. } = self {
            println!();
        }
    }
}

/// The bar for `done` of about `expected`: `[#########.....] 450/1000 deleted`. More
/// records may lapse while a purge runs, so `done` may pass `expected`: the bar is then
/// full and the count says so.
pub fn bar(done: u64, expected: u64) -> String {
    let expected = expected.max(done);
    let filled = if expected == 0 {
        BAR_WIDTH
    } else {
        (done as u128 * BAR_WIDTH as u128 / expected as u128) as usize
    };
    format!(
        "[{}{}] {done}/{expected} deleted",
        "#".repeat(filled),
        ".".repeat(BAR_WIDTH - filled)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_with_the_count() {
        assert_eq!(bar(0, 10), format!("[{}] 0/10 deleted", ".".repeat(30)));
        assert_eq!(
            bar(5, 10),
            format!("[{}{}] 5/10 deleted", "#".repeat(15), ".".repeat(15))
        );
        assert_eq!(bar(10, 10), format!("[{}] 10/10 deleted", "#".repeat(30)));
        assert_eq!(bar(12, 10), format!("[{}] 12/12 deleted", "#".repeat(30)));
        assert_eq!(bar(0, 0), format!("[{}] 0/0 deleted", "#".repeat(30)));
    }

    #[test]
    fn json_output_is_never_mixed_with_progress() {
        assert!(matches!(Progress::new(10, true), Progress::Silent));
    }
}
