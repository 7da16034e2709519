// SPDX-License-Identifier: GPL-2.0-only
//! The command line: `pvrdma-lab run [options]`, `pvrdma-lab list`,
//! `pvrdma-lab shell [options]`, `pvrdma-lab bench-report [options]`.

use std::path::PathBuf;

use crate::model::DeviceModel;

/// The usage text.
pub const USAGE: &str = "\
usage: pvrdma-lab run [--models patched,stock] [--drivers c,rust]
                      [--tests NAME,...] [--results DIR] [--kernel DIR]
                      [--keep-going] [--run-not-applicable] [--jobs N]
                      [--tests-per-guest N] [--reference-pairs]
                      [--accel auto|kvm|tcg]
                      [--qemu-stock PATH] [--qemu-patched PATH]
                      [--mux PATH] [--verbs-lib PATH] [--rust-module PATH]
       pvrdma-lab list
       pvrdma-lab shell [--model patched] [--driver rust] [--gdb] [--accel auto|kvm|tcg]
                        [--kernel DIR] [--results DIR] [--guest-env NAME=VALUE,...]
                        [--qemu-stock PATH] [--qemu-patched PATH]
                        [--mux PATH] [--verbs-lib PATH] [--rust-module PATH]
       pvrdma-lab bench-report --results DIR [--model patched|stock] [--out DIR]

run   boots fresh QEMUs (each with a fresh pvrdma-mux) for each device model
      and driver, runs the tests in them and prints one TAP line for each
      (`ok 3 - patched/c/rping`), then `N passed, N failed`.
      --models       device models (default: patched,stock): `patched` is QEMU
                     7.2 with tools/qemu's pvrdma patches, `stock` Debian's
                     unmodified QEMU 7.2
      --drivers      drivers to test (default: c,rust)
      --tests        tests to run (default: all; `pvrdma-lab list` names them)
      --results      results directory (default: <checkout>/results); each
                     test's logs in <results>/<model>/<driver>/<test>/
      --kernel       test kernel build dir (default: $PVRDMA_CACHE/kernel/current,
                     PVRDMA_CACHE defaulting to ~/.cache/pvrdma-rs)
      --keep-going   run every test even after one failed (default: stop at
                     the first failure and skip the rest)
      --jobs         guests to run at once (default: one per CPU, as many as
                     the memory holds at 1.5 GiB each); results are printed
                     as the guests end, the longest tests start first; the
                     two-guest tests run last, N/2 pairs at a time
      --tests-per-guest
                     how many tests one guest runs, one after the other, each
                     with the driver loaded afresh and its own report (default
                     5; 1: a guest per test). Tests that need a guest of their
                     own (two guests, kernel arguments, a MAD burst, a
                     `# lab-own-guest:` line) always have one; one with a
                     `# lab-runs-last:` line ends a shared guest; a test that
                     disturbs the kernel ends its guest and the tests after it
                     get guests of their own
      --reference-pairs
                     also run the two-guest tests with the C driver on both
                     guests when the Rust driver is tested too (skipped by
                     default then: the C driver's server and client each run
                     against the Rust driver's in the mixed pairs)
      --accel        the guests' accelerator (default: auto): auto takes KVM
                     when /dev/kvm works (a probe creates a VM, and the CPU must
                     have vmx or svm), else TCG with one thread for all vCPUs;
                     kvm or tcg forces one. The run's header says which ran
      --run-not-applicable
                     also run the tests a device model cannot pass (listed
                     with their reason in tools/pvrdma-lab/known-failures.toml;
                     skipped by default): their failure is reported as TODO,
                     a pass fails as an unexpected pass (the entry is stale)
      --qemu-stock   the stock model's QEMU (default: qemu-system-x86_64 on PATH)
      --qemu-patched the patched model's QEMU (default:
                     $PVRDMA_CACHE/qemu/current/bin/qemu-system-x86_64, which
                     tools/qemu/build-qemu builds)
      --mux          pvrdma-mux binary (default: tools/target/release/pvrdma-mux)
      --verbs-lib    software verbs library QEMU preloads
                     (default: tools/target/release/libpvrdma_verbs.so)
      --rust-module  the Rust driver module
                     (default: drivers/infiniband/hw/pvrdma/pvrdma.ko)
list  lists the guest tests (tests/guest/tests/*.sh)
shell boots one guest as for a test (a fresh mux and QEMU), loads the driver,
      waits for port 1 ACTIVE, then gives a shell on the guest's serial console,
      which is this terminal; `exit` removes the driver, writes the guest's
      report (init.log, dmesg.txt, kmemleak.txt) and powers it off. Ctrl-A x
      ends QEMU at once, Ctrl-A c switches to its monitor and back.
      --model        the device model (default: patched)
      --driver       c or rust (default: rust)
      --gdb          QEMU's gdb stub on 127.0.0.1:1234 (QEMU's -s, but on the
                     loopback address only), the kernel booted with nokaslr
      --results      where the guest's logs go (default: <checkout>/results/shell)
      --kernel, --accel, --guest-env and the paths: as for run
bench-report
      the statistics of tools/lab/bench's repetitions (DIR/rep<N>/, the
      warm-up DIR/warmup/ left out): per metric, each driver's median over
      the runs that passed, the Rust/C ratio of the medians and its 95%
      bootstrap interval, and a verdict; prints the table and writes
      bench.md and bench.svg
      --results      the benchmark's results directory (required)
      --model        the device model the runs used (default: patched)
      --out          where bench.md and bench.svg go (default: --results)
";

/// A driver the lab can test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The reference C driver, vmw_pvrdma, built with the test kernel.
    C,
    /// This project's Rust driver, pvrdma.
    Rust,
}

impl Driver {
    /// The name used on the command line, in TAP lines and in results paths.
    pub fn name(self) -> &'static str {
        match self {
            Driver::C => "c",
            Driver::Rust => "rust",
        }
    }

    fn parse(name: &str) -> Result<Driver, String> {
        match name {
            "c" => Ok(Driver::C),
            "rust" => Ok(Driver::Rust),
            _ => Err(format!("unknown driver '{name}' (known: c, rust)")),
        }
    }
}

/// Options of `pvrdma-lab run`.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// Device models to test on, in order; empty means all.
    pub models: Vec<DeviceModel>,
    /// Drivers to test, in order; empty means all.
    pub drivers: Vec<Driver>,
    /// Tests to run, in order; empty means all.
    pub tests: Vec<String>,
    /// `--results`.
    pub results: Option<PathBuf>,
    /// `--kernel`.
    pub kernel: Option<PathBuf>,
    /// `--keep-going`.
    pub keep_going: bool,
    /// `--run-not-applicable`.
    pub run_not_applicable: bool,
    /// `--reference-pairs`: also the two-guest tests with the C driver on both guests.
    pub reference_pairs: bool,
    /// `--qemu-stock`.
    pub qemu_stock: Option<PathBuf>,
    /// `--qemu-patched`.
    pub qemu_patched: Option<PathBuf>,
    /// `--mux`.
    pub mux: Option<PathBuf>,
    /// `--verbs-lib`.
    pub verbs_lib: Option<PathBuf>,
    /// `--rust-module`.
    pub rust_module: Option<PathBuf>,
    /// `--guest-env NAME=VALUE,...`: variables the guest's init exports to every test (a
    /// test's budget for an on-demand run, such as `LAB_FUZZ_ROUNDS=200`); never one of the
    /// run's own ([`RUN_IDENTITY`]).
    pub guest_env: Vec<String>,
    /// `--time-factor N`: every test's time limit multiplied by N (a slower kernel).
    pub time_factor: Option<u64>,
    /// `--jobs N`: guests run at once; the runner's default when not given.
    pub jobs: Option<usize>,
    /// `--tests-per-guest N`: tests one guest runs; the default when not given.
    pub tests_per_guest: Option<usize>,
    /// `--accel auto|kvm|tcg`.
    pub accel: crate::accel::Choice,
}

/// Options of `pvrdma-lab bench-report`.
#[derive(Debug)]
pub struct BenchReportOptions {
    /// `--results`: the directory holding `rep<N>/`.
    pub results: PathBuf,
    /// `--model`.
    pub model: DeviceModel,
    /// `--out`; the results directory when not given.
    pub out: Option<PathBuf>,
}

/// Options of `pvrdma-lab shell`.
#[derive(Debug)]
pub struct ShellOptions {
    /// The paths, the accelerator and the guest's environment, as `run` takes them.
    pub run: RunOptions,
    /// `--model`.
    pub model: DeviceModel,
    /// `--driver`.
    pub driver: Driver,
    /// `--gdb`.
    pub gdb: bool,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    /// `run`.
    Run(Box<RunOptions>),
    /// `list`.
    List,
    /// `shell`.
    Shell(Box<ShellOptions>),
    /// `bench-report`.
    BenchReport(BenchReportOptions),
    /// `help`, `-h`, `--help`.
    Help,
}

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, String> {
    let Some((command, rest)) = args.split_first() else {
        return Err("no command given".to_string());
    };
    match command.as_str() {
        "run" => parse_run(rest).map(|o| Command::Run(Box::new(o))),
        "shell" => parse_shell(rest).map(|o| Command::Shell(Box::new(o))),
        "bench-report" => parse_bench_report(rest).map(Command::BenchReport),
        "list" if rest.is_empty() => Ok(Command::List),
        "list" => Err(format!("list takes no arguments, got '{}'", rest[0])),
        "help" | "-h" | "--help" => Ok(Command::Help),
        other => Err(format!("unknown command '{other}'")),
    }
}

/// An argument as its flag and, for `--opt=value`, the value given inline.
fn split_flag(arg: &str) -> (&str, Option<String>) {
    match arg.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
        _ => (arg, None),
    }
}

fn parse_run(args: &[String]) -> Result<RunOptions, String> {
    let mut options = RunOptions::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        // Both `--opt value` and `--opt=value`.
        let (flag, inline) = split_flag(arg);
        if let Some(switch) = match flag {
            "--keep-going" => Some(&mut options.keep_going),
            "--run-not-applicable" => Some(&mut options.run_not_applicable),
            "--reference-pairs" => Some(&mut options.reference_pairs),
            _ => None,
        } {
            if inline.is_some() {
                return Err(format!("{flag} takes no value"));
            }
            *switch = true;
            continue;
        }
        if !KNOWN_VALUE_OPTIONS.contains(&flag) {
            return Err(format!("unknown option '{arg}'"));
        }
        let value = inline
            .or_else(|| args.next().cloned())
            .ok_or_else(|| format!("{flag} needs a value"))?;
        // An empty list (`--tests=`, as a Makefile passes an unset variable)
        // means the default; an empty path is an error.
        let path = || -> Result<Option<PathBuf>, String> {
            if value.is_empty() {
                Err(format!("{flag} needs a value"))
            } else {
                Ok(Some(PathBuf::from(&value)))
            }
        };
        match flag {
            "--models" => {
                options.models = list(&value)
                    .iter()
                    .map(|m| DeviceModel::parse(m))
                    .collect::<Result<_, _>>()?;
            }
            "--drivers" => {
                options.drivers = list(&value)
                    .iter()
                    .map(|d| Driver::parse(d))
                    .collect::<Result<_, _>>()?;
            }
            "--tests" => options.tests = list(&value),
            "--results" => options.results = path()?,
            "--kernel" => options.kernel = path()?,
            "--qemu-stock" => options.qemu_stock = path()?,
            "--qemu-patched" => options.qemu_patched = path()?,
            "--mux" => options.mux = path()?,
            "--verbs-lib" => options.verbs_lib = path()?,
            "--guest-env" => {
                for assignment in list(&value) {
                    check_guest_env(&assignment)?;
                    options.guest_env.push(assignment);
                }
            }
            "--time-factor" => match value.parse::<u64>() {
                Ok(n @ 1..=20) => options.time_factor = Some(n),
                _ => {
                    return Err(format!(
                        "--time-factor: '{value}' is not a number from 1 to 20"
                    ))
                }
            },
            "--jobs" => match value.parse::<usize>() {
                Ok(n @ 1..=64) => options.jobs = Some(n),
                _ => return Err(format!("--jobs: '{value}' is not a number from 1 to 64")),
            },
            "--tests-per-guest" => match value.parse::<usize>() {
                Ok(n @ 1..=crate::qemu::MAX_SLOTS) => options.tests_per_guest = Some(n),
                _ => {
                    return Err(format!(
                        "--tests-per-guest: '{value}' is not a number from 1 to {}",
                        crate::qemu::MAX_SLOTS
                    ))
                }
            },
            "--accel" => options.accel = crate::accel::Choice::parse(&value)?,
            _ => options.rust_module = path()?,
        }
    }
    dedup(&mut options.models);
    dedup(&mut options.drivers);
    dedup(&mut options.tests);
    Ok(options)
}

/// The options of `run` that `shell` takes too.
const SHELL_RUN_OPTIONS: &[&str] = &[
    "--kernel",
    "--results",
    "--rust-module",
    "--qemu-stock",
    "--qemu-patched",
    "--mux",
    "--verbs-lib",
    "--guest-env",
    "--accel",
];

fn parse_shell(args: &[String]) -> Result<ShellOptions, String> {
    let (mut model, mut driver, mut gdb) = (DeviceModel::Patched, Driver::Rust, false);
    let mut shared = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = split_flag(arg);
        match flag {
            "--gdb" if inline.is_none() => gdb = true,
            "--gdb" => return Err("--gdb takes no value (the stub is on 127.0.0.1:1234)".into()),
            "--model" | "--driver" => {
                let value = inline
                    .or_else(|| args.next().cloned())
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| format!("{flag} needs a value"))?;
                if flag == "--model" {
                    model = DeviceModel::parse(&value)?;
                } else {
                    driver = Driver::parse(&value)?;
                }
            }
            _ if SHELL_RUN_OPTIONS.contains(&flag) => {
                shared.push(arg.clone());
                if inline.is_none() {
                    shared.extend(args.next().cloned());
                }
            }
            _ => return Err(format!("unknown shell option '{arg}'")),
        }
    }
    Ok(ShellOptions {
        run: parse_run(&shared)?,
        model,
        driver,
        gdb,
    })
}

fn parse_bench_report(args: &[String]) -> Result<BenchReportOptions, String> {
    let (mut results, mut model, mut out) = (None, DeviceModel::Patched, None);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = split_flag(arg);
        if !["--results", "--model", "--out"].contains(&flag) {
            return Err(format!("unknown bench-report option '{arg}'"));
        }
        let value = inline
            .or_else(|| args.next().cloned())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("{flag} needs a value"))?;
        match flag {
            "--results" => results = Some(PathBuf::from(value)),
            "--model" => model = DeviceModel::parse(&value)?,
            _ => out = Some(PathBuf::from(value)),
        }
    }
    Ok(BenchReportOptions {
        results: results.ok_or("bench-report needs --results DIR")?,
        model,
        out,
    })
}

/// The options of `run` that take a value.
const KNOWN_VALUE_OPTIONS: &[&str] = &[
    "--models",
    "--drivers",
    "--tests",
    "--results",
    "--kernel",
    "--qemu-stock",
    "--qemu-patched",
    "--mux",
    "--verbs-lib",
    "--rust-module",
    "--guest-env",
    "--time-factor",
    "--jobs",
    "--tests-per-guest",
    "--accel",
];

/// The variables that say which run this is, set by the runner (on the guest's kernel
/// command line) and by the guest's init, never by `--guest-env`: the driver under test
/// (`LAB_DRIVER`), the device model (`LAB_MODEL`), the driver's module (`LAB_MODULE`,
/// `LAB_MODULE_NAME`: `*` stands for any end of the name), the RDMA device the tests use
/// (`LAB_DEV`) and the guest's address (`LAB_IP`). A run told otherwise would test one
/// driver and report its results as another's, or check a device other than the one under
/// test. Nor the variables the guest's init sets up the tests with: where the test scripts
/// and `lib.sh` are (`LAB_DIR`), where results go (`LAB_RESULTS`), the kernel tree
/// (`LAB_KDIR`) and which tests run (`LAB_TESTS`).
pub const RUN_IDENTITY: &[&str] = &[
    "LAB_DRIVER",
    "LAB_MODEL",
    "LAB_DEVICE_VERSION",
    "LAB_MODULE*",
    "LAB_DEV",
    "LAB_IP",
    "LAB_DIR",
    "LAB_RESULTS",
    "LAB_KDIR",
    "LAB_TESTS",
];

/// Whether `name` is one of the run's own variables ([`RUN_IDENTITY`]).
fn is_run_identity(name: &str) -> bool {
    RUN_IDENTITY
        .iter()
        .any(|reserved| match reserved.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *reserved,
        })
}

/// Whether `assignment` may go to the guest (see [`valid_guest_env`]), or why not, naming
/// the variable.
fn check_guest_env(assignment: &str) -> Result<(), String> {
    let name = assignment
        .split_once('=')
        .map_or(assignment, |(name, _)| name);
    if is_run_identity(name) {
        return Err(format!(
            "--guest-env: {name} cannot be set: it is one of the run's own variables ({}), \
             which the runner and the guest's init set from the run itself",
            RUN_IDENTITY.join(", ")
        ));
    }
    if !valid_guest_env(assignment) {
        return Err(format!(
            "--guest-env: '{assignment}' is not NAME=VALUE with NAME LAB_[A-Z0-9_]+ \
             and VALUE of letters, digits and ._:/-"
        ));
    }
    Ok(())
}

/// Whether `assignment` can go to the guest as `lab.env.NAME=VALUE` on its kernel command
/// line: NAME a lab variable (`LAB_...`) but not one of the run's own ([`RUN_IDENTITY`]),
/// VALUE without spaces, quotes or anything a shell or the command line would read.
pub fn valid_guest_env(assignment: &str) -> bool {
    let Some((name, value)) = assignment.split_once('=') else {
        return false;
    };
    !is_run_identity(name)
        && name.len() > 4
        && name.len() <= 40
        && name.starts_with("LAB_")
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && value.len() <= 64
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:/-".contains(&b))
}

/// A comma- or space-separated list, empty items dropped.
fn list(value: &str) -> Vec<String> {
    value
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn dedup<T: PartialEq + Clone>(items: &mut Vec<T>) {
    let mut seen = Vec::new();
    items.retain(|item| {
        if seen.contains(item) {
            false
        } else {
            seen.push(item.clone());
            true
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn run_options() {
        let Ok(Command::Run(o)) = parse(&args(
            "run --models stock,patched,stock --drivers c,rust,c --tests=a,b --keep-going \
             --results /r --qemu-stock /q --qemu-patched=/p",
        )) else {
            panic!("not parsed");
        };
        assert_eq!(o.models, vec![DeviceModel::Stock, DeviceModel::Patched]);
        assert_eq!(o.drivers, vec![Driver::C, Driver::Rust]);
        assert_eq!(o.tests, vec!["a", "b"]);
        assert!(o.keep_going);
        assert!(!o.run_not_applicable);
        assert_eq!(o.results, Some(PathBuf::from("/r")));
        assert_eq!(o.qemu_stock, Some(PathBuf::from("/q")));
        assert_eq!(o.qemu_patched, Some(PathBuf::from("/p")));
    }

    #[test]
    fn errors() {
        assert!(parse(&args("run --drivers go")).is_err());
        assert!(parse(&args("run --models qemu")).is_err());
        assert!(parse(&args("run --qemu /q")).is_err());
        assert!(parse(&args("run --keep-going=yes")).is_err());
        assert!(parse(&args("run --tests")).is_err());
        assert!(parse(&args("run --results=")).is_err());
        assert!(parse(&args("run --bogus")).is_err());
        assert!(parse(&args("list extra")).is_err());
        assert!(parse(&[]).is_err());
        assert!(matches!(parse(&args("list")), Ok(Command::List)));
    }

    #[test]
    fn bench_report_options() {
        let Ok(Command::BenchReport(o)) =
            parse(&args("bench-report --results /r --model=stock --out /o"))
        else {
            panic!("not parsed");
        };
        assert_eq!(o.results, PathBuf::from("/r"));
        assert_eq!(o.model, DeviceModel::Stock);
        assert_eq!(o.out, Some(PathBuf::from("/o")));
        let Ok(Command::BenchReport(o)) = parse(&args("bench-report --results=/r")) else {
            panic!("not parsed");
        };
        assert_eq!(o.model, DeviceModel::Patched);
        assert_eq!(o.out, None);
        assert!(parse(&args("bench-report")).is_err());
        assert!(parse(&args("bench-report --results")).is_err());
        assert!(parse(&args("bench-report --results /r --model qemu")).is_err());
        assert!(parse(&args("bench-report --results /r --reps 3")).is_err());
    }

    #[test]
    fn guest_env_and_time_factor() {
        let Ok(Command::Run(o)) = parse(&args(
            "run --guest-env LAB_FUZZ_ROUNDS=200,LAB_FUZZ_SEED=7 --guest-env= --time-factor 3",
        )) else {
            panic!("not parsed");
        };
        assert_eq!(o.guest_env, vec!["LAB_FUZZ_ROUNDS=200", "LAB_FUZZ_SEED=7"]);
        assert_eq!(o.time_factor, Some(3));
        for bad in [
            "PATH=/bin",
            "LAB_=1",
            "LAB_X",
            "LAB_x=1",
            "LAB_X=a\"b",
            "LAB_X=$(reboot)",
            "LAB_X=a;b",
        ] {
            assert!(!valid_guest_env(bad), "{bad}");
        }
        assert!(valid_guest_env("LAB_X="));
        assert!(parse(&args("run --guest-env init=/bin/sh")).is_err());
        assert!(parse(&args("run --time-factor 0")).is_err());
        assert!(parse(&args("run --time-factor many")).is_err());
    }

    /// The run's own variables (which driver, model, module, device and address) cannot be
    /// set from the command line (`make lab LAB_ENV=...`): the refusal names the variable.
    #[test]
    fn guest_env_cannot_rename_the_run() {
        for assignment in [
            "LAB_DRIVER=rust",
            "LAB_DRIVER=c",
            "LAB_MODEL=patched",
            "LAB_MODULE=/tmp/vmw_pvrdma.ko",
            "LAB_MODULE_NAME=pvrdma",
            "LAB_MODULE_PATH=/x",
            "LAB_DEV=rxe0",
            "LAB_IP=192.0.2.9",
            "LAB_DIR=/tmp/other-tests",
            "LAB_RESULTS=/tmp",
            "LAB_KDIR=/tmp/k",
            "LAB_TESTS=kunit",
        ] {
            assert!(!valid_guest_env(assignment), "{assignment}");
            let name = assignment.split_once('=').unwrap().0;
            let why = parse(&args(&format!(
                "run --guest-env LAB_FUZZ_ROUNDS=200,{assignment}"
            )))
            .map(|_| ())
            .expect_err(assignment);
            assert!(
                why.starts_with(&format!("--guest-env: {name} cannot be set: ")),
                "{why}"
            );
            // Also when the name is all there is.
            assert!(!valid_guest_env(&format!("{name}=")), "{name}");
        }
        // Names that only share a beginning with LAB_DRIVER, LAB_MODEL, LAB_DEV or LAB_IP
        // are a test's own.
        for assignment in [
            "LAB_DRIVERS=1",
            "LAB_MODELS=1",
            "LAB_DEVICES=2",
            "LAB_IPS=1",
            "LAB_FUZZ_SEED=7",
        ] {
            assert!(valid_guest_env(assignment), "{assignment}");
        }
    }

    #[test]
    fn jobs() {
        let Ok(Command::Run(o)) = parse(&args("run --jobs 3")) else {
            panic!("run --jobs 3 refused");
        };
        assert_eq!(o.jobs, Some(3));
        let Ok(Command::Run(o)) = parse(&args("run")) else {
            panic!("run refused");
        };
        assert_eq!(o.jobs, None);
        assert!(parse(&args("run --jobs 0")).is_err());
        assert!(parse(&args("run --jobs=")).is_err());
        assert!(parse(&args("run --jobs two")).is_err());
    }

    #[test]
    fn guest_sharing_and_reference_pairs() {
        let Ok(Command::Run(o)) = parse(&args("run --tests-per-guest 2 --reference-pairs")) else {
            panic!("run --tests-per-guest 2 --reference-pairs refused");
        };
        assert_eq!(o.tests_per_guest, Some(2));
        assert!(o.reference_pairs);
        let Ok(Command::Run(o)) = parse(&args("run")) else {
            panic!("run refused");
        };
        assert_eq!((o.tests_per_guest, o.reference_pairs), (None, false));
        assert!(parse(&args("run --tests-per-guest 0")).is_err());
        assert!(parse(&args("run --tests-per-guest 9")).is_err());
    }

    #[test]
    fn shell_options() {
        let Ok(Command::Shell(o)) = parse(&args("shell")) else {
            panic!("shell refused");
        };
        assert_eq!(
            (o.model, o.driver, o.gdb),
            (DeviceModel::Patched, Driver::Rust, false)
        );
        assert_eq!(o.run.accel, crate::accel::Choice::Auto);
        let Ok(Command::Shell(o)) = parse(&args(
            "shell --model stock --driver=c --gdb --accel tcg --kernel /k --results=/r \
             --guest-env LAB_FUZZ_ROUNDS=2",
        )) else {
            panic!("shell options refused");
        };
        assert_eq!(
            (o.model, o.driver, o.gdb),
            (DeviceModel::Stock, Driver::C, true)
        );
        assert_eq!(o.run.accel, crate::accel::Choice::Tcg);
        assert_eq!(o.run.kernel, Some(PathBuf::from("/k")));
        assert_eq!(o.run.results, Some(PathBuf::from("/r")));
        assert_eq!(o.run.guest_env, vec!["LAB_FUZZ_ROUNDS=2"]);
        for bad in [
            "shell --tests rping",
            "shell --jobs 2",
            "shell --keep-going",
            "shell --model",
            "shell --model qemu",
            "shell --driver go",
            "shell --gdb=4321",
            "shell --guest-env LAB_DRIVER=c",
            "shell --kernel",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn accel() {
        use crate::accel::Choice;
        let accel = |line: &str| match parse(&args(line)) {
            Ok(Command::Run(o)) => Ok(o.accel),
            Ok(_) => panic!("{line}: not run"),
            Err(why) => Err(why),
        };
        assert_eq!(accel("run"), Ok(Choice::Auto));
        assert_eq!(accel("run --accel tcg"), Ok(Choice::Tcg));
        assert_eq!(accel("run --accel=kvm"), Ok(Choice::Kvm));
        assert_eq!(accel("run --accel auto"), Ok(Choice::Auto));
        assert!(accel("run --accel xen").is_err());
        assert!(accel("run --accel").is_err());
    }

    #[test]
    fn empty_lists_mean_all() {
        let Ok(Command::Run(o)) = parse(&args(
            "run --models= --drivers= --tests= --run-not-applicable",
        )) else {
            panic!("not parsed");
        };
        assert!(o.models.is_empty() && o.drivers.is_empty() && o.tests.is_empty());
        assert!(o.run_not_applicable);
    }
}
