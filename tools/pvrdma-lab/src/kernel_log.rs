// SPDX-License-Identifier: GPL-2.0-only
//! Finding kernel trouble in a guest's dmesg and console log: oops, BUG, WARN,
//! KASAN/UBSAN reports, lockdep reports, hung tasks and RCU stalls, kmemleak
//! reports, panics, spurious interrupts, page allocation failures, hard lockups, and any
//! "Call Trace"; on the debug kernel also KFENCE and slub_debug reports, and the debugging
//! facilities (kmemleak, object debugging, DMA-API debugging) switching themselves off. Any
//! one of them fails a test.

/// The kind of every problem kmemleak reports (its messages, and the verdict's count of
/// the objects in its report).
pub const KMEMLEAK_REPORT: &str = "kmemleak report";

/// Kernel messages that start a report, matched at the start of a message
/// (after the `[   12.345678] ` timestamp).
const REPORT_STARTS: &[(&str, &str)] = &[
    ("Oops", "oops"),
    ("BUG:", "BUG"),
    ("kernel BUG at", "BUG"),
    ("WARNING:", "WARN or lockdep report"),
    ("------------[ cut here ]------------", "WARN/BUG"),
    ("INFO:", "lockdep/hung task/RCU report"),
    ("KASAN:", "KASAN report"),
    ("UBSAN:", "UBSAN report"),
    ("Call Trace:", "call trace"),
    ("general protection fault", "general protection fault"),
    ("Kernel panic", "kernel panic"),
    ("unreferenced object", KMEMLEAK_REPORT),
    // slub_debug: "BUG kmalloc-64 (Tainted: G B): Redzone overwritten" (KFENCE's reports
    // start "BUG: KFENCE:").
    ("BUG ", "slab corruption (slub_debug)"),
];

/// Kernel messages that report trouble wherever they appear in a message
/// (some come after a subsystem prefix, such as "watchdog: BUG: soft lockup").
const REPORT_ANYWHERE: &[(&str, &str)] = &[
    ("BUG: ", "BUG"),
    ("INFO: task ", "hung task"),
    ("detected stall", "RCU stall"),
    ("possible circular locking dependency", "lockdep report"),
    ("possible recursive locking", "lockdep report"),
    ("inconsistent lock state", "lockdep report"),
    ("suspicious RCU usage", "lockdep report"),
    ("suspected memory leak", KMEMLEAK_REPORT),
    ("Kernel memory leak detector disabled", "kmemleak disabled"),
    ("ODEBUG disabled", "object debugging disabled"),
    ("dma-debug disabled", "DMA-API debugging disabled"),
    (
        "DMA-API: debugging out of memory",
        "DMA-API debugging disabled",
    ),
    ("list_add corruption", "list corruption"),
    ("list_del corruption", "list corruption"),
    // kernel/irq/spurious.c: "irq 11: nobody cared (try booting with the "irqpoll" option)",
    // then its call trace and handlers.
    ("nobody cared", "spurious interrupt"),
    // mm/page_alloc.c warn_alloc(), after the task's name: "insmod: page allocation failure:
    // order:10, mode:...".
    ("page allocation failure", "page allocation failure"),
    // kernel/watchdog.c: "watchdog: CPU1: Watchdog detected hard LOCKUP on cpu 0" (before
    // 6.5 without "CPU1: "); its panic ("Kernel panic - not syncing: Hard LOCKUP") is a panic.
    ("hard LOCKUP", "hard lockup"),
];

/// A log the kernel's messages are read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Log {
    /// The guest's dmesg, saved at the end of its run (`dmesg.txt`).
    Dmesg,
    /// The guest's serial console (`console.log`).
    Console,
}

impl Log {
    /// Its file's name in a test's results.
    pub fn file(self) -> &'static str {
        match self {
            Log::Dmesg => "dmesg.txt",
            Log::Console => "console.log",
        }
    }
}

/// Where a message stands: its log, and its line there (0-based, as [`str::lines`] counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The log.
    pub log: Log,
    /// The line.
    pub line: usize,
}

/// One message that reports trouble.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// What kind of report it is.
    pub kind: &'static str,
    /// The message, without its timestamp.
    pub message: String,
    /// Every place the message stands, in the order found: a known report explains the
    /// message only where it stands inside that report (the same text elsewhere is another
    /// report's). Empty for problems not read from a log (a taint, kmemleak's report).
    pub places: Vec<Place>,
}

/// Adds `problem` to `problems`, where a problem of the same kind and message takes its
/// places instead: the message is listed once, and every place it stands is kept.
pub fn add(problems: &mut Vec<Problem>, problem: Problem) {
    match problems
        .iter_mut()
        .find(|p| p.kind == problem.kind && p.message == problem.message)
    {
        Some(known) => known.places.extend(problem.places),
        None => problems.push(problem),
    }
}

/// The message of a log line: the text after a printk timestamp (`[   1.23] `),
/// or None for lines that are not kernel messages (no timestamp: the guest's
/// init and test output, firmware, QEMU).
pub(crate) fn kernel_message(line: &str) -> Option<&str> {
    let line = line.trim_end_matches('\r');
    // A printk level prefix (`<4>`), as `dmesg -r` would show it.
    let line = match line.strip_prefix('<') {
        Some(rest) => rest.split_once('>').map_or(line, |(_, msg)| msg),
        None => line,
    };
    let rest = line.trim_start().strip_prefix('[')?;
    let (stamp, message) = rest.split_once(']')?;
    let stamp = stamp.trim();
    let is_time = !stamp.is_empty() && stamp.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    is_time.then(|| message.strip_prefix(' ').unwrap_or(message))
}

/// Whether `text` occurs in `message` at the start of a word (not "ODEBUG: " for "BUG: ").
fn contains_word(message: &str, text: &str) -> bool {
    message.match_indices(text).any(|(at, _)| {
        !message[..at]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
    })
}

/// Every message of `text`, the log `log`, that reports trouble, in order, each at most once
/// with every place it stands.
pub fn scan(log: Log, text: &str) -> Vec<Problem> {
    let mut problems: Vec<Problem> = Vec::new();
    for (at, line) in text.lines().enumerate() {
        let Some(message) = kernel_message(line) else {
            continue;
        };
        let message_start = message.trim_start();
        let kind = REPORT_STARTS
            .iter()
            .find(|(start, _)| message_start.starts_with(start))
            .or_else(|| {
                REPORT_ANYWHERE
                    .iter()
                    .find(|(text, _)| contains_word(message, text))
            })
            .map(|(_, kind)| *kind);
        if let Some(kind) = kind {
            let problem = Problem {
                kind,
                message: message_start.to_string(),
                places: vec![Place { log, line: at }],
            };
            add(&mut problems, problem);
        }
    }
    problems
}

/// The number of leaked objects in the contents of /sys/kernel/debug/kmemleak.
pub fn kmemleak_objects(report: &str) -> usize {
    report
        .lines()
        .filter(|l| l.trim_start().starts_with("unreferenced object"))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_reports() {
        let log = "\
[    0.000000] Linux version 6.12
[    0.100000] Spectre V2 : WARNING: Unprivileged eBPF is enabled
[    1.000000] lab-init: not a problem
lab-test: WARNING: CPU: 0 not a kernel message
[    2.500000] ------------[ cut here ]------------
[    2.500001] WARNING: CPU: 1 PID: 77 at drivers/x.c:10 f+0x1/0x2
[    2.500002] Call Trace:
[    3.000000] watchdog: BUG: soft lockup - CPU#0 stuck for 22s!
[    4.000000] ======================================================
[    4.000001] WARNING: possible circular locking dependency detected
[    5.000000] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
";
        let kinds: Vec<&str> = scan(Log::Dmesg, log).iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                "WARN/BUG",
                "WARN or lockdep report",
                "call trace",
                "BUG",
                "WARN or lockdep report",
                "kmemleak report"
            ]
        );
    }

    #[test]
    fn finds_debug_kernel_reports() {
        let log = "\
[    1.000000] =============================================================================
[    1.000001] BUG kmalloc-64 (Tainted: G    B      O): Redzone overwritten
[    2.000000] BUG: KFENCE: use-after-free read in pvrdma_poll_cq+0x10/0x20
[    3.000000] ODEBUG: Out of memory. ODEBUG disabled
[    4.000000] DMA-API: debugging out of memory - disabling
";
        let kinds: Vec<&str> = scan(Log::Dmesg, log).iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                "slab corruption (slub_debug)",
                "BUG",
                "object debugging disabled",
                "DMA-API debugging disabled"
            ]
        );
    }

    /// Reports that start with no `BUG:` or `WARNING:`, each line as the kernel prints it:
    /// kernel/irq/spurious.c __report_bad_irq, mm/page_alloc.c warn_alloc (after the task's
    /// name), kernel/watchdog.c watchdog_hardlockup_check (after "watchdog: ", and on kernels
    /// before 6.5 without the CPU).
    #[test]
    fn finds_spurious_interrupts_allocation_failures_and_hard_lockups() {
        let log = "\
[    1.000000] irq 11: nobody cared (try booting with the \"irqpoll\" option)
[    1.000001] handlers:
[    1.000002] [<00000000b7a5c0e4>] pvrdma_intr0_handler [vmw_pvrdma]
[    1.000003] Disabling IRQ #11
[    2.000000] insmod: page allocation failure: order:10, mode:0x40dc0(GFP_KERNEL|__GFP_COMP|__GFP_ZERO), nodemask=(null),cpuset=/,mems_allowed=0
[    3.000000] watchdog: CPU1: Watchdog detected hard LOCKUP on cpu 0
[    4.000000] NMI watchdog: Watchdog detected hard LOCKUP on cpu 1
";
        let kinds: Vec<&str> = scan(Log::Dmesg, log).iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                "spurious interrupt",
                "page allocation failure",
                "hard lockup",
                "hard lockup"
            ]
        );
    }

    /// A message repeated (two reports' `Call Trace:` lines) is one problem that keeps where
    /// each stands, lines not kernel messages counted too.
    #[test]
    fn a_repeated_message_is_one_problem_with_each_place() {
        let log = "\
[    2.500000] WARNING: CPU: 1 PID: 77 at drivers/x.c:10 f+0x1/0x2
[    2.500001] Call Trace:
lab-init: stage: test x
[    3.500000] WARNING: CPU: 1 PID: 77 at drivers/y.c:10 g+0x1/0x2
[    3.500001] Call Trace:
";
        let problems = scan(Log::Console, log);
        assert_eq!(problems.len(), 3, "{problems:?}");
        let at = |line| Place {
            log: Log::Console,
            line,
        };
        assert_eq!(problems[1].message, "Call Trace:");
        assert_eq!(problems[1].places, [at(1), at(4)]);
        assert_eq!(problems[2].places, [at(3)]);
        let mut merged = scan(Log::Dmesg, log);
        for problem in problems {
            add(&mut merged, problem);
        }
        assert_eq!(merged.len(), 3);
        assert_eq!(
            merged[1].places,
            [
                Place {
                    log: Log::Dmesg,
                    line: 1
                },
                Place {
                    log: Log::Dmesg,
                    line: 4
                },
                at(1),
                at(4)
            ]
        );
    }

    #[test]
    fn clean_debug_boot_is_clean() {
        let log = "\
[    0.000000] DMA-API: preallocated 65536 debug entries
[    0.000001] DMA-API: debugging enabled by kernel config
[    0.100000] kfence: initialized - using 2097152 bytes for 255 objects at 0x(____ptrval____)
[    0.200000] ODEBUG: selftest passed
[    0.200001] ODEBUG: 0 of 0 active objects replaced
[    0.300000] kasan: KernelAddressSanitizer initialized (generic)
[    5.000000] kobject: 'pvrdma' (000000001234abcd): kobject_release, parent 0000000000000000 (delayed 750)
";
        assert_eq!(scan(Log::Dmesg, log), []);
    }

    #[test]
    fn clean_boot_is_clean() {
        let log = "\
[    0.000000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
[    0.000000] ... MAX_LOCKDEP_SUBCLASSES:  8
[    0.120000] RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to RETBleed attacks, data leaks possible!
[    1.000000] vmw_pvrdma 0000:00:04.1: device version 17, driver version 20
";
        assert_eq!(scan(Log::Dmesg, log), []);
    }

    #[test]
    fn counts_kmemleak_objects() {
        let report = "unreferenced object 0xffff888 (size 64):\n  comm \"insmod\"\nunreferenced object 0xffff999 (size 8):\n";
        assert_eq!(kmemleak_objects(report), 2);
        assert_eq!(kmemleak_objects(""), 0);
    }

    #[test]
    fn message_extraction() {
        assert_eq!(kernel_message("[    1.5] hello"), Some("hello"));
        assert_eq!(kernel_message("<4>[    1.5] hello"), Some("hello"));
        assert_eq!(kernel_message("[ok] hello"), None);
        assert_eq!(kernel_message("plain"), None);
    }
}
