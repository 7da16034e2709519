// SPDX-License-Identifier: GPL-2.0-only
//! `pvrdma-lab`: runs the lab's guest tests under QEMU's pvrdma for each device
//! model and driver and reports TAP; reports the statistics of the benchmark's
//! repetitions (see Documentation/lab.md).

mod accel;
mod bench;
mod catalog;
mod child;
mod cli;
mod guest_report;
mod kernel_log;
mod known;
mod known_failures;
mod layout;
mod matrix;
mod model;
mod mux;
mod pair;
mod pool;
mod postmortem;
mod qemu;
#[cfg(test)]
mod reachability;
#[cfg(test)]
mod readme_table;
mod reference_bugs;
mod run_error;
mod session;
mod shared;
mod shell;
mod signals;
mod skip_set;
mod tap;
mod toml_subset;
mod verdict;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use catalog::GuestTest;
use cli::{Driver, RunOptions};
use layout::Layout;
use model::DeviceModel;
use run_error::RunError;
use tap::{Reporter, TapResult};

/// Exit status when a test failed.
const EXIT_FAILED: u8 = 1;
/// Exit status for a bad command line or a lab that cannot run at all.
const EXIT_USAGE: u8 = 2;
/// Exit status when interrupted (128 + SIGINT).
const EXIT_INTERRUPTED: u8 = 130;
/// Tests one guest runs unless `--tests-per-guest` says otherwise: a guest's
/// boot, setup and kmemleak wait (about 25 s under TCG) paid once for five.
const DEFAULT_TESTS_PER_GUEST: usize = 5;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match cli::parse(&args) {
        Ok(cli::Command::Help) => {
            print!("{}", cli::USAGE);
            ExitCode::SUCCESS
        }
        Ok(cli::Command::List) => list(),
        Ok(cli::Command::BenchReport(options)) => bench_report(&options),
        Ok(cli::Command::Run(options)) => run(&options),
        Ok(cli::Command::Shell(options)) => shell::run(&options),
        Err(why) => {
            eprintln!("pvrdma-lab: {why}\n\n{}", cli::USAGE);
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// `pvrdma-lab list`.
fn list() -> ExitCode {
    match catalog::discover(&layout::tests_dir()) {
        Ok(tests) => {
            let width = tests.iter().map(|t| t.name.len()).max().unwrap_or(0);
            for test in tests {
                println!(
                    "{:width$}  {:>5} s  {}",
                    test.name, test.timeout_secs, test.about
                );
            }
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("pvrdma-lab: {why}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// `pvrdma-lab bench-report`.
fn bench_report(options: &cli::BenchReportOptions) -> ExitCode {
    match bench::run(options) {
        Ok(table) => {
            print!("{table}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("pvrdma-lab: bench-report: {why}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The tests the options select, in the order given.
fn select_tests(options: &RunOptions) -> Result<Vec<GuestTest>, String> {
    let all = catalog::discover(&layout::tests_dir())?;
    let mut tests = if options.tests.is_empty() {
        all
    } else {
        options
            .tests
            .iter()
            .map(|name| {
                all.iter()
                    .find(|t| &t.name == name)
                    .cloned()
                    .ok_or_else(|| {
                        let names: Vec<&str> = all.iter().map(|t| t.name.as_str()).collect();
                        format!("unknown test '{name}' (known: {})", names.join(", "))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    // The run's own settings: the guest's init exports `lab.env.NAME=VALUE` as NAME.
    for test in &mut tests {
        test.kernel_args
            .extend(options.guest_env.iter().map(|a| format!("lab.env.{a}")));
        test.timeout_secs *= options.time_factor.unwrap_or(1);
    }
    Ok(tests)
}

/// What must exist before any test can run; the first thing missing.
fn preflight(layout: &Layout) -> Result<(), String> {
    let need = |path: &Path, what: &str, fix: &str| -> Result<(), String> {
        if path.is_file() {
            Ok(())
        } else {
            Err(format!("no {what} at {} ({fix})", path.display()))
        }
    };
    need(
        &layout.bzimage,
        "test kernel",
        "run tools/lab/build-kernel, or pass --kernel",
    )?;
    need(
        &layout.mux,
        "pvrdma-mux",
        "cargo build --release in tools/, or pass --mux",
    )?;
    need(
        &layout.verbs_lib,
        "software verbs library",
        "cargo build --release in tools/, or pass --verbs-lib",
    )?;
    need(
        &layout.init,
        "guest init script",
        "the checkout is incomplete",
    )
}

/// The version line of a device model's QEMU, or why it cannot run.
fn qemu_version(layout: &Layout, model: DeviceModel) -> Result<String, String> {
    let qemu = layout.qemu(model);
    let fix = match model {
        DeviceModel::Stock => "install qemu-system-x86, or pass --qemu-stock",
        _ => {
            "build it with tools/qemu/build-qemu (make qemu), pass --qemu-patched, \
             or leave it out with --models stock"
        }
    };
    let output = Command::new(qemu)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "cannot run the {} model's QEMU {}: {e} ({fix})",
                model.name(),
                qemu.display()
            )
        })?;
    if !output.status.success() {
        return Err(format!(
            "{} --version failed ({}): {}",
            qemu.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let version = String::from_utf8_lossy(&output.stdout);
    Ok(version
        .lines()
        .next()
        .unwrap_or("unknown version")
        .to_string())
}

/// The driver's module, or the result of each of its tests when it has none: a
/// failure, for either driver. A selected driver whose module is not where the
/// run looks (not built, or built elsewhere) has not been tested, and a skip
/// would let the run pass without it (`--drivers c` leaves the Rust driver out).
fn driver_module(layout: &Layout, driver: Driver) -> Result<&Path, TapResult> {
    let module = match driver {
        Driver::C => &layout.c_module,
        Driver::Rust => &layout.rust_module,
    };
    if module.is_file() {
        return Ok(module);
    }
    Err(TapResult::Fail(match driver {
        Driver::C => format!(
            "the test kernel has no vmw_pvrdma module ({} missing)",
            module.display()
        ),
        Driver::Rust => format!(
            "the Rust driver's module is missing ({}): build it (make), pass --rust-module, \
             or leave the driver out (--drivers c, make check DRIVERS=c)",
            module.display()
        ),
    }))
}

/// What becomes of the entry of `test` with `driver` (and `client`'s driver
/// for a two-guest test) on `model`: a run, or its result without one. Its
/// skips are those of the not_applicable entries and the selection, and a plan
/// that strays from them fails the entry (skip_set.rs).
fn plan_work<'a>(
    layout: &'a Layout,
    selection: &skip_set::Selection,
    model: DeviceModel,
    driver: Driver,
    client: Option<Driver>,
    test: &'a GuestTest,
) -> Result<Run<'a>, TapResult> {
    let skip = skip_set::expected(selection, model, driver, client, &test.name);
    let client_module = client.map(|c| driver_module(layout, c)).transpose();
    let planned = match (driver_module(layout, driver), client_module, &skip) {
        (Err(result), _, _) | (_, Err(result), _) => Err(result),
        (_, _, Some(why)) => Err(TapResult::Skip(why.clone())),
        (Ok(module), Ok(client_module), None) => Ok(Run {
            layout,
            model,
            driver,
            module,
            client: client.zip(client_module),
            test,
        }),
    };
    match skip_set::check(planned.as_ref().err(), skip.as_deref()) {
        Some(failure) => Err(failure),
        None => planned,
    }
}

fn seconds(value: Option<f64>) -> String {
    value.map_or("?".to_string(), |s| format!("{s:.2} s"))
}

/// One test to run: on which model, with which driver (for a two-guest
/// test: the server's, and `client` the client's).
struct Run<'a> {
    layout: &'a Layout,
    model: DeviceModel,
    driver: Driver,
    module: &'a Path,
    client: Option<(Driver, &'a Path)>,
    test: &'a GuestTest,
}

/// The name of a test's entry: `model/driver/test`, and for a two-guest
/// test `model/server-driver/test-client-<client driver>` (so that the
/// results table keeps one column per model and driver).
fn entry_name(model: DeviceModel, driver: Driver, client: Option<Driver>, test: &str) -> String {
    match client {
        None => format!("{}/{}/{test}", model.name(), driver.name()),
        Some(c) => format!(
            "{}/{}/{test}-client-{}",
            model.name(),
            driver.name(),
            c.name()
        ),
    }
}

/// A test that ran: its TAP result and the lines to print under it.
struct Finished {
    result: TapResult,
    comments: Vec<String>,
}

impl Run<'_> {
    /// The line announcing the test when it starts.
    fn announcement(&self, name: &str) -> String {
        format!(
            "running {name} (limit {} s + guest overhead)",
            self.test.timeout_secs
        )
    }

    /// The test's results directory.
    fn dir(&self) -> PathBuf {
        self.layout.results.join(entry_name(
            self.model,
            self.driver,
            self.client.map(|c| c.0),
            &self.test.name,
        ))
    }

    /// Whether the test may share a guest with others of its model and driver.
    fn may_share(&self) -> bool {
        self.client.is_none() && self.test.own_guest.is_none()
    }

    /// Runs the test in a guest of its own; returns its result and what it
    /// noted, or the signal that interrupted it.
    fn execute(&self) -> Result<Finished, i32> {
        let dir = self.dir();
        let ran = match self.client {
            None => session::run(
                self.layout,
                self.model,
                self.driver,
                self.module,
                self.test,
                &dir,
            ),
            Some(client) => pair::run(
                self.layout,
                self.model,
                (self.driver, self.module),
                client,
                self.test,
                &dir,
            ),
        };
        match ran {
            Ok(outcome) => Ok(self.finished(outcome, &dir)),
            Err(RunError::Interrupted(signum)) => Err(signum),
            Err(RunError::Failed(why)) => Ok(Finished {
                result: TapResult::Fail(format!("lab: {why}")),
                comments: Vec::new(),
            }),
        }
    }

    /// The TAP result of what the test produced (in `dir`) and its comments.
    fn finished(&self, outcome: session::Outcome, dir: &Path) -> Finished {
        let mut result =
            known::tap_result(self.model, self.driver, &self.test.name, outcome.verdict);
        if !outcome.reference_bugs.is_empty() && result == TapResult::Pass {
            let causes: Vec<String> = outcome
                .reference_bugs
                .iter()
                .map(|bug| {
                    format!(
                        "{}, its kernel report set aside: {}",
                        bug.owner.describe(),
                        bug.cause
                    )
                })
                .collect();
            result = TapResult::Todo(causes.join("; "));
        }
        let mut comments = vec![format!(
            "  boot {} (guest uptime at init start), test {}, wall {:.1} s; logs: {}",
            seconds(outcome.boot_secs),
            seconds(outcome.test_secs),
            outcome.wall.as_secs_f64(),
            dir.display()
        )];
        comments.extend(outcome.notes.iter().map(|note| format!("  {note}")));
        Finished { result, comments }
    }
}

/// Runs `runs` (one test, or tests of one model and driver that may share a
/// guest) and returns each one's result by its index in the plan, or the
/// signal that interrupted them. A test its shared guest did not judge runs
/// again in a guest of its own.
fn execute_job(runs: &[(usize, &Run)]) -> Result<Vec<(usize, Finished)>, i32> {
    let [(_, first), ..] = runs else {
        return Ok(Vec::new());
    };
    if runs.len() == 1 {
        return Ok(vec![(runs[0].0, first.execute()?)]);
    }
    let tests: Vec<&GuestTest> = runs.iter().map(|(_, run)| run.test).collect();
    let dirs: Vec<PathBuf> = runs.iter().map(|(_, run)| run.dir()).collect();
    let ends = shared::run(
        first.layout,
        first.model,
        first.driver,
        first.module,
        &tests,
        &dirs,
    )?;
    let mut finished = Vec::new();
    for ((i, run), (end, dir)) in runs.iter().zip(ends.into_iter().zip(&dirs)) {
        match end {
            shared::SlotEnd::Judged(outcome) => finished.push((*i, run.finished(*outcome, dir))),
            shared::SlotEnd::Again(why) => {
                let mut alone = run.execute()?;
                alone
                    .comments
                    .insert(0, format!("  run in a guest of its own: {why}"));
                finished.push((*i, alone));
            }
        }
    }
    Ok(finished)
}

/// One line of the plan: a test to run, or a result known without running it.
struct Entry<'a> {
    name: String,
    work: Result<Run<'a>, TapResult>,
}

/// The plan's runnable entries (their index in the plan, and the run) in
/// jobs, one guest (or pair) each: the tests of one model and driver that may
/// share a guest in groups of up to `per_guest` (longest time limit with
/// longest; a test that must be its guest's last, at most one a group, at the
/// end of its group), the others alone; the jobs in the order they start:
/// longest time limit first (a stand-in for the longest test), so that
/// parallel guests do not end the run waiting on one long job; the plan's
/// order among equals.
fn plan_jobs<'e, 'a>(entries: &'e [Entry<'a>], per_guest: usize) -> Vec<Vec<(usize, &'e Run<'a>)>> {
    let mut runs: Vec<_> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, entry)| entry.work.as_ref().ok().map(|run| (i, run)))
        .collect();
    runs.sort_by_key(|(_, run)| std::cmp::Reverse(run.test.timeout_secs));
    let mut jobs: Vec<Vec<(usize, &Run)>> = Vec::new();
    let ends_guest = |run: &Run| run.test.runs_last.is_some();
    for (i, run) in runs {
        if per_guest <= 1 || !run.may_share() {
            jobs.push(vec![(i, run)]);
            continue;
        }
        // The first group of its model and driver with room, and without a
        // test that must end it when this one must too.
        let group = jobs.iter().position(|job| {
            job.len() < per_guest
                && job.iter().all(|(_, r)| {
                    r.may_share()
                        && r.model == run.model
                        && r.driver == run.driver
                        && !(ends_guest(r) && ends_guest(run))
                })
        });
        match group {
            Some(g) => jobs[g].push((i, run)),
            None => jobs.push(vec![(i, run)]),
        }
    }
    // In a guest the longest test runs last: the tests that may disturb the
    // kernel (the C driver's known command race shows in the long ones) then
    // leave few tests after them to run again in guests of their own. A test
    // that leaves the guest changed (`# lab-runs-last:`) runs after all.
    for job in &mut jobs {
        job.reverse();
        if let Some(k) = job.iter().position(|(_, r)| ends_guest(r)) {
            let ender = job.remove(k);
            job.push(ender);
        }
    }
    let total = |job: &[(usize, &Run)]| job.iter().map(|(_, r)| r.test.timeout_secs).sum::<u64>();
    jobs.sort_by_key(|job| std::cmp::Reverse(total(job)));
    jobs
}

/// `pvrdma-lab run`.
fn run(options: &RunOptions) -> ExitCode {
    if let Err(why) = known_failures::load() {
        eprintln!("pvrdma-lab: {why}");
        return ExitCode::from(EXIT_USAGE);
    }
    signals::install();
    session::remove_stale_socket_dirs();
    let mut layout = Layout::resolve(options);
    let tests = match select_tests(options) {
        Ok(t) => t,
        Err(why) => {
            eprintln!("pvrdma-lab: {why}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let models = if options.models.is_empty() {
        model::ALL.to_vec()
    } else {
        options.models.clone()
    };
    let drivers = if options.drivers.is_empty() {
        vec![Driver::C, Driver::Rust]
    } else {
        options.drivers.clone()
    };
    if let Err(e) = std::fs::create_dir_all(&layout.results) {
        eprintln!(
            "pvrdma-lab: cannot create {}: {e}",
            layout.results.display()
        );
        return ExitCode::from(EXIT_USAGE);
    }
    let mut tap = Reporter::new(Some(&layout.results.join("summary.tap")));
    // A default run takes a test at an older device version only where its
    // header lists it; tests named with --tests run on every model chosen.
    let tests_of = |model: DeviceModel| -> Vec<&GuestTest> {
        tests
            .iter()
            .filter(|t| !options.tests.is_empty() || model.runs_by_default(&t.versions))
            .collect()
    };
    let planned: usize = models
        .iter()
        .flat_map(|&model| tests_of(model))
        .map(|t| {
            if t.guests == 2 {
                drivers.len() * drivers.len()
            } else {
                drivers.len()
            }
        })
        .sum();
    tap.plan(planned);
    let mut versions = Vec::new();
    let checked = preflight(&layout).and_then(|()| {
        for &model in &models {
            versions.push(qemu_version(&layout, model)?);
        }
        Ok(())
    });
    if let Err(why) = checked {
        tap.bail_out(&why);
        return ExitCode::from(EXIT_USAGE);
    }
    tap.comment(&format!("kernel: {}", layout.kernel_dir.display()));
    let accel = accel::choose(options.accel);
    layout.accel = accel.accel;
    tap.comment(&format!("accelerator: {}", accel.why));
    for (&model, version) in models.iter().zip(&versions) {
        tap.comment(&format!(
            "model {}: {}: {} ({version})",
            model.name(),
            model.about(),
            layout.qemu(model).display()
        ));
        if !model.version_matches(version) {
            tap.comment(&format!(
                "warning: the {} model's QEMU does not look like {} (tools/qemu/build-qemu \
                 puts 'pvrdma-lab' in the patched build's version): results may be misattributed",
                model.name(),
                model.about()
            ));
        }
    }
    tap.comment(&format!("results: {}", layout.results.display()));

    let selection = skip_set::Selection {
        drivers: &drivers,
        run_not_applicable: options.run_not_applicable,
        reference_pairs: options.reference_pairs,
    };
    let mut entries = Vec::new();
    for &model in &models {
        for &driver in &drivers {
            for test in tests_of(model) {
                // A two-guest test runs with every driver as the client's.
                let clients: Vec<Option<Driver>> = if test.guests == 2 {
                    drivers.iter().copied().map(Some).collect()
                } else {
                    vec![None]
                };
                for client in clients {
                    let name = entry_name(model, driver, client, &test.name);
                    let work = plan_work(&layout, &selection, model, driver, client, test);
                    entries.push(Entry { name, work });
                }
            }
        }
    }
    for entry in &entries {
        tap.declare(&entry.name);
    }
    let workers = options.jobs.unwrap_or_else(pool::default_workers);
    let per_guest = options.tests_per_guest.unwrap_or(DEFAULT_TESTS_PER_GUEST);
    tap.comment(&format!(
        "guests at once: {workers}; tests per guest: up to {per_guest}"
    ));

    // Results known without a guest come first; a missing module is a failure
    // that stops the run unless --keep-going.
    let mut stopped = false;
    for entry in &entries {
        if let Err(result) = &entry.work {
            tap.result(&entry.name, result);
            stopped |= result.fails() && !options.keep_going;
        }
    }
    let jobs = plan_jobs(&entries, per_guest);
    // The two-guest jobs run after the others, half as many at a time: a pair's
    // two guests poll for each other, and a guest polling while its peer waits
    // for a CPU burns the time the peer needs (two pairs at once on two CPUs:
    // two_guests_send 127-223 s an entry, 20 s of it compiles since gone; one
    // pair at a time: 84 s).
    let (single_jobs, pair_jobs): (Vec<_>, Vec<_>) = jobs
        .into_iter()
        .partition(|job| job.first().is_none_or(|(_, run)| run.client.is_none()));
    let phases = [(single_jobs, workers), (pair_jobs, (workers / 2).max(1))];
    let mut interrupted = None;
    let mut unstarted: Vec<usize> = Vec::new();
    for (jobs, phase_workers) in &phases {
        let never_started = if stopped || interrupted.is_some() {
            (0..jobs.len()).collect()
        } else {
            pool::run(
                jobs,
                *phase_workers,
                |job| execute_job(job),
                |event| match event {
                    pool::Event::Started(job) => {
                        let names: Vec<&str> = jobs[job]
                            .iter()
                            .map(|&(i, _)| entries[i].name.as_str())
                            .collect();
                        let line = match jobs[job].as_slice() {
                            [(i, run)] => run.announcement(&entries[*i].name),
                            _ => format!("running {} in one guest", names.join(", ")),
                        };
                        tap.comment(&line);
                        ControlFlow::Continue(())
                    }
                    pool::Event::Finished(_, Ok(results)) => {
                        let mut failed = false;
                        for (i, finished) in results {
                            tap.result(&entries[i].name, &finished.result);
                            for comment in &finished.comments {
                                tap.comment(comment);
                            }
                            failed |= finished.result.fails();
                        }
                        if failed && !options.keep_going {
                            stopped = true;
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    }
                    pool::Event::Finished(job, Err(signum)) => {
                        interrupted.get_or_insert((signum, entries[jobs[job][0].0].name.clone()));
                        ControlFlow::Break(())
                    }
                },
            )
        };
        unstarted.extend(
            never_started
                .into_iter()
                .flat_map(|job| jobs[job].iter().map(|&(i, _)| i)),
        );
        if signals::received().is_some() {
            break;
        }
    }
    if let Some(signum) = interrupted
        .as_ref()
        .map(|(s, _)| *s)
        .or_else(signals::received)
    {
        let during = interrupted.map_or(String::new(), |(_, name)| format!(" during {name}"));
        tap.bail_out(&format!(
            "interrupted by signal {signum}{during}; the running guests' QEMU and mux were killed"
        ));
        tap.finish();
        return ExitCode::from(EXIT_INTERRUPTED);
    }
    unstarted.sort_unstable();
    for i in unstarted {
        tap.result(
            &entries[i].name,
            &TapResult::Skip(
                "not run: an earlier test failed (--keep-going runs every test)".into(),
            ),
        );
    }
    tap.comment(&format!("results: {}", layout.results.display()));
    tap.finish();
    if tap.failed() > 0 {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(name: &str, timeout_secs: u64, own_guest: bool) -> GuestTest {
        GuestTest {
            name: name.into(),
            about: String::new(),
            timeout_secs,
            kernel_args: Vec::new(),
            guests: 1,
            client_restarts: 0,
            mad_burst: 1,
            mad_burst_of: None,
            own_guest: own_guest.then(|| "why".into()),
            runs_last: None,
            versions: Vec::new(),
        }
    }

    /// A Rust driver module not found (not built, or built where the run does
    /// not look) fails the Rust driver's entries, those of its pairs and of the tests its
    /// model cannot run too; it skipped them before, and the run passed without the driver.
    #[test]
    fn a_missing_rust_module_fails_its_entries() {
        // A kernel with the C driver's module, whatever this machine has built.
        let kernel = std::env::temp_dir().join(format!("pvrdma-lab-kernel-{}", std::process::id()));
        let c_module = kernel.join("drivers/infiniband/hw/vmw_pvrdma/vmw_pvrdma.ko");
        std::fs::create_dir_all(c_module.parent().unwrap()).unwrap();
        std::fs::write(&c_module, "").unwrap();
        let layout = Layout::resolve(&RunOptions {
            kernel: Some(kernel.clone()),
            rust_module: Some("/nonexistent/pvrdma.ko".into()),
            ..RunOptions::default()
        });
        let selection = skip_set::Selection {
            drivers: &[Driver::C, Driver::Rust],
            run_not_applicable: false,
            reference_pairs: false,
        };
        let t = test("ibv_devinfo", 60, false);
        let entries = [
            (DeviceModel::Patched, Driver::Rust, None, "ibv_devinfo"),
            (DeviceModel::Stock, Driver::Rust, None, "rping"),
            (
                DeviceModel::Patched,
                Driver::C,
                Some(Driver::Rust),
                "two_guests",
            ),
        ];
        for (model, driver, client, name) in entries {
            let t = GuestTest {
                name: name.into(),
                ..t.clone()
            };
            let Err(result) = plan_work(&layout, &selection, model, driver, client, &t) else {
                panic!("{name} planned to run");
            };
            assert!(result.fails(), "{name}: {result:?}");
            let TapResult::Fail(cause) = result else {
                panic!("{name}: not a failure");
            };
            assert!(
                cause.starts_with("the Rust driver's module is missing (/nonexistent/pvrdma.ko)"),
                "{name}: {cause}"
            );
        }
        let t = GuestTest {
            name: "ibv_devinfo".into(),
            ..t
        };
        let c = plan_work(
            &layout,
            &selection,
            DeviceModel::Patched,
            Driver::C,
            None,
            &t,
        );
        std::fs::remove_dir_all(&kernel).unwrap();
        assert!(c.is_ok(), "the C driver's entry does not run");
    }

    #[test]
    fn tests_of_one_model_and_driver_share_guests() {
        let layout = Layout::resolve(&RunOptions::default());
        let module = Path::new("/m.ko");
        let tests = [
            test("a", 600, false),
            test("b", 300, false),
            test("c", 300, true),
            test("d", 120, false),
            test("e", 60, false),
            GuestTest {
                runs_last: Some("leaves a module loaded".into()),
                ..test("f", 200, false)
            },
            GuestTest {
                runs_last: Some("leaves the device faulted".into()),
                ..test("g", 100, false)
            },
        ];
        let mut entries = Vec::new();
        for driver in [Driver::C, Driver::Rust] {
            for t in &tests {
                entries.push(Entry {
                    name: entry_name(DeviceModel::Patched, driver, None, &t.name),
                    work: Ok(Run {
                        layout: &layout,
                        model: DeviceModel::Patched,
                        driver,
                        module,
                        client: None,
                        test: t,
                    }),
                });
            }
        }
        entries.push(Entry {
            name: "skipped".into(),
            work: Err(TapResult::Skip("n/a".into())),
        });
        let names = |jobs: &[Vec<(usize, &Run)>]| -> Vec<Vec<String>> {
            jobs.iter()
                .map(|job| job.iter().map(|&(i, _)| entries[i].name.clone()).collect())
                .collect()
        };
        let jobs = plan_jobs(&entries, 3);
        assert_eq!(
            names(&jobs),
            [
                vec!["patched/c/b", "patched/c/a", "patched/c/f"],
                vec!["patched/rust/b", "patched/rust/a", "patched/rust/f"],
                vec!["patched/c/c"],
                vec!["patched/rust/c"],
                vec!["patched/c/e", "patched/c/d", "patched/c/g"],
                vec!["patched/rust/e", "patched/rust/d", "patched/rust/g"],
            ]
        );
        // Whatever the group size: no more tests than asked for, one model
        // and driver a guest, at most one test that must end its guest, last.
        for per_guest in 1..=crate::qemu::MAX_SLOTS {
            for job in plan_jobs(&entries, per_guest) {
                assert!(job.len() <= per_guest, "{per_guest}: {}", job.len());
                let (_, first) = job[0];
                assert!(job
                    .iter()
                    .all(|(_, r)| (r.model, r.driver) == (first.model, first.driver)));
                let enders: Vec<_> = job
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, r))| r.test.runs_last.is_some())
                    .map(|(k, _)| k)
                    .collect();
                assert!(
                    enders.is_empty() || enders == [job.len() - 1],
                    "{per_guest}: {enders:?}"
                );
                assert!(job.len() == 1 || job.iter().all(|(_, r)| r.may_share()));
            }
        }
        // One test per guest: the longest first, as before guests were shared.
        let jobs = plan_jobs(&entries, 1);
        assert_eq!(jobs.len(), 14);
        assert!(jobs.iter().all(|job| job.len() == 1));
        assert_eq!(names(&jobs)[0], ["patched/c/a"]);
    }
}
