//! Claim tokens: the fencing tokens that tie a write to the claim that earned it.

use std::fmt;
use std::str::FromStr;

/// 128 random bits naming one claim of one key.
///
/// Every successful claim gets a fresh token from its store's [`RandomSource`](crate::RandomSource) (the OS by default);
/// `complete`, `release` and `renew` succeed only with the token of the current claim, so a
/// worker whose lease was taken over cannot overwrite its successor's result (fencing).
///
/// It prints as 32 lowercase hex digits and parses back from exactly that form:
///
/// ```
/// use idemkit_core::ClaimToken;
///
/// let token = ClaimToken::from_bytes([0xab; 16]);
/// let text = token.to_string();
/// assert_eq!(text, "abababababababababababababababab");
/// assert_eq!(text.parse::<ClaimToken>().unwrap(), token);
/// assert!("ABABABABABABABABABABABABABABABAB".parse::<ClaimToken>().is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ClaimToken([u8; 16]);

impl ClaimToken {
    /// A token with exactly these bytes (for tests, or tokens carried across a process
    /// boundary).
    pub const fn from_bytes(bytes: [u8; 16]) -> ClaimToken {
        ClaimToken(bytes)
    }

    /// The token's 16 bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The token's text, as it prints (32 lowercase hex digits), written into `out`:
    /// for a backend that stores text and writes a token on every claim and completion,
    /// without allocating a `String` each time.
    ///
    /// ```
    /// use idemkit_core::ClaimToken;
    ///
    /// let token = ClaimToken::from_bytes([0x0f; 16]);
    /// let mut text = [0; 32];
    /// assert_eq!(token.write_hex(&mut text), token.to_string());
    /// ```
    pub fn write_hex<'out>(&self, out: &'out mut [u8; 32]) -> &'out str {
        crate::hex::write_lower(&self.0, out)
    }
}

impl fmt::Display for ClaimToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every claim and completion of a backend that stores text writes its token.
        f.write_str(self.write_hex(&mut [0u8; 32]))
    }
}

impl fmt::Debug for ClaimToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClaimToken({self})")
    }
}

/// Why a string is not a [`ClaimToken`]: it must be exactly 32 lowercase hex digits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a claim token is exactly 32 lowercase hex digits")]
pub struct ParseTokenError(());

impl FromStr for ClaimToken {
    type Err = ParseTokenError;

    fn from_str(text: &str) -> Result<ClaimToken, ParseTokenError> {
        let digits = text.as_bytes();
        if digits.len() != 32 {
            return Err(ParseTokenError(()));
        }
        let mut bytes = [0u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            *byte = (hex_value(pair[0])? << 4) | hex_value(pair[1])?;
        }
        Ok(ClaimToken(bytes))
    }
}

fn hex_value(digit: u8) -> Result<u8, ParseTokenError> {
    match digit {
        b'0'..=b'9' => Ok(digit - b'0'),
        b'a'..=b'f' => Ok(digit - b'a' + 10),
        _ => Err(ParseTokenError(())),
    }
}

/// The random source failed, so no claim token could be drawn.
///
/// [`OsRandom`](crate::OsRandom) reports the operating system's error; a
/// [`RandomSource`](crate::RandomSource) of your own says why with
/// [`RandomSourceError::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RandomSourceError(Cause);

/// What failed inside a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
enum Cause {
    #[error("the OS random source failed: {0}")]
    Os(getrandom::Error),
    #[error("{0}")]
    Source(&'static str),
}

impl RandomSourceError {
    /// A failure of a source of your own, saying why in `reason`.
    ///
    /// ```
    /// use idemkit_core::RandomSourceError;
    ///
    /// let error = RandomSourceError::new("the hardware generator is unplugged");
    /// assert_eq!(error.to_string(), "the hardware generator is unplugged");
    /// ```
    pub fn new(reason: &'static str) -> RandomSourceError {
        RandomSourceError(Cause::Source(reason))
    }

    /// The operating system's source failed with `error`.
    pub(crate) fn os(error: getrandom::Error) -> RandomSourceError {
        RandomSourceError(Cause::Os(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_rejects_everything_but_32_lowercase_hex_digits() {
        let good = "0123456789abcdef0123456789abcdef";
        assert_eq!(good.parse::<ClaimToken>().unwrap().to_string(), good);
        for bad in [
            "",
            "0123456789abcdef0123456789abcde",
            "0123456789abcdef0123456789abcdef0",
            "0123456789ABCDEF0123456789abcdef",
            "0123456789abcdef0123456789abcdeg",
            " 123456789abcdef0123456789abcdef",
            "+123456789abcdef0123456789abcdef",
            "0123456789abcdef0123456789abcdé",
        ] {
            assert!(bad.parse::<ClaimToken>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn debug_shows_the_hex() {
        let token = ClaimToken::from_bytes([1; 16]);
        assert_eq!(format!("{token:?}"), format!("ClaimToken({token})"));
    }
}
