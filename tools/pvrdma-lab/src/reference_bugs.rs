//! Known kernel reports of the reference C driver (vmw_pvrdma) itself.
//!
//! The runner fails a test on any kernel report. The one exception is a bug of
//! the C driver that the lab's tests can trigger but no device model causes:
//! when every kernel problem of a C-driver run is that bug's report (matched by
//! every line of its signature), the problems are set aside, the test is judged
//! on the rest, and its TAP line says `# TODO` with the bug's cause. A report
//! of any other kind, or any report with the Rust driver, is still a failure.

use crate::cli::Driver;
use crate::kernel_log::Problem;

/// A bug of the C driver whose kernel report the lab recognises.
#[derive(Debug)]
pub struct ReferenceBug {
    /// What happens.
    pub cause: &'static str,
    /// Lines the guest's dmesg must all contain for a report to be this bug's.
    pub dmesg_signature: &'static [&'static str],
    /// The only kernel problems (as the runner lists them) the report may produce.
    pub problems: &'static [&'static str],
}

/// The known bugs.
pub const REFERENCE_BUGS: &[ReferenceBug] = &[ReferenceBug {
    cause: "vmw_pvrdma's pvrdma_cmd_post() re-initialises its command completion for every \
            command but does not wait for the completion interrupt of commands without a \
            response (destroys), so the interrupt of one can complete() while the next one's \
            init_completion() runs: lockdep's look_up_lock_class WARN from pvrdma_intr0_handler \
            (seen in about 1 run in 6 of verbs_resources; the Rust driver waits for every answer)",
    dmesg_signature: &[
        "with key init_completion.__key [vmw_pvrdma]",
        "WARNING: CPU: ",
        "at kernel/locking/lockdep.c:939 look_up_lock_class+",
        " pvrdma_intr0_handler+",
    ],
    problems: &[
        "------------[ cut here ]------------",
        "at kernel/locking/lockdep.c:939 look_up_lock_class+",
        "Call Trace:",
    ],
}];

/// If `driver` is the C driver and every one of `problems` belongs to a known
/// bug's report in `dmesg`, that bug.
pub fn excuse(driver: Driver, problems: &[Problem], dmesg: &str) -> Option<&'static ReferenceBug> {
    if driver != Driver::C || problems.is_empty() {
        return None;
    }
    REFERENCE_BUGS.iter().find(|bug| {
        bug.dmesg_signature.iter().all(|line| dmesg.contains(line))
            && problems
                .iter()
                .all(|p| bug.problems.iter().any(|known| p.message.contains(known)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_log::scan;

    const RACE: &str = "\
[   40.839652] Looking for class \"&q->lock\" with key init_completion.__key [vmw_pvrdma], but found a different class \"&x->wait\" with the same key
[   40.839300] ------------[ cut here ]------------
[   40.840061] WARNING: CPU: 1 PID: 0 at kernel/locking/lockdep.c:939 look_up_lock_class+0xdc/0x170
[   40.840061] Call Trace:
[   40.840061]  complete+0x16/0x80
[   40.840061]  pvrdma_intr0_handler+0x36/0x40 [vmw_pvrdma]
";

    #[test]
    fn the_c_driver_race_is_recognised_only_for_the_c_driver() {
        let problems = scan(RACE);
        assert!(!problems.is_empty());
        assert!(excuse(Driver::C, &problems, RACE).is_some());
        assert!(excuse(Driver::Rust, &problems, RACE).is_none());
    }

    #[test]
    fn any_other_report_is_not_excused() {
        let other = format!("{RACE}[   41.000000] BUG: unable to handle page fault\n");
        assert!(excuse(Driver::C, &scan(&other), &other).is_none());
        let warn = "[    1.0] WARNING: CPU: 0 PID: 1 at drivers/x.c:1 f+0x1/0x2\n";
        let mixed = format!("{RACE}{warn}");
        assert!(excuse(Driver::C, &scan(&mixed), &mixed).is_none());
        assert!(excuse(Driver::C, &[], RACE).is_none());
    }
}
