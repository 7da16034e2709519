//! Known failures of the device model: tests that cannot pass on QEMU 7.2's
//! pvrdma whatever the driver does. Each is still run; its failure is reported
//! as TAP `# TODO <cause>` (not counted as a failure), and if it passes the
//! TAP line says so. Only the failure the entry describes is excused: the
//! test's failure message must contain the entry's signature, and a kernel
//! problem (oops, WARN, lockdep, ...) is always a failure. Every entry names its cause and the issue that
//! tracks fixing it. The only other excuse is the Rust driver's list of verbs
//! it does not implement yet (`RUST_DRIVER_UNIMPLEMENTED`, issue 4); nothing
//! else may be excused here.

use crate::cli::Driver;
use crate::tap::TapResult;
use crate::verdict::Verdict;

/// One known failure.
#[derive(Debug)]
pub struct KnownFailure {
    /// The driver it concerns; None for both.
    pub driver: Option<Driver>,
    /// The test.
    pub test: &'static str,
    /// Why it fails (what the device model does wrong).
    pub cause: &'static str,
    /// Text the test's failure message must contain for the failure to be this
    /// known one; any other failure of the test is a real failure.
    pub signature: &'static str,
    /// The issue tracking it.
    pub issue: &'static str,
}

/// The table of known device-model failures (of QEMU 7.2's stock pvrdma).
pub const KNOWN_FAILURES: &[KnownFailure] = &[
    KnownFailure {
        driver: None,
        test: "ucmatose",
        cause: "QEMU 7.2's pvrdma reports max_qp_rd_atom = max_qp_init_rd_atom = 0 \
            (hw/rdma/vmw/pvrdma_main.c init_dsr_dev_caps never sets them), so librdmacm's \
            rdma_connect rejects ucmatose's responder_resources/initiator_depth of 1 (TCP \
            port space) with EINVAL before any MAD is sent; ucmatose_ps_ib runs the same \
            exchange in the IB port space, which librdmacm does not check",
        signature: "failure connecting: Invalid argument",
        issue: "issue 5",
    },
    KnownFailure {
        driver: None,
        test: "rping",
        cause: "QEMU 7.2's pvrdma reports max_qp_rd_atom = 0, so rdma_connect refuses rping's \
            responder_resources of 1 with EINVAL; past that, its data path turns RDMA READ \
            and WRITE into SENDs and arms CQs inverted, and rping needs both",
        signature: "rdma_connect: Invalid argument",
        issue: "issue 5",
    },
];

/// Tests that need verbs the Rust driver does not implement yet, with what
/// they need. The bring-up (issue 3) registers the device, its port, GIDs,
/// user contexts and PDs; memory registration, CQs, QPs, SRQs and AHs come
/// with issue 4. Such a test still runs on the Rust driver; a failure that is
/// not a kernel problem is reported as TAP `# TODO` naming what is missing,
/// and a pass shows up as an unexpected pass so that the entry gets removed.
pub const RUST_DRIVER_UNIMPLEMENTED: &[(&str, &str)] = &[
    ("ibv_rc_pingpong", "MR, CQ and RC QP verbs"),
    ("ibv_ud_pingpong", "MR, CQ, UD QP and AH verbs"),
    ("ibv_srq_pingpong", "MR, CQ, SRQ and RC QP verbs"),
    ("ucmatose", "MR, CQ, RC QP and the kernel GSI QP data path"),
    (
        "ucmatose_ps_ib",
        "MR, CQ, RC QP and the kernel GSI QP data path",
    ),
    (
        "udaddy",
        "MR, CQ, UD QP, AH and the kernel GSI QP data path",
    ),
    ("rping", "MR, CQ, RC QP and the kernel GSI QP data path"),
];

/// The issue tracking the Rust driver's missing verbs.
const RUST_DRIVER_VERBS_ISSUE: &str = "issue 4";

/// What `test` needs that the Rust driver does not implement yet, if anything.
pub fn unimplemented_by(driver: Driver, test: &str) -> Option<&'static str> {
    if driver != Driver::Rust {
        return None;
    }
    RUST_DRIVER_UNIMPLEMENTED
        .iter()
        .find(|(name, _)| *name == test)
        .map(|(_, what)| *what)
}

/// Whether a failure came from the test script itself, not from the lab, the
/// driver's setup (insmod, device, port, GID) or its teardown (rmmod): only
/// those can be a missing verb; the rest must work on every test.
fn failed_in_test_script(cause: &str) -> bool {
    const NOT_THE_TEST: &[&str] = &[
        "guest setup failed",
        "guest did not",
        "lab:",
        "teardown:",
        "QEMU exited",
        "kernel ",
    ];
    !NOT_THE_TEST.iter().any(|prefix| cause.starts_with(prefix))
}

/// The known failure of `test` with `driver`, if there is one.
pub fn lookup(driver: Driver, test: &str) -> Option<&'static KnownFailure> {
    KNOWN_FAILURES
        .iter()
        .find(|k| k.test == test && k.driver.is_none_or(|d| d == driver))
}

/// The TAP result of a finished test, known failures applied.
pub fn tap_result(driver: Driver, test: &str, verdict: Verdict) -> TapResult {
    if let Some(missing) = unimplemented_by(driver, test) {
        return match verdict {
            Verdict::Pass => TapResult::Todo {
                cause: format!(
                    "passed although the Rust driver lacks {missing} ({RUST_DRIVER_VERBS_ISSUE}): \
                     remove it from RUST_DRIVER_UNIMPLEMENTED"
                ),
                passed: true,
            },
            Verdict::Fail {
                cause,
                kernel_problem: false,
            } if failed_in_test_script(&cause) => TapResult::Todo {
                cause: format!(
                    "the Rust driver does not implement {missing} yet \
                     ({RUST_DRIVER_VERBS_ISSUE}); this run: {cause}"
                ),
                passed: false,
            },
            Verdict::Fail { cause, .. } => TapResult::Fail(cause),
        };
    }
    let known = lookup(driver, test);
    match (verdict, known) {
        (Verdict::Pass, None) => TapResult::Pass,
        (Verdict::Pass, Some(k)) => TapResult::Todo {
            cause: format!("known failure did not occur: {} ({})", k.cause, k.issue),
            passed: true,
        },
        (Verdict::Fail { cause, .. }, None) => TapResult::Fail(cause),
        (
            Verdict::Fail {
                cause,
                kernel_problem,
            },
            Some(k),
        ) => {
            if kernel_problem || !cause.contains(k.signature) {
                TapResult::Fail(format!(
                    "{cause} [not the known failure of this test, whose message has '{}']",
                    k.signature
                ))
            } else {
                TapResult::Todo {
                    cause: format!("{} ({}); this run: {cause}", k.cause, k.issue),
                    passed: false,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_by_driver_and_test() {
        assert!(lookup(Driver::C, "ucmatose").is_some());
        assert!(lookup(Driver::Rust, "ucmatose").is_some());
        assert!(lookup(Driver::C, "rping").is_some());
        assert!(lookup(Driver::C, "ibv_devinfo").is_none());
    }

    #[test]
    fn every_entry_says_why_and_where_it_is_tracked() {
        for k in KNOWN_FAILURES {
            assert!(
                !k.cause.is_empty() && !k.signature.is_empty() && k.issue.starts_with("issue "),
                "{k:?}"
            );
        }
    }

    fn fail(cause: &str, kernel_problem: bool) -> Verdict {
        Verdict::Fail {
            cause: cause.to_string(),
            kernel_problem,
        }
    }

    #[test]
    fn known_failures_are_excused_only_as_described() {
        let known =
            "ucmatose client exited with status 255: cmatose: failure connecting: Invalid argument";
        assert!(matches!(
            tap_result(Driver::C, "ucmatose", fail(known, false)),
            TapResult::Todo { passed: false, .. }
        ));
        assert!(matches!(
            tap_result(
                Driver::C,
                "ucmatose",
                fail("bind address failed: No such device", false)
            ),
            TapResult::Fail(_)
        ));
        assert!(matches!(
            tap_result(Driver::C, "ucmatose", fail(known, true)),
            TapResult::Fail(_)
        ));
        assert!(matches!(
            tap_result(Driver::C, "ucmatose", Verdict::Pass),
            TapResult::Todo { passed: true, .. }
        ));
        assert_eq!(
            tap_result(Driver::C, "ibv_devinfo", Verdict::Pass),
            TapResult::Pass
        );
    }

    #[test]
    fn rust_driver_gaps_are_todo_but_kernel_problems_still_fail() {
        assert!(matches!(
            tap_result(
                Driver::Rust,
                "ibv_rc_pingpong",
                fail("Couldn't register MR", false)
            ),
            TapResult::Todo { passed: false, .. }
        ));
        assert!(matches!(
            tap_result(Driver::Rust, "ibv_rc_pingpong", fail("Oops", true)),
            TapResult::Fail(_)
        ));
        assert!(matches!(
            tap_result(
                Driver::Rust,
                "ibv_rc_pingpong",
                fail("guest setup failed: no driver module at 'x'", false)
            ),
            TapResult::Fail(_)
        ));
        assert!(matches!(
            tap_result(
                Driver::Rust,
                "ibv_rc_pingpong",
                fail("teardown: rmmod failed", false)
            ),
            TapResult::Fail(_)
        ));
        assert!(matches!(
            tap_result(
                Driver::C,
                "ibv_rc_pingpong",
                fail("Couldn't register MR", false)
            ),
            TapResult::Fail(_)
        ));
        assert_eq!(
            tap_result(Driver::Rust, "ibv_devinfo", Verdict::Pass),
            TapResult::Pass
        );
    }
}
