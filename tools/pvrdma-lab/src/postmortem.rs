// SPDX-License-Identifier: GPL-2.0-only
//! What a QEMU that overran its time was doing, taken before the runner kills
//! it: the backtraces of all its threads (gdb, batch mode), and from them one
//! line for the verdict: where the vCPU thread was. A vCPU running guest code
//! means the guest itself is stuck (its kernel or a process); a vCPU waiting
//! on a lock or a socket inside QEMU or the software verbs library means the
//! device model is. A CI log keeps only the verdict, so that line matters.

use std::fs::{self, File};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::child;

/// The longest gdb may take to attach and print.
const GDB_LIMIT: Duration = Duration::from_secs(60);
/// The most frames of the vCPU thread the summary names.
const SUMMARY_FRAMES: usize = 5;

/// Writes the backtraces of every thread of process `pid` to `out` and returns
/// the summary line, or why there is none.
pub fn backtraces(pid: u32, out: &Path) -> String {
    match run_gdb(pid, out) {
        Ok(()) => fs::read_to_string(out)
            .ok()
            .and_then(|text| vcpu_summary(&text))
            .unwrap_or_else(|| "no vCPU thread in gdb's backtraces".to_string()),
        Err(why) => {
            let _ = fs::write(out, format!("{why}\n"));
            why
        }
    }
}

fn run_gdb(pid: u32, out: &Path) -> Result<(), String> {
    let file = File::create(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let stderr = file
        .try_clone()
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    let mut command = Command::new("gdb");
    command
        .args(["-nx", "-batch", "-p", &pid.to_string()])
        .args(["-ex", "set pagination off", "-ex", "thread apply all bt 40"])
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(stderr);
    let mut gdb = child::spawn("gdb", &mut command)
        .map_err(|e| format!("no QEMU backtraces: cannot run gdb: {e}"))?;
    let deadline = Instant::now() + GDB_LIMIT;
    while Instant::now() < deadline {
        match gdb.try_wait() {
            Ok(Some(_)) => return Ok(()),
            Ok(None) => sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("no QEMU backtraces: cannot wait for gdb: {e}")),
        }
    }
    gdb.kill();
    Err(format!(
        "no QEMU backtraces: gdb did not finish within {} s",
        GDB_LIMIT.as_secs()
    ))
}

/// One line naming where the vCPU thread was (its innermost frames), from
/// gdb's `thread apply all bt` output.
fn vcpu_summary(text: &str) -> Option<String> {
    let mut lines = text.lines();
    // QEMU names its vCPU threads (`-name debug-threads=on`): "CPU 0/TCG", or
    // "ALL CPUs/TCG" with one thread for all of them; "CPU 0/KVM" under KVM.
    lines.find(|l| l.starts_with("Thread ") && (l.contains("/TCG\"") || l.contains("/KVM\"")))?;
    let frames: Vec<&str> = lines
        .take_while(|l| l.starts_with('#'))
        .filter_map(frame_function)
        .take(SUMMARY_FRAMES)
        .collect();
    if frames.is_empty() {
        return None;
    }
    Some(format!("QEMU's vCPU thread in {}", frames.join(" < ")))
}

/// The function of one gdb frame line: `#0  0x00007f.. in futex_wait (...) at ...`
/// or `#1  qemu_mutex_lock_impl (...) at ...`.
fn frame_function(line: &str) -> Option<&str> {
    let rest = line.split_once(char::is_whitespace)?.1.trim_start();
    let rest = match rest.split_once(" in ") {
        Some((address, function)) if address.starts_with("0x") => function,
        _ => rest,
    };
    let name = rest.split([' ', '(']).next()?;
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GDB: &str = "\
Thread 3 (Thread 0x7f1 (LWP 12) \"ALL CPUs/TCG\"):
#0  0x00007f0000000001 in __futex_abstimed_wait_common64 (private=0) at ./nptl/futex-internal.c:57
#1  0x00007f0000000002 in __GI___lll_lock_wait (futex=0x5) at ./nptl/lowlevellock.c:49
#2  std::sys::sync::mutex::futex::Mutex::lock_contended (self=0x1) at library/std/src/sys/sync/mutex/futex.rs:68
#3  0x00007f0000000003 in pvrdma_verbs::engine::Engine::post_send (self=0x2) at src/engine.rs:100
#4  0x00005600000004 in pvrdma_qp_send (dev=0x3) at ../hw/rdma/vmw/pvrdma_qp_ops.c:200
#5  0x00005600000005 in pvrdma_regs_write (opaque=0x4) at ../hw/rdma/vmw/pvrdma_main.c:400

Thread 1 (Thread 0x7f2 (LWP 10) \"qemu-system-x86\"):
#0  0x00007f0000000009 in ppoll () at x.c:1
";

    #[test]
    fn names_the_vcpu_thread_frames() {
        assert_eq!(
            vcpu_summary(GDB).as_deref(),
            Some(
                "QEMU's vCPU thread in __futex_abstimed_wait_common64 < __GI___lll_lock_wait < \
                 std::sys::sync::mutex::futex::Mutex::lock_contended < \
                 pvrdma_verbs::engine::Engine::post_send < pvrdma_qp_send"
            )
        );
    }

    #[test]
    fn takes_the_backtraces_of_a_live_process() {
        let mut sleeper = child::spawn("sleep", Command::new("sleep").arg("60")).unwrap();
        let out = std::env::temp_dir().join(format!("pvrdma-lab-bt-{}", std::process::id()));
        let summary = backtraces(sleeper.pid().unwrap(), &out);
        let text = fs::read_to_string(&out).unwrap();
        let _ = fs::remove_file(&out);
        sleeper.kill();
        assert!(text.contains("Thread 1 ") || text.contains("#0 "), "{text}");
        assert_eq!(summary, "no vCPU thread in gdb's backtraces");
    }

    #[test]
    fn no_vcpu_thread_no_summary() {
        assert_eq!(
            vcpu_summary("Thread 1 (Thread 0x1 (LWP 2) \"x\"):\n#0 f ()\n"),
            None
        );
        assert_eq!(vcpu_summary(""), None);
    }
}
