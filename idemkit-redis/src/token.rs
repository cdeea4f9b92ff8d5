//! Fresh claim tokens, drawn by the client: the scripts store whatever token the claim
//! brings, so every claim of every process must bring an unguessable one.

use idemkit_core::ClaimToken;

/// The operating system's random source failed.
#[derive(Debug)]
pub(crate) struct NoRandomness(pub(crate) getrandom::Error);

impl std::fmt::Display for NoRandomness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no claim token: the OS random source failed: {}", self.0)
    }
}

impl std::error::Error for NoRandomness {}

/// 128 bits from the operating system's random source, one call per claim. Not from a
/// buffer of it, as the core's `OsRandom` keeps per thread: tokens of different processes
/// meet on the server, and a buffer copied into a forked child would hand the parent and
/// the child the same tokens.
pub(crate) fn fresh() -> Result<ClaimToken, NoRandomness> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(NoRandomness)?;
    Ok(ClaimToken::from_bytes(bytes))
}
