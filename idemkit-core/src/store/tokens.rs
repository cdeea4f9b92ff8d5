//! Where a store draws its claim tokens: [`TokenSource`], a buffer of OS randomness, and
//! [`Tokens`], whose buffer a store draws from.

use std::cell::RefCell;

use crate::token::{ClaimToken, RandomSourceError};

/// Draws tokens from the OS random source a page at a time.
///
/// One `getrandom` call costs about as much as thirty tokens drawn from a buffer, so the
/// source fills [`TokenSource::BATCH`] bytes at once and hands them out in order. Every
/// byte is used once; nothing here is a userspace generator.
pub(crate) struct TokenSource {
    buffer: Vec<u8>,
    used: usize,
}

impl TokenSource {
    const BATCH: usize = 4096;

    pub(crate) const fn new() -> TokenSource {
        // Empty until the first draw: a store that never claims never touches the OS.
        TokenSource {
            buffer: Vec::new(),
            used: 0,
        }
    }

    pub(crate) fn next(&mut self) -> Result<ClaimToken, RandomSourceError> {
        if self.used == self.buffer.len() {
            // Refilled in place. Until a fill succeeds the buffer stays spent, so nothing
            // is handed out of a buffer the OS failed to fill.
            self.buffer.resize(Self::BATCH, 0);
            self.used = Self::BATCH;
            getrandom::fill(&mut self.buffer).map_err(RandomSourceError)?;
            self.used = 0;
        }
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&self.buffer[self.used..self.used + 16]);
        self.used += 16;
        Ok(ClaimToken::from_bytes(bytes))
    }
}

thread_local! {
    /// The buffer of the stores that draw on their thread's (the shards of a backend).
    static THREAD_TOKENS: RefCell<TokenSource> = const { RefCell::new(TokenSource::new()) };
}

/// Whose buffer a store draws its tokens from.
pub(crate) enum Tokens {
    /// Its own: a lone `Store` keeps everything it uses to itself.
    Own(TokenSource),
    /// The calling thread's. The shards of a backend are used by many threads: a buffer
    /// per shard would be written by whichever thread claims there, so its cache lines
    /// would move between cores with the shard's; a buffer per thread never moves, and
    /// one buffer per thread instead of one per shard keeps fewer lines warm.
    Thread,
}

impl Tokens {
    pub(crate) fn next(&mut self) -> Result<ClaimToken, RandomSourceError> {
        match self {
            Tokens::Own(source) => source.next(),
            Tokens::Thread => THREAD_TOKENS.with_borrow_mut(TokenSource::next),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn tokens_never_repeat_across_refills() {
        let mut source = TokenSource::new();
        let drawn = TokenSource::BATCH / 16 * 5;
        let tokens: HashSet<_> = (0..drawn).map(|_| source.next().unwrap()).collect();
        assert_eq!(tokens.len(), drawn);
    }

    #[test]
    fn stores_on_one_thread_never_draw_the_same_token() {
        let (mut first, mut second) = (Tokens::Thread, Tokens::Thread);
        let drawn = TokenSource::BATCH / 16 * 3;
        let tokens: HashSet<_> = (0..drawn)
            .flat_map(|_| [first.next().unwrap(), second.next().unwrap()])
            .collect();
        assert_eq!(tokens.len(), 2 * drawn);
    }

    #[test]
    fn threads_draw_from_buffers_of_their_own() {
        let drawn = TokenSource::BATCH / 16 * 2;
        let draw = || {
            let mut tokens = Tokens::Thread;
            (0..drawn)
                .map(|_| tokens.next().unwrap())
                .collect::<Vec<_>>()
        };
        let (one, other) = std::thread::scope(|scope| {
            let one = scope.spawn(draw);
            let other = scope.spawn(draw);
            (one.join().unwrap(), other.join().unwrap())
        });
        let all: HashSet<_> = one.iter().chain(&other).collect();
        assert_eq!(all.len(), 2 * drawn, "no byte handed out twice");
    }
}
