// SPDX-License-Identifier: GPL-2.0-only
//! Ctrl-C and friends: SIGINT, SIGTERM and SIGHUP only set a flag, which every
//! waiting loop of the runner checks, so that the runner can kill its children
//! and report before it exits.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

/// `SIGHUP`.
pub const SIGHUP: c_int = 1;
/// `SIGINT`.
pub const SIGINT: c_int = 2;
/// `SIGKILL`.
pub const SIGKILL: c_int = 9;
/// `SIGTERM`.
pub const SIGTERM: c_int = 15;

/// The number of the first terminating signal received, 0 while none was.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
}

extern "C" fn on_signal(signum: c_int) {
    // Only an atomic store: async-signal-safe.
    let _ = RECEIVED.compare_exchange(0, signum, Ordering::SeqCst, Ordering::SeqCst);
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP.
pub fn install() {
    for signum in [SIGINT, SIGTERM, SIGHUP] {
        let handler: extern "C" fn(c_int) = on_signal;
        // SAFETY: `on_signal` is an `extern "C" fn(c_int)`, the type signal(2)
        // expects, and only performs an atomic store, which is async-signal-safe.
        unsafe {
            signal(signum, handler as usize);
        }
    }
}

/// The signal that asked the runner to stop, if one did.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signum => Some(signum),
    }
}
