//! What the integration tests share: a fresh file per test in Cargo's scratch directory,
//! removed (with its `-wal` and `-shm` companions) when the last handle on it is dropped.
#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A file path of its own for one test, in Cargo's scratch directory for tests.
#[derive(Debug)]
pub struct ScratchFile {
    path: PathBuf,
}

impl ScratchFile {
    /// A path no other test (of this or another run) uses; nothing is created yet.
    pub fn new(what: &str) -> ScratchFile {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("idemkit-sqlite");
        std::fs::create_dir_all(&dir).expect("the scratch directory");
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{what}-{}-{n}.db", std::process::id()));
        ScratchFile::remove_all(&path);
        ScratchFile { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path, which whoever takes it removes (with [`ScratchFile::remove_all`]).
    pub fn into_path(mut self) -> PathBuf {
        std::mem::take(&mut self.path)
    }

    /// Removes the file at `path` and its companions, whichever exist.
    pub fn remove_all(path: &Path) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(name));
        }
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        // Empty once taken by `into_path`.
        if !self.path.as_os_str().is_empty() {
            ScratchFile::remove_all(&self.path);
        }
    }
}
