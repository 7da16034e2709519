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
//! tests it did not start, and those whose report the guest never finished,
//! are handed back to run in guests of their own.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

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
    let first = &dirs[0];
    let dir_refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let (qemu_end, mux_failure) =
        match session::run_guest(layout, model, driver, module, tests, &dir_refs) {
            Ok(end) => end,
            Err(e) => return lab_failure(e),
        };
    let wall = started.elapsed();

    // The guest's console and QEMU's log, then each test's part of them.
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
    let ended_normally = matches!(qemu_end, QemuEnd::Exited { success: true, .. });
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
    let names: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
    let mut ends = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let judge_here = match culprit {
            None => i < started_tests,
            Some(c) => i == c,
        };
        if !judge_here {
            ends.push(SlotEnd::Again(if i >= started_tests && culprit.is_none() {
                format!(
                    "not started in the guest shared with {} (the test before it disturbed \
                     the kernel or the guest ran out of time; see its init.log)",
                    names.join(", ")
                )
            } else {
                format!(
                    "the guest it shared with {} ended in {} before reporting",
                    names.join(", "),
                    names[culprit.unwrap_or(0)]
                )
            }));
            continue;
        }
        let end = if culprit.is_some() {
            qemu_end.clone()
        } else {
            QemuEnd::Exited {
                status: "exited normally".into(),
                success: true,
            }
        };
        let judged = session::judge_guest(
            dir,
            driver,
            end,
            mux_failure.clone(),
            layout.kernel_has_kmemleak,
        );
        let mut notes = judged.report.notes.clone();
        notes.insert(
            0,
            format!(
                "guest shared by {} tests ({}), test {} of them; the guest's wall {:.1} s",
                tests.len(),
                names.join(", "),
                i + 1,
                wall.as_secs_f64()
            ),
        );
        ends.push(SlotEnd::Judged(Box::new(Outcome {
            verdict: judged.verdict,
            boot_secs: judged.report.boot_secs,
            test_secs: judged.report.test_secs,
            wall: slot_wall(dir).unwrap_or(wall),
            notes,
            reference_bugs: judged.reference_bugs,
        })));
    }
    Ok(ends)
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
}
