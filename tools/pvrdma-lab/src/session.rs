// SPDX-License-Identifier: GPL-2.0-only
//! One test with one driver on one device model in a guest of its own: a fresh
//! mux and a fresh QEMU, a wall-clock limit, and every log kept in
//! `<results>/<model>/<driver>/<test>/` (shared.rs runs several tests in one).

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::catalog::GuestTest;
use crate::child::{self, Guard};
use crate::cli::Driver;
use crate::guest_report::{self, GuestReport};
use crate::kernel_log::{Log, Problem};
use crate::layout::Layout;
use crate::model::DeviceModel;
use crate::mux::{self, MuxFiles};
use crate::postmortem;
use crate::qemu::{Guest, Slot};
use crate::reference_bugs;
use crate::run_error::RunError;
use crate::signals;
use crate::verdict::{self, Evidence, QemuEnd, Verdict};

/// Time a guest needs on top of its test script's limit: boot, loading the
/// driver and waiting for the port (60 s in init), rmmod (60 s), kmemleak scans
/// and saving dmesg.
pub const GUEST_OVERHEAD_SECS: u64 = 200;
/// How long QEMU gets to exit after SIGTERM before SIGKILL.
const QEMU_GRACE: Duration = Duration::from_secs(5);
/// How long the mux gets to exit after SIGTERM before SIGKILL.
pub const MUX_GRACE: Duration = Duration::from_secs(2);

/// What one test produced.
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// Guest uptime when init started.
    pub boot_secs: Option<f64>,
    /// How long the test script ran in the guest.
    pub test_secs: Option<f64>,
    /// Wall-clock time from starting the mux to QEMU's end.
    pub wall: Duration,
    /// What the test noted (measured figures, what it proved).
    pub notes: Vec<String>,
    /// Known bugs (of the reference C driver, or of the kernel outside the drivers) whose
    /// kernel reports were set aside.
    pub reference_bugs: Vec<&'static reference_bugs::ReferenceBug>,
}

/// A private directory for one test's sockets (unix socket paths are limited
/// to 107 bytes, so they live in the temporary directory, not the results).
pub struct SocketDir(pub PathBuf);

impl SocketDir {
    /// A new private directory for sockets.
    pub fn create() -> Result<SocketDir, RunError> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "pvrdma-lab-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = fs::remove_dir_all(&path);
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| RunError::Failed(format!("cannot create {}: {e}", path.display())))?;
        Ok(SocketDir(path))
    }
}

/// Removes the socket directories of runners that died without cleaning up
/// (SIGKILL): `pvrdma-lab-<pid>-<n>` whose pid no longer runs.
pub fn remove_stale_socket_dirs() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("pvrdma-lab-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

impl SocketDir {
    /// The mux's mad and fabric sockets in this directory.
    pub fn mux_sockets(&self) -> (PathBuf, PathBuf) {
        (self.0.join("mad.sock"), self.0.join("fabric.sock"))
    }
}

/// Starts a mux on the sockets of `sockets` for `test`, logging into `dir`.
pub fn start_mux(
    layout: &Layout,
    sockets: &SocketDir,
    dir: &Path,
    test: &GuestTest,
) -> Result<Guard, RunError> {
    start_mux_with_burst(layout, sockets, dir, test.mad_burst, test.mad_burst_of)
}

/// Starts a mux on the sockets of `sockets`, logging into `dir`, that delivers the MAD
/// `mad_burst_of` (every MAD: `None`) `mad_burst` times (see `GuestTest::mad_burst`).
pub fn start_mux_with_burst(
    layout: &Layout,
    sockets: &SocketDir,
    dir: &Path,
    mad_burst: u16,
    mad_burst_of: Option<&'static str>,
) -> Result<Guard, RunError> {
    let (mad_socket, fabric_socket) = sockets.mux_sockets();
    mux::start(
        &layout.mux,
        &MuxFiles {
            mad_socket: &mad_socket,
            fabric_socket: &fabric_socket,
            log: &dir.join("mux.log"),
            stderr_log: &dir.join("mux-stderr.log"),
            mad_burst,
            mad_burst_of,
        },
    )
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A fresh, empty results directory for one test.
pub fn fresh_dir(dir: &Path) -> Result<(), RunError> {
    if dir.exists() {
        fs::remove_dir_all(dir)
            .map_err(|e| RunError::Failed(format!("cannot clear {}: {e}", dir.display())))?;
    }
    fs::create_dir_all(dir)
        .map_err(|e| RunError::Failed(format!("cannot create {}: {e}", dir.display())))
}

fn create(path: &Path) -> Result<File, RunError> {
    File::create(path)
        .map_err(|e| RunError::Failed(format!("cannot create {}: {e}", path.display())))
}

/// Runs `test` on `model` with `driver` (whose module is `module`); results go
/// to `dir`.
pub fn run(
    layout: &Layout,
    model: DeviceModel,
    driver: Driver,
    module: &Path,
    test: &GuestTest,
    dir: &Path,
) -> Result<Outcome, RunError> {
    let started = Instant::now();
    let outcome = |verdict, report: Option<&GuestReport>| Outcome {
        verdict,
        boot_secs: report.and_then(|r| r.boot_secs),
        test_secs: report.and_then(|r| r.test_secs),
        wall: started.elapsed(),
        notes: report.map(|r| r.notes.clone()).unwrap_or_default(),
        reference_bugs: Vec::new(),
    };
    let lab_failure = |e: RunError| -> Result<Outcome, RunError> {
        match e {
            RunError::Failed(why) => Ok(outcome(
                Verdict::Fail {
                    cause: format!("lab: {why}"),
                    kernel_problem: false,
                },
                None,
            )),
            interrupted => Err(interrupted),
        }
    };

    if let Err(e) = fresh_dir(dir) {
        return lab_failure(e);
    }
    let (qemu_end, mux_failure) = match run_guest(layout, model, driver, module, &[test], &[dir]) {
        Ok(end) => end,
        Err(e) => return lab_failure(e),
    };

    let judged = judge_guest(
        dir,
        driver,
        qemu_end,
        mux_failure,
        layout.kernel_has_kmemleak,
    );
    let mut result = outcome(judged.verdict, Some(&judged.report));
    result.reference_bugs = judged.reference_bugs;
    Ok(result)
}

/// Runs one guest of `driver` on `model` with a fresh mux: `tests` one after
/// the other, test i reporting into `dirs[i]` (the mux's, QEMU's and the verbs
/// library's logs go into the first); waits for its end within the tests'
/// limits and the guest overhead of each. Returns QEMU's end and what became
/// of a mux that died under it.
pub fn run_guest(
    layout: &Layout,
    model: DeviceModel,
    driver: Driver,
    module: &Path,
    tests: &[&GuestTest],
    dirs: &[&Path],
) -> Result<(QemuEnd, Option<String>), RunError> {
    let (Some(first_test), Some(&first)) = (tests.first(), dirs.first()) else {
        return Err(RunError::Failed("a guest with no test".into()));
    };
    let sockets = SocketDir::create()?;
    let (mad_socket, fabric_socket) = sockets.mux_sockets();
    let mut mux = start_mux(layout, &sockets, first, first_test)?;
    let slots: Vec<Slot> = tests
        .iter()
        .zip(dirs)
        .map(|(test, dir)| Slot {
            test: &test.name,
            timeout_secs: test.timeout_secs,
            results_dir: dir,
        })
        .collect();
    let verbs_log = first.join("verbs.log");
    let guest = Guest {
        bzimage: &layout.bzimage,
        init: &layout.init,
        model: model.name(),
        device_version: model.device_version(),
        version_property: model.version_property().is_some(),
        driver: driver.name(),
        module,
        kernel_dir: &layout.kernel_dir,
        tests: &slots,
        // (tests that share a guest have none of their own: catalog.rs)
        kernel_args: &first_test.kernel_args,
        mad_socket: &mad_socket,
        fabric_socket: &fabric_socket,
        verbs_lib: &layout.verbs_lib,
        verbs_log: &verbs_log,
        link: None,
        accel: layout.accel,
        shell: None,
    };
    let limit_secs = tests
        .iter()
        .map(|t| t.timeout_secs + GUEST_OVERHEAD_SECS)
        .sum();
    let waited = start_guest(&guest, layout.qemu(model), &layout.mux, first)
        .and_then(|q| wait_for_guests(vec![(q, first)], limit_secs, &mut mux));
    mux.terminate(MUX_GRACE);
    let (mut ends, mux_failure) = waited?;
    Ok((ends.remove(0), mux_failure))
}

/// What one guest's results directory and QEMU's end say.
pub struct Judged {
    /// The verdict.
    pub verdict: Verdict,
    /// What the guest reported.
    pub report: GuestReport,
    /// Known bugs whose kernel reports were set aside.
    pub reference_bugs: Vec<&'static reference_bugs::ReferenceBug>,
}

/// Judges the guest whose results are in `dir` and which ran `driver` on a kernel built with
/// kmemleak or not (`kmemleak_built`).
pub fn judge_guest(
    dir: &Path,
    driver: Driver,
    qemu_end: QemuEnd,
    mux_failure: Option<String>,
    kmemleak_built: bool,
) -> Judged {
    let report = guest_report::read(dir);
    judge_report(dir, report, driver, qemu_end, mux_failure, kmemleak_built)
}

/// Judges `report`, read from `dir` (whose console and QEMU log it is judged with): as
/// [`judge_guest`], for a report the caller had to complete (a shared guest's test that
/// finished before the guest ended in a later one: shared.rs).
pub fn judge_report(
    dir: &Path,
    report: GuestReport,
    driver: Driver,
    qemu_end: QemuEnd,
    mux_failure: Option<String>,
    kmemleak_built: bool,
) -> Judged {
    let console = guest_report::read_text(&dir.join("console.log")).unwrap_or_default();
    let qemu_log = guest_report::read_text(&dir.join("qemu.log")).unwrap_or_default();
    let evidence = Evidence {
        report: &report,
        qemu: qemu_end,
        mux_failure,
        console: &console,
        kmemleak_built,
        qemu_log: &qemu_log,
    };
    let problems = verdict::kernel_problems(&evidence);
    write_problems(&dir.join("kernel-problems.txt"), &problems);
    let dmesg = report.dmesg.as_deref().unwrap_or("");
    let kmemleak = report.kmemleak.as_deref().unwrap_or("");
    let reference_bugs = reference_bugs::excuse(
        driver,
        &problems,
        &[(Log::Dmesg, dmesg), (Log::Console, &console)],
        kmemleak,
    );
    let judged = if !reference_bugs.is_empty() {
        &[][..]
    } else {
        &problems[..]
    };
    let verdict = verdict::judge(&evidence, judged);
    Judged {
        verdict,
        report,
        reference_bugs,
    }
}

/// Starts a guest's QEMU, its console and logs in `dir`.
pub fn start_guest(
    guest: &Guest,
    qemu_binary: &Path,
    mux_binary: &Path,
    dir: &Path,
) -> Result<Guard, RunError> {
    let mut command = guest.command(qemu_binary).map_err(RunError::Failed)?;
    let line = guest.shell_line(qemu_binary).map_err(RunError::Failed)?;
    fs::write(
        dir.join("qemu-command.sh"),
        format!(
            "#!/bin/sh\n# start {} first\n{line}\n",
            mux_binary.display()
        ),
    )
    .map_err(|e| RunError::Failed(format!("cannot write qemu-command.sh: {e}")))?;
    command
        .stdin(Stdio::null())
        .stdout(create(&dir.join("console.log"))?)
        .stderr(create(&dir.join("qemu.log"))?);
    child::spawn("qemu", &mut command)
        .map_err(|e| RunError::Failed(format!("cannot start {}: {e}", qemu_binary.display())))
}

/// The file a guest's test writes into its results directory to have the
/// runner kill its QEMU at once (a peer that dies, in a two-guest test).
pub const KILL_MARKER: &str = "kill-me";

/// Waits until every guest's QEMU has exited or the time is up (then kills
/// those still running); also reports a mux that died under them. A guest
/// whose results directory gets a [`KILL_MARKER`] has its QEMU killed with
/// SIGKILL. Each guest's end comes in the order given.
pub fn wait_for_guests(
    mut qemus: Vec<(Guard, &Path)>,
    limit_secs: u64,
    mux: &mut Guard,
) -> Result<(Vec<QemuEnd>, Option<String>), RunError> {
    let deadline = Instant::now() + Duration::from_secs(limit_secs);
    let mut mux_failure = None;
    let mut ends: Vec<Option<QemuEnd>> = qemus.iter().map(|_| None).collect();
    loop {
        if let Some(signum) = signals::received() {
            for (qemu, _) in &mut qemus {
                qemu.terminate(QEMU_GRACE);
            }
            return Err(RunError::Interrupted(signum));
        }
        for ((qemu, dir), end) in qemus.iter_mut().zip(&mut ends) {
            if end.is_some() {
                continue;
            }
            if dir.join(KILL_MARKER).exists() {
                let status = qemu.kill();
                *end = Some(QemuEnd::Exited {
                    status: format!(
                        "killed by the runner as its test asked ({})",
                        status.map_or("status unknown".into(), child::describe)
                    ),
                    success: false,
                });
                continue;
            }
            match qemu.try_wait() {
                Ok(Some(status)) => {
                    *end = Some(QemuEnd::Exited {
                        status: child::describe(status),
                        success: status.success(),
                    });
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(RunError::Failed(format!(
                        "cannot wait for {}: {e}",
                        qemu.name()
                    )))
                }
            }
        }
        if ends.iter().all(Option::is_some) {
            return Ok((ends.into_iter().flatten().collect(), mux_failure));
        }
        if mux_failure.is_none() {
            if let Ok(Some(status)) = mux.try_wait() {
                mux_failure = Some(format!(
                    "pvrdma-mux exited ({}) while the guest ran (see mux-stderr.log)",
                    child::describe(status)
                ));
            }
        }
        if Instant::now() >= deadline {
            for ((qemu, dir), end) in qemus.iter_mut().zip(&mut ends) {
                if end.is_none() {
                    let postmortem = qemu.pid().map_or_else(
                        || "QEMU already exited".to_string(),
                        |pid| postmortem::backtraces(pid, &dir.join("qemu-backtraces.txt")),
                    );
                    qemu.terminate(QEMU_GRACE);
                    let _ = writeln!(
                        create(&dir.join("timeout.txt"))?,
                        "the runner killed QEMU after {limit_secs} s"
                    );
                    *end = Some(QemuEnd::TimedOut {
                        limit_secs,
                        postmortem,
                    });
                }
            }
            return Ok((ends.into_iter().flatten().collect(), mux_failure));
        }
        sleep(Duration::from_millis(100));
    }
}

/// Where a problem's message stands, for a reader to find it: " (dmesg.txt line 12,
/// console.log line 40)", lines counted from 1; nothing for a problem not read from a log.
fn places(problem: &Problem) -> String {
    if problem.places.is_empty() {
        return String::new();
    }
    let places: Vec<String> = problem
        .places
        .iter()
        .map(|p| format!("{} line {}", p.log.file(), p.line + 1))
        .collect();
    format!(" ({})", places.join(", "))
}

fn write_problems(path: &Path, problems: &[Problem]) {
    if problems.is_empty() {
        let _ = fs::remove_file(path);
        return;
    }
    let text: String = problems
        .iter()
        .map(|p| format!("{}: {}{}\n", p.kind, p.message, places(p)))
        .collect();
    let _ = fs::write(path, text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_log::Place;

    #[test]
    fn problems_say_where_they_stand() {
        let mut problem = Problem {
            kind: "call trace",
            message: "Call Trace:".to_string(),
            places: vec![
                Place {
                    log: Log::Dmesg,
                    line: 11,
                },
                Place {
                    log: Log::Console,
                    line: 39,
                },
            ],
        };
        assert_eq!(
            places(&problem),
            " (dmesg.txt line 12, console.log line 40)"
        );
        problem.places.clear();
        assert_eq!(places(&problem), "");
    }
}
