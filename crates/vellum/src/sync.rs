//! Poison-tolerant lock guards, used by every module that holds a `std::sync` lock.
//!
//! Every critical section in this crate is a single map or queue operation that leaves its
//! data consistent before anything can panic, so a poisoned lock still guards valid data:
//! taking it is safe, and refusing it would turn one panic into many.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, taking the guard even if another thread panicked while holding it.
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Read-locks `l`, poison-tolerant as [`lock`].
pub(crate) fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// Write-locks `l`, poison-tolerant as [`lock`].
pub(crate) fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}
