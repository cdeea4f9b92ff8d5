//! idemkit on Redis.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
