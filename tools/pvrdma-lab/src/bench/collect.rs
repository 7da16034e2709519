// SPDX-License-Identifier: GPL-2.0-only
//! The repetitions of a benchmark, read from the results directory that
//! `tools/lab/bench` fills:
//!
//! ```text
//! <results>/warmup/                       the warm-up repetition: never read
//! <results>/rep<N>/summary-<driver>.tap   each driver's run's TAP (the runner's
//!                                         summary.tap, renamed after the run)
//! <results>/rep<N>/<model>/<driver>/perftest_*/notes.txt
//! <results>/rep<N>/<model>/<driver>/verbs_resources/verbs_resources.log
//! <results>/rep<N>/<model>/<driver>/verb_times/verb_times-{near,far}.log
//! <results>/rep<N>/<model>/<driver>/ibv_rc_pingpong_events/notes.txt
//! ```
//!
//! A figure counts only when its run passed: a failed run may have stopped
//! half-way (verbs_resources' medians would miss rounds) or measured a driver
//! in trouble. Every repetition yields, per metric and driver, either one
//! value or one failure (the run failed, or left no figure).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::figures::{self, Figures, Metric};
use super::outcomes::Outcomes;
use crate::cli::Driver;
use crate::model::DeviceModel;

/// The drivers compared, C (the reference) first.
pub const DRIVERS: [Driver; 2] = [Driver::C, Driver::Rust];

/// One thing per driver.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PerDriver<T> {
    /// The C driver's.
    pub c: T,
    /// The Rust driver's.
    pub rust: T,
}

impl<T> PerDriver<T> {
    /// The driver's.
    pub fn get(&self, driver: Driver) -> &T {
        match driver {
            Driver::C => &self.c,
            Driver::Rust => &self.rust,
        }
    }

    /// The driver's, to change.
    pub fn get_mut(&mut self, driver: Driver) -> &mut T {
        match driver {
            Driver::C => &mut self.c,
            Driver::Rust => &mut self.rust,
        }
    }
}

/// One driver's figures of one metric over the repetitions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples {
    /// The figures of the runs that passed.
    pub values: Vec<f64>,
    /// The repetitions whose run failed or left no figure.
    pub failed: usize,
}

/// A figure of one run, and whether that run passed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Found {
    /// The figure.
    pub value: f64,
    /// Whether the run that measured it passed.
    pub passed: bool,
}

/// What one driver's runs of one repetition measured.
pub type RunFigures = BTreeMap<Metric, Found>;

/// How many of a driver's runs passed and failed, over the repetitions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunCount {
    /// Runs whose TAP line is `ok`.
    pub passed: usize,
    /// Runs whose TAP line is `not ok` (or `ok # SKIP`).
    pub failed: usize,
}

/// Everything the report needs from the results directory.
#[derive(Debug, Default)]
pub struct Collection {
    /// The repetitions read, by directory name (`rep1`, ...), in order.
    pub repetitions: Vec<String>,
    /// Whether a warm-up repetition was run (and left out).
    pub warmup: bool,
    /// The test kernels the runs' TAP headers name.
    pub kernels: Vec<String>,
    /// The runs' TAP results per driver.
    pub runs: PerDriver<RunCount>,
    /// Each metric's figures per driver.
    pub samples: BTreeMap<Metric, PerDriver<Samples>>,
}

/// The figures of every repetition, sorted into used values and failures:
/// every metric measured anywhere gets, per repetition and driver, a value
/// (its run passed) or a failure (its run failed, or it has no figure).
pub fn tally(repetitions: &[PerDriver<RunFigures>]) -> BTreeMap<Metric, PerDriver<Samples>> {
    let mut samples: BTreeMap<Metric, PerDriver<Samples>> = BTreeMap::new();
    for repetition in repetitions {
        for driver in DRIVERS {
            for metric in repetition.get(driver).keys() {
                samples.entry(metric.clone()).or_default();
            }
        }
    }
    for (metric, per_driver) in samples.iter_mut() {
        for repetition in repetitions {
            for driver in DRIVERS {
                let samples = per_driver.get_mut(driver);
                match repetition.get(driver).get(metric) {
                    Some(found) if found.passed => samples.values.push(found.value),
                    _ => samples.failed += 1,
                }
            }
        }
    }
    samples
}

/// The `rep<N>` directories of `results`, by N.
fn repetition_dirs(results: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let entries =
        fs::read_dir(results).map_err(|e| format!("cannot read {}: {e}", results.display()))?;
    let mut dirs: Vec<(u64, String, PathBuf)> = entries
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_string();
            let number = name.strip_prefix("rep")?.parse::<u64>().ok()?;
            Some((number, name, entry.path()))
        })
        .collect();
    dirs.sort();
    Ok(dirs
        .into_iter()
        .map(|(_, name, path)| (name, path))
        .collect())
}

/// A file's text, or an empty one when it cannot be read: a run that left no
/// file has no figures, which counts as its failure.
fn text(path: &Path) -> String {
    fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default()
}

/// The TAP files of one repetition.
fn outcomes(repetition: &Path) -> Outcomes {
    let mut outcomes = Outcomes::default();
    let mut taps: Vec<PathBuf> = fs::read_dir(repetition)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| {
                    path.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("summary") && n.ends_with(".tap"))
                })
                .collect()
        })
        .unwrap_or_default();
    taps.sort();
    for tap in taps {
        outcomes.add(&text(&tap));
    }
    outcomes
}

/// The figures of a test's logs of its pinned runs, `<test>-<placement>.log`
/// each (see [`figures::Placement`]), as `parse` makes them.
fn placed_figures(
    dir: &Path,
    test: &str,
    parse: impl Fn(&str, figures::Placement) -> Figures,
) -> Figures {
    figures::Placement::ALL
        .into_iter()
        .flat_map(|placement| {
            let log = dir.join(format!("{test}-{}.log", placement.name()));
            parse(&text(&log), placement)
        })
        .collect()
}

/// The figures a test directory holds, by the test's name.
fn test_figures(test: &str, dir: &Path) -> Figures {
    if test.starts_with("perftest_") {
        figures::perftest_notes(&text(&dir.join("notes.txt")))
    } else if test == "verbs_resources" {
        // The run left to the scheduler, then those pinned near and far, if
        // the test was asked for them (their logs are missing otherwise).
        let mut figures = figures::resources_log(&text(&dir.join("verbs_resources.log")), None);
        figures.extend(placed_figures(dir, test, |log, placement| {
            figures::resources_log(log, Some(placement))
        }));
        figures
    } else if test == "verb_times" {
        placed_figures(dir, test, figures::verb_times_log)
    } else if test == "ibv_rc_pingpong_events" {
        figures::pingpong_notes(&text(&dir.join("notes.txt")))
    } else if test == "nvme_fio" {
        figures::fio_notes(&text(&dir.join("notes.txt")))
    } else {
        Figures::new()
    }
}

/// What one driver's runs of one repetition measured.
fn run_figures(driver_dir: &Path, prefix: &str, outcomes: &Outcomes) -> RunFigures {
    let mut found = RunFigures::new();
    let Ok(entries) = fs::read_dir(driver_dir) else {
        return found;
    };
    let mut tests: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| Some((entry.file_name().to_str()?.to_string(), entry.path())))
        .collect();
    tests.sort();
    for (test, dir) in tests {
        let passed = outcomes.passed(&format!("{prefix}/{test}"));
        for (metric, value) in test_figures(&test, &dir) {
            found.insert(metric, Found { value, passed });
        }
    }
    found
}

/// Reads the repetitions of `model` in `results`.
pub fn collect(results: &Path, model: DeviceModel) -> Result<Collection, String> {
    let dirs = repetition_dirs(results)?;
    if dirs.is_empty() {
        return Err(format!(
            "no repetitions (rep1, rep2, ...) in {}",
            results.display()
        ));
    }
    let mut collection = Collection {
        warmup: results.join("warmup").is_dir(),
        ..Collection::default()
    };
    let mut repetitions = Vec::new();
    for (name, dir) in dirs {
        let outcomes = outcomes(&dir);
        for kernel in &outcomes.kernels {
            if !collection.kernels.contains(kernel) {
                collection.kernels.push(kernel.clone());
            }
        }
        let mut figures = PerDriver::<RunFigures>::default();
        for driver in DRIVERS {
            let prefix = format!("{}/{}", model.name(), driver.name());
            let runs = collection.runs.get_mut(driver);
            for (run, &passed) in &outcomes.passed {
                if run
                    .strip_prefix(&prefix)
                    .is_some_and(|t| t.starts_with('/'))
                {
                    if passed {
                        runs.passed += 1;
                    } else {
                        runs.failed += 1;
                    }
                }
            }
            let driver_dir = dir.join(model.name()).join(driver.name());
            *figures.get_mut(driver) = run_figures(&driver_dir, &prefix, &outcomes);
        }
        repetitions.push(figures);
        collection.repetitions.push(name);
    }
    collection.samples = tally(&repetitions);
    Ok(collection)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::figures::Phase;

    fn run(figures: &[(Metric, f64)], passed: bool) -> RunFigures {
        figures
            .iter()
            .map(|(m, v)| (m.clone(), Found { value: *v, passed }))
            .collect()
    }

    #[test]
    fn failed_runs_are_left_out_and_counted() {
        let bw = Metric::Bandwidth("ib_send_bw".into());
        let cqs = Metric::Phase(Phase::CreateCqs, None);
        let repetitions = [
            PerDriver {
                c: run(&[(bw.clone(), 100.0), (cqs.clone(), 300.0)], true),
                rust: run(&[(bw.clone(), 110.0), (cqs.clone(), 400.0)], true),
            },
            PerDriver {
                // The C run of verbs_resources failed: its figure is out.
                c: run(&[(bw.clone(), 101.0)], true)
                    .into_iter()
                    .chain(run(&[(cqs.clone(), 5.0)], false))
                    .collect(),
                // The Rust perftest left no figure.
                rust: run(&[(cqs.clone(), 410.0)], true),
            },
            PerDriver {
                c: run(&[(bw.clone(), 99.0), (cqs.clone(), 310.0)], true),
                rust: RunFigures::new(),
            },
        ];
        let samples = tally(&repetitions);
        assert_eq!(samples.len(), 2);
        assert_eq!(
            samples[&bw],
            PerDriver {
                c: Samples {
                    values: vec![100.0, 101.0, 99.0],
                    failed: 0
                },
                rust: Samples {
                    values: vec![110.0],
                    failed: 2
                },
            }
        );
        assert_eq!(
            samples[&cqs],
            PerDriver {
                c: Samples {
                    values: vec![300.0, 310.0],
                    failed: 1
                },
                rust: Samples {
                    values: vec![400.0, 410.0],
                    failed: 1
                },
            }
        );
    }
}
