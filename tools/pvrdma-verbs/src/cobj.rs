// SPDX-License-Identifier: GPL-2.0-only
//! Heap-allocated C structs handed out to the caller by pointer.

use std::ptr::NonNull;

/// A C struct (`ibv_pd`, `ibv_qp`, ...) at a stable heap address owned by
/// the engine. The address is the object's key in the engine's tables, so a
/// pointer coming back from C is validated by lookup, never by dereference.
pub struct CObj<T> {
    ptr: NonNull<T>,
}

// SAFETY: the struct is only written by the engine while it holds the
// engine lock; C reads the fields libibverbs documents as readable (as with
// the real library, which also updates e.g. `qp->state` without locking).
unsafe impl<T> Send for CObj<T> {}

impl<T> CObj<T> {
    /// Moves `value` to the heap.
    pub fn new(value: T) -> Self {
        CObj {
            ptr: NonNull::from(Box::leak(Box::new(value))),
        }
    }

    /// The pointer handed to C.
    pub fn as_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// The pointer as a table key.
    pub fn key(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Reads the struct.
    pub fn get(&self) -> &T {
        // SAFETY: the pointer is live until drop; C never writes these structs.
        unsafe { self.ptr.as_ref() }
    }

    /// Updates the struct in place.
    pub fn update(&mut self, f: impl FnOnce(&mut T)) {
        // SAFETY: the pointer is live until drop and `&mut self` makes this
        // the only Rust access; C only reads.
        f(unsafe { self.ptr.as_mut() })
    }
}

impl<T> Drop for CObj<T> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from Box::leak in `new` and is freed once.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}
