// SPDX-License-Identifier: GPL-2.0-only
//! `pvrdma-lab shell`: one guest, set up as for a test (a fresh mux, the model's QEMU, the
//! driver loaded and port 1 ACTIVE), that gives a shell on its serial console instead of
//! running tests. QEMU's `-nographic` puts the console on the runner's terminal, so QEMU
//! runs in the terminal's foreground; when the shell exits, the guest removes the driver,
//! writes its report into the results directory and powers off.

use std::fs;
use std::os::raw::{c_int, c_ulong};
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::thread::sleep;
use std::time::Duration;

use crate::accel;
use crate::child;
use crate::cli::ShellOptions;
use crate::layout::{self, Layout};
use crate::qemu::{Guest, Shell, Slot};
use crate::run_error::RunError;
use crate::session::{self, SocketDir, MUX_GRACE};
use crate::signals;

/// The gdb stub's port: QEMU's `-s` default.
pub const GDB_PORT: u16 = 1234;

/// `pvrdma-lab shell`.
pub fn run(options: &ShellOptions) -> ExitCode {
    match shell(options) {
        Ok(code) => code,
        Err(why) => {
            eprintln!("pvrdma-lab shell: {why}");
            ExitCode::from(crate::EXIT_USAGE)
        }
    }
}

fn shell(options: &ShellOptions) -> Result<ExitCode, String> {
    signals::install();
    session::remove_stale_socket_dirs();
    let mut layout = Layout::resolve(&options.run);
    if options.run.results.is_none() {
        layout.results = layout::absolute(&layout::checkout()).join("results/shell");
    }
    let chosen = accel::choose(options.run.accel);
    layout.accel = chosen.accel;
    crate::preflight(&layout)?;
    let version = crate::qemu_version(&layout, options.model)?;
    let module = crate::driver_module(&layout, options.driver).map_err(|result| match result {
        crate::tap::TapResult::Fail(why) => why,
        other => format!("{other:?}"),
    })?;
    let dir = &layout.results;
    session::fresh_dir(dir).map_err(said)?;

    let sockets = SocketDir::create().map_err(said)?;
    // A plain mux: every MAD delivered once.
    let mut mux = session::start_mux_with_burst(&layout, &sockets, dir, 1, None).map_err(said)?;
    let (mad_socket, fabric_socket) = sockets.mux_sockets();
    let slots = [Slot {
        test: "shell",
        timeout_secs: 0,
        results_dir: dir,
    }];
    let kernel_args: Vec<String> = options
        .run
        .guest_env
        .iter()
        .map(|a| format!("lab.env.{a}"))
        .collect();
    let verbs_log = dir.join("verbs.log");
    let guest = Guest {
        bzimage: &layout.bzimage,
        init: &layout.init,
        model: options.model.name(),
        device_version: options.model.device_version(),
        version_property: options.model.version_property().is_some(),
        driver: options.driver.name(),
        module,
        kernel_dir: &layout.kernel_dir,
        tests: &slots,
        kernel_args: &kernel_args,
        mad_socket: &mad_socket,
        fabric_socket: &fabric_socket,
        verbs_lib: &layout.verbs_lib,
        verbs_log: &verbs_log,
        link: None,
        accel: layout.accel,
        shell: Some(Shell {
            gdb_port: options.gdb.then_some(GDB_PORT),
            tty: terminal_size(),
            term: std::env::var("TERM").ok(),
        }),
    };
    let qemu_binary = layout.qemu(options.model);
    let mut command = guest.command(qemu_binary)?;
    let line = guest.shell_line(qemu_binary)?;
    fs::write(
        dir.join("qemu-command.sh"),
        format!(
            "#!/bin/sh\n# start {} first\n{line}\n",
            layout.mux.display()
        ),
    )
    .map_err(|e| format!("cannot write qemu-command.sh: {e}"))?;
    let qemu_log = dir.join("qemu.log");
    command.stderr(
        fs::File::create(&qemu_log)
            .map_err(|e| format!("cannot create {}: {e}", qemu_log.display()))?,
    );
    command.stdin(Stdio::inherit()).stdout(Stdio::inherit());

    eprintln!(
        "{}",
        banner(
            &BannerFacts {
                model: options.model.about(),
                version: &version,
                driver: options.driver.name(),
                module,
                kernel_dir: &layout.kernel_dir,
                accel: &chosen.why,
                gdb_port: options.gdb.then_some(GDB_PORT),
            },
            dir,
        )
    );
    let mut qemu = child::spawn_in_foreground("qemu", &mut command)
        .map_err(|e| format!("cannot start {}: {e}", qemu_binary.display()))?;
    let status = loop {
        if signals::received().is_some() {
            break qemu.terminate(Duration::from_secs(5));
        }
        match qemu.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("cannot wait for QEMU: {e}")),
        }
    };
    mux.terminate(MUX_GRACE);
    let ended = status.map_or("status unknown".to_string(), child::describe);
    eprintln!(
        "\npvrdma-lab shell: QEMU exited ({ended}); the guest's logs: {}",
        dir.display()
    );
    if !status.is_some_and(|s| s.success()) {
        let log = fs::read_to_string(&qemu_log).unwrap_or_default();
        for line in log
            .lines()
            .rev()
            .take(10)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            eprintln!("  qemu.log: {line}");
        }
        return Ok(ExitCode::from(crate::EXIT_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// A run error in words.
fn said(e: RunError) -> String {
    match e {
        RunError::Failed(why) => why,
        RunError::Interrupted(signum) => format!("interrupted by signal {signum}"),
    }
}

/// What the banner says.
struct BannerFacts<'a> {
    model: &'a str,
    version: &'a str,
    driver: &'a str,
    module: &'a Path,
    kernel_dir: &'a Path,
    accel: &'a str,
    gdb_port: Option<u16>,
}

/// What the user is told before QEMU takes the terminal.
fn banner(facts: &BannerFacts, dir: &Path) -> String {
    let mut text = format!(
        "pvrdma-lab shell: {model} ({version})\n\
         \x20 driver {driver}: {module}\n\
         \x20 kernel: {kernel}\n\
         \x20 accelerator: {accel}\n\
         \x20 The guest boots, loads the driver and waits for port 1 ACTIVE, then gives a shell\n\
         \x20 on this terminal. `exit` (or Ctrl-D) removes the driver, writes dmesg.txt and\n\
         \x20 kmemleak's report into {dir} and powers the guest off.\n\
         \x20 Ctrl-A x ends QEMU at once; Ctrl-A c switches to QEMU's monitor and back.",
        model = facts.model,
        version = facts.version,
        driver = facts.driver,
        module = facts.module.display(),
        kernel = facts.kernel_dir.display(),
        accel = facts.accel,
        dir = dir.display(),
    );
    if let Some(port) = facts.gdb_port {
        text.push_str(&format!(
            "\n  gdb: QEMU's gdb stub on 127.0.0.1:{port} (the kernel runs with nokaslr):\n\
             \x20   gdb {vmlinux} -ex 'target remote 127.0.0.1:{port}'",
            vmlinux = facts.kernel_dir.join("vmlinux").display(),
        ));
    }
    text
}

/// `_IOR('T', 0x13, struct winsize)`.
const TIOCGWINSZ: c_ulong = 0x5413;

extern "C" {
    fn ioctl(fd: c_int, request: c_ulong, ...) -> c_int;
}

/// The rows and columns of the terminal on standard input, if it is one.
fn terminal_size() -> Option<(u16, u16)> {
    // struct winsize: rows, columns, and two pixel sizes, each an unsigned short.
    let mut size = [0u16; 4];
    // SAFETY: TIOCGWINSZ writes one struct winsize (four unsigned shorts) to the pointer,
    // which points to four u16s that live across the call; on a descriptor that is not a
    // terminal it fails and writes nothing.
    let done = unsafe { ioctl(0, TIOCGWINSZ, size.as_mut_ptr()) };
    (done == 0 && size[0] > 0 && size[1] > 0).then_some((size[0], size[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_says_how_to_leave_and_where_gdb_is() {
        let mut facts = BannerFacts {
            model: "the patched model",
            version: "QEMU emulator version 7.2.22",
            driver: "rust",
            module: Path::new("/c/pvrdma.ko"),
            kernel_dir: Path::new("/k"),
            accel: "tcg",
            gdb_port: None,
        };
        let text = banner(&facts, Path::new("/r/shell"));
        assert!(text.contains("Ctrl-A x ends QEMU"), "{text}");
        assert!(text.contains("into /r/shell"), "{text}");
        assert!(!text.contains("gdb"), "{text}");
        facts.gdb_port = Some(GDB_PORT);
        let text = banner(&facts, Path::new("/r/shell"));
        assert!(
            text.ends_with("gdb /k/vmlinux -ex 'target remote 127.0.0.1:1234'"),
            "{text}"
        );
    }
}
