//! [`OsRandom`]: the operating system's randomness, drawn a page at a time.

use std::cell::RefCell;

use crate::random::RandomSource;
use crate::token::RandomSourceError;

/// The operating system's random source (`getrandom`): the default of this crate's store
/// and in-memory backend, and the only kind of source to use in production.
///
/// One `getrandom` call costs about as much as thirty tokens copied from a buffer, so
/// the bytes are fetched [`OsRandom::BATCH`] at a time into a buffer of the calling
/// thread and handed out in order; every byte is handed out once. The buffer is the
/// thread's rather than the source's: the shards of a backend are used by many threads,
/// and a buffer per shard would move between cores with whichever thread claims there,
/// while a buffer per thread stays in its core's cache. Nothing here is a userspace
/// generator.
///
/// A child process forked by a thread that has drawn from this source starts with a
/// copy of that thread's buffer, and hands out the same bytes as its parent until the
/// buffer is spent (at most [`OsRandom::BATCH`] bytes). That is harmless for the stores
/// of this crate, which live in one process each, but a token that must differ across
/// processes (one written to a store that several processes share) is drawn from
/// `getrandom` itself, once per token, as idemkit's Redis, PostgreSQL and SQLite
/// backends do.
///
/// ```
/// use idemkit_core::{OsRandom, RandomSource};
///
/// let (mut one, mut other) = ([0u8; 16], [0u8; 16]);
/// OsRandom.fill(&mut one)?;
/// OsRandom.fill(&mut other)?;
/// assert_ne!(one, other);
/// # Ok::<(), idemkit_core::RandomSourceError>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct OsRandom;

impl OsRandom {
    /// How many bytes one call to the operating system fetches.
    pub const BATCH: usize = 4096;
}

/// The calling thread's buffer of OS randomness.
struct ThreadBuffer {
    bytes: Vec<u8>,
    used: usize,
}

impl ThreadBuffer {
    fn fill(&mut self, mut out: &mut [u8]) -> Result<(), RandomSourceError> {
        while !out.is_empty() {
            if self.used == self.bytes.len() {
                // Refilled in place. Until a fill succeeds the buffer stays spent, so
                // nothing is handed out of a buffer the OS failed to fill.
                self.bytes.resize(OsRandom::BATCH, 0);
                self.used = OsRandom::BATCH;
                getrandom::fill(&mut self.bytes).map_err(RandomSourceError::os)?;
                self.used = 0;
            }
            let take = out.len().min(self.bytes.len() - self.used);
            let (now, rest) = out.split_at_mut(take);
            now.copy_from_slice(&self.bytes[self.used..self.used + take]);
            self.used += take;
            out = rest;
        }
        Ok(())
    }
}

thread_local! {
    // Empty until the first draw: a thread that never claims never touches the OS.
    static BUFFER: RefCell<ThreadBuffer> =
        const { RefCell::new(ThreadBuffer { bytes: Vec::new(), used: 0 }) };
}

impl RandomSource for OsRandom {
    fn fill(&self, buffer: &mut [u8]) -> Result<(), RandomSourceError> {
        BUFFER.with_borrow_mut(|thread| thread.fill(buffer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn draw(count: usize) -> Vec<[u8; 16]> {
        (0..count)
            .map(|_| {
                let mut token = [0; 16];
                OsRandom.fill(&mut token).unwrap();
                token
            })
            .collect()
    }

    #[test]
    fn tokens_never_repeat_across_refills() {
        let drawn = OsRandom::BATCH / 16 * 5;
        let tokens: HashSet<_> = draw(drawn).into_iter().collect();
        assert_eq!(tokens.len(), drawn);
    }

    #[test]
    fn a_draw_larger_than_what_is_left_spans_a_refill() {
        // Leave 8 bytes in the buffer, then ask for more than a whole batch.
        let mut head = vec![0; OsRandom::BATCH - 8];
        OsRandom.fill(&mut head).unwrap();
        let mut big = vec![0; OsRandom::BATCH + 24];
        OsRandom.fill(&mut big).unwrap();
        let chunks: HashSet<_> = big.chunks(8).collect();
        assert_eq!(chunks.len(), big.len() / 8, "no 8 bytes repeat");
    }

    #[test]
    fn threads_draw_from_buffers_of_their_own() {
        let drawn = OsRandom::BATCH / 16 * 2;
        let (one, other) = std::thread::scope(|scope| {
            let one = scope.spawn(|| draw(drawn));
            let other = scope.spawn(|| draw(drawn));
            (one.join().unwrap(), other.join().unwrap())
        });
        let all: HashSet<_> = one.iter().chain(&other).collect();
        assert_eq!(all.len(), 2 * drawn, "no byte handed out twice");
    }
}
