// SPDX-License-Identifier: GPL-2.0-only
//! Why a step of a run could not go on.

/// Why a step of a run could not go on.
#[derive(Debug)]
pub enum RunError {
    /// A signal asked the runner to stop (its number).
    Interrupted(i32),
    /// The lab itself failed (a tool would not start, a file could not be
    /// written): the test fails with this message.
    Failed(String),
}
