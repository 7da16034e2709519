//! Known kernel reports that are not the Rust driver's: bugs of the reference C
//! driver (vmw_pvrdma) itself, and bugs of the kernel outside both drivers that
//! the debug kernel's checkers expose on paths the tests take.
//!
//! The runner fails a test on any kernel report. The exceptions are such known
//! bugs: a bug of the C driver that the lab's tests can trigger but no device
//! model causes (set aside for the C driver only), and a bug of another part of
//! the kernel (set aside for either driver, named as such).
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

/// A bug whose kernel reports the lab recognises.
#[derive(Debug)]
pub struct ReferenceBug {
    /// Whose it is.
    pub owner: Owner,
    /// What happens.
    pub cause: &'static str,
    /// The shapes its report takes; a report is the bug's if it has one of them.
    pub forms: &'static [ReportForm],
}

/// One shape of a known bug's kernel report.
#[derive(Debug)]
pub struct ReportForm {
    /// What the report's header (its lines before `Call Trace:`) must contain: for each entry,
    /// one of its alternatives.
    pub header: &'static [&'static [&'static str]],
    /// Frames (`function+` with the module, if any) that must follow each other in the
    /// report's call trace, unreliable (`? `) frames and `<IRQ>` markers skipped.
    pub frames: &'static [&'static str],
    /// For ODEBUG's reports of a freed, still pending `kobject_delayed_cleanup` timer (the
    /// debug kernel's `CONFIG_DEBUG_KOBJECT_RELEASE`): how the name of the kobject that timer
    /// belongs to starts (see [`Report::kobject`]); None: any report, or none of these.
    pub kobject: Option<&'static str>,
    /// The frames kmemleak's backtrace of that kobject's name shows when the name is left
    /// unfreed because ODEBUG cancelled the release that would have freed it (consecutive, as
    /// in [`ReportForm::frames`]); empty: the form leaks nothing.
    pub leaked_name: &'static [&'static str],
}

/// The known bugs.
pub const REFERENCE_BUGS: &[ReferenceBug] = &[
    ReferenceBug {
        owner: Owner::CDriver,
        cause: "vmw_pvrdma's pvrdma_cmd_post() re-initialises its command completion for every \
            command but does not wait for the completion interrupt of commands without a \
            response (destroys), so the interrupt of one can complete() while the next one's \
            init_completion() runs: lockdep's look_up_lock_class WARN or a debug spinlock BUG \
            from pvrdma_intr0_handler (seen in 2 of 22 runs of verbs_resources on 6.12's stock \
            model, and on 7.3 in verbs_resources and ucmatose; the Rust driver waits for every \
            answer)",
        forms: &[
            // init_completion() -> init_swait_queue_head(&x->wait) -> __init_swait_queue_head():
            // raw_spin_lock_init(&q->lock) (name "&q->lock", swait's key), then
            // lockdep_set_class_and_name() (name "&x->wait", the completion's key), each storing the
            // name and the key separately. complete() in the interrupt handler looks its lock's
            // class up while the name and the key are of different steps, and finds the class of the
            // key registered under another name. Seen: "&q->lock" with the completion's key (6.12),
            // "&q->lock" with swait's key (7.3), and "&x->wait" with the completion's key finding a
            // class "&x->wait" (7.3 debug kernel, stock verbs_resources, 2026-11-28: lockdep
            // compares the names' pointers, and how two pointers to that name met is not worked
            // out; the key and the frames are the C driver's command completion all the same). So
            // the form names the key and leaves the two names open. The WARNING line differs
            // between kernels (6.12: "WARNING: CPU: 1 PID: 0 at kernel/locking/lockdep.c:939
            // look_up_lock_class+", 7.3: "WARNING: kernel/locking/lockdep.c:958 at
            // look_up_lock_class+").
            ReportForm {
                header: &[
                    &[
                        "\" with key init_completion.__key [vmw_pvrdma], but found a different \
                     class \"",
                        "\" with key __init_swait_queue_head.__key, but found a different class \"",
                    ],
                    &["Looking for class \""],
                    &["kernel/locking/lockdep.c:"],
                    &[" look_up_lock_class+"],
                ],
                frames: &["complete+", "pvrdma_intr0_handler+ [vmw_pvrdma]"],
                kobject: None,
                leaked_name: &[],
            },
            // complete() took the lock, init_completion() reset it to unlocked under it, and
            // complete()'s unlock finds it unlocked (tail call: complete's frame is gone). Seen twice
            // in 22 runs of verbs_resources on the stock model.
            ReportForm {
                header: &[&["BUG: spinlock already unlocked on CPU#"]],
                frames: &[
                    "_raw_spin_unlock_irqrestore+",
                    "pvrdma_intr0_handler+ [vmw_pvrdma]",
                ],
                kobject: None,
                leaked_name: &[],
            },
        ],
    },
    ReferenceBug {
        owner: Owner::CDriver,
        cause: "vmw_pvrdma's pvrdma_create_cq() keeps the CQ size a user asks for in an int and \
            rounds it up to a power of two before checking it: a size of 2^31 or more is \
            negative, roundup_pow_of_two() of it shifts by 64 (undefined behaviour, UBSAN's \
            shift-out-of-bounds on the debug kernel), and only then is it refused \
            (uverbs_fuzz; verbs_badinput's cq-cqe-huge and cq-cqe-all-ones reach it too; the \
            Rust driver checks the size first)",
        forms: &[ReportForm {
            header: &[&["UBSAN: shift-out-of-bounds in ./include/linux/log2.h:"]],
            frames: &[
                "__ubsan_handle_shift_out_of_bounds+",
                "pvrdma_create_cq+ [vmw_pvrdma]",
            ],
            kobject: None,
            leaked_name: &[],
        }],
    },
    ReferenceBug {
        owner: Owner::Kernel,
        cause: "the block layer frees a disk while its queue/ kobject's release may still be \
            pending: disk_release() puts disk->queue_kobj and frees the disk right after \
            (bdev_drop -> bdev_free_inode), which is fine when the release runs at once (it does \
            nothing), but with CONFIG_DEBUG_KOBJECT_RELEASE (the debug kernel) the release is \
            delayed by a timer inside the freed disk: ODEBUG's 'free active ... timer_list hint: \
            kobject_delayed_cleanup' WARN when an NVMe namespace's disk goes away (nvme \
            disconnect), with either driver; block/genhd.c, Linux 7.3",
        forms: &[ReportForm {
            header: &[
                &["ODEBUG: free active "],
                &["object type: timer_list hint: kobject_delayed_cleanup"],
            ],
            frames: &["debug_check_no_obj_freed+", "kfree+", "bdev_free_inode+"],
            kobject: Some("queue"),
            // The name is the constant "queue" (kobject_add() of a format without arguments
            // keeps the format): nothing to leak.
            leaked_name: &[],
        }],
    },
    ReferenceBug {
        owner: Owner::Kernel,
        cause: "the NFS client frees a server while its sysfs kobject's release may still be \
            pending: nfs_free_server() puts server->kobj and frees the server after an RCU grace \
            period (call_rcu -> delayed_free -> kfree), which is fine when the release runs at \
            once (nfs_sysfs_sb_release does nothing), but with CONFIG_DEBUG_KOBJECT_RELEASE (the \
            debug kernel) the release is delayed by a timer inside the freed server: ODEBUG's \
            'free active ... timer_list hint: kobject_delayed_cleanup' WARN after an NFS umount \
            (kobject 'server-N'), and the release ODEBUG then cancels never frees the name \
            umount gave the kobject (kobject_rename to 'server-N'): kmemleak's one 16-byte \
            object holding that name; with either driver; fs/nfs/client.c, Linux 7.3",
        forms: &[ReportForm {
            header: &[
                &["ODEBUG: free active "],
                &["object type: timer_list hint: kobject_delayed_cleanup"],
            ],
            // delayed_free() tail-calls kfree(): its frame is gone, rcu_core() called it.
            frames: &["debug_check_no_obj_freed+", "kfree+", "rcu_core+"],
            kobject: Some("server-"),
            leaked_name: &["kstrdup+", "kobject_rename+"],
        }],
    },
    ReferenceBug {
        owner: Owner::Kernel,
        cause: "the NFS client's per-namespace sysfs entry frees its two kobjects' container \
            in the release of one of them: nfs_netns_sysfs_destroy() deletes and puts \
            'nfs_client' and then its parent 'net', whose release (nfs_netns_object_release) \
            kfrees the struct nfs_netns_client holding both, which is fine when releases run at \
            once, but with CONFIG_DEBUG_KOBJECT_RELEASE (the debug kernel) each is delayed by its \
            own timer, 1-4 s at random, and when 'net''s comes first it frees 'nfs_client''s \
            pending timer: ODEBUG's 'free active ... timer_list hint: kobject_delayed_cleanup' \
            WARN from kobject_delayed_cleanup() in a worker when the nfs module goes (its \
            pernet exit), and the release ODEBUG then cancels never frees the kobject's name \
            ('nfs_client', kstrdup'd by kobject_init_and_add): kmemleak's one 16-byte object \
            holding it; with either driver; fs/nfs/sysfs.c, Linux 7.3",
        forms: &[ReportForm {
            header: &[
                &["ODEBUG: free active "],
                &["object type: timer_list hint: kobject_delayed_cleanup"],
            ],
            // kobject_cleanup() tail-calls the release, which tail-calls kfree().
            frames: &[
                "debug_check_no_obj_freed+",
                "kfree+",
                "kobject_delayed_cleanup+",
            ],
            kobject: Some("nfs_client"),
            leaked_name: &[
                "kstrdup+",
                "kobject_set_name_vargs+",
                "kobject_init_and_add+",
            ],
        }],
    },
];

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
                .any(|text| self.header.iter().any(|line| line.contains(text)))
        });
        let frames_ok = has_consecutive(&reliable_frames(&self.trace), form.frames);
        let kobject_ok = form.kobject.is_none_or(|prefix| {
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
fn has_consecutive(frames: &[String], want: &[&str]) -> bool {
    want.is_empty()
        || frames
            .windows(want.len())
            .any(|w| w.iter().zip(want).all(|(have, want)| have == want))
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

/// Each of `reports` with a known form whose bug `driver` may be excused.
fn known_reports(driver: Driver, reports: &[Report]) -> Vec<KnownReport<'_>> {
    let applies = |bug: &ReferenceBug| bug.owner == Owner::Kernel || driver == Driver::C;
    reports
        .iter()
        .filter_map(|report| {
            REFERENCE_BUGS
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
            && has_consecutive(&object.frames, form.leaked_name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_log::scan;
    use Log::{Console, Dmesg};

    /// The lockdep form, as seen.
    const LOCKDEP: &str = "\
[   40.800000] vmw_pvrdma 0000:00:04.1: attached to device
[   40.839300] ------------[ cut here ]------------
[   40.839652] Looking for class \"&q->lock\" with key init_completion.__key [vmw_pvrdma], but found a different class \"&x->wait\" with the same key
[   40.840061] WARNING: CPU: 1 PID: 0 at kernel/locking/lockdep.c:939 look_up_lock_class+0xdc/0x170
[   40.840061] Modules linked in: vmw_pvrdma
[   40.840061] CPU: 1 UID: 0 PID: 0 Comm: swapper/1 Not tainted 6.12.117 #1
[   40.840061] RIP: 0010:look_up_lock_class+0xdc/0x170
[   40.840061] Call Trace:
[   40.840061]  <IRQ>
[   40.840061]  ? __warn+0x8c/0x180
[   40.840061]  register_lock_class+0x4b/0x4a0
[   40.840061]  __lock_acquire+0x84/0x2130
[   40.840061]  lock_acquire+0xd1/0x2e0
[   40.840061]  _raw_spin_lock_irqsave+0x3c/0x60
[   40.840061]  complete+0x16/0x80
[   40.840061]  pvrdma_intr0_handler+0x36/0x40 [vmw_pvrdma]
[   40.840061]  __handle_irq_event_percpu+0xa8/0x180
[   40.840061]  </IRQ>
[   40.840061] irq event stamp: 1234
[   40.840061] ---[ end trace 0000000000000000 ]---
[   41.000000] vmw_pvrdma 0000:00:04.1: detaching from device
";

    /// The debug spinlock form, as seen (two of 22 runs of verbs_resources).
    const UNLOCKED: &str = "\
[   12.650965] vmw_pvrdma 0000:00:04.1: attached to device
[   48.516561] BUG: spinlock already unlocked on CPU#1, swapper/1/0
[   48.516888]  lock: 0xffff888003efd000, .magic: dead4ead, .owner: <none>/-1, .owner_cpu: -1
[   48.517593] CPU: 1 UID: 0 PID: 0 Comm: swapper/1 Not tainted 6.12.117 #1 
[   48.517762] Hardware name: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 1.16.2-debian-1.16.2-1 04/01/2014
[   48.521985] Call Trace:
[   48.522089]  <IRQ>
[   48.522158]  dump_stack_lvl+0x7f/0xc0
[   48.522420]  do_raw_spin_unlock+0x22f/0x290
[   48.522448]  _raw_spin_unlock_irqrestore+0x1f/0x50
[   48.522463]  pvrdma_intr0_handler+0x36/0x40 [vmw_pvrdma]
[   48.522619]  __handle_irq_event_percpu+0xa8/0x180
[   48.522671]  </IRQ>
[   48.522681]  <TASK>
[   48.522685]  asm_common_interrupt+0x22/0x40
[   48.522746] RIP: 0010:tick_nohz_idle_exit+0x107/0x170
[   48.522898] RSP: 0018:ffffc900000a3ec0 EFLAGS: 00000282
[   48.523014]  ? clockevents_program_min_delta+0x16/0x100
[   48.523034]  do_idle+0x274/0x2c0
[   48.523076]  </TASK>
[   52.285139] vmw_pvrdma 0000:00:04.1: detaching from device
";

    /// The lockdep form on 7.3, as seen (trimmed): the other key, 7.3's WARNING line, and
    /// unreliable frames between the reliable ones.
    const LOCKDEP_7_3: &str = "\
[   28.348676] ------------[ cut here ]------------
[   28.348781] Looking for class \"&q->lock\" with key __init_swait_queue_head.__key, but found a different class \"&x->wait\" with the same key
[   28.349201] WARNING: kernel/locking/lockdep.c:958 at look_up_lock_class+0x8c/0x110, CPU#1: swapper/1/0
[   28.350953] Modules linked in: vmw_pvrdma
[   28.351433] CPU: 1 UID: 0 PID: 0 Comm: swapper/1 Not tainted 7.3.4 #1 PREEMPT(lazy)  
[   28.353426] FS:  0000000000000000(0000) GS:ffff8880bcbd4000(0000) knlGS:0000000000000000
[   28.353611] CS:  0010 DS: 0000 ES: 0000 CR0: 0000000080050033
[   28.354095] Call Trace:
[   28.354095]  <IRQ>
[   28.354208]  register_lock_class+0x31/0x2c0
[   28.354851]  lock_acquire+0xde/0x2a0
[   28.354942]  ? complete+0x16/0x80
[   28.355203]  _raw_spin_lock_irqsave+0x3a/0x50
[   28.355301]  ? complete+0x16/0x80
[   28.355377]  complete+0x16/0x80
[   28.355453]  pvrdma_intr0_handler+0x32/0x40 [vmw_pvrdma]
[   28.355901]  handle_irq_event+0x2c/0x60
[   28.356378] RIP: 0010:handle_softirqs+0xf5/0x440
[   28.358246]  </IRQ>
[   28.358300]  <TASK>
[   28.360464]  </TASK>
[   28.360555] irq event stamp: 162783
[   28.360633] hardirqs last  enabled at (162782): [<ffffffff8106b6ed>] handle_softirqs+0xed/0x440
[   28.361412] ---[ end trace 0000000000000000 ]---
[   38.625855] vmw_pvrdma 0000:00:04.1: detaching from device
";

    /// The race on the debug kernel (stock verbs_resources, 2026-11-28, trimmed): both names
    /// "&x->wait", the interrupt taken in a worker (its `Workqueue:` line in the header).
    const LOCKDEP_SAME_NAME: &str = "\
[  185.421210] ------------[ cut here ]------------
[  185.421543] Looking for class \"&x->wait\" with key init_completion.__key [vmw_pvrdma], but found a different class \"&x->wait\" with the same key
[  185.423053] WARNING: kernel/locking/lockdep.c:958 at look_up_lock_class+0x8c/0x110, CPU#1: kworker/u8:3/137
[  185.424960] Modules linked in: vmw_pvrdma
[  185.426159] CPU: 1 UID: 0 PID: 137 Comm: kworker/u8:3 Not tainted 7.3.4 #4 PREEMPT(lazy)  
[  185.426464] Hardware name: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 1.16.2-debian-1.16.2-1 04/01/2014
[  185.426790] Workqueue: kvfree_rcu_reclaim kfree_rcu_work
[  185.427089] RIP: 0010:look_up_lock_class+0x9a/0x110
[  185.429631] Call Trace:
[  185.429947]  <IRQ>
[  185.430127]  register_lock_class+0x31/0x2e0
[  185.430325]  __lock_acquire+0xf5/0xf10
[  185.430445]  lock_acquire+0xec/0x280
[  185.430542]  ? complete+0x24/0x1b0
[  185.430655]  ? hrtimer_interrupt+0x48f/0x9c0
[  185.430773]  _raw_spin_lock_irqsave+0x3a/0x50
[  185.430891]  ? complete+0x24/0x1b0
[  185.430983]  complete+0x24/0x1b0
[  185.431085]  pvrdma_intr0_handler+0x8c/0xb0 [vmw_pvrdma]
[  185.431266]  ? pvrdma_free_slots+0x200/0x200 [vmw_pvrdma]
[  185.431412]  __handle_irq_event_percpu+0x1ba/0x730
[  185.432000]  </IRQ>
[  185.432100] ---[ end trace 0000000000000000 ]---
";

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
        // The names are open, the key and the frames are not: another module's completion, or
        // a complete() from another handler, is not the race.
        for (from, to) in [
            (
                "init_completion.__key [vmw_pvrdma]",
                "init_completion.__key [nvme_core]",
            ),
            ("pvrdma_intr0_handler+", "pvrdma_intr1_handler+"),
            ("Looking for class", "Looking up class"),
        ] {
            let other = LOCKDEP_SAME_NAME.replace(from, to);
            assert_ne!(other, LOCKDEP_SAME_NAME);
            assert!(!excused(Driver::C, &other), "{other}");
        }
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
    const CQ_SIZE_SHIFT: &str = "\
[   85.600000] vmw_pvrdma 0000:00:04.1: attached to device
[   85.682838] ------------[ cut here ]------------
[   85.682960] UBSAN: shift-out-of-bounds in ./include/linux/log2.h:57:13
[   85.684438] shift exponent 64 is too large for 64-bit type 'unsigned long'
[   85.686224] CPU: 1 UID: 0 PID: 152 Comm: uverbs_fuzz Not tainted 7.3.4 #1 PREEMPT(lazy)  
[   85.686471] Hardware name: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 1.16.2-debian-1.16.2-1 04/01/2014
[   85.686719] Call Trace:
[   85.686847]  <TASK>
[   85.686954]  dump_stack_lvl+0x63/0x80
[   85.687835]  __ubsan_handle_shift_out_of_bounds+0x2c1/0x320
[   85.688075]  pvrdma_create_cq+0x639/0xd50 [vmw_pvrdma]
[   85.688732]  create_cq+0x58f/0x8d0
[   85.688788]  ib_uverbs_create_cq+0x111/0x150
[   85.688826]  ib_uverbs_write+0x7dd/0xaf0
[   85.688886]  vfs_write+0x1e6/0x810
[   85.689130]  ksys_write+0xb7/0x170
[   85.689162]  do_syscall_64+0x13b/0x420
[   85.689219]  entry_SYSCALL_64_after_hwframe+0x4b/0x53
[   85.689338] RIP: 0033:0x7f233fbda38f
[   85.690233]  </TASK>
[   85.690640] ---[ end trace ]---
";

    #[test]
    fn the_cq_size_shift_is_recognised_only_for_the_c_driver() {
        let problems = scan(Dmesg, CQ_SIZE_SHIFT);
        assert_eq!(problems.len(), 3, "{problems:?}");
        let bugs = excuse(Driver::C, &problems, &[(Dmesg, CQ_SIZE_SHIFT)], "");
        let bug = bugs.first().expect("the C driver's bug");
        assert!(bug.cause.contains("pvrdma_create_cq"));
        assert!(excuse(Driver::Rust, &problems, &[(Dmesg, CQ_SIZE_SHIFT)], "").is_empty());
        // The same report from another function is not the bug's.
        let other = CQ_SIZE_SHIFT.replace("pvrdma_create_cq+", "pvrdma_create_qp+");
        assert!(excuse(Driver::C, &scan(Dmesg, &other), &[(Dmesg, &other)], "").is_empty());
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
        // The same kind of report from somewhere else.
        let elsewhere = UNLOCKED.replace("pvrdma_intr0_handler", "mlx5_eq_int");
        assert!(!excused(Driver::C, &elsewhere));
        let elsewhere = LOCKDEP.replace("complete+", "__wake_up+");
        assert!(!excused(Driver::C, &elsewhere));
        // A lockdep report printed right after the trace is a report of its own.
        let lockdep = "[   41.0] ============================================\n\
                       [   41.0] WARNING: possible recursive locking detected\n";
        let detach = "[   52.285139] vmw_pvrdma 0000:00:04.1: detaching from device\n";
        let next = UNLOCKED.replace(detach, lockdep);
        assert_ne!(next, UNLOCKED);
        assert!(!excused(Driver::C, &next));
        // The frames must be consecutive: the handler calling complete() directly.
        let indirect = LOCKDEP.replace(
            "[   40.840061]  complete+0x16/0x80\n",
            "[   40.840061]  complete+0x16/0x80\n[   40.840061]  other_fn+0x1/0x2\n",
        );
        assert!(!excused(Driver::C, &indirect));
        // Another lock's lockdep confusion.
        let other_lock = LOCKDEP.replace("init_completion.__key", "other.__key");
        assert!(!excused(Driver::C, &other_lock));
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
    const BLOCK_QUEUE_KOBJ: &str = "\
[  350.540000] kobject: 'queue' (ffff88800b0a5388): kobject_release, parent 0000000000000000 (delayed 2000)
[  350.547277] ------------[ cut here ]------------
[  350.547749] ODEBUG: free active (active state 0) object: ffff88800b0a5410 object type: timer_list hint: kobject_delayed_cleanup+0x0/0x100
[  350.553551] WARNING: lib/debugobjects.c:632 at debug_print_object+0xe3/0x230, CPU#0: swapper/0/0
[  350.557807] Modules linked in: nvme_rdma nvme_fabrics nvme_core nvmet_rdma nvmet brd ext4 mbcache crc16 jbd2 vmw_pvrdma
[  350.563659] CPU: 0 UID: 0 PID: 0 Comm: swapper/0 Not tainted 7.3.4 #1 PREEMPT(lazy)  
[  350.565616] RIP: 0010:debug_print_object+0x18a/0x230
[  350.593815] Call Trace:
[  350.597284]  <IRQ>
[  350.597679]  ? kobj_kset_leave+0x180/0x180
[  350.600751]  ? kobj_kset_leave+0x180/0x180
[  350.604654]  debug_check_no_obj_freed+0x3a6/0x490
[  350.611398]  ? bdev_free_inode+0xf9/0x180
[  350.611912]  kfree+0x10a/0x4f0
[  350.612154]  ? alloc_inode+0x90/0x90
[  350.612348]  bdev_free_inode+0xf9/0x180
[  350.612561]  ? rcu_core+0x959/0x14b0
[  350.612772]  rcu_core+0xa3b/0x14b0
[  350.613010]  handle_softirqs+0x23a/0x7f0
[  350.613227]  ? __irq_exit_rcu+0xb4/0x1c0
[  350.613449]  __irq_exit_rcu+0xb4/0x1c0
[  350.613640]  irq_exit_rcu+0x5/0x10
[  350.613875]  sysvec_apic_timer_interrupt+0x6a/0x80
[  350.618344]  </IRQ>
[  350.618662]  <TASK>
[  350.618771]  asm_sysvec_apic_timer_interrupt+0x16/0x20
[  352.209554] kobject: '(null)' (ffff88800d134248): kobject_release, parent 0000000000000000 (delayed 2000)
";

    #[test]
    fn kernel_bug_is_set_aside_for_either_driver() {
        let problems = scan(Dmesg, BLOCK_QUEUE_KOBJ);
        assert!(!problems.is_empty());
        for driver in [Driver::C, Driver::Rust] {
            let bugs = excuse(driver, &problems, &[(Dmesg, BLOCK_QUEUE_KOBJ)], "");
            assert_eq!(bugs.len(), 1, "{driver:?}");
            assert_eq!(bugs[0].owner, Owner::Kernel);
        }
        // Another object freed while active is not this bug.
        let other = BLOCK_QUEUE_KOBJ.replace("hint: kobject_delayed_cleanup", "hint: other_work");
        assert!(excuse(Driver::Rust, &scan(Dmesg, &other), &[(Dmesg, &other)], "").is_empty());
        // Nor the same object freed from elsewhere.
        let elsewhere = BLOCK_QUEUE_KOBJ.replace(" bdev_free_inode+0xf9", " some_free+0xf9");
        assert!(excuse(
            Driver::Rust,
            &scan(Dmesg, &elsewhere),
            &[(Dmesg, &elsewhere)],
            ""
        )
        .is_empty());
        // Nor another kobject's timer, nor a timer whose kobject's release was not announced.
        let other_kobject = BLOCK_QUEUE_KOBJ.replace("'queue'", "'holders'");
        assert!(excuse(
            Driver::Rust,
            &scan(Dmesg, &other_kobject),
            &[(Dmesg, &other_kobject)],
            ""
        )
        .is_empty());
        let unannounced = BLOCK_QUEUE_KOBJ.replace("(ffff88800b0a5388)", "(ffff88800b0a6388)");
        assert!(excuse(
            Driver::Rust,
            &scan(Dmesg, &unannounced),
            &[(Dmesg, &unannounced)],
            ""
        )
        .is_empty());
    }

    /// The NFS client's report under CONFIG_DEBUG_KOBJECT_RELEASE, as seen (nfs_rdma on the
    /// debug kernel, the C driver, at umount; trimmed), and kmemleak's report after it.
    const NFS_SERVER_KOBJ: &str = "\
[  295.577761] kobject: 'clnt-2' (ffff88800d2ad600): kobject_release, parent 0000000000000000 (delayed 1000)
[  295.718646] kobject: 'server-0' (ffff88800afbee08): kobject_release, parent 0000000000000000 (delayed 1000)
[  295.728900] kobject: 'clnt-1' (ffff88800e9b7a00): kobject_release, parent 0000000000000000 (delayed 4000)
[  295.735344] ------------[ cut here ]------------
[  295.735574] ODEBUG: free active (active state 0) object: ffff88800afbee90 object type: timer_list hint: kobject_delayed_cleanup+0x0/0x100
[  295.738614] WARNING: lib/debugobjects.c:632 at debug_print_object+0xe3/0x230, CPU#0: umount.nfs4/516
[  295.744481] Modules linked in: nfsv4 dns_resolver nfs nfsd auth_rpcgss oid_registry libcryptoutils lockd grace rpcrdma sunrpc vmw_pvrdma
[  295.747564] CPU: 0 UID: 0 PID: 516 Comm: umount.nfs4 Not tainted 7.3.4 #1 PREEMPT(lazy)  
[  295.749689] RIP: 0010:debug_print_object+0x18a/0x230
[  295.756845] Call Trace:
[  295.757112]  <IRQ>
[  295.757279]  ? kobj_kset_leave+0x180/0x180
[  295.757671]  debug_check_no_obj_freed+0x3a6/0x490
[  295.757897]  ? rcu_core+0xa3b/0x14b0
[  295.758055]  kfree+0x10a/0x4f0
[  295.758191]  ? rcu_core+0x959/0x14b0
[  295.758340]  ? nfs_free_server+0x1b0/0x1b0 [nfs]
[  295.760650]  rcu_core+0xa3b/0x14b0
[  295.760837]  handle_softirqs+0x23a/0x7f0
[  295.762421]  __irq_exit_rcu+0xb4/0x1c0
[  295.762928]  </IRQ>
[  295.763978]  <TASK>
[  295.764938]  asm_sysvec_apic_timer_interrupt+0x16/0x20
[  371.435619] kmemleak: 1 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
";

    const NFS_SERVER_NAME_LEAK: &str = "\
unreferenced object 0xffff88800a6ab010 (size 16):
  comm \"umount.nfs4\", pid 516, jiffies 4294962656
  hex dump (first 16 bytes):
    73 65 72 76 65 72 2d 30 00 cc cc cc cc cc cc cc  server-0........
  backtrace (crc 4eb9603):
    __kmalloc_node_track_caller_noprof+0x2bd/0x500
    kstrdup+0x2d/0x90
    kobject_rename+0x16f/0x3c0
    0xffffffffa01df895
    deactivate_locked_super+0x8e/0xd0
    cleanup_mnt+0x1b7/0x240
";

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
        // A name that is not the released kobject's, or allocated elsewhere.
        let other_name = NFS_SERVER_NAME_LEAK.replace("2d 30 00", "2d 31 00");
        assert!(!nfs_excused(NFS_SERVER_KOBJ, &other_name));
        let elsewhere = NFS_SERVER_NAME_LEAK.replace("kobject_rename+", "kobject_set_name+");
        assert!(!nfs_excused(NFS_SERVER_KOBJ, &elsewhere));
        // A leak the report does not explain: none, or no report of the right kobject.
        assert!(!nfs_excused(NFS_SERVER_KOBJ, ""));
        let no_report: String = NFS_SERVER_KOBJ
            .lines()
            .filter(|l| l.contains("kobject: ") || l.contains("kmemleak"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(!nfs_excused(&no_report, NFS_SERVER_NAME_LEAK));
        let clnt = NFS_SERVER_KOBJ.replace(
            "'server-0' (ffff88800afbee08)",
            "'clnt-9' (ffff88800afbee08)",
        );
        assert!(!nfs_excused(&clnt, NFS_SERVER_NAME_LEAK));
        // The report freed from another RCU callback's path is still this form (the frame is
        // rcu_core's), but the timer must be the announced server kobject's.
        let far = NFS_SERVER_KOBJ.replace("object: ffff88800afbee90", "object: ffff88800afbef90");
        assert!(!nfs_excused(&far, NFS_SERVER_NAME_LEAK));
    }

    /// The NFS client's per-namespace report, as seen (nfs_rdma on the debug kernel, the C
    /// driver, when the nfs module went; trimmed), and kmemleak's report of the name.
    const NFS_NETNS_KOBJ: &str = "\
[  219.150530] kobject: 'nfs_client' (ffff888009b35600): kobject_release, parent 0000000000000000 (delayed 4000)
[  219.151483] kobject: 'net' (ffff888009b356e8): kobject_release, parent 0000000000000000 (delayed 2000)
[  221.197581] ------------[ cut here ]------------
[  221.197706] ODEBUG: free active (active state 0) object: ffff888009b35688 object type: timer_list hint: kobject_delayed_cleanup+0x0/0x100
[  221.197820] WARNING: lib/debugobjects.c:632 at debug_print_object+0xe3/0x230, CPU#1: kworker/1:0/24
[  221.198363] Modules linked in: dns_resolver nfs(-) nfsd auth_rpcgss oid_registry libcryptoutils lockd grace rpcrdma sunrpc vmw_pvrdma [last unloaded: nfs]
[  221.199713] CPU: 1 UID: 0 PID: 24 Comm: kworker/1:0 Tainted: G        W           7.3.4 #1 PREEMPT(lazy)
[  221.201720] Workqueue: events kobject_delayed_cleanup
[  221.202415] RIP: 0010:debug_print_object+0x18a/0x230
[  221.204421] Call Trace:
[  221.204491]  <TASK>
[  221.204544]  ? kobj_kset_leave+0x180/0x180
[  221.205271]  debug_check_no_obj_freed+0x3a6/0x490
[  221.205466]  ? kobject_delayed_cleanup+0xc2/0x100
[  221.205571]  kfree+0x10a/0x4f0
[  221.205672]  kobject_delayed_cleanup+0xc2/0x100
[  221.206236]  ? process_scheduled_works+0x727/0x12d0
[  221.206376]  process_scheduled_works+0x957/0x12d0
[  221.206502]  worker_thread+0x771/0xb90
[  221.206620]  kthread+0x2e2/0x390
[  221.207632]  </TASK>
[  221.207698] irq event stamp: 27745
[  221.209047] ---[ end trace 0000000000000000 ]---
[  290.000000] kmemleak: 1 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
";

    const NFS_NETNS_NAME_LEAK: &str = "\
unreferenced object 0xffff88800b72e290 (size 16):
  comm \"insmod\", pid 373, jiffies 4294743496
  hex dump (first 16 bytes):
    6e 66 73 5f 63 6c 69 65 6e 74 00 cc cc cc cc cc  nfs_client......
  backtrace (crc 5fe7a499):
    __kmalloc_node_track_caller_noprof+0x2bd/0x500
    kstrdup+0x2d/0x90
    kobject_set_name_vargs+0x54/0xf0
    kobject_init_and_add+0x85/0xf0
    0xffffffffa01df1dc
    ops_init+0x187/0x490
";

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
        // The timer of another kobject (here 'net''s own), or freed from elsewhere.
        let net = NFS_NETNS_KOBJ.replace("object: ffff888009b35688", "object: ffff888009b35770");
        assert!(!nfs_excused(&net, NFS_NETNS_NAME_LEAK));
        let elsewhere = NFS_NETNS_KOBJ.replace("  kobject_delayed_cleanup+", "  other_cleanup+");
        assert!(!nfs_excused(&elsewhere, NFS_NETNS_NAME_LEAK));
        // A name allocated elsewhere.
        let renamed = NFS_NETNS_NAME_LEAK.replace("kobject_set_name_vargs+", "kobject_rename+");
        assert!(!nfs_excused(NFS_NETNS_KOBJ, &renamed));
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
