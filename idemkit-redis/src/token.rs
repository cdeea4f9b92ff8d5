//! Fresh claim tokens, drawn by the client: the scripts store whatever token the claim
//! brings, so every claim of every process must bring an unguessable one.

use idemkit_core::{ClaimToken, OsRandom, RandomSource, RandomSourceError};

/// 128 bits from the operating system's random source, through the core's per-thread
/// buffer of it ([`OsRandom`]): one system call per 256 tokens, not one per claim.
pub(crate) fn fresh() -> Result<ClaimToken, RandomSourceError> {
    let mut bytes = [0u8; 16];
    OsRandom.fill(&mut bytes)?;
    Ok(ClaimToken::from_bytes(bytes))
}
