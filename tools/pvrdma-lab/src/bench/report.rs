// SPDX-License-Identifier: GPL-2.0-only
//! The report's text: the table of comparisons as markdown (`bench.md`, with
//! a header saying what was measured and how) and as plain columns for the
//! terminal.

use super::collect::{Collection, DRIVERS};
use super::compare::{rounded, Comparison, BOOTSTRAP, MIN_RUNS};
use crate::cli::Driver;
use crate::model::DeviceModel;

/// What a report is about.
pub struct Report<'a> {
    /// The device model the runs used.
    pub model: DeviceModel,
    /// The repetitions read.
    pub collection: &'a Collection,
    /// One row per metric.
    pub comparisons: &'a [Comparison],
}

/// The table's column headings.
const COLUMNS: [&str; 9] = [
    "metric",
    "better",
    "C median",
    "Rust median",
    "Rust/C",
    "95% interval",
    "verdict",
    "used C/Rust",
    "failed C/Rust",
];

/// The columns aligned right: the numbers.
const NUMERIC: [bool; 9] = [false, false, true, true, true, true, false, true, true];

/// A figure rounded to its size (no decimals from 100, one from 10, two
/// below): 702, 34.5, 4.31; the runs' own spread is far wider than that.
fn figure(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// A number, or a dash for none.
fn optional(value: Option<f64>, format: impl Fn(f64) -> String) -> String {
    value.map_or_else(|| "-".to_string(), format)
}

/// The cells of one comparison's row.
fn cells(comparison: &Comparison) -> [String; 9] {
    let samples = &comparison.samples;
    [
        comparison.metric.label(),
        if comparison.metric.higher_is_better() {
            "higher".to_string()
        } else {
            "lower".to_string()
        },
        optional(comparison.medians.c, figure),
        optional(comparison.medians.rust, figure),
        optional(comparison.ratio, |r| format!("{:.2}", rounded(r))),
        match comparison.interval {
            Some(i) => format!("[{:.2}, {:.2}]", rounded(i.low), rounded(i.high)),
            None => "-".to_string(),
        },
        comparison.verdict.text().to_string(),
        format!("{}/{}", samples.c.values.len(), samples.rust.values.len()),
        format!("{}/{}", samples.c.failed, samples.rust.failed),
    ]
}

/// A driver as the report names it.
fn driver_title(driver: Driver) -> &'static str {
    match driver {
        Driver::C => "C",
        Driver::Rust => "Rust",
    }
}

/// The header's facts, one line each.
fn facts(report: &Report) -> Vec<String> {
    let collection = report.collection;
    let repetitions = &collection.repetitions;
    let span = match (repetitions.first(), repetitions.last()) {
        (Some(first), Some(last)) if repetitions.len() > 1 => format!("{first} to {last}"),
        (Some(only), _) => only.clone(),
        _ => "none".to_string(),
    };
    let warmup = if collection.warmup {
        "a warm-up repetition ran first; its figures are discarded"
    } else {
        "no warm-up repetition found"
    };
    let kernel = if collection.kernels.is_empty() {
        "unknown (no `# kernel:` line in the runs' TAP)".to_string()
    } else {
        collection.kernels.join(", ")
    };
    let runs = DRIVERS
        .iter()
        .map(|&driver| {
            let count = collection.runs.get(driver);
            format!(
                "{} driver {} passed, {} failed",
                driver_title(driver),
                count.passed,
                count.failed
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    vec![
        format!("device model: {}", report.model.name()),
        format!("repetitions: {} used ({span}); {warmup}", repetitions.len()),
        format!("kernel: {kernel}"),
        format!("runs (TAP): {runs}; a failed run's figures are left out"),
    ]
}

/// How the figures were compared, for the markdown header.
fn method() -> String {
    format!(
        "Each driver's figure is the median over its repetitions whose run passed \
         (`used`; `failed` counts the runs that failed or left no figure). Rust/C is \
         the ratio of the medians; its {confidence}% interval is a percentile \
         bootstrap: each driver's figures resampled with replacement, {resamples} \
         times (seed {seed:#x}), the {low}th and {high}th percentiles of the \
         resamples' ratios of medians. The verdict: `Rust faster` or `C faster` when \
         the interval, to two decimals, excludes 1.00 (on the side the metric's \
         `better` column says), `no difference shown` when it includes 1.00, `too \
         few runs` when a driver has fewer than {MIN_RUNS} figures.",
        confidence = BOOTSTRAP.confidence,
        resamples = BOOTSTRAP.resamples,
        seed = BOOTSTRAP.seed,
        low = (100.0 - BOOTSTRAP.confidence) / 2.0,
        high = 100.0 - (100.0 - BOOTSTRAP.confidence) / 2.0,
    )
}

/// `bench.md`: the header, the table and the plot.
pub fn markdown(report: &Report, svg_name: &str) -> String {
    let mut out = String::from("# Benchmark: the Rust driver against the C driver\n\n");
    for fact in facts(report) {
        out.push_str(&format!("- {fact}\n"));
    }
    out.push('\n');
    out.push_str(&method());
    out.push_str("\n\n");
    out.push_str(&format!("| {} |\n", COLUMNS.join(" | ")));
    let rules: Vec<&str> = NUMERIC
        .iter()
        .map(|&numeric| if numeric { "---:" } else { "---" })
        .collect();
    out.push_str(&format!("|{}|\n", rules.join("|")));
    for comparison in report.comparisons {
        out.push_str(&format!("| {} |\n", cells(comparison).join(" | ")));
    }
    out.push_str(&format!(
        "\n![Rust/C ratios of medians with their 95% intervals]({svg_name})\n"
    ));
    out
}

/// The table in aligned columns, for the terminal, under the header's facts.
pub fn text(report: &Report) -> String {
    let rows: Vec<[String; 9]> = report.comparisons.iter().map(cells).collect();
    let widths: Vec<usize> = (0..COLUMNS.len())
        .map(|col| {
            rows.iter()
                .map(|row| row[col].chars().count())
                .chain([COLUMNS[col].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .zip(NUMERIC)
            .map(|((cell, &width), numeric)| {
                let pad = " ".repeat(width.saturating_sub(cell.chars().count()));
                if numeric {
                    format!("{pad}{cell}")
                } else {
                    format!("{cell}{pad}")
                }
            })
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = String::new();
    for fact in facts(report) {
        out.push_str(&format!("{fact}\n"));
    }
    out.push('\n');
    out.push_str(&line(&COLUMNS));
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        out.push_str(&line(&cells));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_three_digits() {
        assert_eq!(figure(701.92), "702");
        assert_eq!(figure(34.54), "34.5");
        assert_eq!(figure(4.306), "4.31");
    }
}
