// SPDX-License-Identifier: GPL-2.0-only
//! Known kernel reports that are not the Rust driver's: bugs of the reference C
//! driver (vmw_pvrdma) itself, and bugs of the kernel outside both drivers that
//! the debug kernel's checkers expose on paths the tests take.
//!
//! The runner fails a test on any kernel report. The exceptions are such known
//! bugs: a bug of the C driver that the lab's tests can trigger but no device
//! model causes (set aside for the C driver only), and a bug of another part of
//! the kernel (set aside for either driver, named as such). The bugs and their
//! forms are data, in `known-failures.toml` ([`crate::known_failures`]); this
//! is how they apply.
//! The guest's dmesg is cut into reports (a report's first line, its header,
//! its call trace); a report is the bug's when it has one of the forms the bug
//! is known to produce: every line of the form's message in the report's
//! header, and the form's frames consecutive in its call trace. When every
//! kernel problem of a run lies in such reports (every line its message stands
//! on is one of such a report's own lines), the problems are set aside, the
//! test is judged on the rest, and its TAP line says `# TODO` with the bugs'
//! causes. A problem outside such a report (on a line of another report, even
//! with the same text as a line of the known one; a kmemleak finding; a taint
//! but the W of a known WARN), or a C-driver bug's report with the Rust driver,
//! is still a failure.

use crate::cli::Driver;
use crate::kernel_log::{kernel_message, Log, Place, Problem, KMEMLEAK_REPORT};
use crate::known_failures::catalogue;

/// Whose bug a known report is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The reference C driver's: set aside for the C driver only.
    CDriver,
    /// The kernel's, outside both drivers: set aside for either.
    Kernel,
}

impl Owner {
    /// Whose bug it is, for the TAP line.
    pub fn describe(self) -> &'static str {
        match self {
            Owner::CDriver => "known bug of the reference C driver",
            Owner::Kernel => "known bug of the kernel outside the drivers",
        }
    }
}

/// A bug whose kernel reports the lab recognises (`[[reference_bug]]`).
#[derive(Debug)]
pub struct ReferenceBug {
    /// Its id in the data file.
    pub id: String,
    /// Whose it is.
    pub owner: Owner,
    /// What happens.
    pub cause: String,
    /// The shapes its report takes; a report is the bug's if it has one of them.
    pub forms: Vec<ReportForm>,
}

/// One shape of a known bug's kernel report (`[[reference_bug.form]]`).
#[derive(Debug)]
pub struct ReportForm {
    /// Its id among its bug's forms.
    pub id: String,
    /// What the report's header (its lines before `Call Trace:`) must contain: for each entry,
    /// one of its alternatives.
    pub header: Vec<Vec<String>>,
    /// Frames (`function+` with the module, if any) that must follow each other in the
    /// report's call trace, unreliable (`? `) frames and `<IRQ>` markers skipped.
    pub frames: Vec<String>,
    /// For ODEBUG's reports of a freed, still pending `kobject_delayed_cleanup` timer (the
    /// debug kernel's `CONFIG_DEBUG_KOBJECT_RELEASE`): how the name of the kobject that timer
    /// belongs to starts (see [`Report::kobject`]); None: any report, or none of these.
    pub kobject: Option<String>,
    /// The frames kmemleak's backtrace of that kobject's name shows when the name is left
    /// unfreed because ODEBUG cancelled the release that would have freed it (consecutive, as
    /// in [`ReportForm::frames`]); empty: the form leaks nothing.
    pub leaked_name: Vec<String>,
}

/// One kernel report in a log: its header lines, then its call trace.
#[derive(Debug)]
struct Report {
    /// The log it is in.
    log: Log,
    /// The lines of the log it takes (as [`Place::line`] counts them), from its first to its
    /// last: a known report explains the problems on these lines and no others. Another CPU's
    /// messages printed into it are not among them.
    lines: Vec<usize>,
    /// Whether it started with `cut here` (a WARN: its `WARNING:` line follows).
    cut: bool,
    header: Vec<String>,
    trace: Vec<String>,
    /// For ODEBUG's report of a freed `kobject_delayed_cleanup` timer: the name of the kobject
    /// whose delayed release the timer is, from the debug kernel's announcement of that release
    /// earlier in the log ("kobject: 'NAME' (ADDRESS): kobject_release, parent ... (delayed
    /// N)", the timer within the kobject: [`KOBJECT_SPAN`] bytes from its address).
    kobject: Option<String>,
}

/// How far past a kobject's address the timer of its delayed release lies, at most: the size
/// of `struct kobject` is below it (the timer was seen at +0x88 on the debug kernel).
const KOBJECT_SPAN: u64 = 0x100;

/// A kobject release that `CONFIG_DEBUG_KOBJECT_RELEASE` delays: its address and name.
fn delayed_release(message: &str) -> Option<(u64, &str)> {
    let rest = message.strip_prefix("kobject: '")?;
    let (name, rest) = rest.split_once("' (")?;
    let (address, rest) = rest.split_once("): kobject_release, parent ")?;
    if !rest.contains(" (delayed ") {
        return None;
    }
    Some((u64::from_str_radix(address, 16).ok()?, name))
}

/// The object an ODEBUG report names ("ODEBUG: free active (active state 0) object:
/// ffff88800afbee90 object type: timer_list hint: kobject_delayed_cleanup+0x0/0x100"), if the
/// object is a kobject's delayed release timer.
fn delayed_release_timer(header: &[String]) -> Option<u64> {
    let line = header
        .iter()
        .find(|line| line.contains("ODEBUG: ") && line.contains("hint: kobject_delayed_cleanup"))?;
    let (_, rest) = line.split_once(" object: ")?;
    let (address, _) = rest.split_once(' ')?;
    u64::from_str_radix(address, 16).ok()
}

impl Report {
    /// The report that starts with `message`, on line `line` of `log`.
    fn new(log: Log, line: usize, message: &str) -> Report {
        Report {
            log,
            lines: vec![line],
            cut: message
                .trim_start()
                .starts_with("------------[ cut here ]------------"),
            header: vec![message.to_string()],
            trace: Vec::new(),
            kobject: None,
        }
    }

    fn messages(&self) -> impl Iterator<Item = &String> {
        self.header.iter().chain(&self.trace)
    }

    /// Whether the report takes the line at `place`.
    fn takes(&self, place: &Place) -> bool {
        self.log == place.log && self.lines.contains(&place.line)
    }

    /// Whether `message` belongs to the report (see [`reports`]).
    fn continues_with(&self, message: &str) -> bool {
        let header_line =
            message.starts_with(' ') || HEADER_PREFIXES.iter().any(|p| message.starts_with(p));
        if !self.trace.is_empty() {
            return header_line;
        }
        // After `cut here`: the WARN's message, whatever it says, then its `WARNING:` line.
        // UBSAN's report has one line of detail after its first ("shift exponent 64 is too
        // large for 64-bit type 'unsigned long'").
        (self.cut && self.header.len() == 1)
            || self
                .header
                .last()
                .is_some_and(|line| line.starts_with("UBSAN: "))
            || header_line
            || message.trim_start().starts_with("Call Trace:")
            || (self.cut
                && message.starts_with("WARNING: ")
                && !self.header.iter().any(|l| l.starts_with("WARNING: ")))
    }

    /// Adds `message`, on line `line` of the report's log.
    fn push(&mut self, line: usize, message: &str) {
        self.lines.push(line);
        if self.trace.is_empty() && !message.trim_start().starts_with("Call Trace:") {
            self.header.push(message.to_string());
        } else {
            self.trace.push(message.to_string());
        }
    }

    /// Whether the report has `form`.
    fn has_form(&self, form: &ReportForm) -> bool {
        let header_ok = form.header.iter().all(|alternatives| {
            alternatives
                .iter()
                .any(|text| self.header.iter().any(|line| line.contains(text.as_str())))
        });
        let frames_ok = has_consecutive(&reliable_frames(&self.trace), &form.frames);
        let kobject_ok = form.kobject.as_deref().is_none_or(|prefix| {
            self.kobject
                .as_deref()
                .is_some_and(|name| name.starts_with(prefix))
        });
        header_ok && frames_ok && kobject_ok
    }
}

/// The reliable frames of a call trace or backtrace: `function+0x../0x.. [module]` becomes
/// `function+ [module]`; unreliable (`? `) frames and `<IRQ>`-like markers are left out.
fn reliable_frames(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|line| line.trim())
        .filter(|line| !line.starts_with('?') && !line.starts_with('<'))
        .filter_map(|line| {
            let (function, rest) = line.split_once('+')?;
            let module = rest.split_once(' ').map(|(_, m)| m.trim());
            Some(match module {
                Some(m) if !m.is_empty() => format!("{function}+ {m}"),
                _ => format!("{function}+"),
            })
        })
        .collect()
}

/// Whether `frames` holds `want` as consecutive frames (an empty `want` is in any).
fn has_consecutive(frames: &[String], want: &[impl AsRef<str>]) -> bool {
    want.is_empty()
        || frames
            .windows(want.len())
            .any(|w| w.iter().zip(want).all(|(have, want)| have == want.as_ref()))
}

/// Lines that continue a report's header: the CPU and hardware, a worker's workqueue, the
/// modules, the registers and code, lockdep's interrupt state.
const HEADER_PREFIXES: &[&str] = &[
    "CPU: ",
    "Hardware name: ",
    "Workqueue: ",
    "Modules linked in:",
    "Tainted: ",
    "RIP: ",
    "Code: ",
    "RSP: ",
    "RAX: ",
    "RDX: ",
    "RBP: ",
    "R10: ",
    "R13: ",
    "FS: ",
    "CS: ",
    "CR2: ",
    "DR0: ",
    "DR3: ",
    "PKRU: ",
    "irq event stamp: ",
    "hardirqs last ",
    "softirqs last ",
];

/// The reports in `text`, the log `log`: each starts at a `cut here` line or a
/// `BUG:`/`WARNING:` line outside a report, takes the header lines that follow
/// (after `cut here`: the WARN's message line and its `WARNING:` line), then
/// `Call Trace:` and every indented line after it, and ends at `---[ end trace`
/// or at the first line that belongs to none of these.
fn reports(log: Log, text: &str) -> Vec<Report> {
    let mut reports = Vec::new();
    let mut current: Option<Report> = None;
    // The kobject releases the debug kernel delayed so far: (address, name).
    let mut releases: Vec<(u64, String)> = Vec::new();
    let finish = |mut report: Report, releases: &[(u64, String)]| {
        report.kobject = delayed_release_timer(&report.header).and_then(|timer| {
            releases
                .iter()
                .rev()
                .find(|(address, _)| timer > *address && timer - address < KOBJECT_SPAN)
                .map(|(_, name)| name.clone())
        });
        report
    };
    let messages = text
        .lines()
        .enumerate()
        .filter_map(|(at, line)| Some((at, kernel_message(line)?)));
    for (at, message) in messages {
        let trimmed = message.trim_start();
        if let Some((address, name)) = delayed_release(trimmed) {
            releases.push((address, name.to_string()));
        }
        if let Some(report) = current.as_mut() {
            // Another CPU's device message printed into the middle of the report (seen: the
            // fuzzer's refusals on CPU 0 inside a WARN from an interrupt on CPU 1): not part of
            // it, and not its end.
            if is_device_message(message) {
                continue;
            }
            // Likewise the debug kernel's announcement of a delayed kobject release (seen: one
            // from CPU 0 right after the `cut here` of a WARN on CPU 1, where it would have been
            // taken for the WARN's message); it is recorded above.
            if delayed_release(trimmed).is_some() {
                continue;
            }
            // And what KUnit prints meanwhile on another CPU (seen, kunit on the debug kernel: a
            // result, an empty line, a test's location and a doctest's own output inside a WARN).
            if is_kunit_line(trimmed) {
                continue;
            }
            if trimmed.starts_with("---[ end trace") {
                report.lines.push(at);
                report.trace.push(message.to_string());
                reports.extend(current.take().map(|r| finish(r, &releases)));
                continue;
            }
            if report.continues_with(message) {
                report.push(at, message);
                continue;
            }
            reports.extend(current.take().map(|r| finish(r, &releases)));
        }
        let starts = ["------------[ cut here ]------------", "BUG:", "WARNING:"];
        if starts.iter().any(|start| trimmed.starts_with(start)) {
            current = Some(Report::new(log, at, message));
        }
    }
    reports.extend(current.map(|r| finish(r, &releases)));
    reports
}

/// Whether `message` is a device's own message (`dev_*()`: "<driver> <PCI
/// address>: ..."), which no line of a WARN or BUG report is.
/// Whether `line` (trimmed) is KUnit's: a KTAP result (`ok N name`, `not ok N name`), a KTAP
/// diagnostic (`# ...`), an empty line between results, or the output of the `kernel` crate's
/// doctests (`rust_doctests_kernel: ...`).
fn is_kunit_line(line: &str) -> bool {
    if line.is_empty() || line.starts_with("# ") || line.starts_with("rust_doctests_kernel: ") {
        return true;
    }
    let rest = line
        .strip_prefix("not ok ")
        .or_else(|| line.strip_prefix("ok "));
    rest.and_then(|r| r.split(' ').next())
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn is_device_message(message: &str) -> bool {
    let Some((driver, rest)) = message.split_once(' ') else {
        return false;
    };
    let Some((address, _)) = rest.split_once(": ") else {
        return false;
    };
    // "0000:00:04.1": domain, bus, slot and function, in hex.
    let shape = address.bytes().enumerate().all(|(i, b)| match i {
        4 | 7 => b == b':',
        10 => b == b'.',
        _ => b.is_ascii_hexdigit(),
    });
    !driver.is_empty() && !driver.ends_with(':') && address.len() == 12 && shape
}

/// One object of kmemleak's report.
#[derive(Debug)]
struct LeakedObject {
    /// The string its first bytes hold, if its hex dump shows the string's end (a NUL).
    text: Option<String>,
    /// Its allocation's backtrace, as [`reliable_frames`].
    frames: Vec<String>,
}

/// The objects of kmemleak's report (/sys/kernel/debug/kmemleak): each starts at an
/// `unreferenced object` line; its hex dump's lines hold the bytes before a two-space gap (the
/// ASCII column after it), its backtrace's lines follow `backtrace`.
fn leaked_objects(kmemleak: &str) -> Vec<LeakedObject> {
    let mut objects = Vec::new();
    for block in kmemleak.split("unreferenced object").skip(1) {
        let mut bytes = Vec::new();
        let mut backtrace = Vec::new();
        // The section the lines are in: the header, the hex dump, the backtrace.
        let mut in_hex_dump = false;
        let mut in_backtrace = false;
        for line in block.lines().skip(1).map(str::trim) {
            if line.starts_with("hex dump") {
                in_hex_dump = true;
            } else if line.starts_with("backtrace") {
                (in_hex_dump, in_backtrace) = (false, true);
            } else if in_hex_dump {
                let hex = line.split("  ").next().unwrap_or("");
                bytes.extend(
                    hex.split_whitespace()
                        .map_while(|byte| u8::from_str_radix(byte, 16).ok()),
                );
            } else if in_backtrace {
                backtrace.push(line.to_string());
            }
        }
        let text = bytes
            .iter()
            .position(|&b| b == 0)
            .and_then(|end| String::from_utf8(bytes[..end].to_vec()).ok());
        objects.push(LeakedObject {
            text,
            frames: reliable_frames(&backtrace),
        });
    }
    objects
}

/// A report of a known form in a log: the report, its bug and the form.
type KnownReport<'a> = (&'a Report, &'static ReferenceBug, &'static ReportForm);

/// The known bugs that explain `problems`: every one of them lies in a report of one of `logs`
/// (the saved dmesg, the console) with the form of a known bug that `driver` may be excused
/// (a C-driver bug for the C driver only, a kernel bug for either), or is kmemleak's finding of
/// objects each of which is a consequence of such a report (a kobject's name its cancelled
/// release left, as the form says), found in `kmemleak` (kmemleak's report). Empty when some
/// problem is not explained, or there is none. Both logs count: a test that floods the kernel
/// log (the fuzzer's refusals) pushes an early report out of the ring buffer that dmesg is read
/// from at the end, while the console keeps every line.
pub fn excuse(
    driver: Driver,
    problems: &[Problem],
    logs: &[(Log, &str)],
    kmemleak: &str,
) -> Vec<&'static ReferenceBug> {
    if problems.is_empty() {
        return Vec::new();
    }
    let reports: Vec<Report> = logs
        .iter()
        .flat_map(|(log, text)| reports(*log, text))
        .collect();
    let known = known_reports(driver, &reports);
    let objects = leaked_objects(kmemleak);
    let mut bugs: Vec<&'static ReferenceBug> = Vec::new();
    for problem in problems {
        let Some(found) = explain(problem, &known, &objects) else {
            return Vec::new();
        };
        for bug in found {
            if !bugs.iter().any(|b| core::ptr::eq(*b, bug)) {
                bugs.push(bug);
            }
        }
    }
    bugs
}

/// The known forms of the reports in `logs` whose bugs `driver` may be excused, each with its
/// bug: which entries of the data file a log's reports match.
#[cfg(test)]
pub fn forms_found(
    driver: Driver,
    logs: &[(Log, &str)],
) -> Vec<(&'static ReferenceBug, &'static ReportForm)> {
    let reports: Vec<Report> = logs
        .iter()
        .flat_map(|(log, text)| reports(*log, text))
        .collect();
    known_reports(driver, &reports)
        .into_iter()
        .map(|(_, bug, form)| (bug, form))
        .collect()
}

/// Each of `reports` with a known form whose bug `driver` may be excused.
fn known_reports(driver: Driver, reports: &[Report]) -> Vec<KnownReport<'_>> {
    let applies = |bug: &ReferenceBug| bug.owner == Owner::Kernel || driver == Driver::C;
    reports
        .iter()
        .filter_map(|report| {
            catalogue()
                .reference_bugs
                .iter()
                .filter(|bug| applies(bug))
                .find_map(|bug| {
                    let form = bug.forms.iter().find(|form| report.has_form(form))?;
                    Some((report, bug, form))
                })
        })
        .collect()
}

/// The known bugs that explain `problem`, or None if it is not explained. A message read from
/// a log is explained where it stands, not by its text: each of its places must be a line of
/// a known report, since the same text (a `Call Trace:`, a `cut here`, the same `WARNING:`)
/// elsewhere is another report's. A W taint is a known WARN's; kmemleak's finding is the
/// known reports' whose leftovers its objects all are.
fn explain(
    problem: &Problem,
    known: &[KnownReport],
    objects: &[LeakedObject],
) -> Option<Vec<&'static ReferenceBug>> {
    let bug = |(_, bug, _): &KnownReport| *bug;
    if crate::verdict::is_warning_taint(problem) {
        // A WARN taints the kernel (W): that taint is a known WARN's too.
        return known
            .iter()
            .find(|(report, _, _)| {
                report
                    .messages()
                    .any(|line| line.trim_start().starts_with("WARNING:"))
            })
            .map(|found| vec![bug(found)]);
    }
    if problem.kind == KMEMLEAK_REPORT {
        // Every object must be a known report's leftover (and a finding without objects is
        // no one's).
        return objects
            .iter()
            .map(|object| leaving(object, known).map(bug))
            .collect::<Option<Vec<_>>>()
            .filter(|bugs| !bugs.is_empty());
    }
    if problem.places.is_empty() {
        return None;
    }
    problem
        .places
        .iter()
        .map(|place| {
            known
                .iter()
                .find(|(report, _, _)| report.takes(place))
                .map(bug)
        })
        .collect()
}

/// The known report whose form leaves `object` behind (a kobject's name its cancelled release
/// did not free), if there is one.
fn leaving<'a, 'r>(
    object: &LeakedObject,
    known: &'a [KnownReport<'r>],
) -> Option<&'a KnownReport<'r>> {
    known.iter().find(|(report, _, form)| {
        !form.leaked_name.is_empty()
            && report.kobject.is_some()
            && report.kobject == object.text
            && has_consecutive(&object.frames, &form.leaked_name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_log::scan;
    use Log::{Console, Dmesg};

    /// A sample of the known reports' evidence (tests/fixtures/known-failures).
    macro_rules! fixture {
        ($path:literal) => {
            include_str!(concat!("../tests/fixtures/known-failures/", $path))
        };
    }

    /// The lockdep form, as seen.
    const LOCKDEP: &str = fixture!("pvrdma-cmd-post-completion-race/lockdep-class/match.dmesg");

    /// The debug spinlock form, as seen (two of 22 runs of verbs_resources).
    const UNLOCKED: &str =
        fixture!("pvrdma-cmd-post-completion-race/spinlock-unlocked/match.dmesg");

    /// The lockdep form on 7.3, as seen (trimmed): the other key, 7.3's WARNING line, and
    /// unreliable frames between the reliable ones.
    const LOCKDEP_7_3: &str =
        fixture!("pvrdma-cmd-post-completion-race/lockdep-class/match-7.3.dmesg");

    /// The race on the debug kernel (stock verbs_resources, 2026-11-28, trimmed): both names
    /// "&x->wait", the interrupt taken in a worker (its `Workqueue:` line in the header).
    const LOCKDEP_SAME_NAME: &str =
        fixture!("pvrdma-cmd-post-completion-race/lockdep-class/match-same-name.dmesg");

    fn excused(driver: Driver, log: &str) -> bool {
        !excuse(driver, &scan(Dmesg, log), &[(Dmesg, log)], "").is_empty()
    }

    #[test]
    fn each_form_of_the_race_is_recognised_only_for_the_c_driver() {
        let other_key = LOCKDEP.replace(
            "\"&q->lock\" with key init_completion.__key [vmw_pvrdma], but found a different \
             class \"&x->wait\"",
            "\"&x->wait\" with key __init_swait_queue_head.__key, but found a different class \
             \"&q->lock\"",
        );
        assert_ne!(other_key, LOCKDEP);
        for log in [
            LOCKDEP,
            UNLOCKED,
            LOCKDEP_7_3,
            &other_key,
            LOCKDEP_SAME_NAME,
        ] {
            assert!(!scan(Dmesg, log).is_empty());
            assert!(excused(Driver::C, log), "{log}");
            assert!(!excused(Driver::Rust, log), "{log}");
        }
        // The names are open, the key and the frames are not: the near misses of the form's
        // evidence (another module's completion, or a complete() from another handler) are not
        // the race (crate::reachability).
    }

    #[test]
    fn the_warning_taint_of_a_known_warn_is_excused_with_it() {
        use crate::verdict::taint_problem;
        let warned = taint_problem(1 << 9 | 1 << 12).unwrap();
        let died = taint_problem(1 << 7 | 1 << 9).unwrap();
        // LOCKDEP is a WARN: its W taint goes with it.
        let mut problems = scan(Dmesg, LOCKDEP);
        problems.push(warned.clone());
        assert!(!excuse(Driver::C, &problems, &[(Dmesg, LOCKDEP)], "").is_empty());
        // UNLOCKED is a spinlock BUG, which taints nothing: a W is another report's.
        let mut problems = scan(Dmesg, UNLOCKED);
        problems.push(warned);
        assert!(excuse(Driver::C, &problems, &[(Dmesg, UNLOCKED)], "").is_empty());
        // Any other taint is never the known bug's.
        let mut problems = scan(Dmesg, LOCKDEP);
        problems.push(died);
        assert!(excuse(Driver::C, &problems, &[(Dmesg, LOCKDEP)], "").is_empty());
    }

    /// The C driver's CQ size overflow on the debug kernel, as seen in uverbs_fuzz (trimmed).
    const CQ_SIZE_SHIFT: &str = fixture!("pvrdma-create-cq-size-shift/ubsan-shift/match.dmesg");

    #[test]
    fn the_cq_size_shift_is_recognised_only_for_the_c_driver() {
        let problems = scan(Dmesg, CQ_SIZE_SHIFT);
        assert_eq!(problems.len(), 3, "{problems:?}");
        let bugs = excuse(Driver::C, &problems, &[(Dmesg, CQ_SIZE_SHIFT)], "");
        let bug = bugs.first().expect("the C driver's bug");
        assert!(bug.cause.contains("pvrdma_create_cq"));
        assert!(excuse(Driver::Rust, &problems, &[(Dmesg, CQ_SIZE_SHIFT)], "").is_empty());
    }

    #[test]
    fn reports_are_cut_at_their_end() {
        let found = reports(Dmesg, UNLOCKED);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].header.len(), 4);
        assert!(found[0].trace.last().unwrap().contains("</TASK>"));
        let found = reports(Dmesg, LOCKDEP_7_3);
        assert_eq!(found.len(), 1);
        assert!(found[0].header[2].starts_with("WARNING: kernel/locking/lockdep.c"));
        assert!(found[0].trace.last().unwrap().contains("end trace"));
        let found = reports(Dmesg, LOCKDEP);
        assert_eq!(found.len(), 1);
        assert!(found[0].header[1].starts_with("Looking for class"));
        assert!(found[0].trace.last().unwrap().contains("end trace"));
    }

    #[test]
    fn a_device_message_printed_into_a_report_does_not_cut_it() {
        // As seen in CI: the fuzzer's refusal on another CPU, right after `cut here`.
        let foreign = "[   28.348700] vmw_pvrdma 0000:00:04.1: queuepair type 255 not supported\n";
        let (cut, rest) = LOCKDEP_7_3.split_once('\n').unwrap();
        let log = format!("{cut}\n{foreign}{rest}");
        let problems = scan(Dmesg, &log);
        assert!(!problems.is_empty());
        assert!(!excuse(Driver::C, &problems, &[(Dmesg, &log)], "").is_empty());
        // The report's lines are all but the foreign one (line 1).
        let found = reports(Dmesg, &log);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].lines[..3], [0, 2, 3]);
        assert_eq!(found[0].lines.len(), log.lines().count() - 2, "{log}");
        assert!(is_device_message(
            "vmw_pvrdma 0000:00:04.1: queuepair type 255 not supported"
        ));
        assert!(!is_device_message("Modules linked in: vmw_pvrdma"));
        assert!(!is_device_message("CPU: 1 UID: 0 PID: 0 Comm: swapper/1"));
        assert!(!is_device_message(" complete+0x16/0x80"));
    }

    #[test]
    fn a_report_gone_from_dmesg_is_found_in_the_console() {
        // The fuzzer's refusals pushed the WARN out of the ring buffer before
        // dmesg was saved; the console has it, with init's lines in between.
        let dmesg = "[   29.356575] vmw_pvrdma 0000:00:04.1: queuepair type 255 not supported\n";
        let console = format!("lab-init: stage: test uverbs_fuzz\n{LOCKDEP_7_3}{dmesg}");
        let problems = scan(Console, &console);
        assert!(!problems.is_empty());
        let logs = [(Dmesg, dmesg), (Console, console.as_str())];
        assert!(!excuse(Driver::C, &problems, &logs, "").is_empty());
        // Not with only the dmesg to go by.
        assert!(excuse(Driver::C, &problems, &[(Dmesg, dmesg)], "").is_empty());
        // Nor with the console read as if it were the dmesg: the problems stand in the console.
        let swapped = [(Dmesg, console.as_str()), (Console, dmesg)];
        assert!(excuse(Driver::C, &problems, &swapped, "").is_empty());
    }

    #[test]
    fn any_other_report_is_not_excused() {
        // Another report after the known one.
        let other = format!("{LOCKDEP}[   41.000000] BUG: unable to handle page fault\n");
        assert!(!excused(Driver::C, &other));
        let warn = "[    1.0] WARNING: CPU: 0 PID: 1 at drivers/x.c:1 f+0x1/0x2\n";
        assert!(!excused(Driver::C, &format!("{LOCKDEP}{warn}")));
        // The same kind of report from somewhere else, frames not consecutive, another lock:
        // the near misses of the forms' evidence (crate::reachability).
        // A lockdep report printed right after the trace is a report of its own.
        let lockdep = "[   41.0] ============================================\n\
                       [   41.0] WARNING: possible recursive locking detected\n";
        let detach = "[   52.285139] vmw_pvrdma 0000:00:04.1: detaching from device\n";
        let next = UNLOCKED.replace(detach, lockdep);
        assert_ne!(next, UNLOCKED);
        assert!(!excused(Driver::C, &next));
        // The problems must be in the report: a log without it excuses nothing.
        assert!(excuse(Driver::C, &scan(Dmesg, LOCKDEP), &[(Dmesg, "")], "").is_empty());
        assert!(excuse(Driver::C, &[], &[(Dmesg, LOCKDEP)], "").is_empty());
    }

    /// A second report whose lines read as the known one's (its `cut here`, `WARNING:` and
    /// `Call Trace:` lines) but from another interrupt handler: its lines stand outside the
    /// known report, which explains none of them.
    #[test]
    fn a_second_report_with_the_known_reports_lines_is_not_excused() {
        let other = LOCKDEP
            .replace("pvrdma_intr0_handler+", "mlx5_eq_int+")
            .replace("[   4", "[   5");
        assert_ne!(other, LOCKDEP);
        assert!(excused(Driver::C, LOCKDEP));
        assert!(!excused(Driver::C, &other));
        assert!(!excused(Driver::C, &format!("{LOCKDEP}{other}")));
        assert!(!excused(Driver::C, &format!("{other}{LOCKDEP}")));
    }

    /// The brief's case, problem by problem: of one `Call Trace:` message standing in two
    /// reports, the known report explains the place in it and not the other.
    #[test]
    fn a_message_is_explained_only_where_it_stands_in_a_known_report() {
        let other = LOCKDEP.replace("pvrdma_intr0_handler+", "mlx5_eq_int+");
        let log = format!("{LOCKDEP}{other}");
        let found = reports(Dmesg, &log);
        let known = known_reports(Driver::C, &found);
        assert_eq!(known.len(), 1);
        let problems = scan(Dmesg, &log);
        let trace = problems
            .iter()
            .find(|p| p.message == "Call Trace:")
            .expect("a call trace");
        let [first, second] = trace.places[..] else {
            panic!("{trace:?}");
        };
        assert_eq!((first.line, second.line), (7, 28));
        let at = |place: Place| Problem {
            places: vec![place],
            ..trace.clone()
        };
        let bugs = explain(&at(first), &known, &[]).expect("the known report's own line");
        assert!(bugs[0].cause.contains("pvrdma_cmd_post"));
        assert!(explain(&at(second), &known, &[]).is_none());
        assert!(explain(trace, &known, &[]).is_none());
        // Nor is a line of the known report's in another log.
        let console = Place {
            log: Console,
            ..first
        };
        assert!(explain(&at(console), &known, &[]).is_none());
    }

    /// A call trace after a known report, in no report of a known form: a `dump_stack()` of
    /// its own, or a spurious interrupt's (kernel/irq/spurious.c).
    const DUMP_STACK: &str = "\
[   42.000000] CPU: 0 UID: 0 PID: 88 Comm: verbs_resources Not tainted 6.12.117 #1
[   42.000001] Call Trace:
[   42.000002]  <TASK>
[   42.000003]  dump_stack_lvl+0x7f/0xc0
[   42.000004]  ib_dealloc_pd_user+0x40/0x90 [ib_core]
[   42.000005]  </TASK>
";

    #[test]
    fn a_call_trace_outside_a_known_report_is_not_excused() {
        let nobody_cared = format!(
            "[   41.900000] irq 11: nobody cared (try booting with the \"irqpoll\" option)\n\
             {DUMP_STACK}"
        );
        for known in [LOCKDEP, UNLOCKED, LOCKDEP_7_3] {
            assert!(excused(Driver::C, known));
            for after in [DUMP_STACK, &nobody_cared] {
                let log = format!("{known}{after}");
                assert!(!excused(Driver::C, &log), "{log}");
            }
        }
    }

    /// The block layer's report under CONFIG_DEBUG_KOBJECT_RELEASE, as seen (nvme_rdma on the
    /// debug kernel, an NVMe namespace's disk released after a disconnect).
    const BLOCK_QUEUE_KOBJ: &str =
        fixture!("block-disk-queue-kobject/odebug-free-active/match.dmesg");

    /// The NFS client's report under CONFIG_DEBUG_KOBJECT_RELEASE, as seen (nfs_rdma on the
    /// debug kernel, the C driver, at umount; trimmed), and kmemleak's report after it.
    const NFS_SERVER_KOBJ: &str = fixture!("nfs-server-kobject/odebug-free-active/match.dmesg");

    const NFS_SERVER_NAME_LEAK: &str =
        fixture!("nfs-server-kobject/odebug-free-active/match.kmemleak");

    /// The problems as the verdict sees them: the log's and kmemleak's count.
    fn nfs_problems(log: &str, kmemleak: &str) -> Vec<Problem> {
        let mut problems = scan(Dmesg, log);
        problems.push(Problem {
            kind: KMEMLEAK_REPORT,
            places: Vec::new(),
            message: format!(
                "kmemleak: {} unreferenced object(s) (see kmemleak.txt)",
                crate::kernel_log::kmemleak_objects(kmemleak)
            ),
        });
        problems
    }

    /// Whether a dmesg `log` with the kmemleak report `leak` is excused for the Rust driver.
    fn nfs_excused(log: &str, leak: &str) -> bool {
        !excuse(
            Driver::Rust,
            &nfs_problems(log, leak),
            &[(Dmesg, log)],
            leak,
        )
        .is_empty()
    }

    #[test]
    fn the_nfs_server_kobject_and_the_name_it_leaks_are_the_kernels() {
        let problems = nfs_problems(NFS_SERVER_KOBJ, NFS_SERVER_NAME_LEAK);
        assert!(problems
            .iter()
            .any(|p| p.message.contains("suspected memory leaks")));
        for driver in [Driver::C, Driver::Rust] {
            let bugs = excuse(
                driver,
                &problems,
                &[(Dmesg, NFS_SERVER_KOBJ)],
                NFS_SERVER_NAME_LEAK,
            );
            assert_eq!(bugs.len(), 1, "{driver:?}");
            assert_eq!(bugs[0].owner, Owner::Kernel);
            assert!(bugs[0].cause.contains("nfs_free_server"));
        }
        // Another leaked object beside the name.
        let more = format!(
            "{NFS_SERVER_NAME_LEAK}{}",
            NFS_SERVER_NAME_LEAK.replace("73 65 72 76 65 72", "64 72 69 76 65 72")
        );
        assert!(!nfs_excused(NFS_SERVER_KOBJ, &more));
        // A name that is not the released kobject's, or allocated elsewhere, another kobject's
        // timer: the near misses of the form's evidence (crate::reachability).
        // A leak the report does not explain: none, or no report.
        assert!(!nfs_excused(NFS_SERVER_KOBJ, ""));
        let no_report: String = NFS_SERVER_KOBJ
            .lines()
            .filter(|l| l.contains("kobject: ") || l.contains("kmemleak"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(!nfs_excused(&no_report, NFS_SERVER_NAME_LEAK));
    }

    /// The NFS client's per-namespace report, as seen (nfs_rdma on the debug kernel, the C
    /// driver, when the nfs module went; trimmed), and kmemleak's report of the name.
    const NFS_NETNS_KOBJ: &str = fixture!("nfs-netns-kobject/odebug-free-active/match.dmesg");

    const NFS_NETNS_NAME_LEAK: &str =
        fixture!("nfs-netns-kobject/odebug-free-active/match.kmemleak");

    /// Another CPU's announcement of a delayed release printed right after `cut here` (seen,
    /// nfs_rdma on the debug kernel): the report is still the NFS server's.
    #[test]
    fn a_release_announced_inside_a_report_does_not_cut_it() {
        let log = NFS_SERVER_KOBJ.replace(
            "[  295.735344] ------------[ cut here ]------------\n",
            "[  295.735344] ------------[ cut here ]------------\n\
             [  295.734793] kobject: 'clnt-1' (ffff88800b2a1300): kobject_release, parent 0000000000000000 (delayed 3000)\n",
        );
        assert_ne!(log, NFS_SERVER_KOBJ);
        let problems = nfs_problems(&log, NFS_SERVER_NAME_LEAK);
        let bugs = excuse(Driver::C, &problems, &[(Dmesg, &log)], NFS_SERVER_NAME_LEAK);
        assert_eq!(bugs.len(), 1);
        assert!(bugs[0].cause.contains("nfs_free_server"));
    }

    #[test]
    fn the_nfs_netns_kobject_and_the_name_it_leaks_are_the_kernels() {
        let problems = nfs_problems(NFS_NETNS_KOBJ, NFS_NETNS_NAME_LEAK);
        for driver in [Driver::C, Driver::Rust] {
            let bugs = excuse(
                driver,
                &problems,
                &[(Dmesg, NFS_NETNS_KOBJ)],
                NFS_NETNS_NAME_LEAK,
            );
            assert_eq!(bugs.len(), 1, "{driver:?}");
            assert_eq!(bugs[0].owner, Owner::Kernel);
            assert!(bugs[0].cause.contains("nfs_netns_sysfs_destroy"));
        }
        // The timer of another kobject (here 'net''s own), freed from elsewhere, a name
        // allocated elsewhere: the near misses of the form's evidence (crate::reachability).
        // Both NFS reports in one run, each leaving its name.
        let both_log = format!("{NFS_SERVER_KOBJ}{NFS_NETNS_KOBJ}");
        let both_leak = format!("{NFS_NETNS_NAME_LEAK}{NFS_SERVER_NAME_LEAK}");
        let bugs = excuse(
            Driver::C,
            &nfs_problems(&both_log, &both_leak),
            &[(Dmesg, &both_log)],
            &both_leak,
        );
        assert_eq!(bugs.len(), 2);
    }

    #[test]
    fn kmemleak_objects_are_read() {
        let objects = leaked_objects(NFS_SERVER_NAME_LEAK);
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0].text.as_deref(), Some("server-0"));
        assert!(has_consecutive(
            &objects[0].frames,
            &["kstrdup+", "kobject_rename+"]
        ));
        // No NUL in the dump: no string.
        let long = NFS_SERVER_NAME_LEAK.replace(" 00 cc", " 41 cc");
        assert_eq!(leaked_objects(&long)[0].text, None);
        assert!(leaked_objects("").is_empty());
    }

    #[test]
    fn a_report_from_a_worker_keeps_its_workqueue_line() {
        // As seen (nvme_rdma, the Rust driver): the WARN from a kworker names its workqueue
        // between the hardware line and the registers.
        let worker = BLOCK_QUEUE_KOBJ.replace(
            "[  350.565616] RIP: 0010:debug_print_object",
            "[  350.565600] Workqueue: async async_run_entry_fn\n[  350.565616] RIP: 0010:debug_print_object",
        );
        assert_ne!(worker, BLOCK_QUEUE_KOBJ);
        assert_eq!(
            excuse(Driver::Rust, &scan(Dmesg, &worker), &[(Dmesg, &worker)], "").len(),
            1
        );
    }

    #[test]
    fn a_kunit_result_inside_a_report_does_not_cut_it() {
        // As seen (kunit, the C driver, debug kernel): a doctest's result from the CPU running
        // the tests, right after the WARN's "Modules linked in".
        let kunit = BLOCK_QUEUE_KOBJ.replace(
            "[  350.563659] CPU: 0 UID",
            "[  350.560000]     ok 358 rust_doctest_kernel_uaccess_rs_2\n\n[  350.563659] CPU: 0 UID",
        )
        .replace(
            "[  350.565616] RIP: 0010:debug_print_object",
            "[  350.565600]     # rust_doctest_kernel_workqueue_rs_0.location: rust/kernel/workqueue.rs:136\n\
             [  350.565610] rust_doctests_kernel: The value is: 42\n\
             [  350.565616] RIP: 0010:debug_print_object",
        );
        assert_ne!(kunit, BLOCK_QUEUE_KOBJ);
        assert_eq!(
            excuse(Driver::C, &scan(Dmesg, &kunit), &[(Dmesg, &kunit)], "").len(),
            1
        );
        assert!(is_kunit_line("not ok 3 rust_rdma_device_name"));
        assert!(!is_kunit_line("ok"));
        assert!(!is_kunit_line("ok then"));
    }

    #[test]
    fn a_c_driver_bug_and_a_kernel_bug_in_one_run() {
        let log = format!("{LOCKDEP}{BLOCK_QUEUE_KOBJ}");
        let problems = scan(Dmesg, &log);
        let bugs = excuse(Driver::C, &problems, &[(Dmesg, &log)], "");
        let owners: Vec<Owner> = bugs.iter().map(|b| b.owner).collect();
        assert_eq!(owners, [Owner::CDriver, Owner::Kernel]);
        // The C driver's report is never set aside for the Rust driver.
        assert!(excuse(Driver::Rust, &problems, &[(Dmesg, &log)], "").is_empty());
    }
}
