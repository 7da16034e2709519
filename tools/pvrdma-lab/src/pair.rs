// SPDX-License-Identifier: GPL-2.0-only
//! One two-guest test: a server guest and a client guest, each with its own
//! QEMU, pvrdma and driver, on one mux (which relays rdma_cm's MADs and the
//! data path between the two QEMUs' software verbs devices) and one link
//! between their vmxnet3s (a unix socket; nothing else is reachable). The
//! server is 192.0.2.1, the client 192.0.2.2; both run the same script,
//! which reads its role from `LAB_ROLE`. Results go to `<dir>/server/` and
//! `<dir>/client/`, the mux's logs to `<dir>/`.
//!
//! A test with `# lab-client-restarts: N` starts the client guest again
//! (`LAB_INCARNATION` 2, ..., results in `<dir>/client-2/`, ...) each time
//! its QEMU ends, while the server guest stays up: a peer that dies and comes
//! back. A guest may ask to be killed (its test writes
//! [`session::KILL_MARKER`]): the runner SIGKILLs its QEMU, and judges it
//! only by its console (no kernel report), since it cannot report.

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::catalog::GuestTest;
use crate::cli::Driver;
use crate::guest_report;
use crate::kernel_log;
use crate::layout::Layout;
use crate::model::DeviceModel;
use crate::qemu::{Guest, Link, Slot};
use crate::reference_bugs::ReferenceBug;
use crate::run_error::RunError;
use crate::session::{self, Outcome, SocketDir, GUEST_OVERHEAD_SECS, KILL_MARKER, MUX_GRACE};
use crate::verdict::{QemuEnd, Verdict};

/// How long the server's QEMU may take to create the link's socket.
const LINK_TIMEOUT: Duration = Duration::from_secs(20);

/// One side of the pair (or one start of the client).
struct Side<'a> {
    role: &'static str,
    /// The results directory's name: the role, `-N` from the second start on.
    name: String,
    incarnation: u32,
    driver: Driver,
    module: &'a Path,
    ip: &'static str,
    peer_ip: &'static str,
    mac: &'static str,
}

/// Runs two-guest `test` on `model`: the server guest with `server.0`
/// (module `server.1`), the client with `client.0`; results in `dir`.
pub fn run(
    layout: &Layout,
    model: DeviceModel,
    server: (Driver, &Path),
    client: (Driver, &Path),
    test: &GuestTest,
    dir: &Path,
) -> Result<Outcome, RunError> {
    let started = Instant::now();
    let mut sides = vec![Side {
        role: "server",
        name: "server".into(),
        incarnation: 1,
        driver: server.0,
        module: server.1,
        ip: "192.0.2.1",
        peer_ip: "192.0.2.2",
        mac: "52:54:00:00:53:01",
    }];
    for incarnation in 1..=u32::from(test.client_restarts) + 1 {
        sides.push(Side {
            role: "client",
            name: match incarnation {
                1 => "client".into(),
                n => format!("client-{n}"),
            },
            incarnation,
            driver: client.0,
            module: client.1,
            ip: "192.0.2.2",
            peer_ip: "192.0.2.1",
            mac: "52:54:00:00:53:02",
        });
    }
    let failed = |why: String| Outcome {
        verdict: Verdict::Fail {
            cause: format!("lab: {why}"),
            kernel_problem: false,
        },
        boot_secs: None,
        test_secs: None,
        wall: started.elapsed(),
        notes: Vec::new(),
        reference_bugs: Vec::new(),
    };
    let result = run_sides(layout, model, &sides, test, dir);
    let (ends, mux_failure) = match result {
        Ok(r) => r,
        Err(RunError::Failed(why)) => return Ok(failed(why)),
        Err(interrupted) => return Err(interrupted),
    };

    // The pair passes when both guests pass; the first failure is the cause.
    let mut verdict = Verdict::Pass;
    let mut notes = Vec::new();
    let mut reference_bugs: Vec<&'static ReferenceBug> = Vec::new();
    let mut times = (None, None);
    for (side, end) in sides.iter().zip(ends) {
        let side_dir = dir.join(&side.name);
        let (side_verdict, side_notes) = if side_dir.join(KILL_MARKER).exists() {
            let note = "killed by the runner, as its test asked".to_string();
            (judge_killed(&side_dir, &end), vec![note])
        } else {
            let judged = session::judge_guest(
                &side_dir,
                side.driver,
                end,
                mux_failure.clone(),
                layout.kernel_has_kmemleak,
            );
            if side.role == "client" {
                times = (judged.report.boot_secs, judged.report.test_secs);
            }
            for bug in judged.reference_bugs {
                if !reference_bugs.iter().any(|b| core::ptr::eq(*b, bug)) {
                    reference_bugs.push(bug);
                }
            }
            (judged.verdict, judged.report.notes)
        };
        let who = format!("{} ({})", side.name, side.driver.name());
        notes.extend(side_notes.iter().map(|n| format!("{who}: {n}")));
        if let (
            Verdict::Pass,
            Verdict::Fail {
                cause,
                kernel_problem,
            },
        ) = (&verdict, side_verdict)
        {
            verdict = Verdict::Fail {
                cause: format!(
                    "{} guest ({} driver): {cause}",
                    side.name,
                    side.driver.name()
                ),
                kernel_problem,
            };
        }
    }
    Ok(Outcome {
        verdict,
        boot_secs: times.0,
        test_secs: times.1,
        wall: started.elapsed(),
        notes,
        reference_bugs,
    })
}

/// A guest killed on its test's request: it passes if its console shows no
/// kernel report and it did not run into the time limit instead.
fn judge_killed(dir: &Path, end: &QemuEnd) -> Verdict {
    let console = guest_report::read_text(&dir.join("console.log")).unwrap_or_default();
    if let Some(p) = kernel_log::scan(kernel_log::Log::Console, &console).first() {
        return Verdict::Fail {
            cause: format!("kernel {}: {} (before it was killed)", p.kind, p.message),
            kernel_problem: true,
        };
    }
    match end {
        QemuEnd::TimedOut { limit_secs, .. } => Verdict::Fail {
            cause: format!("asked to be killed, but still ran at the {limit_secs} s limit"),
            kernel_problem: false,
        },
        QemuEnd::Exited { .. } => Verdict::Pass,
    }
}

/// Starts the mux and the guests (the server first: its QEMU listens on the
/// link; then each start of the client in turn, the next once the last one's
/// QEMU ended), waits for all; how each QEMU ended, and a mux that died.
fn run_sides(
    layout: &Layout,
    model: DeviceModel,
    sides: &[Side],
    test: &GuestTest,
    dir: &Path,
) -> Result<(Vec<QemuEnd>, Option<String>), RunError> {
    session::fresh_dir(dir)?;
    for side in sides {
        session::fresh_dir(&dir.join(&side.name))?;
    }
    let sockets = SocketDir::create()?;
    let (mad_socket, fabric_socket) = sockets.mux_sockets();
    let link_socket = sockets.0.join("link.sock");
    let mut mux = session::start_mux(layout, &sockets, dir, test)?;
    let qemu = layout.qemu(model);
    let started = Instant::now();
    let limit_secs = test.timeout_secs + GUEST_OVERHEAD_SECS * sides.len() as u64;
    let dirs: Vec<_> = sides.iter().map(|s| dir.join(&s.name)).collect();
    let verbs_logs: Vec<_> = dirs.iter().map(|d| d.join("verbs.log")).collect();
    let mut server = None;
    let mut ends = Vec::new();
    let mut mux_failure = None;
    for (i, side) in sides.iter().enumerate() {
        let slots = [Slot {
            test: &test.name,
            timeout_secs: test.timeout_secs,
            results_dir: &dirs[i],
        }];
        let guest = Guest {
            bzimage: &layout.bzimage,
            init: &layout.init,
            model: model.name(),
            device_version: model.device_version(),
            version_property: model.version_property().is_some(),
            driver: side.driver.name(),
            module: side.module,
            kernel_dir: &layout.kernel_dir,
            tests: &slots,
            kernel_args: &test.kernel_args,
            mad_socket: &mad_socket,
            fabric_socket: &fabric_socket,
            verbs_lib: &layout.verbs_lib,
            verbs_log: &verbs_logs[i],
            link: Some(Link {
                role: side.role,
                ip: side.ip,
                peer_ip: side.peer_ip,
                mac: side.mac,
                socket: &link_socket,
                listen: i == 0,
                incarnation: side.incarnation,
            }),
            accel: layout.accel,
            shell: None,
        };
        let spawned = session::start_guest(&guest, qemu, &layout.mux, &dirs[i]);
        let mut q = match spawned {
            Ok(q) => q,
            Err(e) => {
                mux.terminate(MUX_GRACE);
                return Err(e);
            }
        };
        if i == 0 {
            // The client's QEMU connects once, at its start.
            let since = Instant::now();
            while !link_socket.exists() {
                if since.elapsed() > LINK_TIMEOUT || matches!(q.try_wait(), Ok(Some(_))) {
                    q.terminate(Duration::from_secs(5));
                    mux.terminate(MUX_GRACE);
                    return Err(RunError::Failed(format!(
                        "the server's QEMU did not create the link socket {} (see server/qemu.log)",
                        link_socket.display()
                    )));
                }
                sleep(Duration::from_millis(20));
            }
        }
        if i == 0 {
            server = Some(q);
            continue;
        }
        // This start of the client, to its end; then the next start.
        let left = limit_secs
            .saturating_sub(started.elapsed().as_secs())
            .max(1);
        match session::wait_for_guests(vec![(q, dirs[i].as_path())], left, &mut mux) {
            Ok((mut end, failure)) => {
                ends.push(end.remove(0));
                mux_failure = mux_failure.or(failure);
            }
            Err(e) => {
                if let Some(mut s) = server {
                    s.terminate(Duration::from_secs(5));
                }
                mux.terminate(MUX_GRACE);
                return Err(e);
            }
        }
    }
    let left = limit_secs
        .saturating_sub(started.elapsed().as_secs())
        .max(1);
    let server = server.into_iter().map(|q| (q, dirs[0].as_path())).collect();
    let waited = session::wait_for_guests(server, left, &mut mux);
    mux.terminate(MUX_GRACE);
    let (mut server_end, failure) = waited?;
    ends.insert(0, server_end.remove(0));
    Ok((ends, mux_failure.or(failure)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with_console(tag: &str, console: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("pvrdma-lab-pair-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("console.log"), console).unwrap();
        dir
    }

    #[test]
    fn a_killed_guest_passes_only_with_a_clean_console_and_no_timeout() {
        let exited = QemuEnd::Exited {
            status: "killed".into(),
            success: false,
        };
        let clean = dir_with_console("clean", "[    1.000000] pvrdma: port 1 ACTIVE\n");
        assert_eq!(judge_killed(&clean, &exited), Verdict::Pass);
        let timed_out = QemuEnd::TimedOut {
            limit_secs: 9,
            postmortem: String::new(),
        };
        assert!(matches!(
            judge_killed(&clean, &timed_out),
            Verdict::Fail { .. }
        ));
        let oops = dir_with_console(
            "oops",
            "[    2.000000] BUG: kernel NULL pointer dereference, address: 0000000000000008\n",
        );
        assert!(matches!(
            judge_killed(&oops, &exited),
            Verdict::Fail {
                kernel_problem: true,
                ..
            }
        ));
        for d in [clean, oops] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
