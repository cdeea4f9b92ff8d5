//! [`TokenSource`]: where a store draws its claim tokens.

use crate::token::{ClaimToken, RandomSourceError};

/// Draws tokens from the OS random source a page at a time.
///
/// One `getrandom` call costs about as much as thirty tokens drawn from a buffer, so the
/// source fills [`TokenSource::BATCH`] bytes at once and hands them out in order. Every
/// byte is used once; nothing here is a userspace generator.
pub(crate) struct TokenSource {
    buffer: Box<[u8]>,
    used: usize,
}

impl TokenSource {
    const BATCH: usize = 4096;

    pub(crate) fn new() -> TokenSource {
        // Empty until the first draw: a store that never claims never touches the OS.
        TokenSource {
            buffer: Box::default(),
            used: 0,
        }
    }

    pub(crate) fn next(&mut self) -> Result<ClaimToken, RandomSourceError> {
        if self.used == self.buffer.len() {
            let mut fresh = vec![0u8; Self::BATCH].into_boxed_slice();
            getrandom::fill(&mut fresh).map_err(RandomSourceError)?;
            self.buffer = fresh;
            self.used = 0;
        }
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&self.buffer[self.used..self.used + 16]);
        self.used += 16;
        Ok(ClaimToken::from_bytes(bytes))
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
}
