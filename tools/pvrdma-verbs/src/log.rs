// SPDX-License-Identifier: GPL-2.0-only
//! Optional per-call debug log: one line per verb call, appended to the file
//! named by `PVRDMA_VERBS_LOG`; off when the variable is unset.

use std::fmt::Arguments;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// Environment variable naming the debug log file.
pub const LOG_ENV: &str = "PVRDMA_VERBS_LOG";

fn sink() -> Option<&'static Mutex<File>> {
    static SINK: OnceLock<Option<Mutex<File>>> = OnceLock::new();
    SINK.get_or_init(|| {
        let path = std::env::var_os(LOG_ENV)?;
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
            .map(Mutex::new)
    })
    .as_ref()
}

/// Whether the log is on (lets callers skip formatting).
pub fn enabled() -> bool {
    sink().is_some()
}

/// Appends one line `verb args` to the log, if enabled.
pub fn verb(name: &str, args: Arguments<'_>) {
    if let Some(file) = sink() {
        let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
        let tid = std::thread::current().id();
        // A failed log write must not disturb the verb itself.
        let _ = writeln!(file, "{tid:?} {name} {args}");
    }
}

/// Logs a verb call: `vlog!("ibv_alloc_pd", "ctx={:p} -> {:p}", c, pd)`.
macro_rules! vlog {
    ($name:expr, $($arg:tt)*) => {
        if $crate::log::enabled() {
            $crate::log::verb($name, format_args!($($arg)*));
        }
    };
}
pub(crate) use vlog;
