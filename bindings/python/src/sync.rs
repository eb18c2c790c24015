//! The package's lock: the standard library's mutex, taken without
//! poisoning. Not `parking_lot`: a Python process forks (`os.fork`,
//! `multiprocessing`), and a child inherits the standard library's lock
//! state only for locks held at that moment, where `parking_lot`'s one
//! process-wide table of parked threads could be left locked for good.

pub use std::sync::MutexGuard;
use std::sync::PoisonError;

/// A mutex whose `lock()` goes on after a thread panicked holding it:
/// every holder here leaves the data consistent at each step.
#[derive(Default)]
pub struct Mutex<T>(std::sync::Mutex<T>);

impl<T> Mutex<T> {
    pub const fn new(value: T) -> Self {
        Self(std::sync::Mutex::new(value))
    }

    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
