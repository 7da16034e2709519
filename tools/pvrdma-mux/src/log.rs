// SPDX-License-Identifier: GPL-2.0-only
//! The mux's log: one line per event, to a file, stderr, or memory (tests).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where log lines go.
#[derive(Clone, Debug)]
pub enum LogTarget {
    /// Standard error.
    Stderr,
    /// A file, appended to.
    File(PathBuf),
    /// A shared buffer (tests read it back).
    Memory(Arc<Mutex<Vec<String>>>),
}

enum Sink {
    Stderr,
    File(File),
    Memory(Arc<Mutex<Vec<String>>>),
}

/// A line-oriented, thread-safe log.
pub struct Log {
    sink: Mutex<Sink>,
}

impl Log {
    /// Opens the target (creating or appending to a file).
    pub fn open(target: &LogTarget) -> io::Result<Log> {
        let sink = match target {
            LogTarget::Stderr => Sink::Stderr,
            LogTarget::File(path) => {
                Sink::File(OpenOptions::new().create(true).append(true).open(path)?)
            }
            LogTarget::Memory(buf) => Sink::Memory(Arc::clone(buf)),
        };
        Ok(Log {
            sink: Mutex::new(sink),
        })
    }

    /// Writes one line, prefixed with the UTC time of day. Write errors are
    /// ignored: losing a log line must not take the mux down.
    pub fn line(&self, args: fmt::Arguments<'_>) {
        let text = format!("{} {args}", timestamp());
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *sink {
            Sink::Stderr => {
                let _ = writeln!(io::stderr().lock(), "{text}");
            }
            Sink::File(f) => {
                let _ = writeln!(f, "{text}");
            }
            Sink::Memory(buf) => buf.lock().unwrap_or_else(|e| e.into_inner()).push(text),
        }
    }
}

/// Logs a formatted line: `log!(log, "x={}", x)`.
#[macro_export]
macro_rules! log {
    ($log:expr, $($arg:tt)*) => {
        $log.line(format_args!($($arg)*))
    };
}

/// "HH:MM:SS.uuuuuu" (UTC).
fn timestamp() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:06}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        now.subsec_micros()
    )
}
