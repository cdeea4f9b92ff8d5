//! [`CheckPlaces`]: where a running `check` builds each vector's backend.
//!
//! The conformance suite builds every vector's backend through [`Target::build`], an
//! associated function with no state of its own, so a store's check names its server or
//! file and a fresh namespace or table here for the length of one check.
//!
//! [`Target::build`]: idemkit_conformance::Target::build

use std::sync::{Mutex, MutexGuard};

/// The place of the check in progress, if one is: where (`L`: a server's URL, a file's
/// path) and the prefix of the namespaces or tables its vectors get, one each.
pub struct CheckPlaces<L> {
    current: Mutex<Option<Current<L>>>,
}

struct Current<L> {
    location: L,
    prefix: String,
    issued: u64,
}

impl<L: Clone> CheckPlaces<L> {
    /// No check in progress.
    pub const fn new() -> CheckPlaces<L> {
        CheckPlaces {
            current: Mutex::new(None),
        }
    }

    /// A check starts at `location`; its vectors' names start with `prefix`.
    pub fn begin(&self, location: L, prefix: String) {
        *self.lock() = Some(Current {
            location,
            prefix,
            issued: 0,
        });
    }

    /// The check is over.
    pub fn end(&self) {
        *self.lock() = None;
    }

    /// Where the next vector runs, and its own name: the prefix, `separator` and a number
    /// no vector of this check had.
    ///
    /// # Panics
    ///
    /// Outside [`begin`](Self::begin) and [`end`](Self::end): only the check builds
    /// backends, and always between the two.
    pub fn next(&self, separator: char) -> (L, String) {
        let mut current = self.lock();
        let current = current.as_mut().expect("a check is running");
        current.issued += 1;
        let name = format!("{}{separator}{}", current.prefix, current.issued);
        (current.location.clone(), name)
    }

    fn lock(&self) -> MutexGuard<'_, Option<Current<L>>> {
        // A vector that panics while it holds the lock leaves nothing half-written here.
        self.current
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::CheckPlaces;

    #[test]
    fn each_vector_gets_a_name_of_its_own_under_the_prefix() {
        let places = CheckPlaces::new();
        places.begin("redis://x".to_owned(), "idemkit-check-1".to_owned());
        assert_eq!(
            places.next('-'),
            ("redis://x".to_owned(), "idemkit-check-1-1".to_owned())
        );
        assert_eq!(places.next('-').1, "idemkit-check-1-2");
        places.end();
        places.begin("redis://y".to_owned(), "t".to_owned());
        assert_eq!(places.next('_'), ("redis://y".to_owned(), "t_1".to_owned()));
    }
}
