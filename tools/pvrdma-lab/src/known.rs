// SPDX-License-Identifier: GPL-2.0-only
//! What a test is excused for, and nothing more: the limits of a device model
//! and the verbs the Rust driver does not implement yet. The entries are data,
//! in `known-failures.toml` ([`crate::known_failures`]); this is how they apply.
//!
//! - [`KnownFailure`]: a test that cannot pass on a device model whatever
//!   the driver does, and fails fast enough to keep running. It is run; its
//!   failure is reported as TAP `# TODO <cause>` (not counted as a failure)
//!   only if the failure message has the entry's signature. A pass fails the
//!   run as an unexpected pass naming the entry to delete, unless the entry
//!   is marked [`intermittent`](KnownFailure::intermittent).
//! - [`NotApplicable`]: a test that needs what a device model does not do
//!   (one-sided RDMA, CQ events) and would only hang there until its time
//!   limit. It is not run on that model: TAP `# SKIP <reason>`.
//!   `--run-not-applicable` runs it anyway, with the excuse of a known
//!   failure (any failure of the test script itself); a pass then fails the
//!   run as an unexpected pass naming the entry to delete.
//! - [`RustDriverUnimplemented`]: tests that need verbs the Rust driver does
//!   not implement yet, on every device model; a pass fails the run
//!   likewise.
//!
//! An excuse that no longer excuses anything is a failure rather than a note,
//! because a stale entry left in place would excuse the next real failure of
//! its test. A kernel problem (oops, WARN, lockdep, kmemleak, ...) is never
//! excused, nor is a failure of the driver's setup or teardown. Each entry
//! says its whole cause: that is what a run prints. Every test not listed for a
//! model must pass on it: the patched model has no entries, the stock model
//! only these.

use crate::cli::Driver;
use crate::known_failures::{catalogue, PATH};
use crate::model::DeviceModel;
use crate::tap::TapResult;
use crate::verdict::Verdict;

/// One known failure (`[[known_failure]]`).
#[derive(Debug)]
pub struct KnownFailure {
    /// Its id in the data file.
    pub id: String,
    /// The device model it happens on.
    pub model: DeviceModel,
    /// The driver it concerns; None for both.
    pub driver: Option<Driver>,
    /// The test.
    pub test: String,
    /// Why it fails (what the device model does wrong).
    pub cause: String,
    /// Text the test's failure message must contain for the failure to be this
    /// known one; any other failure of the test is a real failure.
    pub signature: String,
    /// Whether it happens only sometimes (a race of the device model): a pass is then a plain
    /// pass. Otherwise a pass is an unexpected pass, which fails the run: the entry is stale.
    pub intermittent: bool,
}

/// A test a device model cannot run (`[[not_applicable]]`).
#[derive(Debug)]
pub struct NotApplicable {
    /// Its id in the data file.
    pub id: String,
    /// The device model.
    pub model: DeviceModel,
    /// The test.
    pub test: String,
    /// What the test needs that the model does not do, and how it would fail.
    pub reason: String,
}

/// A test that needs verbs the Rust driver does not implement yet
/// (`[[rust_driver_unimplemented]]`). It still runs on the Rust driver (on every device
/// model); a failure that is not a kernel problem is reported as TAP `# TODO` naming what is
/// missing, and a pass fails the run as an unexpected pass naming the entry to delete. There
/// are none: the Rust driver implements every verb the lab's tests use, and passes each test
/// the C driver passes.
#[derive(Debug)]
pub struct RustDriverUnimplemented {
    /// Its id in the data file.
    pub id: String,
    /// The test.
    pub test: String,
    /// What it needs that the Rust driver does not implement.
    pub missing: String,
}

/// What `test` needs that the Rust driver does not implement yet, if anything.
pub fn unimplemented_by(driver: Driver, test: &str) -> Option<&'static RustDriverUnimplemented> {
    if driver != Driver::Rust {
        return None;
    }
    catalogue()
        .rust_driver_unimplemented
        .iter()
        .find(|u| u.test == test)
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
    catalogue()
        .known_failures
        .iter()
        .find(|k| k.model.covers(model) && k.test == test && k.driver.is_none_or(|d| d == driver))
}

/// Why `test` cannot run on `model`, if it cannot.
pub fn not_applicable(model: DeviceModel, test: &str) -> Option<&'static NotApplicable> {
    catalogue()
        .not_applicable
        .iter()
        .find(|n| n.model.covers(model) && n.test == test)
}

/// Why a test `model` cannot run is skipped there (its TAP `# SKIP`).
pub fn skip_reason(entry: &NotApplicable) -> String {
    format!(
        "not applicable to the {} device model: {}",
        entry.model.name(),
        entry.reason
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
        "the known failure of {test} on the {} model ({drivers}) did not occur with the {} \
         driver: delete its entry '{}' from {PATH}, whose cause says: {}",
        k.model.name(),
        driver.name(),
        k.id,
        k.cause
    )
}

/// The TAP result of a finished test, its excuses applied.
pub fn tap_result(model: DeviceModel, driver: Driver, test: &str, verdict: Verdict) -> TapResult {
    if let Some(u) = unimplemented_by(driver, test) {
        return excuse(
            verdict,
            format!("the Rust driver does not implement {} yet", u.missing),
            format!(
                "passed although the Rust driver lacks {}: delete its entry '{}' from {PATH}",
                u.missing, u.id
            ),
        );
    }
    if let Some(n) = not_applicable(model, test) {
        // Only run with --run-not-applicable.
        return excuse(
            verdict,
            format!("not applicable to the {} model: {}", model.name(), n.reason),
            format!(
                "passed on the {} model although listed as not applicable to it: delete its \
                 entry '{}' from {PATH}",
                model.name(),
                n.id
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
            if kernel_problem || !cause.contains(&k.signature) {
                TapResult::Fail(format!(
                    "{cause} [not the known failure of this test on the {} model, whose \
                     message has '{}']",
                    model.name(),
                    k.signature
                ))
            } else {
                TapResult::Todo(format!("{}; this run: {cause}", k.cause))
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
        let all = catalogue();
        for k in &all.known_failures {
            assert!(!k.cause.is_empty() && !k.signature.is_empty(), "{k:?}");
            assert!(exists(&k.test), "{k:?}: no such test");
            assert!(not_applicable(k.model, &k.test).is_none(), "{k:?} twice");
        }
        for n in &all.not_applicable {
            assert!(!n.reason.is_empty(), "{n:?}");
            assert!(exists(&n.test), "{n:?}: no such test");
        }
        for u in &all.rust_driver_unimplemented {
            assert!(
                exists(&u.test) && !u.missing.is_empty(),
                "{u:?}: no such test"
            );
        }
    }

    /// The patched model is the lab's whole device: it excuses nothing of the
    /// Rust driver, and of the C driver only what the C driver's own code does.
    #[test]
    fn the_patched_model_excuses_only_the_c_drivers_own_failures() {
        assert!(catalogue()
            .known_failures
            .iter()
            .all(|k| k.model != Patched || k.driver == Some(Driver::C)));
        assert!(catalogue()
            .not_applicable
            .iter()
            .all(|n| n.model != Patched));
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
    /// run and names the entry to delete (its model, test and id), with either driver.
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
                        "the known failure of {test} on the stock model (either driver) did not \
                         occur with the {} driver: delete its entry '{}' from \
                         tools/pvrdma-lab/known-failures.toml, whose cause says: ",
                        driver.name(),
                        k.id
                    )),
                    "{why}"
                );
                assert!(why.ends_with(&k.cause), "{why}");
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
            why.contains(&format!(
                "delete its entry '{}' from tools/pvrdma-lab/known-failures.toml",
                entry.id
            )),
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
        // The table is empty: a Rust failure is a failure, as a C one is.
        assert!(catalogue().rust_driver_unimplemented.is_empty());
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
