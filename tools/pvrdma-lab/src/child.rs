// SPDX-License-Identifier: GPL-2.0-only
//! Child processes that cannot outlive the runner: each runs in its own process
//! group (so a terminal's Ctrl-C reaches only the runner, which then ends them
//! in order), gets SIGKILL if the runner dies (PR_SET_PDEATHSIG), and is killed
//! with its whole group when its [`Guard`] is dropped.

use std::io;
use std::os::raw::{c_int, c_ulong};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::signals::{SIGKILL, SIGTERM};

const PR_SET_PDEATHSIG: c_int = 1;
const ESRCH: i32 = 3;

extern "C" {
    fn kill(pid: i32, sig: c_int) -> c_int;
    fn prctl(option: c_int, ...) -> c_int;
    fn getppid() -> i32;
}

/// A running child process and its process group.
pub struct Guard {
    name: String,
    child: Child,
    status: Option<ExitStatus>,
    /// Whether the child leads a process group of its own (signals go to the group).
    group: bool,
}

/// Starts `command` as the leader of a new process group that is killed when
/// the runner dies or the returned guard is dropped.
pub fn spawn(name: &str, command: &mut Command) -> io::Result<Guard> {
    start(name, command, true)
}

/// Starts `command` in the runner's own process group, which holds the terminal: an
/// interactive QEMU reads its console from it, and a read from a background group would
/// stop it (SIGTTIN). It is killed when the runner dies or the returned guard is dropped.
pub fn spawn_in_foreground(name: &str, command: &mut Command) -> io::Result<Guard> {
    start(name, command, false)
}

fn start(name: &str, command: &mut Command, group: bool) -> io::Result<Guard> {
    let runner = std::process::id() as i32;
    if group {
        command.process_group(0);
    }
    // SAFETY: the closure runs in the forked child before exec and calls only
    // prctl(2) and getppid(2), both async-signal-safe; it allocates nothing
    // (the error is built from a raw errno).
    unsafe {
        command.pre_exec(move || {
            if prctl(PR_SET_PDEATHSIG, SIGKILL as c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The runner may have died before the death signal was armed.
            if getppid() != runner {
                return Err(io::Error::from_raw_os_error(ESRCH));
            }
            Ok(())
        });
    }
    let child = command.spawn()?;
    Ok(Guard {
        name: name.to_string(),
        child,
        status: None,
        group,
    })
}

impl Guard {
    /// The name the runner gave this child, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The child's process id while it has not been reaped.
    pub fn pid(&self) -> Option<u32> {
        self.status.is_none().then(|| self.child.id())
    }

    /// The child's stderr, if it was piped and not taken yet.
    pub fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// The child's exit status if it has exited (reaps it).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = self.child.try_wait()?;
        }
        Ok(self.status)
    }

    /// Sends `signum` to the child's whole process group (to the child alone when it
    /// shares the runner's).
    fn signal_group(&self, signum: c_int) {
        // The child is the leader of its own group (process_group(0)), so the
        // group id is its pid.
        let pid = self.child.id() as i32;
        if !self.group && self.status.is_some() {
            // Reaped: its pid may be another process's by now.
            return;
        }
        let target = if self.group { -pid } else { pid };
        // SAFETY: kill(2) with a negative pid signals that process group, with a
        // positive one that process; it reads no memory of ours.
        unsafe {
            kill(target, signum);
        }
    }

    /// Kills the child's group at once (SIGKILL, no grace: as when its
    /// machine dies); returns how it exited.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        if let Ok(Some(status)) = self.try_wait() {
            return Some(status);
        }
        self.signal_group(SIGKILL);
        let status = self.child.wait().ok();
        self.status = status;
        status
    }

    /// Ends the child: SIGTERM to its group, SIGKILL after `grace`; returns how
    /// it exited.
    pub fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Ok(Some(status)) = self.try_wait() {
            // The leader is gone; whatever else is in its group goes too.
            self.signal_group(SIGKILL);
            return Some(status);
        }
        self.signal_group(SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.try_wait() {
                self.signal_group(SIGKILL);
                return Some(status);
            }
            sleep(Duration::from_millis(50));
        }
        self.signal_group(SIGKILL);
        let status = self.child.wait().ok();
        self.status = status;
        status
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Once the leader is reaped its pid (the group id) may be reused: only
        // a group whose leader is still ours is signalled.
        if self.status.is_none() {
            self.signal_group(SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// `status` in words: "status 3", "signal 9 (SIGKILL)".
pub fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("status {code}");
    }
    match status.signal() {
        Some(signum) => format!("signal {signum}{}", signal_name(signum)),
        None => format!("{status}"),
    }
}

fn signal_name(signum: i32) -> &'static str {
    match signum {
        1 => " (SIGHUP)",
        2 => " (SIGINT)",
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        15 => " (SIGTERM)",
        _ => "",
    }
}
