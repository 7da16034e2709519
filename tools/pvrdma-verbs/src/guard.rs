// SPDX-License-Identifier: GPL-2.0-only
//! The FFI boundary: errno and panic containment.
//!
//! Every exported function runs its body through [`guard`], so a panic never
//! unwinds into C (with the workspace's `panic = "abort"` release profile a
//! panic aborts instead; the engine is written to not panic on any input).

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Sets the calling thread's `errno`.
pub fn set_errno(value: i32) {
    // SAFETY: __errno_location always returns a valid pointer to this
    // thread's errno.
    unsafe { *libc::__errno_location() = value };
}

/// Runs `body`, turning a panic into `on_panic` with errno `EIO`.
pub fn guard<R>(on_panic: R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(_) => {
            set_errno(libc::EIO);
            on_panic
        }
    }
}

/// Converts an engine result for a verb that returns a pointer: `NULL` and
/// errno on failure.
pub fn ptr_result<T>(r: Result<*mut T, i32>) -> *mut T {
    match r {
        Ok(p) => p,
        Err(e) => {
            set_errno(e);
            std::ptr::null_mut()
        }
    }
}

/// Converts an engine result for a verb that returns an errno value (0 on
/// success); errno is also set, which libibverbs' callers may print.
pub fn errno_result(r: Result<(), i32>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => {
            set_errno(e);
            e
        }
    }
}
