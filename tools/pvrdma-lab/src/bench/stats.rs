// SPDX-License-Identifier: GPL-2.0-only
//! The statistics of the benchmark: medians, percentiles and a percentile
//! bootstrap of the ratio of two medians.
//!
//! Medians because single runs under TCG have outliers (a host hiccup during
//! one run) that would drag a mean; a bootstrap because nothing is known of
//! the figures' distribution and the samples are small. The bootstrap draws
//! from a seeded generator, so the same results always give the same report.

/// A small, fast, seedable generator (SplitMix64, Steele, Lea and Flood
/// 2014): statistically sound for resampling, and the crate needs no
/// dependency for it.
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0), by multiplying rather than by `%`, whose
    /// bias for small `n` is below 2^-50.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// The median of `values`, `None` for none: the middle value, or the mean of
/// the two middle values for an even count.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

fn median_of_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The `p`-th percentile (0..=100) of sorted values, interpolating linearly
/// between the two nearest ranks (the definition most tools use by default).
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = p.clamp(0.0, 100.0) / 100.0 * last as f64;
    let below = rank.floor() as usize;
    let above = rank.ceil() as usize;
    let weight = rank - below as f64;
    Some(sorted[below] + (sorted[above] - sorted[below]) * weight)
}

/// An interval of ratios, `low <= high`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// The lower bound.
    pub low: f64,
    /// The upper bound.
    pub high: f64,
}

/// How the bootstrap runs.
#[derive(Clone, Copy, Debug)]
pub struct Bootstrap {
    /// How many resamples.
    pub resamples: usize,
    /// The generator's seed.
    pub seed: u64,
    /// The interval's confidence level, in percent.
    pub confidence: f64,
}

/// Draws `sample.len()` values from `sample` with replacement into `into`,
/// sorted.
fn resample(sample: &[f64], rng: &mut SplitMix64, into: &mut Vec<f64>) {
    into.clear();
    into.extend((0..sample.len()).map(|_| sample[rng.below(sample.len())]));
    into.sort_by(f64::total_cmp);
}

impl Bootstrap {
    /// The percentile bootstrap interval of `median(numerator) /
    /// median(denominator)`: each sample is resampled with replacement on its
    /// own (the two drivers' runs are independent), the ratio of the
    /// resamples' medians taken each time, and the interval is the central
    /// `confidence` percent of those ratios. `None` when a sample is empty or
    /// the denominator holds a value that is not positive (a ratio to zero
    /// says nothing).
    pub fn ratio_of_medians(&self, numerator: &[f64], denominator: &[f64]) -> Option<Interval> {
        if numerator.is_empty()
            || denominator.is_empty()
            || denominator.iter().any(|&v| v <= 0.0)
            || self.resamples == 0
        {
            return None;
        }
        let mut rng = SplitMix64::new(self.seed);
        let (mut num, mut den) = (Vec::new(), Vec::new());
        let mut ratios = Vec::with_capacity(self.resamples);
        for _ in 0..self.resamples {
            resample(numerator, &mut rng, &mut num);
            resample(denominator, &mut rng, &mut den);
            ratios.push(median_of_sorted(&num)? / median_of_sorted(&den)?);
        }
        ratios.sort_by(f64::total_cmp);
        let tail = (100.0 - self.confidence) / 2.0;
        Some(Interval {
            low: percentile(&ratios, tail)?,
            high: percentile(&ratios, 100.0 - tail)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOOTSTRAP: Bootstrap = Bootstrap {
        resamples: 10_000,
        seed: 12,
        confidence: 95.0,
    };

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[4.0]), Some(4.0));
        assert_eq!(median(&[9.0, 1.0, 5.0]), Some(5.0));
        assert_eq!(median(&[9.0, 1.0, 5.0, 2.0]), Some(3.5));
        assert_eq!(median(&[2.0, 2.0, 100.0, 1.0, 3.0]), Some(2.0));
    }

    #[test]
    fn percentiles_interpolate() {
        let sorted = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&sorted, 0.0), Some(1.0));
        assert_eq!(percentile(&sorted, 50.0), Some(3.0));
        assert_eq!(percentile(&sorted, 100.0), Some(5.0));
        assert_eq!(percentile(&sorted, 12.5), Some(1.5));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn generator_is_seeded() {
        // SplitMix64's published first output for seed 0.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
        let draws = |seed| {
            let mut rng = SplitMix64::new(seed);
            (0..100).map(|_| rng.below(10)).collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
        assert!(draws(7).iter().all(|&i| i < 10));
    }

    #[test]
    fn bootstrap_is_deterministic() {
        let rust = [10.0, 12.0, 11.0, 15.0, 9.0, 10.5, 13.0];
        let c = [11.0, 10.0, 12.5, 14.0, 9.5, 11.5, 10.0];
        let first = BOOTSTRAP.ratio_of_medians(&rust, &c);
        assert!(first.is_some());
        for _ in 0..3 {
            assert_eq!(first, BOOTSTRAP.ratio_of_medians(&rust, &c));
        }
    }

    #[test]
    fn identical_samples_give_exactly_one() {
        let same = [5.0; 10];
        assert_eq!(
            BOOTSTRAP.ratio_of_medians(&same, &same),
            Some(Interval {
                low: 1.0,
                high: 1.0
            })
        );
    }

    #[test]
    fn separated_samples_exclude_one() {
        let slow = [
            100.0, 104.0, 98.0, 101.0, 103.0, 99.0, 102.0, 100.5, 97.0, 105.0,
        ];
        let fast = [80.0, 83.0, 79.0, 81.0, 82.0, 78.0, 80.5, 84.0, 79.5, 81.5];
        let interval = BOOTSTRAP.ratio_of_medians(&fast, &slow).unwrap();
        assert!(interval.low <= interval.high);
        assert!(interval.high < 1.0, "{interval:?}");
        assert!(interval.low > 0.7, "{interval:?}");
        let interval = BOOTSTRAP.ratio_of_medians(&slow, &fast).unwrap();
        assert!(interval.low > 1.0, "{interval:?}");
    }

    #[test]
    fn overlapping_samples_include_one() {
        let a = [10.0, 14.0, 9.0, 12.0, 11.0, 15.0, 8.0, 13.0];
        let b = [11.0, 9.5, 13.5, 10.0, 12.5, 14.5, 8.5, 12.0];
        let interval = BOOTSTRAP.ratio_of_medians(&a, &b).unwrap();
        assert!(interval.low < 1.0 && interval.high > 1.0, "{interval:?}");
    }

    #[test]
    fn no_interval_without_a_ratio() {
        assert_eq!(BOOTSTRAP.ratio_of_medians(&[], &[1.0]), None);
        assert_eq!(BOOTSTRAP.ratio_of_medians(&[1.0], &[]), None);
        assert_eq!(BOOTSTRAP.ratio_of_medians(&[1.0], &[0.0, 1.0]), None);
    }
}
