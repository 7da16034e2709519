// SPDX-License-Identifier: GPL-2.0-only
//! The figures a benchmark run leaves in its test directories, read from the
//! lines the guest writes (the formats `tests/guest/lib.sh` and
//! `tests/guest/tests/verbs_resources.c` print):
//!
//! - perftest's `notes.txt`, one line per tool (`lab_perftest_bw`,
//!   `lab_perftest_lat`):
//!   `ib_write_bw: 1000 x 65536 B: peak 702.35 MB/s, average 701.92 MB/s (attempt 1)`,
//!   `ib_write_lat: 1000 x 64 B: min 12, typical 13, average 14 cycles (4.1 / 4.3 / 4.7 us at 3000 MHz)`;
//! - `verbs_resources.log`, one `ok:` line per phase and round, ending with the
//!   phase's time: `ok: round 1: 256 CQs of 8 entries created (170 ms)`;
//! - `verb_times-near.log` and `verb_times-far.log` (`verb_costs.c` timing,
//!   the program on the CPU that takes the device's interrupts and on the
//!   other one), one line per verb and round, the wall time per call:
//!   `time: create_cq round 2 n 64 us 412.5`;
//! - `ibv_rc_pingpong_events`' `notes.txt`, one line per message size
//!   (`lab_pingpong`):
//!   `ibv_rc_pingpong -s 1 -n 500 --chk -e: ok, 500 iters in 2.64 seconds = 5287.45 usec/iter`;
//! - `nvme_fio`'s `notes.txt`, one line per fio job (`tests/guest/tests/nvme_fio.sh`):
//!   `fio seq write 128k qd16: 41.23 MB/s, 314 IOPS`.

use std::collections::BTreeMap;

use super::stats;

/// A phase of verbs_resources' control-path work, in the order it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Creating the 256 CQs.
    CreateCqs,
    /// Creating the 256 QPs.
    CreateQps,
    /// Registering the MRs (4 KiB doubling up to the device's limit).
    RegisterMrs,
    /// Connecting the RC QPs pairwise (and readying the UD QPs).
    ConnectQps,
    /// Destroying everything and closing the device.
    DestroyAll,
}

impl Phase {
    /// Which phase a line of the log times, by the words the program prints
    /// for it (checked in the order `tools/lab/bench` used to check them).
    fn of_line(line: &str) -> Option<Phase> {
        if line.contains(" CQs of ") && line.contains(" created (") {
            Some(Phase::CreateCqs)
        } else if line.contains(" QPs created (") {
            Some(Phase::CreateQps)
        } else if line.contains(" MRs registered") {
            Some(Phase::RegisterMrs)
        } else if line.contains(" connected pairwise") {
            Some(Phase::ConnectQps)
        } else if line.contains(" destroyed (each returned") {
            Some(Phase::DestroyAll)
        } else {
            None
        }
    }

    /// What the phase does, for the report.
    pub fn about(self) -> &'static str {
        match self {
            Phase::CreateCqs => "create 256 CQs",
            Phase::CreateQps => "create 256 QPs",
            Phase::RegisterMrs => "register MRs",
            Phase::ConnectQps => "connect 224 RC QPs",
            Phase::DestroyAll => "destroy everything",
        }
    }
}

/// The verbs `verb_costs.c` times, in the order it runs them (the report's
/// order): [`Metric::Verb`] is an index into this.
pub const TIMED_VERBS: [&str; 15] = [
    "alloc_pd",
    "dealloc_pd",
    "create_cq",
    "destroy_cq",
    "reg_mr",
    "dereg_mr",
    "create_qp",
    "modify_qp_init",
    "modify_qp_rtr",
    "modify_qp_rts",
    "destroy_qp",
    "create_srq",
    "destroy_srq",
    "create_ah",
    "destroy_ah",
];

/// Where `verb_times` ran the timed program against the CPU that takes the
/// device's interrupts: the command interrupt is taken by the caller's CPU
/// right after the register write (near), or by the other vCPU at its next
/// turn (far), which a driver waiting for the interrupt waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Placement {
    /// The program on the CPU that takes the device's interrupts.
    Near,
    /// The program on the other CPU.
    Far,
}

impl Placement {
    /// Both, in the order `verb_times` runs them (the report's order).
    pub const ALL: [Placement; 2] = [Placement::Near, Placement::Far];

    /// The word for it in the log's name and the report.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Near => "near",
            Placement::Far => "far",
        }
    }
}

/// What one figure measures. The order (bandwidths, latencies, then the
/// control path) is the order of the report's rows.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    /// A perftest bandwidth tool's average bandwidth (MB/s), by tool name.
    Bandwidth(String),
    /// A perftest latency tool's typical latency (µs), by tool name.
    Latency(String),
    /// `ibv_rc_pingpong -e`'s time per iteration (µs), by message size in
    /// bytes: a round trip whose every completion is waited for with a CQ
    /// event (the driver arms the CQ, its interrupt handler signals it).
    EventRoundTrip(u32),
    /// A verbs_resources phase: the median of its times in the rounds after
    /// the first (ms per round), with the placement left to the scheduler
    /// (`None`) or pinned (the runs `LAB_RESOURCES_PLACEMENTS` asks for).
    Phase(Phase, Option<Placement>),
    /// One verb's wall time per call (µs), the median of its rounds after the
    /// first, by its index in [`TIMED_VERBS`] and where the program ran.
    Verb(usize, Placement),
    /// An fio job's throughput over NVMe/RDMA (MB/s), by the job's name: the
    /// kernel data path (nvme-rdma and nvmet-rdma posting through the driver).
    Storage(String),
}

impl Metric {
    /// The unit of the metric's figures.
    pub fn unit(&self) -> &'static str {
        match self {
            Metric::Bandwidth(_) | Metric::Storage(_) => "MB/s",
            Metric::Latency(_) | Metric::EventRoundTrip(_) | Metric::Verb(..) => "µs",
            Metric::Phase(..) => "ms",
        }
    }

    /// Whether a larger figure is better: bandwidths are, times are not.
    pub fn higher_is_better(&self) -> bool {
        matches!(self, Metric::Bandwidth(_) | Metric::Storage(_))
    }

    /// The row's name in the report.
    pub fn label(&self) -> String {
        match self {
            Metric::Bandwidth(tool) => format!("{tool} ({})", self.unit()),
            Metric::Latency(tool) => format!("{tool} (typical {})", self.unit()),
            Metric::EventRoundTrip(size) => {
                format!(
                    "ibv_rc_pingpong -e, {size} B ({} per iteration)",
                    self.unit()
                )
            }
            Metric::Phase(phase, None) => format!("{} ({} per round)", phase.about(), self.unit()),
            Metric::Phase(phase, Some(placement)) => format!(
                "{}, {} ({} per round)",
                phase.about(),
                placement.name(),
                self.unit()
            ),
            Metric::Verb(verb, placement) => {
                let name = TIMED_VERBS.get(*verb).copied().unwrap_or("?");
                format!("{name}, {} ({} per call)", placement.name(), self.unit())
            }
            Metric::Storage(job) => format!("fio NVMe/RDMA {job} ({})", self.unit()),
        }
    }
}

/// The figures of one test directory.
pub type Figures = BTreeMap<Metric, f64>;

/// A measured value: a decimal number (digits and dots, as the guest prints
/// them) that is finite and not negative.
fn value(text: &str) -> Option<f64> {
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The tool a notes line is about (`ib_<word>_bw` or `ib_<word>_lat` before
/// the first colon) and the rest of the line.
fn perftest_tool(line: &str) -> Option<(&str, &str)> {
    let (tool, rest) = line.split_once(':')?;
    let word = tool.strip_prefix("ib_")?;
    if word.is_empty() || !word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some((tool, rest))
}

/// The figure of one line of a perftest test's `notes.txt`: a bandwidth
/// tool's average, or a latency tool's typical latency in µs (the middle of
/// `(min / typical / average us at F MHz)`; a line without µs, written when
/// the guest's TSC frequency was unknown, has no figure).
pub fn perftest_note(line: &str) -> Option<(Metric, f64)> {
    let (tool, rest) = perftest_tool(line)?;
    if tool.ends_with("_bw") {
        let after = &rest[rest.rfind("average ")? + "average ".len()..];
        let (number, _) = after.split_once(" MB/s")?;
        return Some((Metric::Bandwidth(tool.to_string()), value(number)?));
    }
    if tool.ends_with("_lat") {
        let inside = &rest[rest.rfind('(')? + 1..];
        let mut parts = inside.splitn(3, " / ");
        let (_min, typical, _rest) = (value(parts.next()?)?, parts.next()?, parts.next()?);
        return Some((Metric::Latency(tool.to_string()), value(typical)?));
    }
    None
}

/// The figures of a perftest test's `notes.txt`; a tool noted twice counts
/// once, with its last line.
pub fn perftest_notes(text: &str) -> Figures {
    text.lines().filter_map(perftest_note).collect()
}

/// The figure of one line of `ibv_rc_pingpong_events`' `notes.txt`: a run
/// with completion events (`-e`) that passed, its size (`-s N`) and its time
/// per iteration.
pub fn pingpong_note(line: &str) -> Option<(Metric, f64)> {
    let (command, result) = line.split_once(": ok, ")?;
    let mut words = command.split_whitespace();
    if words.next()? != "ibv_rc_pingpong" || !command.split_whitespace().any(|w| w == "-e") {
        return None;
    }
    let size = words
        .skip_while(|w| *w != "-s")
        .nth(1)?
        .parse::<u32>()
        .ok()?;
    let per_iter = result.trim_end().strip_suffix(" usec/iter")?;
    let number = &per_iter[per_iter.rfind("= ")? + 2..];
    Some((Metric::EventRoundTrip(size), value(number)?))
}

/// The figures of `ibv_rc_pingpong_events`' `notes.txt`.
pub fn pingpong_notes(text: &str) -> Figures {
    text.lines().filter_map(pingpong_note).collect()
}

/// The figure of one line of `nvme_fio`'s `notes.txt`: a job's name and its
/// throughput, `fio <job>: <MB/s> MB/s, <IOPS> IOPS`.
pub fn fio_note(line: &str) -> Option<(Metric, f64)> {
    let (job, rest) = line.strip_prefix("fio ")?.split_once(": ")?;
    if job.is_empty() || !job.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ') {
        return None;
    }
    let (number, _) = rest.split_once(" MB/s, ")?;
    Some((Metric::Storage(job.to_string()), value(number)?))
}

/// The figures of `nvme_fio`'s `notes.txt`.
pub fn fio_notes(text: &str) -> Figures {
    text.lines().filter_map(fio_note).collect()
}

/// The figure of a run that timed something over several rounds: the median
/// of the rounds after the first (the first pays for what the program and the
/// kernel do once: first touches, caches growing), or the first round's when
/// it is the only one.
fn after_first_round(rounds: &BTreeMap<u32, f64>) -> Option<f64> {
    let later: Vec<f64> = rounds
        .iter()
        .filter(|(round, _)| **round > 1)
        .map(|(_, v)| *v)
        .collect();
    if later.is_empty() {
        rounds.get(&1).copied()
    } else {
        stats::median(&later)
    }
}

/// The phase, round and milliseconds of one line of `verbs_resources.log`: a
/// line `ok: round <K>: ...` naming a phase that ends with `(N ms)`.
pub fn resources_line(line: &str) -> Option<(Phase, u32, f64)> {
    let line = line.trim_end();
    let phase = Phase::of_line(line)?;
    let (round, _) = line.strip_prefix("ok: round ")?.split_once(": ")?;
    let round = round.parse::<u32>().ok().filter(|r| *r >= 1)?;
    let inside = line.strip_suffix(" ms)")?;
    let number = &inside[inside.rfind('(')? + 1..];
    if !number.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((phase, round, value(number)?))
}

/// The figures of timings taken over rounds, `(key, round, value)` each: per key the
/// median of the rounds after the first (see [`after_first_round`]), as the metric `metric`
/// makes of the key. A key with a round timed twice is not what the programs write: it is
/// left out.
fn per_round<K: Ord + Copy>(
    timings: impl Iterator<Item = (K, u32, f64)>,
    metric: impl Fn(K) -> Metric,
) -> Figures {
    let mut rounds: BTreeMap<K, BTreeMap<u32, f64>> = BTreeMap::new();
    let mut garbled = Vec::new();
    for (key, round, value) in timings {
        if rounds
            .entry(key)
            .or_default()
            .insert(round, value)
            .is_some()
        {
            garbled.push(key);
        }
    }
    rounds
        .iter()
        .filter(|(key, _)| !garbled.contains(key))
        .filter_map(|(key, times)| Some((metric(*key), after_first_round(times)?)))
        .collect()
}

/// The figures of a verbs_resources log of the program run with `placement`
/// (`verbs_resources.log`: `None`; `verbs_resources-<placement>.log`): each
/// phase's median time over the rounds after the first (see [`per_round`]).
pub fn resources_log(text: &str, placement: Option<Placement>) -> Figures {
    per_round(text.lines().filter_map(resources_line), |phase| {
        Metric::Phase(phase, placement)
    })
}

/// The verb, round and microseconds per call of one line of a `verb_times` log:
/// `time: <verb> round <r> n <calls> us <per call>`.
pub fn verb_time_line(line: &str) -> Option<(usize, u32, f64)> {
    let mut words = line.trim_end().strip_prefix("time: ")?.split(' ');
    let verb = words.next()?;
    let verb = TIMED_VERBS.iter().position(|v| *v == verb)?;
    let (Some("round"), Some(round), Some("n"), Some(calls), Some("us"), Some(us), None) = (
        words.next(),
        words.next(),
        words.next(),
        words.next(),
        words.next(),
        words.next(),
        words.next(),
    ) else {
        return None;
    };
    let round = round.parse::<u32>().ok().filter(|r| *r >= 1)?;
    calls.parse::<u32>().ok().filter(|n| *n >= 1)?;
    Some((verb, round, value(us)?))
}

/// The figures of the `verb_times` log of `placement`: each verb's median time
/// per call over the rounds after the first (see [`per_round`]).
pub fn verb_times_log(text: &str, placement: Placement) -> Figures {
    per_round(text.lines().filter_map(verb_time_line), |verb| {
        Metric::Verb(verb, placement)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_pingpong_lines() {
        let text = "ibv_rc_pingpong -s 1 -n 500 --chk -e: ok, 500 iters in 2.64 seconds = 5287.45 usec/iter
ibv_rc_pingpong -s 65536 -n 500 --chk -e: ok, 500 iters in 1.46 seconds = 2916.19 usec/iter
ibv_rc_pingpong -s 4096 -n 500 --chk: ok, 500 iters in 1.67 seconds = 3346.64 usec/iter
ibv_rc_pingpong -s 8 -n 500 --chk -e: FAILED (exit 1)
ibv_rc_pingpong -s x -n 500 -e: ok, 500 iters in 1 seconds = 2.0 usec/iter
";
        let figures = pingpong_notes(text);
        assert_eq!(figures.len(), 2, "{figures:?}");
        assert_eq!(figures[&Metric::EventRoundTrip(1)], 5287.45);
        assert_eq!(figures[&Metric::EventRoundTrip(65536)], 2916.19);
        assert_eq!(
            Metric::EventRoundTrip(1).label(),
            "ibv_rc_pingpong -e, 1 B (µs per iteration)"
        );
        assert!(!Metric::EventRoundTrip(1).higher_is_better());
    }

    #[test]
    fn bandwidth_line() {
        let line = "ib_write_bw: 1000 x 65536 B: peak 702.35 MB/s, average 701.92 MB/s (attempt 2)";
        assert_eq!(
            perftest_note(line),
            Some((Metric::Bandwidth("ib_write_bw".into()), 701.92))
        );
    }

    #[test]
    fn latency_line() {
        let line = "ib_send_lat: 1000 x 64 B: min 10944, typical 12030, average 13466 cycles \
                    (3.6 / 4.0 / 4.5 us at 2994 MHz)";
        assert_eq!(
            perftest_note(line),
            Some((Metric::Latency("ib_send_lat".into()), 4.0))
        );
    }

    #[test]
    fn lines_without_a_figure() {
        // No TSC frequency: cycles only.
        assert_eq!(
            perftest_note("ib_read_lat: 1000 x 64 B: min 1, typical 2, average 3 cycles"),
            None
        );
        assert_eq!(perftest_note("ib_write_bw: 1 MB/s"), None);
        assert_eq!(perftest_note("rping: 100 pings"), None);
        assert_eq!(
            perftest_note("ib_write_bw: 1 x 1 B: peak 1 MB/s, average -1 MB/s (attempt 1)"),
            None
        );
    }

    #[test]
    fn notes_file() {
        let text = "ib_write_bw: 1000 x 65536 B: peak 800 MB/s, average 799.5 MB/s (attempt 1)\n\
                    ib_write_lat: 1000 x 64 B: min 1, typical 2, average 3 cycles \
                    (1000.0 / 1008.5 / 1020.1 us at 3000 MHz)\n\
                    something else\n";
        let figures = perftest_notes(text);
        assert_eq!(figures.len(), 2);
        assert_eq!(
            figures.get(&Metric::Bandwidth("ib_write_bw".into())),
            Some(&799.5)
        );
        assert_eq!(
            figures.get(&Metric::Latency("ib_write_lat".into())),
            Some(&1008.5)
        );
    }

    #[test]
    fn fio_lines() {
        let text = "fio seq write 128k qd16: 41.23 MB/s, 314 IOPS
fio rand read 4k qd32: 9.80 MB/s, 2392 IOPS
fio broken: MB/s
fio x: -1 MB/s, 2 IOPS
connected: /dev/nvme0n1
";
        let figures = fio_notes(text);
        assert_eq!(figures.len(), 2, "{figures:?}");
        let write = Metric::Storage("seq write 128k qd16".into());
        assert_eq!(figures[&write], 41.23);
        assert_eq!(figures[&Metric::Storage("rand read 4k qd32".into())], 9.80);
        assert!(write.higher_is_better());
        assert_eq!(write.label(), "fio NVMe/RDMA seq write 128k qd16 (MB/s)");
    }

    /// The `ok:` lines verbs_resources.c prints, two rounds, with the lines
    /// around them that carry no phase time.
    const RESOURCES_LOG: &str = "\
device rocep0s4: max_qp 32768, max_cq 4096, max_mr 65536, max_mr_size 4294967295, max_qp_wr 1024, max_cqe 262144, max_sge 4, page size 4096
ok: round 1: 256 CQs of 8 entries created (170 ms)
ok: round 1: 256 QPs created (224 RC, 32 UD), each on its own CQ (210 ms)
ok: round 1: 16 MRs registered, 4 KiB to 131072 KiB, and a 8192 KiB message MR (1600 ms)
ok: round 1: 224 RC QPs connected pairwise over GID index 1, 32 UD QPs ready, all in RTS (200 ms)
ok: round 1: 224 RC and 32 UD QPs each sent and received one message, every byte checked (90 ms)
ok: round 1: each of the 16 MRs carried a message from its first half into its second (80 ms)
ok: round 1: 256 QPs, the AH, 17 MRs, 256 CQs, the PD destroyed (each returned 0), device closed (450 ms)
ok: round 1 of 2 done in 3000 ms
ok: round 2: 256 CQs of 8 entries created (171 ms)
ok: round 2: 256 QPs created (224 RC, 32 UD), each on its own CQ (222 ms)
ok: round 2: 16 MRs registered, 4 KiB to 131072 KiB, and a 8192 KiB message MR (1656 ms)
ok: round 2: 224 RC QPs connected pairwise over GID index 1, 32 UD QPs ready, all in RTS (206 ms)
ok: round 2: 256 QPs, the AH, 17 MRs, 256 CQs, the PD destroyed (each returned 0), device closed (446 ms)
ok: churn: 3 batches of 64 PDs, 256 CQs, 64 MRs created and destroyed (192, 768, 192 in all; device max_pd 1024, max_cq 4096, max_mr 65536): no handle leaked (900 ms)
all checks passed (2 rounds, 9000 ms)
";

    #[test]
    fn resources_phases_median_of_rounds_after_the_first() {
        let figures = resources_log(RESOURCES_LOG, None);
        let phase = |p| figures.get(&Metric::Phase(p, None)).copied();
        // Two rounds: the second's times.
        assert_eq!(phase(Phase::CreateCqs), Some(171.0));
        assert_eq!(phase(Phase::CreateQps), Some(222.0));
        assert_eq!(phase(Phase::RegisterMrs), Some(1656.0));
        assert_eq!(phase(Phase::ConnectQps), Some(206.0));
        assert_eq!(phase(Phase::DestroyAll), Some(446.0));
        assert_eq!(figures.len(), 5);
        // More rounds: the median of rounds 2.., round 1 left out however slow.
        let four = "\
ok: round 1: 256 CQs of 8 entries created (900 ms)
ok: round 2: 256 CQs of 8 entries created (30 ms)
ok: round 3: 256 CQs of 8 entries created (50 ms)
ok: round 4: 256 CQs of 8 entries created (20 ms)
";
        assert_eq!(
            resources_log(four, None).get(&Metric::Phase(Phase::CreateCqs, None)),
            Some(&30.0)
        );
        // One round: its time.
        let one = "ok: round 1: 256 CQs of 8 entries created (40 ms)\n";
        assert_eq!(
            resources_log(one, None).get(&Metric::Phase(Phase::CreateCqs, None)),
            Some(&40.0)
        );
        // A round timed twice: not the program's log; no figure.
        let twice = "ok: round 1: 256 CQs of 8 entries created (40 ms)\n\
                     ok: round 2: 256 CQs of 8 entries created (40 ms)\n\
                     ok: round 2: 256 CQs of 8 entries created (10 ms)\n";
        assert!(resources_log(twice, None).is_empty());
    }

    #[test]
    fn resources_phases_of_a_pinned_run() {
        let far = resources_log(RESOURCES_LOG, Some(Placement::Far));
        let cqs = Metric::Phase(Phase::CreateCqs, Some(Placement::Far));
        assert_eq!(far.get(&cqs), Some(&171.0));
        assert_eq!(far.len(), 5);
        assert_eq!(cqs.label(), "create 256 CQs, far (ms per round)");
        assert_eq!(
            Metric::Phase(Phase::CreateCqs, None).label(),
            "create 256 CQs (ms per round)"
        );
        // A phase's rows: left to the scheduler, near, far; then the next phase's.
        let near = Metric::Phase(Phase::CreateCqs, Some(Placement::Near));
        assert!(Metric::Phase(Phase::CreateCqs, None) < near);
        assert!(near < cqs);
        assert!(cqs < Metric::Phase(Phase::CreateQps, None));
    }

    #[test]
    fn resources_lines_without_a_time() {
        assert_eq!(
            resources_line("FAIL: churn batch 3: ibv_reg_mr 7: ENOMEM (6 MRs registered before, device max_mr 8)"),
            None
        );
        assert_eq!(
            resources_line("ok: round 1: 256 CQs of 8 entries created (1.5 ms)"),
            None
        );
        assert_eq!(
            resources_line("ok: round 0: 256 CQs of 8 entries created (15 ms)"),
            None
        );
        assert_eq!(
            resources_line(
                "ok: churn: 3 batches of 64 PDs, 256 CQs, 64 MRs created and destroyed (7 ms)"
            ),
            None
        );
        assert_eq!(
            resources_line(
                "ok: round 1: 256 QPs created (224 RC, 32 UD), each on its own CQ (7 ms)\n"
            ),
            Some((Phase::CreateQps, 1, 7.0))
        );
    }

    /// What verb_costs.c prints when timing (two verbs, three rounds), with
    /// lines around it that carry no time.
    const VERB_TIMES_LOG: &str = "\
time: create_cq round 1 n 64 us 950.0
time: destroy_cq round 1 n 64 us 300.2
time: create_cq round 2 n 64 us 410.5
time: destroy_cq round 2 n 64 us 210.0
time: create_cq round 3 n 64 us 390.5
time: destroy_cq round 3 n 64 us 230.0
all verbs timed (64 calls each, 3 rounds)
";

    #[test]
    fn verb_times_median_of_rounds_after_the_first() {
        let figures = verb_times_log(VERB_TIMES_LOG, Placement::Far);
        let verb = |name: &str, placement| {
            let index = TIMED_VERBS.iter().position(|v| *v == name).unwrap();
            figures.get(&Metric::Verb(index, placement)).copied()
        };
        assert_eq!(verb("create_cq", Placement::Far), Some(400.5));
        assert_eq!(verb("destroy_cq", Placement::Far), Some(220.0));
        assert_eq!(verb("create_cq", Placement::Near), None);
        assert_eq!(figures.len(), 2);
        let reg_mr = TIMED_VERBS.iter().position(|v| *v == "reg_mr").unwrap();
        assert_eq!(
            Metric::Verb(reg_mr, Placement::Near).label(),
            "reg_mr, near (µs per call)"
        );
        // A verb's rows: near before far, both after the verbs before it.
        assert!(Metric::Verb(reg_mr, Placement::Near) < Metric::Verb(reg_mr, Placement::Far));
        assert!(Metric::Verb(reg_mr, Placement::Far) < Metric::Verb(reg_mr + 1, Placement::Near));
    }

    #[test]
    fn verb_time_lines_without_a_figure() {
        for line in [
            "time: create_cq round 2 n 64 us",
            "time: create_cq round 2 n 64 us -4",
            "time: create_cq round 2 n 64 us 12 extra",
            "time: create_cq round 0 n 64 us 12",
            "time: create_cq round 2 n 0 us 12",
            "time: fork round 2 n 64 us 12",
            "cost: create_cq n 64 commands 1.00 interrupts 1.00",
        ] {
            assert_eq!(verb_time_line(line), None, "{line}");
        }
        assert_eq!(
            verb_time_line("time: dereg_mr round 7 n 64 us 88.25\n"),
            Some((5, 7, 88.25))
        );
    }
}
