// SPDX-License-Identifier: GPL-2.0-only
//! `pvrdma-lab bench-report`: the statistics of the repetitions
//! `tools/lab/bench` ran. It reads each repetition's figures and TAP results,
//! leaves out the runs that failed, and compares the drivers metric by
//! metric: medians, the Rust/C ratio and its bootstrap interval, and whether
//! that interval shows a difference. It writes `bench.md` and `bench.svg` and
//! returns the table for the terminal.
//!
//! - `figures`: the figures' lines in the tests' notes and logs
//! - `outcomes`: which runs passed, from the TAP
//! - `collect`: the results directory, and the used and failed figures
//! - `stats`: median, percentile, the bootstrap
//! - `compare`: one metric's comparison and verdict
//! - `report`, `svg`: the outputs

mod collect;
mod compare;
mod figures;
mod outcomes;
mod report;
mod stats;
mod svg;

use std::fs;
use std::path::Path;

use crate::cli::BenchReportOptions;
use report::Report;

/// The report's file names in the output directory.
const MARKDOWN: &str = "bench.md";
const SVG: &str = "bench.svg";

/// Writes `bench.md` and `bench.svg` for the repetitions in `options.results`;
/// returns the table for the terminal.
pub fn run(options: &BenchReportOptions) -> Result<String, String> {
    let collection = collect::collect(&options.results, options.model)?;
    if collection.samples.is_empty() {
        return Err(format!(
            "no benchmark figures for the {} model in {} (perftest_*/notes.txt, \
             verbs_resources/verbs_resources.log)",
            options.model.name(),
            options.results.display()
        ));
    }
    let comparisons: Vec<_> = collection
        .samples
        .iter()
        .map(|(metric, samples)| compare::compare(metric, samples))
        .collect();
    let report = Report {
        model: options.model,
        collection: &collection,
        comparisons: &comparisons,
    };
    let out = options.out.as_deref().unwrap_or(&options.results);
    fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    write(&out.join(MARKDOWN), &report::markdown(&report, SVG))?;
    write(
        &out.join(SVG),
        &svg::render(options.model, collection.repetitions.len(), &comparisons),
    )?;
    Ok(format!(
        "{}\nwritten: {}, {}\n",
        report::text(&report),
        out.join(MARKDOWN).display(),
        out.join(SVG).display()
    ))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DeviceModel;
    use std::path::PathBuf;

    /// A results directory as `tools/lab/bench` leaves it, removed on drop.
    struct FakeResults(PathBuf);

    impl FakeResults {
        fn new(name: &str) -> FakeResults {
            let dir =
                std::env::temp_dir().join(format!("pvrdma-lab-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            FakeResults(dir)
        }

        fn file(&self, path: &str, text: &str) {
            let path = self.0.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }

        /// One driver's run of one repetition: its TAP and its figures.
        fn run(&self, rep: &str, driver: &str, bw: f64, cqs_ms: [u32; 2], resources_ok: bool) {
            let status = if resources_ok { "ok" } else { "not ok" };
            self.file(
                &format!("{rep}/summary-{driver}.tap"),
                &format!(
                    "1..2\n# kernel: /cache/kernel/linux-6.12.57-abc/linux\n\
                     ok 1 - patched/{driver}/perftest_send\n\
                     {status} 2 - patched/{driver}/verbs_resources\n"
                ),
            );
            self.file(
                &format!("{rep}/patched/{driver}/perftest_send/notes.txt"),
                &format!(
                    "ib_send_bw: 1000 x 65536 B: peak {bw} MB/s, average {bw} MB/s (attempt 1)\n\
                     ib_send_lat: 1000 x 64 B: min 10000, typical 11000, average 12000 cycles \
                     (3.3 / 3.7 / 4.0 us at 3000 MHz)\n"
                ),
            );
            self.file(
                &format!("{rep}/patched/{driver}/verbs_resources/verbs_resources.log"),
                &format!(
                    "ok: round 1: 256 CQs of 8 entries created ({} ms)\n\
                     ok: round 2: 256 CQs of 8 entries created ({} ms)\n",
                    cqs_ms[0], cqs_ms[1]
                ),
            );
        }
    }

    impl Drop for FakeResults {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn report_of_fake_results() {
        let results = FakeResults::new("bench-report");
        // The warm-up's figures would make Rust look slow: they must not count.
        results.run("warmup", "c", 100.0, [1, 1], true);
        results.run("warmup", "rust", 1.0, [900, 900], true);
        for (i, rep) in ["rep1", "rep2", "rep3", "rep4", "rep10"].iter().enumerate() {
            let jitter = i as f64;
            results.run(rep, "c", 300.0 + jitter, [150, 150 + i as u32], true);
            // rep4's Rust verbs_resources failed: its (absurd) figure is out.
            let rust_cqs = if *rep == "rep4" {
                [1, 1]
            } else {
                [100, 100 + i as u32]
            };
            results.run(rep, "rust", 400.0 - jitter, rust_cqs, *rep != "rep4");
        }
        let out = results.0.join("report");
        let options = BenchReportOptions {
            results: results.0.clone(),
            model: DeviceModel::Patched,
            out: Some(out.clone()),
        };
        let table = run(&options).unwrap();
        let markdown = fs::read_to_string(out.join("bench.md")).unwrap();
        let svg = fs::read_to_string(out.join("bench.svg")).unwrap();

        assert!(markdown.contains("- device model: patched\n"));
        assert!(markdown.contains("- repetitions: 5 used (rep1 to rep10)"));
        assert!(markdown.contains("a warm-up repetition ran first; its figures are discarded"));
        assert!(markdown.contains("- kernel: /cache/kernel/linux-6.12.57-abc/linux\n"));
        assert!(markdown.contains("C driver 10 passed, 0 failed; Rust driver 9 passed, 1 failed"));
        assert!(markdown.contains(
            "| ib_send_bw (MB/s) | higher | 302 | 398 | 1.32 | [1.31, 1.33] | Rust faster | 5/5 | 0/0 |"
        ), "{markdown}");
        assert!(markdown.contains(
            "| ib_send_lat (typical µs) | lower | 3.70 | 3.70 | 1.00 | [1.00, 1.00] | no difference shown | 5/5 | 0/0 |"
        ), "{markdown}");
        assert!(
            markdown.contains("| create 256 CQs (ms per round) | lower | 152 | 102 | 0.67 |"),
            "{markdown}"
        );
        assert!(
            markdown.contains("| Rust faster | 5/4 | 0/1 |"),
            "{markdown}"
        );
        assert!(
            markdown.contains("![Rust/C ratios of medians with their 95% intervals](bench.svg)")
        );

        assert!(table.contains("ib_send_bw (MB/s)"));
        assert!(table.contains("Rust faster"));
        assert!(table.contains("bench.svg"));

        assert!(svg.starts_with("<?xml"));
        assert!(svg.trim_end().ends_with("</svg>"));
        // One bar and one dot per metric, the line at 1.00, the labels.
        assert_eq!(svg.matches("<rect x=").count(), 3);
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains(">1.00</text>"));
        assert!(svg.contains(">ib_send_bw (MB/s)</text>"));
        assert!(svg.contains(">higher is better</text>"));
        assert!(svg.contains("1.32 [1.31, 1.33] Rust faster"));
        assert!(svg.contains("5 repetitions"));
    }

    #[test]
    fn pinned_runs_have_rows_of_their_own() {
        let results = FakeResults::new("bench-placed");
        for rep in ["rep1", "rep2", "rep3"] {
            for (driver, near, far) in [("c", 30, 45), ("rust", 30, 30)] {
                results.file(
                    &format!("{rep}/summary-{driver}.tap"),
                    &format!("1..1\nok 1 - patched/{driver}/verbs_resources\n"),
                );
                for (placement, ms) in [("near", near), ("far", far)] {
                    results.file(
                        &format!(
                            "{rep}/patched/{driver}/verbs_resources/verbs_resources-{placement}.log"
                        ),
                        &format!(
                            "ok: round 1: 256 CQs of 8 entries created (99 ms)\n\
                             ok: round 2: 256 CQs of 8 entries created ({ms} ms)\n"
                        ),
                    );
                }
            }
        }
        let options = BenchReportOptions {
            results: results.0.clone(),
            model: DeviceModel::Patched,
            out: Some(results.0.join("report")),
        };
        run(&options).unwrap();
        let markdown = fs::read_to_string(results.0.join("report/bench.md")).unwrap();
        assert!(
            markdown
                .contains("| create 256 CQs, near (ms per round) | lower | 30.0 | 30.0 | 1.00 |"),
            "{markdown}"
        );
        assert!(
            markdown
                .contains("| create 256 CQs, far (ms per round) | lower | 45.0 | 30.0 | 0.67 |"),
            "{markdown}"
        );
        // No log of a run left to the scheduler: no row for it.
        assert!(
            !markdown.contains("| create 256 CQs (ms per round)"),
            "{markdown}"
        );
    }

    #[test]
    fn no_repetitions_is_an_error() {
        let results = FakeResults::new("bench-empty");
        let options = BenchReportOptions {
            results: results.0.clone(),
            model: DeviceModel::Patched,
            out: None,
        };
        assert!(run(&options).unwrap_err().contains("no repetitions"));
        results.file("rep1/summary-c.tap", "1..0\n");
        assert!(run(&options).unwrap_err().contains("no benchmark figures"));
    }
}
