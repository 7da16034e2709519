//! One two-guest test: a server guest and a client guest, each with its own
//! QEMU, pvrdma and driver, on one mux (which relays rdma_cm's MADs and the
//! data path between the two QEMUs' software verbs devices) and one link
//! between their vmxnet3s (a unix socket; nothing else is reachable). The
//! server is 192.0.2.1, the client 192.0.2.2; both run the same script,
//! which reads its role from `LAB_ROLE`. Results go to `<dir>/server/` and
//! `<dir>/client/`, the mux's logs to `<dir>/`.

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::catalog::GuestTest;
use crate::cli::Driver;
use crate::layout::Layout;
use crate::model::DeviceModel;
use crate::mux::{self, MuxFiles};
use crate::qemu::{Guest, Link};
use crate::run_error::RunError;
use crate::session::{self, Outcome, SocketDir, GUEST_OVERHEAD_SECS, MUX_GRACE};
use crate::verdict::{QemuEnd, Verdict};

/// How long the server's QEMU may take to create the link's socket.
const LINK_TIMEOUT: Duration = Duration::from_secs(20);

/// One side of the pair.
struct Side<'a> {
    role: &'static str,
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
    let sides = [
        Side {
            role: "server",
            driver: server.0,
            module: server.1,
            ip: "192.0.2.1",
            peer_ip: "192.0.2.2",
            mac: "52:54:00:00:53:01",
        },
        Side {
            role: "client",
            driver: client.0,
            module: client.1,
            ip: "192.0.2.2",
            peer_ip: "192.0.2.1",
            mac: "52:54:00:00:53:02",
        },
    ];
    let failed = |why: String| Outcome {
        verdict: Verdict::Fail {
            cause: format!("lab: {why}"),
            kernel_problem: false,
        },
        boot_secs: None,
        test_secs: None,
        wall: started.elapsed(),
        notes: Vec::new(),
        reference_bug: None,
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
    let mut reference_bug = None;
    let mut times = (None, None);
    for (side, end) in sides.iter().zip(ends) {
        let side_dir = dir.join(side.role);
        let judged = session::judge_guest(&side_dir, side.driver, end, mux_failure.clone());
        if side.role == "client" {
            times = (judged.report.boot_secs, judged.report.test_secs);
        }
        notes.extend(
            judged
                .report
                .notes
                .iter()
                .map(|n| format!("{} ({}): {n}", side.role, side.driver.name())),
        );
        reference_bug = reference_bug.or(judged.reference_bug);
        if let (
            Verdict::Pass,
            Verdict::Fail {
                cause,
                kernel_problem,
            },
        ) = (&verdict, judged.verdict)
        {
            verdict = Verdict::Fail {
                cause: format!(
                    "{} guest ({} driver): {cause}",
                    side.role,
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
        reference_bug,
    })
}

/// Starts the mux and both guests (the server first: its QEMU listens on
/// the link), waits for both; how each QEMU ended, and a mux that died.
fn run_sides(
    layout: &Layout,
    model: DeviceModel,
    sides: &[Side; 2],
    test: &GuestTest,
    dir: &Path,
) -> Result<(Vec<QemuEnd>, Option<String>), RunError> {
    session::fresh_dir(dir)?;
    for side in sides {
        session::fresh_dir(&dir.join(side.role))?;
    }
    let sockets = SocketDir::create()?;
    let mad_socket = sockets.0.join("mad.sock");
    let fabric_socket = sockets.0.join("fabric.sock");
    let link_socket = sockets.0.join("link.sock");
    let mut mux = mux::start(
        &layout.mux,
        &MuxFiles {
            mad_socket: &mad_socket,
            fabric_socket: &fabric_socket,
            log: &dir.join("mux.log"),
            stderr_log: &dir.join("mux-stderr.log"),
        },
    )?;
    let qemu = layout.qemu(model);
    let limit_secs = test.timeout_secs + GUEST_OVERHEAD_SECS;
    let dirs: Vec<_> = sides.iter().map(|s| dir.join(s.role)).collect();
    let verbs_logs: Vec<_> = dirs.iter().map(|d| d.join("verbs.log")).collect();
    let mut qemus = Vec::new();
    for (i, side) in sides.iter().enumerate() {
        let guest = Guest {
            bzimage: &layout.bzimage,
            init: &layout.init,
            model: model.name(),
            driver: side.driver.name(),
            module: side.module,
            kernel_dir: &layout.kernel_dir,
            test: &test.name,
            test_timeout_secs: test.timeout_secs,
            kernel_args: &test.kernel_args,
            results_dir: &dirs[i],
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
            }),
        };
        let started = session::start_guest(&guest, qemu, &layout.mux, &dirs[i]);
        let mut q = match started {
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
        qemus.push((q, dirs[i].as_path()));
    }
    let waited = session::wait_for_guests(qemus, limit_secs, &mut mux);
    mux.terminate(MUX_GRACE);
    waited
}
