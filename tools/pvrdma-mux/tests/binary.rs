// SPDX-License-Identifier: GPL-2.0-only
//! The `pvrdma-mux` binary: start-up, the ready line, stale sockets, the log
//! file and shutdown on SIGTERM / SIGINT.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use pvrdma_fabric::mux_msg::ErrCode;

const BIN: &str = env!("CARGO_BIN_EXE_pvrdma-mux");

fn spawn(dir: &TempDir, extra: &[&str]) -> Child {
    Command::new(BIN)
        .arg("--mad-socket")
        .arg(dir.path("mad.sock"))
        .arg("--fabric-socket")
        .arg(dir.path("fabric.sock"))
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the ready line; returns the rest of stderr as it comes.
fn wait_ready(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("pvrdma-mux: ready");
        if line == "pvrdma-mux: ready" {
            return rx;
        }
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill has no memory effects; the PID is our own child's.
    let rc = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(rc, 0);
}

fn stale_socket(path: &Path) {
    drop(UnixListener::bind(path).unwrap());
    assert!(path.exists());
}

#[test]
fn serves_logs_and_stops_on_sigterm() {
    let dir = TempDir::new("bin-term");
    stale_socket(&dir.path("mad.sock"));
    stale_socket(&dir.path("fabric.sock"));
    let log = dir.path("mux.log");
    // The ack timeout is a bound, not a wait: the library's ack comes as soon as its reader
    // thread runs, which under a loaded machine (CI's other tests) took longer than 500 ms.
    let mut child = spawn(
        &dir,
        &["--log", log.to_str().unwrap(), "--ack-timeout-ms", "30000"],
    );
    let _stderr = wait_ready(&mut child);

    let mut q = FakeQemu::connect(&dir.path("mad.sock"));
    assert_eq!(q.reg(G1), ErrCode::Enotfound);
    let sink = std::sync::Arc::new(TestSink::default());
    let lib = pvrdma_fabric::FabricClient::connect(&dir.path("fabric.sock"), sink.clone()).unwrap();
    assert_eq!(q.reg(G1), ErrCode::Ok);
    assert_eq!(sink.events(), vec![Event::Added(G1)]);

    signal(&child, libc::SIGTERM);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!dir.path("mad.sock").exists());
    assert!(!dir.path("fabric.sock").exists());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("<- REQ REG sgid=fe80:0000:0000:0000:0250:56ff:fe00:0001"),
        "{text}"
    );
    assert!(
        text.contains("-> RESP REG sgid=fe80:0000:0000:0000:0250:56ff:fe00:0001 err=Ok"),
        "{text}"
    );
    assert!(text.contains("signal 15: shutting down"), "{text}");
    drop(lib);
}

#[test]
fn stops_on_sigint_with_clients_connected() {
    let dir = TempDir::new("bin-int");
    let mut child = spawn(&dir, &[]);
    let stderr = wait_ready(&mut child);
    let _q = FakeQemu::connect(&dir.path("mad.sock"));
    signal(&child, libc::SIGINT);
    assert!(child.wait().unwrap().success());
    // The reader thread ends at EOF, which closes the channel.
    let rest: Vec<String> =
        std::iter::from_fn(|| stderr.recv_timeout(Duration::from_secs(5)).ok()).collect();
    assert!(
        rest.iter().any(|l| l.contains("signal 2: shutting down")),
        "{rest:?}"
    );
}

#[test]
fn refuses_paths_in_use_or_not_sockets() {
    let dir = TempDir::new("bin-busy");
    let _live = UnixListener::bind(dir.path("mad.sock")).unwrap();
    let out = Command::new(BIN)
        .arg("--mad-socket")
        .arg(dir.path("mad.sock"))
        .arg("--fabric-socket")
        .arg(dir.path("fabric.sock"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use"));

    std::fs::write(dir.path("file"), b"data").unwrap();
    let out = Command::new(BIN)
        .arg("--mad-socket")
        .arg(dir.path("m2.sock"))
        .arg("--fabric-socket")
        .arg(dir.path("file"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a socket"));
    assert_eq!(std::fs::read(dir.path("file")).unwrap(), b"data");
    assert!(
        !dir.path("m2.sock").exists(),
        "the mad socket is removed again"
    );
}

#[test]
fn usage_errors_exit_2() {
    let out = Command::new(BIN).arg("--mad-socket").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--fabric-socket"));
}
