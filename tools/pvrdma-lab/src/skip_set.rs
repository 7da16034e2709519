// SPDX-License-Identifier: GPL-2.0-only
//! The run's skip set, checked: the entries a run skips (TAP
//! `# SKIP`, `n/a` in the results table) are exactly those that the
//! [`not_applicable`](crate::known::NotApplicable) entries of
//! `known-failures.toml` and the selection skip. A skip for any other reason
//! (a driver module not found: a build or a path that does not match) would
//! leave a run green that tested less than it says, so it fails the run; so
//! does an entry those skip that would run.
//!
//! Outside the set: the entries not run because an earlier test failed and
//! stopped the run (without `--keep-going`), which has failed already.

use crate::cli::Driver;
use crate::known;
use crate::model::DeviceModel;
use crate::tap::TapResult;

/// Why the C driver's pair with itself is skipped unless `--reference-pairs`.
const REFERENCE_PAIR_SKIP: &str = "the reference C driver with itself on both guests, run on \
     demand (--reference-pairs, make check REFERENCE_PAIRS=1): the C driver's server and client \
     each run against the Rust driver's in the mixed pairs";

/// What the run's selection says of skips.
pub struct Selection<'a> {
    /// The drivers the run tests.
    pub drivers: &'a [Driver],
    /// `--run-not-applicable`: the tests a model cannot pass run on it too.
    pub run_not_applicable: bool,
    /// `--reference-pairs`: the C driver's pairs with itself run too.
    pub reference_pairs: bool,
}

/// Why the entry of `test` with `driver` (and `client` for a two-guest test) on `model` is
/// skipped, if a `not_applicable` entry or the selection skips it.
pub fn expected(
    selection: &Selection,
    model: DeviceModel,
    driver: Driver,
    client: Option<Driver>,
    test: &str,
) -> Option<String> {
    if let Some(entry) = known::not_applicable(model, test) {
        if !selection.run_not_applicable {
            return Some(known::skip_reason(entry));
        }
    }
    // (with the Rust driver in the run: its mixed pairs have them)
    let reference_pair = driver == Driver::C
        && client == Some(Driver::C)
        && selection.drivers.contains(&Driver::Rust)
        && !selection.reference_pairs;
    reference_pair.then(|| REFERENCE_PAIR_SKIP.to_string())
}

/// The failure that replaces an entry's planned result (`planned`, none when it is to run)
/// when the entry breaks the skip set, given why it is to be skipped (`expected`, from
/// [`expected`]); none when the plan stands. A planned failure stands: it fails the run.
pub fn check(planned: Option<&TapResult>, expected: Option<&str>) -> Option<TapResult> {
    match (planned, expected) {
        (Some(result), _) if result.fails() => None,
        (Some(TapResult::Skip(why)), None) => Some(TapResult::Fail(format!(
            "skipped, which neither a not_applicable entry \
             (tools/pvrdma-lab/known-failures.toml) nor the selection calls for: {why}"
        ))),
        (Some(TapResult::Skip(why)), Some(reason)) if why != reason => {
            Some(TapResult::Fail(format!(
                "skipped ({why}), where not_applicable or the selection skips it because {reason}"
            )))
        }
        (Some(TapResult::Skip(_)), Some(_)) => None,
        (_, Some(reason)) => Some(TapResult::Fail(format!(
            "planned to run, although not_applicable or the selection skips it: {reason}"
        ))),
        (_, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeviceModel::{Patched, Stock};

    const BOTH: Selection = Selection {
        drivers: &[Driver::C, Driver::Rust],
        run_not_applicable: false,
        reference_pairs: false,
    };

    /// A skip nothing calls for (the Rust driver's module not found) fails the run.
    #[test]
    fn a_skip_neither_the_table_nor_the_selection_calls_for_fails() {
        let not_built = TapResult::Skip("the Rust driver module is not built yet".into());
        let Some(TapResult::Fail(cause)) = check(Some(&not_built), None) else {
            panic!("the skip stood");
        };
        assert!(
            cause.ends_with("calls for: the Rust driver module is not built yet"),
            "{cause}"
        );
        let other = TapResult::Skip("another reason".into());
        let rping = expected(&BOTH, Stock, Driver::Rust, None, "rping").unwrap();
        assert!(matches!(
            check(Some(&other), Some(&rping)),
            Some(TapResult::Fail(_))
        ));
    }

    /// The expected skips: the tests a model cannot run, unless `--run-not-applicable`; the C
    /// driver's pairs with itself when the Rust driver runs, unless `--reference-pairs`.
    #[test]
    fn the_expected_skips_are_the_tables_and_the_selections() {
        let rping = expected(&BOTH, Stock, Driver::Rust, None, "rping").unwrap();
        assert!(rping.starts_with("not applicable to the stock device model: "));
        assert_eq!(
            check(Some(&TapResult::Skip(rping.clone())), Some(&rping)),
            None
        );
        assert_eq!(expected(&BOTH, Patched, Driver::Rust, None, "rping"), None);
        let run_anyway = Selection {
            run_not_applicable: true,
            ..BOTH
        };
        assert_eq!(expected(&run_anyway, Stock, Driver::C, None, "rping"), None);

        let pair = |s: &Selection| expected(s, Patched, Driver::C, Some(Driver::C), "two_guests");
        assert!(pair(&BOTH).is_some());
        assert_eq!(
            expected(&BOTH, Patched, Driver::C, Some(Driver::Rust), "two_guests"),
            None
        );
        let c_only = Selection {
            drivers: &[Driver::C],
            ..BOTH
        };
        assert_eq!(pair(&c_only), None);
        let reference = Selection {
            reference_pairs: true,
            ..BOTH
        };
        assert_eq!(pair(&reference), None);
    }

    /// An entry to be skipped that would run fails; a failure stands (it fails the run).
    #[test]
    fn an_expected_skip_that_would_run_fails() {
        let rping = expected(&BOTH, Stock, Driver::C, None, "rping").unwrap();
        assert!(matches!(
            check(None, Some(&rping)),
            Some(TapResult::Fail(_))
        ));
        let missing = TapResult::Fail("no vmw_pvrdma module".into());
        assert_eq!(check(Some(&missing), Some(&rping)), None);
        assert_eq!(check(Some(&missing), None), None);
        assert_eq!(check(None, None), None);
    }
}
