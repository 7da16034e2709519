//! What a test is excused for, and nothing more: the limits of a device model
//! and the verbs the Rust driver does not implement yet.
//!
//! - [`KNOWN_FAILURES`]: a test that cannot pass on a device model whatever
//!   the driver does, and fails fast enough to keep running. It is run; its
//!   failure is reported as TAP `# TODO <cause>` (not counted as a failure)
//!   only if the failure message has the entry's signature. A pass fails the
//!   run as an unexpected pass naming the entry to delete, unless the entry
//!   is marked [`intermittent`](KnownFailure::intermittent).
//! - [`NOT_APPLICABLE`]: a test that needs what a device model does not do
//!   (one-sided RDMA, CQ events) and would only hang there until its time
//!   limit. It is not run on that model: TAP `# SKIP <reason>`.
//!   `--run-not-applicable` runs it anyway, with the excuse of a known
//!   failure (any failure of the test script itself); a pass then fails the
//!   run as an unexpected pass naming the entry to delete.
//! - [`RUST_DRIVER_UNIMPLEMENTED`]: tests that need verbs the Rust driver does
//!   not implement yet (issue 4), on every device model; a pass fails the run
//!   likewise.
//!
//! An excuse that no longer excuses anything is a failure rather than a note,
//! because a stale entry left in place would excuse the next real failure of
//! its test. A kernel problem (oops, WARN, lockdep, kmemleak, ...) is never
//! excused, nor is a failure of the driver's setup or teardown. Each entry
//! names its cause and the issue that tracks it. Every test not listed for a
//! model must pass on it: the patched model has no entries, the stock model
//! only these.

use crate::cli::Driver;
use crate::model::DeviceModel;
use crate::tap::TapResult;
use crate::verdict::Verdict;

/// One known failure.
#[derive(Debug)]
pub struct KnownFailure {
    /// The device model it happens on.
    pub model: DeviceModel,
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
    /// Whether it happens only sometimes (a race of the device model): a pass is then a plain
    /// pass. Otherwise a pass is an unexpected pass, which fails the run: the entry is stale.
    pub intermittent: bool,
}

/// A test a device model cannot run.
#[derive(Debug)]
pub struct NotApplicable {
    /// The device model.
    pub model: DeviceModel,
    /// The test.
    pub test: &'static str,
    /// What the test needs that the model does not do, and how it would fail.
    pub reason: &'static str,
    /// The issue tracking it.
    pub issue: &'static str,
}

/// The known failures of the device models (all of QEMU 7.2's stock pvrdma).
pub const KNOWN_FAILURES: &[KnownFailure] = &[
    KnownFailure {
        model: DeviceModel::Stock,
        driver: None,
        test: "ucmatose",
        cause: "QEMU 7.2's pvrdma reports max_qp_rd_atom = max_qp_init_rd_atom = 0 \
            (hw/rdma/vmw/pvrdma_main.c init_dsr_dev_caps never sets them), so librdmacm's \
            rdma_connect rejects ucmatose's responder_resources/initiator_depth of 1 (TCP \
            port space) with EINVAL before any MAD is sent; ucmatose_ps_ib runs the same \
            exchange in the IB port space, which librdmacm does not check",
        signature: "failure connecting: Invalid argument",
        issue: "issue 5",
        intermittent: false,
    },
    KnownFailure {
        model: DeviceModel::Stock,
        driver: None,
        test: "verbs_limits",
        cause:
            "QEMU 7.2's pvrdma derives max_cqe (28672), max_qp_wr (10467) and max_srq_wr (12288) \
            from a 512-page table (hw/rdma/vmw/pvrdma_main.c init_dev_caps) but refuses every \
            ring of more than PVRDMA_MAX_FAST_REG_PAGES (128) pages: a CQ of max_cqe / 2 entries \
            (16384 once rounded to a power of two, 257 pages) is refused by the device, and so are \
            QPs and SRQs at or near their maxima (the drivers refuse some themselves, where the \
            depth rounded up to a power of two passes the maximum); verbs_limits marks only the \
            depths whose rings need more than 128 pages, and those that fit must be granted; the \
            patched model reports what its rings hold (tools/qemu patch 13)",
        signature: "whose rings need more than 128 pages refused",
        issue: "issue 14",
        intermittent: false,
    },
    KnownFailure {
        model: DeviceModel::Stock,
        driver: None,
        test: "unbind_in_use",
        cause: "QEMU 7.2's rdma backend destroys a QP's work-request contexts and the mutex of \
            their list on the vCPU thread (DESTROY_QP) without the lock its completion thread \
            polls with, so a QP destroyed while its work completes (processes removed or \
            killed mid-traffic) can have the completion thread lock the destroyed mutex, and \
            QEMU aborts (hw/rdma/rdma_rm.c rdma_rm_dealloc_qp, rdma_backend.c rdma_poll_cq; \
            seen once in about ten runs); the patched model destroys under that lock \
            (tools/qemu patch 17)",
        signature: "qemu_mutex_lock_impl: Assertion `mutex->initialized' failed",
        issue: "issue 11",
        intermittent: true,
    },
];

/// The tests a device model cannot run (all on QEMU 7.2's stock pvrdma).
pub const NOT_APPLICABLE: &[NotApplicable] = &[
    NotApplicable {
        model: DeviceModel::Stock,
        test: "nvme_rdma",
        reason: "NVMe over RDMA needs fast registration and a DMA MR the guest's kernel can \
                 address its buffers with: QEMU 7.2's pvrdma reports no memory management \
                 extensions (nvme-rdma refuses the device), gives a DMA MR no backend memory \
                 (lkey 0, every kernel SGE a bad key) and executes no FAST_REG_MR, LOCAL_INV or \
                 SEND_WITH_INV (QEMU patches 19 and 20 add them to the patched model)",
        issue: "issue 13",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "mad_flood",
        reason: "QEMU 7.2's pvrdma sleeps 5000 s on its main loop, BQL held, when a MAD arrives \
                 with no QP1 receive posted (hw/rdma/rdma_backend.c process_incoming_mad_req, \
                 sleep(THR_POLL_TO)): the flood freezes the guest at its first connect until the \
                 time limit (QEMU patch 21 drops such a MAD instead)",
        issue: "issue 11",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "nfs_rdma",
        reason: "NFS over RDMA needs fast registration (xprtrdma registers every transfer with \
                 FRWR and refuses a device without memory management extensions) and a DMA MR \
                 for svcrdma's READs and WRITEs: QEMU 7.2's pvrdma has neither (QEMU patches 19 \
                 and 20 add them to the patched model)",
        issue: "issue 13",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "nvme_fio",
        reason: "fio runs over NVMe/RDMA, which needs fast registration and a DMA MR the guest's \
                 kernel can address its buffers with: QEMU 7.2's pvrdma reports no memory \
                 management extensions (nvme-rdma refuses the device) and has neither (QEMU \
                 patches 19 and 20 add them to the patched model)",
        issue: "issue 13",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "two_guests_nvme",
        reason: "NVMe over RDMA needs fast registration and a DMA MR the guest's kernel can \
                 address its buffers with: QEMU 7.2's pvrdma reports no memory management \
                 extensions (nvme-rdma refuses the device) and has neither (QEMU patches 19 and \
                 20 add them to the patched model)",
        issue: "issue 13",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "rping",
        reason: "rping needs RDMA READ/WRITE and CQ events; QEMU 7.2's pvrdma reports \
                 max_qp_rd_atom = 0 (rdma_connect: Invalid argument, then the client hangs), \
                 turns every work request into a SEND and arms CQs inverted",
        issue: "issue 5",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "two_guests",
        reason: "rping and perftest's WRITE/READ tools need RDMA READ/WRITE, which QEMU 7.2's \
                 pvrdma turns into SENDs, rping and ucmatose an rd_atom depth it reports as 0 \
                 (rdma_connect: Invalid argument), and ibv_rc_pingpong -e needs CQ events, which \
                 it never signals (it treats the ARM doorbell as disarm); two_guests_send runs \
                 the two-sided tools between two guests on it",
        issue: "issue 5",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "ibv_rc_pingpong_events",
        reason: "QEMU 7.2's pvrdma treats the ARM doorbell as disarm, so a CQ armed with \
                 ibv_req_notify_cq(cq, 0) never signals and ibv_rc_pingpong -e sleeps in \
                 ibv_get_cq_event until its time limit",
        issue: "issue 5",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "verbs_ops",
        reason: "QEMU 7.2's pvrdma turns every work request into a signaled SEND (no RDMA \
                 WRITE/READ, immediate data or unsignaled WRs), arms CQs inverted, gives rkey \
                 -1 and refuses MRs not starting on a page boundary (verbs_ops stops at \
                 ibv_reg_mr: Bad address)",
        issue: "issue 5",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "perftest_rdma",
        reason: "ib_write_* and ib_read_* need RDMA WRITE/READ with the peer's rkey, which \
                 QEMU 7.2's pvrdma turns into SENDs (rkey -1): ib_write_lat waits for data \
                 that never comes until its time limit, ib_read_lat fails with status 12 \
                 (perftest_send runs on it)",
        issue: "issue 5",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "async_object_events",
        reason: "QEMU 7.2's pvrdma never writes its async event ring (hw/rdma/vmw has no \
                 writer of it): no CQ_ERR, QP_FATAL, QP_LAST_WQE_REACHED or \
                 SRQ_LIMIT_REACHED ever reaches the guest, and a CQE that finds the CQ full \
                 is dropped in silence; it also runs MODIFY_SRQ and QUERY_SRQ as each other \
                 (an SRQ limit is never armed, ibv_query_srq fails); the patched model fixes \
                 both (tools/qemu patches 14 and 15)",
        issue: "issue 14",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "rdmacm_tools",
        reason: "rstream, riostream and rcopy run over rsockets, whose data path is RDMA WRITE \
                 with immediate data into the peer's buffers, which QEMU 7.2's pvrdma turns into \
                 SENDs (rkey -1); rdma_server/rdma_client and cmtime, in the same test, run on \
                 the patched model",
        issue: "issue 5",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "hostile_device",
        reason: "the faults are injected by the patched model (tools/qemu patch 16, a fault \
                 register in BAR 1); QEMU 7.2's pvrdma has none and never misbehaves on demand",
        issue: "issue 11",
    },
    NotApplicable {
        model: DeviceModel::Stock,
        test: "perftest_modes",
        reason: "ib_send_bw -e and ib_send_lat -e sleep on CQ events, which QEMU 7.2's pvrdma \
                 never signals (it treats the ARM doorbell as disarm), and ib_write_bw -q 4 \
                 needs RDMA WRITE, which it turns into SENDs; perftest_send runs the two-sided \
                 defaults on it",
        issue: "issue 5",
    },
];

/// Tests that need verbs the Rust driver does not implement yet, with what
/// they need. Such a test still runs on the Rust driver (on every device
/// model); a failure that is not a kernel problem is reported as TAP `# TODO`
/// naming what is missing, and a pass fails the run as an unexpected pass
/// naming the entry to delete. Empty since issue 4: the Rust driver implements
/// every verb the lab's tests use, and passes each test the C driver passes.
pub const RUST_DRIVER_UNIMPLEMENTED: &[(&str, &str)] = &[];

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
/// those can be a missing verb or a device model's limit; the rest must work
/// on every test.
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

/// The known failure of `test` with `driver` on `model`, if there is one.
pub fn lookup(model: DeviceModel, driver: Driver, test: &str) -> Option<&'static KnownFailure> {
    KNOWN_FAILURES
        .iter()
        .find(|k| k.model == model && k.test == test && k.driver.is_none_or(|d| d == driver))
}

/// Why `test` cannot run on `model`, if it cannot.
pub fn not_applicable(model: DeviceModel, test: &str) -> Option<&'static NotApplicable> {
    NOT_APPLICABLE
        .iter()
        .find(|n| n.model == model && n.test == test)
}

/// Why a test `model` cannot run is skipped there (its TAP `# SKIP`).
pub fn skip_reason(entry: &NotApplicable) -> String {
    format!(
        "not applicable to the {} device model: {} ({})",
        entry.model.name(),
        entry.reason,
        entry.issue
    )
}

/// An excuse for the failure of a test script: a pass is an unexpected pass
/// (`stale`: the excuse to delete), a failure of the script itself is `todo`,
/// anything else (setup, teardown, kernel, lab) a real failure.
fn excuse(verdict: Verdict, todo: String, stale: String) -> TapResult {
    match verdict {
        Verdict::Pass => TapResult::UnexpectedPass(stale),
        Verdict::Fail {
            cause,
            kernel_problem: false,
        } if failed_in_test_script(&cause) => TapResult::Todo(format!("{todo}; this run: {cause}")),
        Verdict::Fail { cause, .. } => TapResult::Fail(cause),
    }
}

/// What an unexpected pass of `test` says of its known failure `k`: the
/// entry to delete, found by its model, driver and test, and its cause.
fn stale_known_failure(k: &KnownFailure, driver: Driver, test: &str) -> String {
    let drivers = match k.driver {
        Some(d) => format!("the {} driver", d.name()),
        None => "either driver".to_string(),
    };
    format!(
        "the known failure of {test} on the {} model ({drivers}, {}) did not occur with the {} \
         driver: delete its entry from KNOWN_FAILURES (tools/pvrdma-lab/src/known.rs), whose \
         cause says: {}",
        k.model.name(),
        k.issue,
        driver.name(),
        k.cause
    )
}

/// The TAP result of a finished test, its excuses applied.
pub fn tap_result(model: DeviceModel, driver: Driver, test: &str, verdict: Verdict) -> TapResult {
    if let Some(missing) = unimplemented_by(driver, test) {
        return excuse(
            verdict,
            format!("the Rust driver does not implement {missing} yet ({RUST_DRIVER_VERBS_ISSUE})"),
            format!(
                "passed although the Rust driver lacks {missing} ({RUST_DRIVER_VERBS_ISSUE}): \
                 delete its entry from RUST_DRIVER_UNIMPLEMENTED (tools/pvrdma-lab/src/known.rs)"
            ),
        );
    }
    if let Some(n) = not_applicable(model, test) {
        // Only run with --run-not-applicable.
        return excuse(
            verdict,
            format!(
                "not applicable to the {} model: {} ({})",
                model.name(),
                n.reason,
                n.issue
            ),
            format!(
                "passed on the {} model although listed as not applicable to it ({}): \
                 delete its entry from NOT_APPLICABLE (tools/pvrdma-lab/src/known.rs)",
                model.name(),
                n.issue
            ),
        );
    }
    let known = lookup(model, driver, test);
    match (verdict, known) {
        (Verdict::Pass, None) => TapResult::Pass,
        (Verdict::Pass, Some(k)) if k.intermittent => TapResult::Pass,
        (Verdict::Pass, Some(k)) => TapResult::UnexpectedPass(stale_known_failure(k, driver, test)),
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
                    "{cause} [not the known failure of this test on the {} model, whose \
                     message has '{}']",
                    model.name(),
                    k.signature
                ))
            } else {
                TapResult::Todo(format!("{} ({}); this run: {cause}", k.cause, k.issue))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;
    use crate::layout;
    use DeviceModel::{Patched, Stock};

    #[test]
    fn lookup_by_model_driver_and_test() {
        assert!(lookup(Stock, Driver::C, "ucmatose").is_some());
        assert!(lookup(Stock, Driver::Rust, "ucmatose").is_some());
        assert!(lookup(Patched, Driver::C, "ucmatose").is_none());
        assert!(lookup(Stock, Driver::C, "ibv_devinfo").is_none());
        assert!(not_applicable(Stock, "rping").is_some());
        assert!(not_applicable(Patched, "rping").is_none());
        assert!(not_applicable(Stock, "ibv_rc_pingpong").is_none());
    }

    #[test]
    fn every_entry_says_why_and_names_a_real_test() {
        let tests = catalog::discover(&layout::tests_dir()).expect("tests/guest/tests");
        let exists = |name: &str| tests.iter().any(|t| t.name == name);
        for k in KNOWN_FAILURES {
            assert!(
                !k.cause.is_empty() && !k.signature.is_empty() && k.issue.starts_with("issue "),
                "{k:?}"
            );
            assert!(exists(k.test), "{k:?}: no such test");
            assert!(not_applicable(k.model, k.test).is_none(), "{k:?} twice");
        }
        for n in NOT_APPLICABLE {
            assert!(
                !n.reason.is_empty() && n.issue.starts_with("issue "),
                "{n:?}"
            );
            assert!(exists(n.test), "{n:?}: no such test");
        }
        for (test, what) in RUST_DRIVER_UNIMPLEMENTED {
            assert!(exists(test) && !what.is_empty(), "{test}: no such test");
        }
    }

    #[test]
    fn the_patched_model_excuses_nothing() {
        assert!(KNOWN_FAILURES.iter().all(|k| k.model != Patched));
        assert!(NOT_APPLICABLE.iter().all(|n| n.model != Patched));
    }

    fn fail(cause: &str, kernel_problem: bool) -> Verdict {
        Verdict::Fail {
            cause: cause.to_string(),
            kernel_problem,
        }
    }

    #[test]
    fn known_failures_are_excused_only_as_described_and_on_their_model() {
        let known =
            "ucmatose client exited with status 255: cmatose: failure connecting: Invalid argument";
        assert!(matches!(
            tap_result(Stock, Driver::C, "ucmatose", fail(known, false)),
            TapResult::Todo(_)
        ));
        assert!(matches!(
            tap_result(Patched, Driver::C, "ucmatose", fail(known, false)),
            TapResult::Fail(_)
        ));
        assert_eq!(
            tap_result(Patched, Driver::C, "ucmatose", Verdict::Pass),
            TapResult::Pass
        );
        assert!(matches!(
            tap_result(
                Stock,
                Driver::C,
                "ucmatose",
                fail("bind address failed: No such device", false)
            ),
            TapResult::Fail(_)
        ));
        assert!(matches!(
            tap_result(Stock, Driver::C, "ucmatose", fail(known, true)),
            TapResult::Fail(_)
        ));
        assert!(matches!(
            tap_result(Stock, Driver::C, "ucmatose", Verdict::Pass),
            TapResult::UnexpectedPass(_)
        ));
        assert_eq!(
            tap_result(Stock, Driver::C, "ibv_devinfo", Verdict::Pass),
            TapResult::Pass
        );
    }

    /// A known failure not marked intermittent that did not occur is stale: the pass fails the
    /// run and names the entry to delete (its model, test and issue), with either driver.
    #[test]
    fn a_known_failure_that_does_not_occur_fails_the_run() {
        for driver in [Driver::C, Driver::Rust] {
            for test in ["ucmatose", "verbs_limits"] {
                let k = lookup(Stock, driver, test).unwrap();
                assert!(!k.intermittent, "{k:?}");
                let result = tap_result(Stock, driver, test, Verdict::Pass);
                assert!(result.fails(), "{test}: {result:?}");
                let TapResult::UnexpectedPass(why) = result else {
                    panic!("{test}: not an unexpected pass");
                };
                assert!(
                    why.starts_with(&format!(
                        "the known failure of {test} on the stock model (either driver, {}) did \
                         not occur with the {} driver: delete its entry from KNOWN_FAILURES",
                        k.issue,
                        driver.name()
                    )),
                    "{why}"
                );
                assert!(why.ends_with(k.cause), "{why}");
            }
        }
        // Not excused on the patched model: a plain pass there.
        assert!(!tap_result(Patched, Driver::C, "ucmatose", Verdict::Pass).fails());
    }

    /// An intermittent known failure (a race of the device model): excused only with its
    /// signature and on its model; a pass is a plain pass.
    #[test]
    fn intermittent_known_failures_pass_plainly() {
        let abort = "guest did not report: QEMU exited (signal 6 (SIGABRT)); last stage: test \
                     unbind_in_use (crash?); QEMU: qemu-system-x86_64: \
                     ../src/util/qemu-thread-posix.c:87: qemu_mutex_lock_impl: Assertion \
                     `mutex->initialized' failed.";
        assert!(matches!(
            tap_result(Stock, Driver::Rust, "unbind_in_use", fail(abort, false)),
            TapResult::Todo(_)
        ));
        assert_eq!(
            tap_result(Stock, Driver::Rust, "unbind_in_use", Verdict::Pass),
            TapResult::Pass
        );
        assert!(matches!(
            tap_result(Patched, Driver::Rust, "unbind_in_use", fail(abort, false)),
            TapResult::Fail(_)
        ));
        assert!(matches!(
            tap_result(
                Stock,
                Driver::Rust,
                "unbind_in_use",
                fail(
                    "guest did not report: QEMU exited (signal 11 (SIGSEGV))",
                    false
                )
            ),
            TapResult::Fail(_)
        ));
    }

    #[test]
    fn not_applicable_tests_are_skipped_and_excused_when_run_anyway() {
        let entry = not_applicable(Stock, "verbs_ops").unwrap();
        let why = skip_reason(entry);
        assert!(
            why.starts_with("not applicable to the stock device model: "),
            "{why}"
        );
        assert!(matches!(
            tap_result(
                Stock,
                Driver::C,
                "verbs_ops",
                fail("ibv_reg_mr: Bad address", false)
            ),
            TapResult::Todo(_)
        ));
        let stale = tap_result(Stock, Driver::C, "verbs_ops", Verdict::Pass);
        assert!(stale.fails(), "{stale:?}");
        let TapResult::UnexpectedPass(why) = stale else {
            panic!("not an unexpected pass");
        };
        assert!(
            why.contains("delete its entry from NOT_APPLICABLE"),
            "{why}"
        );
        assert!(matches!(
            tap_result(Stock, Driver::C, "verbs_ops", fail("Oops", true)),
            TapResult::Fail(_)
        ));
        assert!(matches!(
            tap_result(
                Stock,
                Driver::C,
                "verbs_ops",
                fail("teardown: rmmod failed", false)
            ),
            TapResult::Fail(_)
        ));
        assert!(matches!(
            tap_result(
                Patched,
                Driver::C,
                "verbs_ops",
                fail("ibv_reg_mr: Bad address", false)
            ),
            TapResult::Fail(_)
        ));
    }

    #[test]
    fn the_rust_driver_is_excused_nothing_the_c_driver_passes() {
        // Issue 4 emptied the table: a Rust failure is a failure, as a C one is.
        assert!(RUST_DRIVER_UNIMPLEMENTED.is_empty());
        for model in crate::model::ALL {
            for driver in [Driver::Rust, Driver::C] {
                assert!(matches!(
                    tap_result(
                        model,
                        driver,
                        "ibv_rc_pingpong",
                        fail("Couldn't register MR", false)
                    ),
                    TapResult::Fail(_)
                ));
                assert_eq!(
                    tap_result(model, driver, "ibv_rc_pingpong", Verdict::Pass),
                    TapResult::Pass
                );
                assert!(matches!(
                    tap_result(model, driver, "ibv_rc_pingpong", fail("Oops", true)),
                    TapResult::Fail(_)
                ));
            }
        }
    }
}
