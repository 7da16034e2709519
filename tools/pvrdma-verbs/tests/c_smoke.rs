// SPDX-License-Identifier: GPL-2.0-only
//! Compiles `tests/c/smoke.c` against rdma-core's headers and libibverbs,
//! and runs it with this crate's cdylib preloaded, as QEMU runs (with the
//! debug log on).

use std::path::PathBuf;
use std::process::Command;

/// The cdylib cargo built next to this test binary.
fn cdylib() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("deps dir");
    let lib = deps.join("libpvrdma_verbs.so");
    assert!(lib.exists(), "{} not built", lib.display());
    lib
}

#[test]
fn c_program_runs_against_the_preloaded_device() {
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("skipped: no C compiler");
        return;
    }
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/smoke.c");
    let dir = std::env::temp_dir().join(format!("pvrdma-verbs-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("smoke");
    let out = Command::new("cc")
        .args(["-std=gnu11", "-Wall", "-Werror", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-libverbs")
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = dir.join("verbs.log");
    let run = Command::new(&exe)
        .env("LD_PRELOAD", cdylib())
        .env("PVRDMA_VERBS_LOG", &log)
        .env_remove("PVRDMA_FABRIC")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "smoke failed: {stdout}{stderr}");
    assert!(stdout.contains("c smoke ok"));
    // The debug log has one line per verb call.
    let log = std::fs::read_to_string(&log).expect("PVRDMA_VERBS_LOG written");
    for verb in [
        "ibv_open_device",
        "ibv_reg_mr ",
        "ibv_reg_mr_iova2",
        "post_send",
        "poll_cq",
        "ibv_get_cq_event",
    ] {
        assert!(log.contains(verb), "no {verb} in the log:\n{log}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
