//! Shared anonymous memory: [`SharedWords`] and the in-process stamp [`ProcessStamp`].

use std::sync::atomic::{AtomicU64, Ordering};

use super::{sys, PAGE};
use crate::error::{Error, StateFileError};
use crate::sequencer::StampCell;

/// One page of shared anonymous memory holding atomic `u64` words: like in-process atomics, but
/// a `fork()`ed child shares the page with its parent instead of getting a copy.
///
/// ```
/// use idforge::shm::SharedWords;
/// let w = SharedWords::new()?;
/// w.word(0).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
/// assert_eq!(w.word(0).load(std::sync::atomic::Ordering::Relaxed), 1);
/// # Ok::<(), idforge::Error>(())
/// ```
pub struct SharedWords {
    page: sys::SharedPage,
}

impl SharedWords {
    /// How many words the page holds.
    pub const LEN: usize = PAGE / 8;

    /// A new page of words, all zero.
    ///
    /// # Errors
    /// [`StateFileError::Io`] if the page cannot be mapped.
    pub fn new() -> Result<SharedWords, Error> {
        let page = sys::SharedPage::new().map_err(|e| {
            Error::StateFile(StateFileError::Io {
                path: "(shared anonymous page)".into(),
                action: "map",
                reason: e.to_string(),
            })
        })?;
        Ok(SharedWords { page })
    }

    /// Word `i`.
    ///
    /// # Panics
    /// If `i >= LEN`.
    #[inline]
    pub fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < Self::LEN, "SharedWords has {} words", Self::LEN);
        &self.page.words()[i]
    }
}

/// The stamp in one page of shared anonymous memory: an in-process atomic that a forked child
/// shares with its parent (a private copy would let both issue the same ids).
pub struct ProcessStamp {
    words: SharedWords,
}

impl ProcessStamp {
    /// A new stamp, starting at zero.
    ///
    /// # Errors
    /// [`StateFileError::Io`] if the page cannot be mapped.
    pub fn new() -> Result<ProcessStamp, Error> {
        Ok(ProcessStamp {
            words: SharedWords::new()?,
        })
    }
}

impl std::fmt::Debug for ProcessStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessStamp")
            .field("stamp", &self.words.word(0).load(Ordering::Relaxed))
            .finish()
    }
}

impl StampCell for ProcessStamp {
    #[inline]
    fn load(&self) -> u64 {
        self.words.word(0).load(Ordering::Relaxed)
    }
    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.words
            .word(0)
            .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod process_tests {
    use super::*;

    #[test]
    fn process_stamp_is_a_plain_atomic() {
        let s = ProcessStamp::new().unwrap();
        assert_eq!(s.load(), 0);
        assert!(s.compare_exchange_weak(0, 7).is_ok() || s.compare_exchange_weak(0, 7).is_ok());
        assert_eq!(s.load(), 7);
        assert!(s.compare_exchange_weak(0, 9).is_err());
    }
}
