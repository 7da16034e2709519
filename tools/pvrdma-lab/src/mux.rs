// SPDX-License-Identifier: GPL-2.0-only
//! Starting `pvrdma-mux` (the rdmacm-mux QEMU's pvrdma talks to) and waiting
//! until it listens: it prints `pvrdma-mux: ready` on stderr then.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::child::{self, Guard};
use crate::run_error::RunError;
use crate::signals;

/// What the mux prints on stderr once it listens.
const READY_LINE: &str = "pvrdma-mux: ready";
/// How long the mux may take to listen.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// The mux's sockets and logs.
pub struct MuxFiles<'a> {
    /// The socket QEMU's mad chardev connects to.
    pub mad_socket: &'a Path,
    /// The socket the verbs library joins the fabric through.
    pub fabric_socket: &'a Path,
    /// The mux's own log (`--log`).
    pub log: &'a Path,
    /// Where its stdout and stderr go.
    pub stderr_log: &'a Path,
    /// How many times the first MAD routed is delivered (`--mad-burst`; 1: once).
    pub mad_burst: u16,
    /// The CM attribute the burst is of (`--mad-burst-of`); none: the first MAD.
    pub mad_burst_of: Option<&'static str>,
}

/// Starts the mux and returns once it is ready.
pub fn start(binary: &Path, files: &MuxFiles) -> Result<Guard, RunError> {
    let output = File::create(files.stderr_log).map_err(|e| {
        RunError::Failed(format!("cannot create {}: {e}", files.stderr_log.display()))
    })?;
    let stdout = output.try_clone().map_err(|e| {
        RunError::Failed(format!("cannot share {}: {e}", files.stderr_log.display()))
    })?;
    let mut command = Command::new(binary);
    command
        .arg("--mad-socket")
        .arg(files.mad_socket)
        .arg("--fabric-socket")
        .arg(files.fabric_socket)
        .arg("--log")
        .arg(files.log)
        .arg("--mad-burst")
        .arg(files.mad_burst.to_string())
        .args(
            files
                .mad_burst_of
                .into_iter()
                .flat_map(|attr| ["--mad-burst-of", attr]),
        )
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped());
    let mut guard = child::spawn("pvrdma-mux", &mut command)
        .map_err(|e| RunError::Failed(format!("cannot start {}: {e}", binary.display())))?;
    let stderr = guard.take_stderr().expect("stderr is piped");

    // Copy stderr to its log and tell when the ready line goes by.
    let (ready_tx, ready_rx) = mpsc::channel();
    thread::spawn(move || {
        let mut output = output;
        let mut ready_tx = Some(ready_tx);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = writeln!(output, "{line}");
            if line.trim() == READY_LINE {
                if let Some(tx) = ready_tx.take() {
                    let _ = tx.send(());
                }
            }
        }
    });

    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Some(signum) = signals::received() {
            return Err(RunError::Interrupted(signum));
        }
        match ready_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(()) => return Ok(guard),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = guard.terminate(Duration::from_secs(1));
                return Err(RunError::Failed(format!(
                    "pvrdma-mux exited ({}) without printing '{READY_LINE}' (see {})",
                    status.map_or("unknown status".to_string(), child::describe),
                    files.stderr_log.display()
                )));
            }
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                guard.terminate(Duration::from_secs(1));
                return Err(RunError::Failed(format!(
                    "pvrdma-mux did not print '{READY_LINE}' within {} s (see {})",
                    READY_TIMEOUT.as_secs(),
                    files.stderr_log.display()
                )));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}
