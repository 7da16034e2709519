//! `pvrdma-lab`: runs the lab's guest tests under QEMU's pvrdma for each driver
//! and reports TAP (see Documentation/lab.md).

mod catalog;
mod child;
mod cli;
mod guest_report;
mod kernel_log;
mod known;
mod layout;
mod mux;
mod qemu;
mod run_error;
mod session;
mod signals;
mod tap;
mod verdict;

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use catalog::GuestTest;
use cli::{Driver, RunOptions};
use layout::Layout;
use run_error::RunError;
use tap::{Reporter, TapResult};

/// Exit status when a test failed.
const EXIT_FAILED: u8 = 1;
/// Exit status for a bad command line or a lab that cannot run at all.
const EXIT_USAGE: u8 = 2;
/// Exit status when interrupted (128 + SIGINT).
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match cli::parse(&args) {
        Ok(cli::Command::Help) => {
            print!("{}", cli::USAGE);
            ExitCode::SUCCESS
        }
        Ok(cli::Command::List) => list(),
        Ok(cli::Command::Run(options)) => run(&options),
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

/// The tests the options select, in the order given.
fn select_tests(options: &RunOptions) -> Result<Vec<GuestTest>, String> {
    let all = catalog::discover(&layout::tests_dir())?;
    if options.tests.is_empty() {
        return Ok(all);
    }
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
        .collect()
}

/// What must exist before any test can run; the first thing missing.
fn preflight(layout: &Layout) -> Result<String, String> {
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
    )?;
    let output = Command::new(&layout.qemu)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "cannot run {}: {e} (install qemu-system-x86, or pass --qemu)",
                layout.qemu.display()
            )
        })?;
    let version = String::from_utf8_lossy(&output.stdout);
    Ok(version
        .lines()
        .next()
        .unwrap_or("unknown version")
        .to_string())
}

/// The driver's module, or the result of each of its tests when it has none:
/// the Rust driver's tests are skipped until it is built; the C driver comes
/// with the test kernel, so its absence fails them.
fn driver_module(layout: &Layout, driver: Driver) -> Result<&Path, TapResult> {
    let module = match driver {
        Driver::C => &layout.c_module,
        Driver::Rust => &layout.rust_module,
    };
    if module.is_file() {
        return Ok(module);
    }
    Err(match driver {
        Driver::C => TapResult::Fail(format!(
            "the test kernel has no vmw_pvrdma module ({} missing)",
            module.display()
        )),
        Driver::Rust => TapResult::Skip(format!(
            "the Rust driver module is not built yet ({} missing)",
            module.display()
        )),
    })
}

fn seconds(value: Option<f64>) -> String {
    value.map_or("?".to_string(), |s| format!("{s:.2} s"))
}

/// `pvrdma-lab run`.
fn run(options: &RunOptions) -> ExitCode {
    signals::install();
    session::remove_stale_socket_dirs();
    let layout = Layout::resolve(options);
    let tests = match select_tests(options) {
        Ok(t) => t,
        Err(why) => {
            eprintln!("pvrdma-lab: {why}");
            return ExitCode::from(EXIT_USAGE);
        }
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
    tap.plan(drivers.len() * tests.len());
    let qemu_version = match preflight(&layout) {
        Ok(version) => version,
        Err(why) => {
            tap.bail_out(&why);
            return ExitCode::from(EXIT_USAGE);
        }
    };
    tap.comment(&format!("kernel: {}", layout.kernel_dir.display()));
    tap.comment(&format!("qemu: {} ({qemu_version})", layout.qemu.display()));
    tap.comment(&format!("results: {}", layout.results.display()));

    let mut stopped = false;
    for &driver in &drivers {
        let module = driver_module(&layout, driver);
        for test in &tests {
            let name = format!("{}/{}", driver.name(), test.name);
            let module = match (&module, stopped) {
                (_, true) => {
                    tap.result(
                        &name,
                        &TapResult::Skip(
                            "not run: an earlier test failed (--keep-going runs every test)".into(),
                        ),
                    );
                    continue;
                }
                (Err(result), _) => {
                    stopped = matches!(result, TapResult::Fail(_)) && !options.keep_going;
                    tap.result(&name, result);
                    continue;
                }
                (Ok(module), false) => *module,
            };
            tap.comment(&format!(
                "running {name} (limit {} s + guest overhead)",
                test.timeout_secs
            ));
            let dir = layout.results.join(driver.name()).join(&test.name);
            match session::run(&layout, driver, module, test, &dir) {
                Ok(outcome) => {
                    let result = known::tap_result(driver, &test.name, outcome.verdict);
                    if matches!(result, TapResult::Fail(_)) && !options.keep_going {
                        stopped = true;
                    }
                    tap.result(&name, &result);
                    tap.comment(&format!(
                        "  boot {} (guest uptime at init start), test {}, wall {:.1} s; logs: {}",
                        seconds(outcome.boot_secs),
                        seconds(outcome.test_secs),
                        outcome.wall.as_secs_f64(),
                        dir.display()
                    ));
                }
                Err(RunError::Interrupted(signum)) => {
                    tap.bail_out(&format!("interrupted by signal {signum} during {name}; its QEMU and mux were killed"));
                    tap.finish();
                    return ExitCode::from(EXIT_INTERRUPTED);
                }
                Err(RunError::Failed(why)) => {
                    stopped = !options.keep_going;
                    tap.result(&name, &TapResult::Fail(format!("lab: {why}")));
                }
            }
        }
    }
    tap.comment(&format!("results: {}", layout.results.display()));
    tap.finish();
    if tap.failed() > 0 {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}
