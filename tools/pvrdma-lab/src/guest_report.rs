// SPDX-License-Identifier: GPL-2.0-only
//! What a guest wrote into its results directory (the writable 9p share), as
//! `tests/guest/init.sh` writes it:
//!
//! | file          | content                                                        |
//! |---------------|----------------------------------------------------------------|
//! | `boot-uptime` | guest uptime (s) when init started: the boot time             |
//! | `stage`       | the last step init reached                                     |
//! | `setup`       | `ok`, or why the test could not start (module, device, port)   |
//! | `status`      | the test script's exit status                                  |
//! | `test-uptime` | guest uptime at the script's start and end                     |
//! | `test.log`    | the script's output; `FAIL: ...` lines say what failed         |
//! | `notes.txt`   | what the test measured or proved, one line each (`lab_summary`)|
//! | `teardown`    | `ok`, or why rmmod of the driver failed                        |
//! | `dmesg.txt`   | the kernel log after the test and rmmod                        |
//! | `tainted`     | `/proc/sys/kernel/tainted` at the end                          |
//! | `kmemleak-state` | `scanned`, or why kmemleak could not scan (absent, disabled) |
//! | `kmemleak.txt`| kmemleak's report, if the kernel has kmemleak                  |
//! | `hang.txt`    | what processes stuck in the kernel waited for (`lab_hang_report`) |
//! | `done`        | written last: the guest finished reporting                     |
//!
//! Everything is read defensively: the guest is the code under test.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The most of a guest file the runner reads.
const MAX_READ: u64 = 16 << 20;
/// The most of a one-line guest file shown in a message.
const MAX_LINE: usize = 400;
/// The most lines of `notes.txt` the runner prints.
const MAX_NOTES: usize = 40;

/// What the guest reported.
#[derive(Debug, Default)]
pub struct GuestReport {
    /// `done` exists: the guest got to the end of init.
    pub done: bool,
    /// Guest uptime in seconds when init started.
    pub boot_secs: Option<f64>,
    /// The last step init reached.
    pub stage: Option<String>,
    /// `Ok(())` if the test could start, else why not; None if init never said.
    pub setup: Option<Result<(), String>>,
    /// The test script's exit status.
    pub status: Option<i32>,
    /// How long the script ran, in guest seconds.
    pub test_secs: Option<f64>,
    /// The first `FAIL:` line of the script's output.
    pub first_failure: Option<String>,
    /// The test's notes (what it measured), at most [`MAX_NOTES`] lines.
    pub notes: Vec<String>,
    /// `Ok(())` if rmmod worked, else why not; None if init never said.
    pub teardown: Option<Result<(), String>>,
    /// The kernel log the guest saved.
    pub dmesg: Option<String>,
    /// kmemleak's report.
    pub kmemleak: Option<String>,
    /// The kernel's taint flags at the end.
    pub tainted: Option<u64>,
    /// `Ok(())` if kmemleak scanned, else why it could not; None if init never said.
    pub kmemleak_state: Option<Result<(), String>>,
    /// What a step that overran was stuck on: the first `stuck: ` line of
    /// `hang.txt` (a process in uninterruptible sleep and its innermost kernel
    /// frames), else that file's first line; None if no step overran.
    pub hang: Option<String>,
}

/// Reads a guest file as text (lossily), at most [`MAX_READ`] bytes.
pub fn read_text(path: &Path) -> Option<String> {
    let mut bytes = Vec::new();
    File::open(path)
        .ok()?
        .take(MAX_READ)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The first line of a guest file, trimmed and shortened for messages.
fn read_line(path: &Path) -> Option<String> {
    let text = read_text(path)?;
    let line = text.lines().next().unwrap_or("").trim();
    Some(shorten(line))
}

/// `text` cut to [`MAX_LINE`] characters, control characters replaced.
pub fn shorten(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_LINE)
        .collect();
    if text.chars().count() > MAX_LINE {
        out.push('…');
    }
    out
}

fn ok_or_message(line: Option<String>) -> Option<Result<(), String>> {
    line.map(|l| if l == "ok" { Ok(()) } else { Err(l) })
}

/// A guest uptime: a non-negative finite number of seconds.
fn seconds(text: &str) -> Option<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
}

/// Reads the report in `dir`.
pub fn read(dir: &Path) -> GuestReport {
    let test_secs = read_line(&dir.join("test-uptime")).and_then(|l| {
        let mut parts = l.split_whitespace().map(seconds);
        match (parts.next().flatten(), parts.next().flatten()) {
            (Some(start), Some(end)) if end >= start => Some(end - start),
            _ => None,
        }
    });
    let first_failure = read_text(&dir.join("test.log")).and_then(|log| {
        log.lines()
            .find_map(|l| l.strip_prefix("FAIL: "))
            .map(shorten)
    });
    let notes = read_text(&dir.join("notes.txt"))
        .map(|text| {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .take(MAX_NOTES)
                .map(shorten)
                .collect()
        })
        .unwrap_or_default();
    GuestReport {
        done: dir.join("done").exists(),
        boot_secs: read_line(&dir.join("boot-uptime")).and_then(|l| seconds(&l)),
        stage: read_line(&dir.join("stage")),
        setup: ok_or_message(read_line(&dir.join("setup"))),
        status: read_line(&dir.join("status")).and_then(|l| l.parse().ok()),
        test_secs,
        first_failure,
        notes,
        teardown: ok_or_message(read_line(&dir.join("teardown"))),
        dmesg: read_text(&dir.join("dmesg.txt")),
        kmemleak: read_text(&dir.join("kmemleak.txt")),
        tainted: read_line(&dir.join("tainted")).and_then(|l| l.parse().ok()),
        kmemleak_state: read_line(&dir.join("kmemleak-state")).map(|l| {
            if l == "scanned" {
                Ok(())
            } else {
                Err(l)
            }
        }),
        hang: read_text(&dir.join("hang.txt")).and_then(|text| hang_summary(&text)),
    }
}

/// The line of a hang report that names what was stuck.
fn hang_summary(text: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with("stuck: "))
        .or_else(|| text.lines().next())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(shorten)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn reads_a_report() {
        let dir = std::env::temp_dir().join(format!("pvrdma-lab-report-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("boot-uptime"), "2.35\n").unwrap();
        fs::write(dir.join("setup"), "ok\n").unwrap();
        fs::write(dir.join("status"), "1\n").unwrap();
        fs::write(dir.join("test-uptime"), "3.00 10.50\n").unwrap();
        fs::write(
            dir.join("test.log"),
            "lab: x\nFAIL: size 1: bad\nFAIL: later\n",
        )
        .unwrap();
        fs::write(dir.join("teardown"), "rmmod hung\n").unwrap();
        fs::write(dir.join("done"), "done\n").unwrap();
        fs::write(dir.join("notes.txt"), "ib_write_bw: 1 MB/s\n\n\tx\n").unwrap();
        fs::write(dir.join("tainted"), "4096\n").unwrap();
        fs::write(dir.join("kmemleak-state"), "absent (no kmemleak)\n").unwrap();
        let report = read(&dir);
        fs::remove_dir_all(&dir).unwrap();
        assert!(report.done);
        assert_eq!(report.boot_secs, Some(2.35));
        assert_eq!(report.setup, Some(Ok(())));
        assert_eq!(report.status, Some(1));
        assert_eq!(report.test_secs, Some(7.5));
        assert_eq!(report.first_failure.as_deref(), Some("size 1: bad"));
        assert_eq!(report.teardown, Some(Err("rmmod hung".to_string())));
        assert_eq!(report.notes, ["ib_write_bw: 1 MB/s", "x"]);
        assert_eq!(report.tainted, Some(4096));
        assert_eq!(
            report.kmemleak_state,
            Some(Err("absent (no kmemleak)".to_string()))
        );
    }

    #[test]
    fn names_what_hung() {
        let report = "the test still running (uptime 590 s)\n\
                      stuck: rmmod (pid 412) in ib_unregister_device < pvrdma_remove\n    [<0>] x\n\
                      stuck: rping (pid 9) in rdma_destroy_id\n";
        assert_eq!(
            hang_summary(report).as_deref(),
            Some("stuck: rmmod (pid 412) in ib_unregister_device < pvrdma_remove")
        );
        assert_eq!(
            hang_summary("the test still running (uptime 590 s)\nuser processes:\n").as_deref(),
            Some("the test still running (uptime 590 s)")
        );
        assert_eq!(hang_summary("\n"), None);
    }

    #[test]
    fn rejects_nonsense() {
        assert_eq!(seconds("-1"), None);
        assert_eq!(seconds("NaN"), None);
        assert_eq!(seconds(" 4.5 "), Some(4.5));
        assert_eq!(shorten("a\tb"), "a b");
    }
}
