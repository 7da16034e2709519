//! Known failures of the device model: tests that cannot pass on QEMU 7.2's
//! pvrdma whatever the driver does. Each is still run; its failure is reported
//! as TAP `# TODO <cause>` (not counted as a failure), and if it passes the
//! TAP line says so. Only the failure the entry describes is excused: the
//! test's failure message must contain the entry's signature, and a kernel
//! problem (oops, WARN, lockdep, ...) is always a failure. Every entry names its cause and the issue that
//! tracks fixing it; nothing else may be excused here.

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

/// The known failure of `test` with `driver`, if there is one.
pub fn lookup(driver: Driver, test: &str) -> Option<&'static KnownFailure> {
    KNOWN_FAILURES
        .iter()
        .find(|k| k.test == test && k.driver.is_none_or(|d| d == driver))
}

/// The TAP result of a finished test, known failures applied.
pub fn tap_result(driver: Driver, test: &str, verdict: Verdict) -> TapResult {
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
}
