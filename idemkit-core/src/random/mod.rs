//! [`RandomSource`]: where claim tokens come from, an input like time.
//!
//! A store draws every claim token from the source it was built with: [`OsRandom`] by
//! default, or a [`SeededRandom`] in tests and replays, so that a failing run hands out
//! the same tokens when it runs again.

mod os;
mod seeded;

use std::sync::Arc;

pub use self::os::OsRandom;
pub use self::seeded::SeededRandom;

use crate::token::RandomSourceError;

/// Fills buffers with random bytes: the source of a store's claim tokens.
///
/// A claim token is a fencing token: a caller that could guess another's would complete
/// or release a claim it does not hold. A source used in production must therefore be
/// unpredictable, as [`OsRandom`] is. The trait is object safe and takes `&self`, so one
/// source can be shared by the shards of a backend (an `Arc<S>` is a source too).
///
/// ```
/// use idemkit_core::{RandomSource, RandomSourceError};
///
/// /// A source that is always out of entropy: every claim fails with `Error::Random`.
/// struct Exhausted;
///
/// impl RandomSource for Exhausted {
///     fn fill(&self, _buffer: &mut [u8]) -> Result<(), RandomSourceError> {
///         Err(RandomSourceError::new("the entropy pool is exhausted"))
///     }
/// }
///
/// let source: Box<dyn RandomSource> = Box::new(Exhausted);
/// assert!(source.fill(&mut [0; 16]).is_err());
/// ```
pub trait RandomSource: Send + Sync + 'static {
    /// Fills all of `buffer` with random bytes, or fails without handing any out.
    fn fill(&self, buffer: &mut [u8]) -> Result<(), RandomSourceError>;
}

impl<S: RandomSource + ?Sized> RandomSource for Arc<S> {
    fn fill(&self, buffer: &mut [u8]) -> Result<(), RandomSourceError> {
        (**self).fill(buffer)
    }
}

impl<S: RandomSource + ?Sized> RandomSource for Box<S> {
    fn fill(&self, buffer: &mut [u8]) -> Result<(), RandomSourceError> {
        (**self).fill(buffer)
    }
}
