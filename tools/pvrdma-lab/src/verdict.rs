// SPDX-License-Identifier: GPL-2.0-only
//! Judging one test from what the guest reported, how QEMU ended, whether the
//! mux stayed up, and what the kernel logged.

use crate::guest_report::GuestReport;
use crate::kernel_log::{self, Log, Problem};

/// How the guest's QEMU ended.
#[derive(Debug, Clone)]
pub enum QemuEnd {
    /// It exited by itself (the guest powered off, or QEMU failed).
    Exited {
        /// Its exit status in words.
        status: String,
        /// Whether it exited with status 0.
        success: bool,
    },
    /// The runner killed it at the test's wall-clock limit.
    TimedOut {
        /// The limit, in seconds.
        limit_secs: u64,
        /// Where QEMU's vCPU thread was when it was killed
        /// ([`postmortem::backtraces`](crate::postmortem::backtraces)).
        postmortem: String,
    },
}

/// Everything a verdict is made from.
pub struct Evidence<'a> {
    /// What the guest wrote into its results directory.
    pub report: &'a GuestReport,
    /// How QEMU ended.
    pub qemu: QemuEnd,
    /// Set when the mux exited while QEMU still ran.
    pub mux_failure: Option<String>,
    /// The guest's serial console output.
    pub console: &'a str,
    /// Whether the kernel was built with kmemleak, whose leak check must then have run.
    pub kmemleak_built: bool,
    /// QEMU's standard error (`qemu.log`).
    pub qemu_log: &'a str,
}

/// What QEMU said as it aborted, if it did: the last line of its log that is an assertion's or
/// GLib's fatal error (`file:line: function: Assertion `...' failed.`, `ERROR:...`). Other
/// lines (device information, warnings) are not quoted: they say nothing about a crash.
pub fn qemu_last_words(log: &str) -> Option<&str> {
    log.lines().rev().map(str::trim).find(|line| {
        line.contains("Assertion `")
            || line.contains("assertion failed")
            || line.starts_with("ERROR:")
            || line.starts_with("**")
    })
}

/// A test's verdict.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Everything checked out.
    Pass,
    /// It failed.
    Fail {
        /// Why, in one line.
        cause: String,
        /// The kernel reported trouble (never excused as a known failure).
        kernel_problem: bool,
    },
}

fn fail(cause: String) -> Verdict {
    Verdict::Fail {
        cause,
        kernel_problem: false,
    }
}

/// The kernel problems in the guest's dmesg, console and kmemleak report.
pub fn kernel_problems(evidence: &Evidence) -> Vec<Problem> {
    let dmesg = evidence.report.dmesg.as_deref().unwrap_or("");
    let mut problems = kernel_log::scan(Log::Dmesg, dmesg);
    for problem in kernel_log::scan(Log::Console, evidence.console) {
        kernel_log::add(&mut problems, problem);
    }
    let leaks = kernel_log::kmemleak_objects(evidence.report.kmemleak.as_deref().unwrap_or(""));
    if leaks > 0 {
        problems.push(Problem {
            kind: kernel_log::KMEMLEAK_REPORT,
            message: format!("kmemleak: {leaks} unreferenced object(s) (see kmemleak.txt)"),
            places: Vec::new(),
        });
    }
    // A leak check that did not run found nothing: the lab's and the debug kernel have kmemleak
    // (the lean kernel of the benchmarks has none to run).
    if let (true, Some(Err(why))) = (evidence.kmemleak_built, &evidence.report.kmemleak_state) {
        problems.push(Problem {
            kind: "kmemleak unavailable",
            message: format!("kmemleak could not scan: {why}"),
            places: Vec::new(),
        });
    }
    if let Some(problem) = evidence.report.tainted.and_then(taint_problem) {
        problems.push(problem);
    }
    problems
}

/// The kernel's taint flags, by bit (`Documentation/admin-guide/tainted-kernels.rst`).
const TAINT_FLAGS: &[u8; 20] = b"PFSRMBUDAWCIOELKXTNJ";

/// The taints a lab test is expected to leave: O (bit 12, an out-of-tree module was loaded:
/// the Rust driver) and N (bit 18, KUnit tests ran: the `kunit` test).
const EXPECTED_TAINT: u64 = 1 << 12 | 1 << 18;

/// The kind of the problems [`taint_problem`] makes.
const TAINT: &str = "taint";

/// Whether `problem` is a taint whose only unexpected flag is W (a warning was printed), which a
/// known WARN report explains.
pub fn is_warning_taint(problem: &Problem) -> bool {
    problem.kind == TAINT && problem.message.ends_with(": W")
}

/// A problem if the kernel's taint `tainted` has a flag a test must not leave (W: a warning
/// was printed, D: the kernel died, L: a soft lockup, B: bad page, ...).
pub fn taint_problem(tainted: u64) -> Option<Problem> {
    let unexpected = tainted & !EXPECTED_TAINT;
    if unexpected == 0 {
        return None;
    }
    let flags: String = (0..64)
        .filter(|bit| unexpected & (1 << bit) != 0)
        .map(|bit| {
            TAINT_FLAGS
                .get(bit)
                .map_or_else(|| format!("bit {bit}"), |&c| char::from(c).to_string())
        })
        .collect::<Vec<_>>()
        .join(" ");
    Some(Problem {
        kind: TAINT,
        message: format!("kernel tainted {tainted:#x}: {flags}"),
        places: Vec::new(),
    })
}

/// The verdict on one test, given the kernel problems found in its logs.
pub fn judge(evidence: &Evidence, problems: &[Problem]) -> Verdict {
    let report = evidence.report;
    if let Some(first) = problems.first() {
        let more = match problems.len() {
            1 => String::new(),
            n => format!(" (+{} more, see kernel-problems.txt)", n - 1),
        };
        return Verdict::Fail {
            cause: format!("kernel {}: {}{more}", first.kind, first.message),
            kernel_problem: true,
        };
    }
    if let Some(mux) = &evidence.mux_failure {
        return fail(format!("lab: {mux}"));
    }
    let stage = report.stage.as_deref().unwrap_or("before init started");
    // What a step that overran was stuck on, for the causes of timeouts.
    let hang = report
        .hang
        .as_deref()
        .map_or_else(String::new, |h| format!("; {h}"));
    if !report.done {
        return fail(match &evidence.qemu {
            QemuEnd::TimedOut {
                limit_secs,
                postmortem,
            } => format!(
                "guest did not report within {limit_secs} s (timeout, killed); last stage: {stage}{hang}; {postmortem}"
            ),
            QemuEnd::Exited { status, .. } => {
                let said = qemu_last_words(evidence.qemu_log)
                    .map_or_else(String::new, |line| format!("; QEMU: {line}"));
                format!(
                    "guest did not report: QEMU exited ({status}); last stage: {stage} (crash?){said}"
                )
            }
        });
    }
    match &report.setup {
        Some(Ok(())) => {}
        Some(Err(why)) => return fail(format!("guest setup failed: {why}")),
        None => {
            return fail(format!(
                "guest did not run the test (stopped at stage: {stage})"
            ))
        }
    }
    match report.status {
        Some(0) => {}
        Some(status) => {
            return fail(match &report.first_failure {
                Some(cause) => format!("{cause}{hang}"),
                None => format!(
                    "test script exited with status {status} without a FAIL line \
                     (see test.log){hang}"
                ),
            })
        }
        None => return fail("the guest did not record the test's exit status".to_string()),
    }
    match &report.teardown {
        Some(Ok(())) => {}
        Some(Err(why)) => return fail(format!("teardown: {why}")),
        None => return fail("the guest did not record the driver's teardown".to_string()),
    }
    if let QemuEnd::Exited {
        status,
        success: false,
    } = &evidence.qemu
    {
        return fail(format!(
            "QEMU exited ({status}) after the guest reported (see qemu.log)"
        ));
    }
    Verdict::Pass
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passed_report() -> GuestReport {
        GuestReport {
            done: true,
            setup: Some(Ok(())),
            status: Some(0),
            teardown: Some(Ok(())),
            dmesg: Some("[    1.0] all fine\n".to_string()),
            ..GuestReport::default()
        }
    }

    fn timed_out(limit_secs: u64) -> QemuEnd {
        QemuEnd::TimedOut {
            limit_secs,
            postmortem: "QEMU's vCPU thread in cpu_exec".to_string(),
        }
    }

    fn exited() -> QemuEnd {
        QemuEnd::Exited {
            status: "status 0".to_string(),
            success: true,
        }
    }

    fn verdict(report: &GuestReport, qemu: QemuEnd, console: &str) -> Verdict {
        verdict_on(report, qemu, console, true)
    }

    fn verdict_on(
        report: &GuestReport,
        qemu: QemuEnd,
        console: &str,
        kmemleak_built: bool,
    ) -> Verdict {
        let evidence = Evidence {
            report,
            qemu,
            mux_failure: None,
            console,
            kmemleak_built,
            qemu_log: "",
        };
        let problems = kernel_problems(&evidence);
        judge(&evidence, &problems)
    }

    #[test]
    fn pass() {
        assert_eq!(verdict(&passed_report(), exited(), ""), Verdict::Pass);
    }

    #[test]
    fn script_failure_gives_its_fail_line() {
        let mut report = passed_report();
        report.status = Some(1);
        report.first_failure = Some("size 4096: no".to_string());
        assert_eq!(
            verdict(&report, exited(), ""),
            Verdict::Fail {
                cause: "size 4096: no".to_string(),
                kernel_problem: false
            }
        );
    }

    #[test]
    fn kernel_problem_wins() {
        let mut report = passed_report();
        report.dmesg =
            Some("[ 5.0] WARNING: CPU: 0 PID: 1 at x.c:1 f\n[ 5.1] Call Trace:\n".to_string());
        let Verdict::Fail {
            cause,
            kernel_problem,
        } = verdict(&report, exited(), "")
        else {
            panic!("passed");
        };
        assert!(kernel_problem);
        assert!(
            cause.starts_with("kernel WARN or lockdep report: WARNING: CPU: 0"),
            "{cause}"
        );
        assert!(
            cause.ends_with("(+1 more, see kernel-problems.txt)"),
            "{cause}"
        );
    }

    /// A message in both logs is one problem that stands in each.
    #[test]
    fn a_problem_in_dmesg_and_console_keeps_both_places() {
        let mut report = passed_report();
        report.dmesg = Some(
            "[ 5.0] irq 11: nobody cared (try booting with the \"irqpoll\" option)\n".to_string(),
        );
        let console = format!(
            "lab-init: stage: test x\n{}",
            report.dmesg.as_deref().unwrap()
        );
        let evidence = Evidence {
            report: &report,
            qemu: exited(),
            mux_failure: None,
            console: &console,
            kmemleak_built: true,
            qemu_log: "",
        };
        let problems = kernel_problems(&evidence);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kind, "spurious interrupt");
        let places: Vec<(Log, usize)> =
            problems[0].places.iter().map(|p| (p.log, p.line)).collect();
        assert_eq!(places, [(Log::Dmesg, 0), (Log::Console, 1)]);
    }

    #[test]
    fn no_report() {
        let report = GuestReport {
            stage: Some("wait-device".to_string()),
            ..GuestReport::default()
        };
        let Verdict::Fail { cause, .. } = verdict(&report, timed_out(60), "") else {
            panic!("passed");
        };
        assert_eq!(
            cause,
            "guest did not report within 60 s (timeout, killed); last stage: wait-device; \
             QEMU's vCPU thread in cpu_exec"
        );
        let stuck = GuestReport {
            hang: Some("stuck: rmmod (pid 7) in ib_unregister_device".to_string()),
            ..report
        };
        let Verdict::Fail { cause, .. } = verdict(&stuck, timed_out(60), "") else {
            panic!("passed");
        };
        assert!(
            cause.ends_with(
                "last stage: wait-device; stuck: rmmod (pid 7) in ib_unregister_device; \
                 QEMU's vCPU thread in cpu_exec"
            ),
            "{cause}"
        );
        let report = GuestReport {
            stage: Some("wait-device".to_string()),
            ..GuestReport::default()
        };
        let Verdict::Fail { cause, .. } = verdict(
            &report,
            QemuEnd::Exited {
                status: "signal 11 (SIGSEGV)".to_string(),
                success: false,
            },
            "",
        ) else {
            panic!("passed");
        };
        assert!(
            cause.starts_with("guest did not report: QEMU exited (signal 11 (SIGSEGV))"),
            "{cause}"
        );
    }

    /// A QEMU that aborted on an assertion has it quoted in the cause (what known failures of a
    /// device model match); its informational lines are not.
    #[test]
    fn qemu_abort_is_quoted() {
        let log = "qemu-system-x86_64: -device pvrdma,addr=0x4.1: info: rdma: uverb device uverbs_sw0
qemu-system-x86_64: warning: nic vmxnet3.0 has no peer
qemu-system-x86_64: ../src/util/qemu-thread-posix.c:87: qemu_mutex_lock_impl: Assertion `mutex->initialized' failed.
";
        let mut report = passed_report();
        report.done = false;
        report.stage = Some("test unbind_in_use".to_string());
        let evidence = Evidence {
            report: &report,
            qemu: QemuEnd::Exited {
                status: "signal 6 (SIGABRT)".to_string(),
                success: false,
            },
            mux_failure: None,
            console: "",
            kmemleak_built: true,
            qemu_log: log,
        };
        let Verdict::Fail { cause, .. } = judge(&evidence, &[]) else {
            panic!("passed");
        };
        assert_eq!(
            cause,
            "guest did not report: QEMU exited (signal 6 (SIGABRT)); last stage: test \
             unbind_in_use (crash?); QEMU: qemu-system-x86_64: ../src/util/qemu-thread-posix.c:87: \
             qemu_mutex_lock_impl: Assertion `mutex->initialized' failed."
        );
        assert_eq!(
            qemu_last_words("qemu-system-x86_64: warning: nic vmxnet3.0 has no peer\n"),
            None
        );
    }

    #[test]
    fn expected_taints_pass_others_fail() {
        let mut report = passed_report();
        // O (out-of-tree module) and N (KUnit ran).
        report.tainted = Some(1 << 12 | 1 << 18);
        report.kmemleak_state = Some(Ok(()));
        assert_eq!(verdict(&report, exited(), ""), Verdict::Pass);
        // W (a warning) besides O.
        report.tainted = Some(1 << 12 | 1 << 9);
        let Verdict::Fail {
            cause,
            kernel_problem,
        } = verdict(&report, exited(), "")
        else {
            panic!("passed");
        };
        assert!(kernel_problem);
        assert_eq!(cause, "kernel taint: kernel tainted 0x1200: W");
        assert_eq!(
            taint_problem(1 << 4 | 1 << 40).unwrap().message,
            "kernel tainted 0x10000000010: M bit 40"
        );
    }

    #[test]
    fn kmemleak_that_could_not_scan_fails() {
        let mut report = passed_report();
        report.kmemleak_state = Some(Err("disabled (a scan was refused)".to_string()));
        let Verdict::Fail { cause, .. } = verdict(&report, exited(), "") else {
            panic!("passed");
        };
        assert_eq!(
            cause,
            "kernel kmemleak unavailable: kmemleak could not scan: disabled (a scan was refused)"
        );
        let mut report = passed_report();
        report.dmesg = Some("[ 9.0] kmemleak: Kernel memory leak detector disabled\n".to_string());
        let Verdict::Fail { cause, .. } = verdict(&report, exited(), "") else {
            panic!("passed");
        };
        assert!(cause.starts_with("kernel kmemleak disabled: "), "{cause}");
    }

    /// A kernel built without kmemleak (the lean kernel of the benchmarks) has no leak check to
    /// run: its absence is not a failure there, and still is on a kernel that has it.
    #[test]
    fn kmemleak_absent_from_the_kernel_is_no_failure() {
        let mut report = passed_report();
        report.kmemleak_state = Some(Err("absent (no /sys/kernel/debug/kmemleak)".to_string()));
        assert_eq!(verdict_on(&report, exited(), "", false), Verdict::Pass);
        let Verdict::Fail { cause, .. } = verdict_on(&report, exited(), "", true) else {
            panic!("passed");
        };
        assert!(
            cause.starts_with("kernel kmemleak unavailable: "),
            "{cause}"
        );
    }

    #[test]
    fn teardown_failure() {
        let mut report = passed_report();
        report.teardown = Some(Err("rmmod vmw_pvrdma failed".to_string()));
        assert!(matches!(
            verdict(&report, exited(), ""),
            Verdict::Fail { .. }
        ));
    }
}
