// SPDX-License-Identifier: GPL-2.0-only
//! One metric's comparison of the drivers: each driver's median, the Rust/C
//! ratio of the medians, its bootstrap interval, and what that interval
//! shows.

use super::collect::{PerDriver, Samples};
use super::figures::Metric;
use super::stats::{self, Bootstrap, Interval};

/// The fewest figures per driver the report draws a conclusion from: with
/// fewer, the bootstrap's resamples barely differ and its interval is too
/// narrow to trust.
pub const MIN_RUNS: usize = 3;

/// The bootstrap every comparison uses: 10,000 resamples (the intervals'
/// bounds then move by well under 0.01 from seed to seed) and a fixed seed,
/// so that a report can be regenerated to the digit.
pub const BOOTSTRAP: Bootstrap = Bootstrap {
    resamples: 10_000,
    seed: 0x7076_7264_6d61, // "pvrdma"
    confidence: 95.0,
};

/// What a metric's interval shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The interval lies wholly on the Rust driver's better side of 1.
    RustFaster,
    /// The interval lies wholly on the C driver's better side of 1.
    CFaster,
    /// The interval includes 1.00.
    NoDifferenceShown,
    /// A driver has fewer than [`MIN_RUNS`] figures, or a C figure is 0.
    TooFewRuns,
}

impl Verdict {
    /// The verdict as the report writes it.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::RustFaster => "Rust faster",
            Verdict::CFaster => "C faster",
            Verdict::NoDifferenceShown => "no difference shown",
            Verdict::TooFewRuns => "too few runs",
        }
    }
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// What is compared.
    pub metric: Metric,
    /// Each driver's figures used and failures.
    pub samples: PerDriver<Samples>,
    /// Each driver's median.
    pub medians: PerDriver<Option<f64>>,
    /// Rust's median over C's.
    pub ratio: Option<f64>,
    /// The ratio's 95% bootstrap interval.
    pub interval: Option<Interval>,
    /// What the interval shows.
    pub verdict: Verdict,
}

/// A ratio as the report prints it. The verdict is taken on these rounded
/// bounds so that it never contradicts the printed interval (an interval
/// printed as [0.97, 1.00] shows no difference).
pub fn rounded(ratio: f64) -> f64 {
    (ratio * 100.0).round() / 100.0
}

/// Compares the drivers on one metric.
pub fn compare(metric: &Metric, samples: &PerDriver<Samples>) -> Comparison {
    let medians = PerDriver {
        c: stats::median(&samples.c.values),
        rust: stats::median(&samples.rust.values),
    };
    let ratio = match (medians.rust, medians.c) {
        (Some(rust), Some(c)) if c > 0.0 => Some(rust / c),
        _ => None,
    };
    let enough = samples.c.values.len() >= MIN_RUNS && samples.rust.values.len() >= MIN_RUNS;
    let interval = if enough {
        BOOTSTRAP.ratio_of_medians(&samples.rust.values, &samples.c.values)
    } else {
        None
    };
    let verdict = match interval {
        None => Verdict::TooFewRuns,
        Some(i) if rounded(i.low) <= 1.0 && rounded(i.high) >= 1.0 => Verdict::NoDifferenceShown,
        // The whole interval above 1: Rust's figure is the larger.
        Some(i) if rounded(i.low) > 1.0 => {
            if metric.higher_is_better() {
                Verdict::RustFaster
            } else {
                Verdict::CFaster
            }
        }
        Some(_) => {
            if metric.higher_is_better() {
                Verdict::CFaster
            } else {
                Verdict::RustFaster
            }
        }
    };
    Comparison {
        metric: metric.clone(),
        samples: samples.clone(),
        medians,
        ratio,
        interval,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::figures::Phase;

    fn samples(c: &[f64], rust: &[f64]) -> PerDriver<Samples> {
        PerDriver {
            c: Samples {
                values: c.to_vec(),
                failed: 0,
            },
            rust: Samples {
                values: rust.to_vec(),
                failed: 1,
            },
        }
    }

    const LOW: [f64; 5] = [100.0, 102.0, 98.0, 101.0, 99.0];
    const HIGH: [f64; 5] = [150.0, 148.0, 152.0, 151.0, 149.0];

    #[test]
    fn direction_decides_who_is_faster() {
        let bw = Metric::Bandwidth("ib_write_bw".into());
        let ms = Metric::Phase(Phase::DestroyAll, None);
        assert_eq!(
            compare(&bw, &samples(&LOW, &HIGH)).verdict,
            Verdict::RustFaster
        );
        assert_eq!(
            compare(&bw, &samples(&HIGH, &LOW)).verdict,
            Verdict::CFaster
        );
        assert_eq!(
            compare(&ms, &samples(&LOW, &HIGH)).verdict,
            Verdict::CFaster
        );
        assert_eq!(
            compare(&ms, &samples(&HIGH, &LOW)).verdict,
            Verdict::RustFaster
        );
        let same = compare(&ms, &samples(&LOW, &LOW));
        assert_eq!(same.verdict, Verdict::NoDifferenceShown);
        assert_eq!(same.ratio, Some(1.0));
        assert_eq!(same.medians.c, Some(100.0));
    }

    #[test]
    fn too_few_runs() {
        let ms = Metric::Phase(Phase::CreateQps, None);
        let few = compare(&ms, &samples(&LOW, &HIGH[..2]));
        assert_eq!(few.verdict, Verdict::TooFewRuns);
        assert_eq!(few.interval, None);
        assert_eq!(few.ratio, Some(1.49));
        let none = compare(&ms, &samples(&[], &HIGH));
        assert_eq!(none.ratio, None);
        assert_eq!(none.verdict, Verdict::TooFewRuns);
    }
}
