// SPDX-License-Identifier: GPL-2.0-only
//! Several tests in one guest (`--tests-per-guest`): one mux, one QEMU, the
//! tests one after the other, each with the driver loaded afresh and removed
//! after, each reporting into its own results directory. A guest's boot, its
//! network, the RDMA core's modules and kmemleak's wait are paid once.
//!
//! What each test gets of the guest's shared evidence: the console from its
//! `slot N: NAME begins` line to the next (the boot's part goes to the first),
//! and the objects of kmemleak's one report allocated from its `jiffies-from`
//! to the next test's. The guest's init stops starting tests once one
//! disturbed the kernel (a taint, lockdep off, a teardown that failed); the
//! tests it did not start are handed back to run in guests of their own.
//!
//! A guest that crashed or ran out of time has the test it ended in judged
//! with the guest's end as its evidence, and every test before it judged from
//! what it wrote (its status, its `dmesg.txt`, its part of the console): a
//! failure once written is never replaced by a rerun, which may pass. Only the
//! tests that did not write their status run again.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::catalog::GuestTest;
use crate::cli::Driver;
use crate::guest_report;
use crate::layout::Layout;
use crate::model::DeviceModel;
use crate::run_error::RunError;
use crate::session::{self, Outcome};
use crate::verdict::QemuEnd;

/// The console line (after `lab-init: `) that starts test N's part.
const SLOT_MARK: &str = "lab-init: slot ";
/// The console line that starts the guest's last step (kmemleak's scans).
const END_MARK: &str = "lab-init: slots end";
/// kmemleak's count of new leaks, printed at its scan: the leaks themselves are
/// given to the tests whose allocations they are.
const LEAK_COUNT: &str = "new suspected memory leak";

/// What became of one test of a shared guest.
pub enum SlotEnd {
    /// It ran and reported (or the guest ended while it ran): judged.
    Judged(Box<Outcome>),
    /// It must run again in a guest of its own; why.
    Again(String),
}

/// The console of a guest that ran `slots` tests, split into each test's part.
pub fn split_console(console: &str, slots: usize) -> Vec<String> {
    let mut parts = vec![String::new(); slots.max(1)];
    let mut current = 0;
    let mut ended = false;
    for line in console.split_inclusive('\n') {
        if let Some(rest) = line.split(SLOT_MARK).nth(1) {
            if let Some(n) = rest
                .split(':')
                .next()
                .and_then(|n| n.trim().parse::<usize>().ok())
                .filter(|n| (1..=parts.len()).contains(n))
            {
                current = n - 1;
            }
        } else if line.contains(END_MARK) {
            ended = true;
        }
        if ended && line.contains(LEAK_COUNT) {
            continue;
        }
        parts[current].push_str(line);
    }
    parts
}

/// The jiffies of one object of kmemleak's report (`comm "x", pid 1, jiffies N`).
fn object_jiffies(object: &str) -> Option<u64> {
    let rest = object.split("jiffies ").nth(1)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The objects of kmemleak's report `all` allocated at jiffies in `from..until`
/// (an object whose time cannot be read is everybody's).
pub fn kmemleak_share(all: &str, from: u64, until: Option<u64>) -> String {
    const START: &str = "unreferenced object";
    let mut share = String::new();
    let mut objects = all.match_indices(START).map(|(i, _)| i).peekable();
    while let Some(start) = objects.next() {
        let end = objects.peek().copied().unwrap_or(all.len());
        let object = &all[start..end];
        let mine = object_jiffies(object).is_none_or(|j| j >= from && until.is_none_or(|u| j < u));
        if mine {
            share.push_str(object);
        }
    }
    share
}

/// Gives each started test its part of kmemleak's report of the guest
/// (`kmemleak-batch.txt`, in every started test's directory) as its
/// `kmemleak.txt`. Without every test's `jiffies-from`, each gets all of it.
fn share_kmemleak(dirs: &[PathBuf]) {
    let from: Vec<Option<u64>> = dirs
        .iter()
        .map(|d| {
            guest_report::read_text(&d.join("jiffies-from"))
                .and_then(|t| t.trim().parse::<u64>().ok())
        })
        .collect();
    let known = from.iter().all(Option::is_some);
    for (i, dir) in dirs.iter().enumerate() {
        let Some(all) = guest_report::read_text(&dir.join("kmemleak-batch.txt")) else {
            continue;
        };
        let share = if known {
            // The first test's share starts at boot: what the guest did before it is its.
            let start = if i == 0 { 0 } else { from[i].unwrap_or(0) };
            kmemleak_share(&all, start, from.get(i + 1).copied().flatten())
        } else {
            all
        };
        let _ = fs::write(dir.join("kmemleak.txt"), share);
    }
}

/// Runs `tests` (at least two, that may share a guest) with `driver` on `model`
/// in one guest; `dirs[i]` is test i's results directory. One result per test,
/// or the signal that interrupted the guest.
pub fn run(
    layout: &Layout,
    model: DeviceModel,
    driver: Driver,
    module: &Path,
    tests: &[&GuestTest],
    dirs: &[PathBuf],
) -> Result<Vec<SlotEnd>, i32> {
    let started = Instant::now();
    // A guest that could not run hands every test back; a signal ends the run.
    let lab_failure = |e: RunError| -> Result<Vec<SlotEnd>, i32> {
        match e {
            RunError::Failed(why) => Ok(tests
                .iter()
                .map(|_| SlotEnd::Again(format!("the shared guest could not start: {why}")))
                .collect()),
            RunError::Interrupted(signum) => Err(signum),
        }
    };
    for dir in dirs {
        if let Err(e) = session::fresh_dir(dir) {
            return lab_failure(e);
        }
    }
    let dir_refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let (qemu_end, mux_failure) =
        match session::run_guest(layout, model, driver, module, tests, &dir_refs) {
            Ok(end) => end,
            Err(e) => return lab_failure(e),
        };
    let guest = GuestEnd {
        qemu: qemu_end,
        mux_failure,
        wall: started.elapsed(),
    };
    let names: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
    Ok(judge_slots(
        driver,
        layout.kernel_has_kmemleak,
        &names,
        dirs,
        &guest,
    ))
}

/// How a shared guest ended: what its tests are judged with.
struct GuestEnd {
    /// How its QEMU ended.
    qemu: QemuEnd,
    /// Set when the mux exited while QEMU still ran.
    mux_failure: Option<String>,
    /// The guest's wall-clock time.
    wall: Duration,
}

/// The end of a guest that reported every test it started and powered off.
fn normal_end() -> QemuEnd {
    QemuEnd::Exited {
        status: "exited normally".into(),
        success: true,
    }
}

/// What became of each of the tests `names` of a guest that ended as `guest` says, test i
/// having reported into `dirs[i]` (the first holding the guest's console and QEMU's log).
fn judge_slots(
    driver: Driver,
    kmemleak_built: bool,
    names: &[&str],
    dirs: &[PathBuf],
    guest: &GuestEnd,
) -> Vec<SlotEnd> {
    // The guest's console and QEMU's log, then each test's part of them.
    let first = &dirs[0];
    let console = guest_report::read_text(&first.join("console.log")).unwrap_or_default();
    let _ = fs::write(first.join("console-guest.log"), &console);
    let qemu_log = guest_report::read_text(&first.join("qemu.log")).unwrap_or_default();
    for (dir, part) in dirs.iter().zip(split_console(&console, dirs.len())) {
        let _ = fs::write(dir.join("console.log"), part);
        if dir != first {
            let _ = fs::write(dir.join("qemu.log"), &qemu_log);
        }
    }

    let started_tests = dirs.iter().take_while(|d| d.join("stage").exists()).count();
    let reported = dirs[..started_tests]
        .iter()
        .all(|d| d.join("done").exists());
    let ended_normally = matches!(guest.qemu, QemuEnd::Exited { success: true, .. });
    if started_tests > 0 && reported {
        share_kmemleak(&dirs[..started_tests]);
    }
    // The test the guest ended in, when it did not end well: judged here, as
    // the guest's end is its evidence.
    let culprit = if reported && ended_normally {
        None
    } else {
        Some(started_tests.saturating_sub(1))
    };
    let mut ends = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let judged = match culprit {
            Some(c) if i == c => Some(session::judge_guest(
                dir,
                driver,
                guest.qemu.clone(),
                guest.mux_failure.clone(),
                kmemleak_built,
            )),
            // A failure it wrote is its verdict: a rerun that passed would hide it.
            Some(c) if i < c => judge_finished(dir, driver, guest, kmemleak_built, names[c]),
            None if i < started_tests => Some(session::judge_guest(
                dir,
                driver,
                normal_end(),
                guest.mux_failure.clone(),
                kmemleak_built,
            )),
            _ => None,
        };
        let Some(judged) = judged else {
            ends.push(SlotEnd::Again(again_why(names, i, started_tests, culprit)));
            continue;
        };
        let mut notes = judged.report.notes.clone();
        notes.insert(
            0,
            format!(
                "guest shared by {} tests ({}), test {} of them; the guest's wall {:.1} s",
                names.len(),
                names.join(", "),
                i + 1,
                guest.wall.as_secs_f64()
            ),
        );
        ends.push(SlotEnd::Judged(Box::new(Outcome {
            verdict: judged.verdict,
            boot_secs: judged.report.boot_secs,
            test_secs: judged.report.test_secs,
            wall: slot_wall(dir).unwrap_or(guest.wall),
            notes,
            reference_bugs: judged.reference_bugs,
        })));
    }
    ends
}

/// Judges test `dir`, which ran before the test `culprit` its guest ended in, from what it
/// wrote, if it wrote its status; none if it did not (it runs again).
fn judge_finished(
    dir: &Path,
    driver: Driver,
    guest: &GuestEnd,
    kmemleak_built: bool,
    culprit: &str,
) -> Option<session::Judged> {
    let mut report = guest_report::read(dir);
    report.status?;
    // init collects a test's report (its `dmesg.txt`, taint, ...) before the next test starts,
    // `end-uptime` last; `done` it writes for every test at the guest's end, after kmemleak's
    // scans, which this guest never reached. A report not collected is judged with the
    // guest's end, as the test the guest ended in is.
    let collected = dir.join("end-uptime").exists();
    report.done |= collected;
    let qemu = if collected {
        normal_end()
    } else {
        guest.qemu.clone()
    };
    let unscanned = kmemleak_built && report.kmemleak_state.is_none();
    let mut judged = session::judge_report(
        dir,
        report,
        driver,
        qemu,
        guest.mux_failure.clone(),
        kmemleak_built,
    );
    if unscanned {
        judged.report.notes.insert(
            0,
            format!(
                "judged from what it wrote: the guest ended in {culprit} before kmemleak's \
                 scans, so its leaks were not looked for"
            ),
        );
    }
    Some(judged)
}

/// Why test i of the guest of `names` runs again in a guest of its own, the guest having
/// started `started` of them and ended in `culprit` (none if it ended well).
fn again_why(names: &[&str], i: usize, started: usize, culprit: Option<usize>) -> String {
    let shared = names.join(", ");
    match culprit {
        None => format!(
            "not started in the guest shared with {shared} (the test before it disturbed the \
             kernel or the guest ran out of time; see its init.log)"
        ),
        Some(c) if i < c => format!(
            "the guest it shared with {shared} ended in {} before it wrote its status",
            names[c]
        ),
        Some(c) => {
            let before = if i < started {
                "reporting"
            } else {
                "it started"
            };
            format!(
                "the guest it shared with {shared} ended in {} before {before}",
                names[c]
            )
        }
    }
}

/// A shared guest's test's own time: from the guest's uptime at its start
/// (`slot-uptime`) to its end (`end-uptime`), or none when the guest did not say.
fn slot_wall(dir: &Path) -> Option<std::time::Duration> {
    let read = |name: &str| -> Option<f64> {
        guest_report::read_text(&dir.join(name))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    let start = read("slot-uptime")?;
    let end = read("end-uptime")?;
    (end >= start).then(|| std::time::Duration::from_secs_f64(end - start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;

    #[test]
    fn each_test_gets_its_part_of_the_console() {
        let console = "boot\nlab-init: slot 1: a begins\na's line\n\
                       lab-init: slot 2: b begins\nb's line\n\
                       lab-init: slots end: kmemleak\n\
                       kmemleak: 1 new suspected memory leaks (see /sys/kernel/debug/kmemleak)\n\
                       late WARNING: x\n";
        let parts = split_console(console, 3);
        assert_eq!(parts[0], "boot\nlab-init: slot 1: a begins\na's line\n");
        assert_eq!(
            parts[1],
            "lab-init: slot 2: b begins\nb's line\nlab-init: slots end: kmemleak\nlate WARNING: x\n"
        );
        assert_eq!(parts[2], "");
        // A mark naming no slot of this guest moves nothing.
        let parts = split_console("x\nlab-init: slot 9: z begins\ny\n", 2);
        assert_eq!(parts[0], "x\nlab-init: slot 9: z begins\ny\n");
    }

    #[test]
    fn each_test_gets_the_leaks_it_allocated() {
        let all = "unreferenced object 0xffff1 (size 8):\n  comm \"a\", pid 1, jiffies 100\n  backtrace:\n\
                   unreferenced object 0xffff2 (size 8):\n  comm \"b\", pid 2, jiffies 250\n\
                   unreferenced object 0xffff3 (size 8):\n  comm \"c\", pid 3\n";
        let first = kmemleak_share(all, 0, Some(200));
        assert!(first.contains("0xffff1") && !first.contains("0xffff2"));
        assert!(
            first.contains("0xffff3"),
            "an object without a time is everybody's"
        );
        let second = kmemleak_share(all, 200, None);
        assert!(!second.contains("0xffff1") && second.contains("0xffff2"));
        assert_eq!(kmemleak_share("", 0, None), "");
        assert_eq!(
            object_jiffies("comm \"x\", pid 1, jiffies 4294937296\n"),
            Some(4294937296)
        );
    }

    /// The results directories of a guest of `names` in a fresh temporary directory.
    fn slot_dirs(tag: &str, names: &[&str]) -> (PathBuf, Vec<PathBuf>) {
        let base =
            std::env::temp_dir().join(format!("pvrdma-lab-shared-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let dirs: Vec<PathBuf> = names.iter().map(|n| base.join(n)).collect();
        for dir in &dirs {
            fs::create_dir_all(dir).unwrap();
        }
        (base, dirs)
    }

    /// Writes `files` (name, content) into `dir`.
    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, content) in files {
            fs::write(dir.join(name), content).unwrap();
        }
    }

    /// What init writes for a test that ran to the end of its collection, having exited with
    /// `status`, before the guest's last step (kmemleak's scans and `done`).
    fn finished(dir: &Path, status: &str, log: &str, dmesg: &str) {
        write(
            dir,
            &[
                ("stage", "collect\n"),
                ("setup", "ok\n"),
                ("status", status),
                ("test.log", log),
                ("teardown", "ok\n"),
                ("dmesg.txt", dmesg),
                ("tainted", "4096\n"),
                ("slot-uptime", "10.0\n"),
                ("end-uptime", "20.0\n"),
            ],
        );
    }

    /// A guest killed at its time limit.
    fn hung_guest() -> GuestEnd {
        GuestEnd {
            qemu: QemuEnd::TimedOut {
                limit_secs: 900,
                postmortem: "QEMU's vCPU thread in cpu_exec".into(),
            },
            mux_failure: None,
            wall: Duration::from_secs(900),
        }
    }

    /// The verdict and notes of a judged slot.
    fn judged(end: &SlotEnd) -> (&Verdict, &[String]) {
        match end {
            SlotEnd::Judged(outcome) => (&outcome.verdict, &outcome.notes),
            SlotEnd::Again(why) => panic!("run again: {why}"),
        }
    }

    const CONSOLE: &str = "boot\nlab-init: slot 1: a begins\nlab-init: slot 2: b begins\n\
                           lab-init: slot 3: c begins\n";

    /// A test that wrote a failing status before a later test of its guest hung
    /// it is reported as failed, not run again (an intermittent failure would then pass); a
    /// test that passed before it is judged from what it wrote, its leak check said to be
    /// missing; the test the guest ended in is judged with its end; only the test the guest
    /// never started runs again.
    #[test]
    fn a_failure_written_before_the_guest_crashed_is_reported() {
        let (base, dirs) = slot_dirs("crash", &["a", "b", "c", "d"]);
        write(&dirs[0], &[("console.log", CONSOLE)]);
        finished(&dirs[0], "1\n", "FAIL: a's check\n", "[ 1.0] fine\n");
        finished(&dirs[1], "0\n", "", "[ 2.0] fine\n");
        write(&dirs[2], &[("stage", "test c\n"), ("setup", "ok\n")]);
        let ends = judge_slots(
            Driver::Rust,
            true,
            &["a", "b", "c", "d"],
            &dirs,
            &hung_guest(),
        );
        fs::remove_dir_all(&base).unwrap();
        let Verdict::Fail { cause, .. } = judged(&ends[0]).0 else {
            panic!("a passed");
        };
        assert_eq!(cause, "a's check");
        let (verdict, notes) = judged(&ends[1]);
        assert_eq!(*verdict, Verdict::Pass);
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("judged from what it wrote: the guest ended in c")),
            "{notes:?}"
        );
        let Verdict::Fail { cause, .. } = judged(&ends[2]).0 else {
            panic!("c passed");
        };
        assert!(
            cause.starts_with("guest did not report within 900 s"),
            "{cause}"
        );
        let SlotEnd::Again(why) = &ends[3] else {
            panic!("d judged");
        };
        assert!(why.ends_with("ended in c before it started"), "{why}");
    }

    /// A test that passed before its guest crashed is judged from its own `dmesg.txt` too, and
    /// one whose collection the guest never finished from the guest's end; one that wrote no
    /// status runs again.
    #[test]
    fn a_test_before_the_crash_is_judged_from_its_own_report() {
        let (base, dirs) = slot_dirs("dmesg", &["a", "b", "c"]);
        write(&dirs[0], &[("console.log", CONSOLE)]);
        finished(
            &dirs[0],
            "0\n",
            "",
            "[ 1.0] WARNING: CPU: 0 PID: 1 at x.c:1 f\n[ 1.1] Call Trace:\n",
        );
        write(
            &dirs[1],
            &[("stage", "collect\n"), ("setup", "ok\n"), ("status", "0\n")],
        );
        write(&dirs[2], &[("stage", "test c\n")]);
        let ends = judge_slots(Driver::Rust, true, &["a", "b", "c"], &dirs, &hung_guest());
        let Verdict::Fail {
            cause,
            kernel_problem,
        } = judged(&ends[0]).0
        else {
            panic!("a passed");
        };
        assert!(kernel_problem, "{cause}");
        let Verdict::Fail { cause, .. } = judged(&ends[1]).0 else {
            panic!("b passed");
        };
        assert!(
            cause.starts_with("guest did not report within 900 s"),
            "{cause}"
        );
        fs::remove_file(dirs[1].join("status")).unwrap();
        let ends = judge_slots(Driver::Rust, true, &["a", "b", "c"], &dirs, &hung_guest());
        fs::remove_dir_all(&base).unwrap();
        let SlotEnd::Again(why) = &ends[1] else {
            panic!("b judged");
        };
        assert!(
            why.ends_with("ended in c before it wrote its status"),
            "{why}"
        );
    }
}
