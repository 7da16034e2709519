// SPDX-License-Identifier: GPL-2.0-only
//! `bench.svg`: one row per metric, the Rust/C ratio of medians as a dot and
//! its 95% interval as a bar, on a logarithmic axis with a line at 1.00 (a
//! log axis so that 0.8 and 1.25, the same difference seen from either
//! driver, lie equally far from 1). Written by hand: the crate has no
//! dependencies, and an SVG of lines, rectangles and text needs none.

use super::compare::{rounded, Comparison, Verdict};
use crate::model::DeviceModel;

const WIDTH: f64 = 1000.0;
/// Where the metric labels end and the plot begins.
const PLOT_LEFT: f64 = 290.0;
const PLOT_RIGHT: f64 = 680.0;
/// Where the figures written beside each row begin.
const NOTE_LEFT: f64 = 692.0;
const TOP: f64 = 76.0;
const ROW: f64 = 36.0;
const BOTTOM: f64 = 44.0;
/// The least room between two tick labels.
const TICK_GAP: f64 = 38.0;
/// The ticks the axis may show, as ratios.
const TICKS: [f64; 17] = [
    0.1, 0.2, 0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 10.0,
];

/// `text` safe inside an XML element or attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// The colour of a verdict: green when Rust is faster, red when C is, grey
/// otherwise.
fn colour(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::RustFaster => "#1a7f37",
        Verdict::CFaster => "#cf222e",
        Verdict::NoDifferenceShown => "#57606a",
        Verdict::TooFewRuns => "#8c959f",
    }
}

/// The axis: ratios to x, logarithmically, symmetric around 1.
struct Axis {
    /// The largest |ln ratio| shown.
    half_span: f64,
}

impl Axis {
    /// An axis wide enough for every ratio and bound, at least 0.83 to 1.2.
    fn fitting(comparisons: &[Comparison]) -> Axis {
        let widest = comparisons
            .iter()
            .flat_map(|c| {
                [
                    c.ratio,
                    c.interval.map(|i| i.low),
                    c.interval.map(|i| i.high),
                ]
                .into_iter()
                .flatten()
            })
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(|r| r.ln().abs())
            .fold(1.2f64.ln(), f64::max);
        Axis {
            half_span: widest * 1.1,
        }
    }

    fn x(&self, ratio: f64) -> f64 {
        let middle = (PLOT_LEFT + PLOT_RIGHT) / 2.0;
        let clamped = ratio
            .max(f64::MIN_POSITIVE)
            .ln()
            .clamp(-self.half_span, self.half_span);
        middle + clamped / self.half_span * (PLOT_RIGHT - PLOT_LEFT) / 2.0
    }

    /// The ticks that fit: 1 always, then outwards on each side every
    /// candidate at least [`TICK_GAP`] from the last one kept.
    fn ticks(&self) -> Vec<f64> {
        let inside = |t: &f64| t.ln().abs() <= self.half_span;
        let mut ticks = vec![1.0];
        for side in [
            TICKS
                .iter()
                .rev()
                .filter(|&&t| t < 1.0)
                .copied()
                .collect::<Vec<_>>(),
            TICKS.iter().filter(|&&t| t > 1.0).copied().collect(),
        ] {
            let mut last = self.x(1.0);
            for tick in side.into_iter().filter(inside) {
                if (self.x(tick) - last).abs() >= TICK_GAP {
                    last = self.x(tick);
                    ticks.push(tick);
                }
            }
        }
        ticks.sort_by(f64::total_cmp);
        ticks
    }
}

/// What is written right of a row.
fn note(comparison: &Comparison) -> String {
    match (comparison.ratio, comparison.interval) {
        (Some(ratio), Some(i)) => format!(
            "{:.2} [{:.2}, {:.2}] {}",
            rounded(ratio),
            rounded(i.low),
            rounded(i.high),
            comparison.verdict.text()
        ),
        (Some(ratio), None) => format!("{:.2}, {}", rounded(ratio), comparison.verdict.text()),
        _ => comparison.verdict.text().to_string(),
    }
}

/// The plot of the comparisons.
pub fn render(model: DeviceModel, repetitions: usize, comparisons: &[Comparison]) -> String {
    let axis = Axis::fitting(comparisons);
    let height = TOP + ROW * comparisons.len() as f64 + BOTTOM;
    let plot_bottom = TOP + ROW * comparisons.len() as f64;
    let mut svg = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"13\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    svg.push_str(&format!(
        "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
        escape(&format!(
            "Rust driver / C driver, {} model, {repetitions} repetitions",
            model.name()
        ))
    ));
    for (y, line) in [
        (42, "dot: the ratio of the medians; bar: its 95% bootstrap interval; log scale"),
        (
            60,
            "above 1: the Rust driver's figure is the larger (better for MB/s, worse for µs and ms)",
        ),
    ] {
        svg.push_str(&format!(
            "<text x=\"12\" y=\"{y}\" fill=\"#57606a\">{}</text>\n",
            escape(line)
        ));
    }
    for tick in axis.ticks() {
        let x = axis.x(tick);
        let (stroke, width) = if tick == 1.0 {
            ("#24292f", 1.5)
        } else {
            ("#d0d7de", 1.0)
        };
        svg.push_str(&format!(
            "<line x1=\"{x:.1}\" y1=\"{TOP:.1}\" x2=\"{x:.1}\" y2=\"{plot_bottom:.1}\" \
             stroke=\"{stroke}\" stroke-width=\"{width}\"/>\n\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{tick:.2}</text>\n",
            plot_bottom + 18.0
        ));
    }
    svg.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#57606a\">Rust/C</text>\n",
        (PLOT_LEFT + PLOT_RIGHT) / 2.0,
        plot_bottom + 36.0
    ));
    for (row, comparison) in comparisons.iter().enumerate() {
        let y = TOP + ROW * (row as f64 + 0.5);
        let colour = colour(comparison.verdict);
        let better = if comparison.metric.higher_is_better() {
            "higher is better"
        } else {
            "lower is better"
        };
        // The metric, and under it which way is better.
        svg.push_str(&format!(
            "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\" \
             fill=\"#57606a\">{better}</text>\n",
            y - 1.0,
            escape(&comparison.metric.label()),
            y + 12.0,
            x = PLOT_LEFT - 10.0,
        ));
        if let Some(interval) = comparison.interval {
            let (low, high) = (axis.x(interval.low), axis.x(interval.high));
            svg.push_str(&format!(
                "<rect x=\"{low:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"8\" rx=\"2\" \
                 fill=\"{colour}\" fill-opacity=\"0.35\" stroke=\"{colour}\"/>\n",
                y - 4.0,
                (high - low).max(1.0)
            ));
        }
        if let Some(ratio) = comparison.ratio {
            svg.push_str(&format!(
                "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4.5\" fill=\"{colour}\"/>\n",
                axis.x(ratio)
            ));
        }
        svg.push_str(&format!(
            "<text x=\"{NOTE_LEFT:.1}\" y=\"{:.1}\" fill=\"{colour}\">{}</text>\n",
            y + 4.5,
            escape(&note(comparison))
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }

    #[test]
    fn axis_is_symmetric_and_keeps_one() {
        let axis = Axis::fitting(&[]);
        let middle = (PLOT_LEFT + PLOT_RIGHT) / 2.0;
        assert!((axis.x(1.0) - middle).abs() < 1e-9);
        assert!((axis.x(0.8) - middle + (axis.x(1.25) - middle)).abs() < 1e-9);
        let ticks = axis.ticks();
        assert!(ticks.contains(&1.0));
        assert!(ticks
            .windows(2)
            .all(|w| axis.x(w[1]) - axis.x(w[0]) >= TICK_GAP));
        assert!(axis.x(100.0) <= PLOT_RIGHT && axis.x(0.0) >= PLOT_LEFT);
    }
}
