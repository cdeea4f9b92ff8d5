//! [`Failure`]: why a command could not do what was asked, what to do about it, and the
//! exit code that tells a script which kind of trouble it was.

use std::fmt;
use std::process::ExitCode;

/// The kinds of trouble, each its own exit code (listed in `idemkit --help`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `idemkit check` ran and at least one vector failed: exit code 1.
    CheckFailed,
    /// The command line or the URL cannot work: exit code 2 (as for clap's own usage
    /// errors).
    Usage,
    /// The store could not be reached, or failed while answering: exit code 3.
    Unreachable,
    /// The store is reachable but not ready: a missing or older table, a schema this
    /// version does not know: exit code 4.
    NotReady,
}

impl Kind {
    /// The process exit code of this kind.
    pub fn code(self) -> u8 {
        match self {
            Kind::CheckFailed => 1,
            Kind::Usage => 2,
            Kind::Unreachable => 3,
            Kind::NotReady => 4,
        }
    }
}

/// What went wrong and what to do: printed as `idemkit: <what>` then `  to fix: <remedy>`.
#[derive(Clone, Debug)]
pub struct Failure {
    pub kind: Kind,
    pub what: String,
    pub remedy: Option<String>,
}

impl Failure {
    pub fn new(kind: Kind, what: impl Into<String>) -> Failure {
        Failure {
            kind,
            what: what.into(),
            remedy: None,
        }
    }

    pub fn usage(what: impl Into<String>) -> Failure {
        Failure::new(Kind::Usage, what)
    }

    pub fn unreachable(what: impl Into<String>) -> Failure {
        Failure::new(Kind::Unreachable, what)
    }

    pub fn not_ready(what: impl Into<String>) -> Failure {
        Failure::new(Kind::NotReady, what)
    }

    /// This failure, with what to do about it.
    #[must_use]
    pub fn remedy(mut self, remedy: impl Into<String>) -> Failure {
        self.remedy = Some(remedy.into());
        self
    }

    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.kind.code())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "idemkit: {}", self.what)?;
        if let Some(remedy) = &self.remedy {
            write!(f, "\n  to fix: {remedy}")?;
        }
        Ok(())
    }
}

/// A storage error met while a command talked to the store: the store failed or went
/// away mid-command.
pub fn storage(what: &str, store: &str, error: &idemkit_core::Error) -> Failure {
    Failure::unreachable(format!("{what} failed on {store}: {error}"))
        .remedy("check that the store is up and reachable from here, then run the command again")
}
