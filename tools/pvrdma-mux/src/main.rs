// SPDX-License-Identifier: GPL-2.0-only
//! `pvrdma-mux --mad-socket PATH --fabric-socket PATH [--log FILE] [--ack-timeout-ms N]
//! [--mad-burst N [--mad-burst-of ATTR]]`

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use pvrdma_fabric::mad::cm_attr;
use pvrdma_mux::log::LogTarget;
use pvrdma_mux::{log, Config, Mux};

const USAGE: &str = "\
usage: pvrdma-mux --mad-socket PATH --fabric-socket PATH [--log FILE] [--ack-timeout-ms N]
                  [--mad-burst N [--mad-burst-of ATTR]]

  --mad-socket PATH      unix socket QEMU's pvrdma mad-chardev connects to
                         (-chardev socket,id=mad0,path=PATH)
  --fabric-socket PATH   unix socket the verbs libraries connect to (PVRDMA_FABRIC)
  --log FILE             append the log to FILE instead of stderr
  --ack-timeout-ms N     how long REG/UNREG wait for the library's ACK (default 2000)
  --mad-burst N          deliver the first MAD routed N times (1..=256; default 1):
                         a test's flood of the receiving QP1
  --mad-burst-of ATTR    the burst is of the first MAD routed with this CM
                         attribute (REQ, REP, RTU, DREQ, SIDR_REQ, ...) rather
                         than of the first MAD routed

Prints \"pvrdma-mux: ready\" to stderr once both sockets listen; SIGTERM or
SIGINT stops it and removes the socket files.";

fn main() -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(Some(c)) => c,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("pvrdma-mux: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Block the stop signals before any thread starts, so every thread
    // inherits the mask and only sigwait below sees them.
    let signals = match block_stop_signals() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pvrdma-mux: cannot block signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut mux = match Mux::start(config) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("pvrdma-mux: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("pvrdma-mux: ready");
    let signal = wait_for_signal(&signals);
    log!(mux.shared().log, "signal {signal}: shutting down");
    mux.stop();
    ExitCode::SUCCESS
}

/// The largest burst: what a destination's outbox holds
/// (`pvrdma_mux::registry::OUTBOX_CAPACITY`).
const MAX_MAD_BURST: usize = pvrdma_mux::registry::OUTBOX_CAPACITY;

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Config>, String> {
    let mut mad = None;
    let mut fabric = None;
    let mut log = LogTarget::Stderr;
    let mut ack_timeout = pvrdma_mux::server::DEFAULT_ACK_TIMEOUT;
    let mut mad_burst = 1;
    let mut mad_burst_of = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--mad-socket" => mad = Some(PathBuf::from(value("--mad-socket")?)),
            "--fabric-socket" => fabric = Some(PathBuf::from(value("--fabric-socket")?)),
            "--log" => log = LogTarget::File(PathBuf::from(value("--log")?)),
            "--ack-timeout-ms" => {
                let v = value("--ack-timeout-ms")?;
                let ms: u64 = v
                    .parse()
                    .map_err(|_| format!("--ack-timeout-ms: not a number: {v}"))?;
                ack_timeout = Duration::from_millis(ms);
            }
            "--mad-burst" => {
                let v = value("--mad-burst")?;
                mad_burst = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_MAD_BURST).contains(n))
                    .ok_or(format!(
                        "--mad-burst: not a number in 1..={MAX_MAD_BURST}: {v}"
                    ))?;
            }
            "--mad-burst-of" => {
                let v = value("--mad-burst-of")?;
                mad_burst_of = Some(
                    cm_attr::by_name(&v)
                        .ok_or(format!("--mad-burst-of: not a CM attribute name: {v}"))?,
                );
            }
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let mad = mad.ok_or("--mad-socket is required")?;
    let fabric = fabric.ok_or("--fabric-socket is required")?;
    if mad == fabric {
        return Err("the two sockets need different paths".into());
    }
    Ok(Some(Config {
        mad_socket: mad,
        fabric_socket: fabric,
        ack_timeout,
        log,
        mad_burst,
        mad_burst_of,
    }))
}

/// Blocks SIGTERM and SIGINT in the calling thread (and threads it starts).
fn block_stop_signals() -> io::Result<libc::sigset_t> {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t; the signal numbers are valid; a null
    // old-set pointer is allowed.
    let rc = unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(set)
}

/// Waits for one of the blocked stop signals; returns its number.
fn wait_for_signal(set: &libc::sigset_t) -> i32 {
    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` is an initialised sigset_t and `sig` a live c_int.
        let rc = unsafe { libc::sigwait(set, &mut sig) };
        if rc == 0 {
            return sig;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn args(list: &[&str]) -> impl Iterator<Item = String> {
        list.iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn parses_all_options() {
        let c = parse_args(args(&[
            "--mad-socket",
            "/tmp/m",
            "--fabric-socket",
            "/tmp/f",
            "--log",
            "/tmp/l",
            "--ack-timeout-ms",
            "250",
            "--mad-burst",
            "64",
            "--mad-burst-of",
            "RTU",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(c.mad_socket, PathBuf::from("/tmp/m"));
        assert_eq!(c.fabric_socket, PathBuf::from("/tmp/f"));
        assert!(matches!(c.log, LogTarget::File(p) if p == Path::new("/tmp/l")));
        assert_eq!(c.ack_timeout, Duration::from_millis(250));
        assert_eq!(c.mad_burst, 64);
        assert_eq!(c.mad_burst_of, Some(cm_attr::RTU));
        let defaults = parse_args(args(&["--mad-socket", "/a", "--fabric-socket", "/b"]))
            .unwrap()
            .unwrap();
        assert_eq!(defaults.mad_burst, 1);
        assert_eq!(defaults.mad_burst_of, None);
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(parse_args(args(&["--mad-socket", "/tmp/m"])).is_err());
        assert!(parse_args(args(&["--mad-socket"])).is_err());
        assert!(parse_args(args(&["--bogus"])).is_err());
        assert!(parse_args(args(&["--mad-socket", "/a", "--fabric-socket", "/a"])).is_err());
        assert!(parse_args(args(&[
            "--mad-socket",
            "/a",
            "--fabric-socket",
            "/b",
            "--ack-timeout-ms",
            "x"
        ]))
        .is_err());
        let bad_values = [
            ("--mad-burst", ["0", "257", "-1", "x"]),
            ("--mad-burst-of", ["rtu", "0x14", "", "?"]),
        ];
        for (option, values) in bad_values {
            for value in values {
                let parsed = parse_args(args(&[
                    "--mad-socket",
                    "/a",
                    "--fabric-socket",
                    "/b",
                    option,
                    value,
                ]));
                assert!(parsed.is_err(), "{option} {value}");
            }
        }
        assert!(parse_args(args(&["-h"])).unwrap().is_none());
    }
}
