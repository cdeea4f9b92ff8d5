//! The backend the command line chose, picked at run time.

use idemkit_core::{DynBackend, InMemoryBackend, Key};
use idemkit_tokio::TokioTimer;

use super::options::{BackendChoice, Options};

/// The most records the in-memory store holds: far more than a test run makes.
const MEMORY_RECORDS: usize = 1_000_000;

/// The store behind the layer.
pub struct Store {
    backend: DynBackend,
    kind: Kind,
}

enum Kind {
    Memory,
}

impl Store {
    /// Opens the backend the options name.
    pub fn open(options: &Options) -> Result<Store, String> {
        match &options.backend {
            BackendChoice::Memory => Ok(Store {
                backend: DynBackend::new(
                    InMemoryBackend::builder()
                        .max_size(MEMORY_RECORDS)
                        .timer(TokioTimer)
                        .build(),
                ),
                kind: Kind::Memory,
            }),
            BackendChoice::Redis(url) => Err(format!(
                "backend {url}: this build has no Redis backend yet"
            )),
        }
    }

    /// The backend, for the layer.
    pub fn backend(&self) -> DynBackend {
        self.backend.clone()
    }

    /// The backend's name in events.
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Memory => "memory",
        }
    }

    /// The key under which the backend stores the record of `key`.
    pub fn storage_key(&self, key: &Key) -> String {
        match self.kind {
            Kind::Memory => key.as_str().to_owned(),
        }
    }
}
