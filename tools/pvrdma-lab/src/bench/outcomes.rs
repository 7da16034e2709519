// SPDX-License-Identifier: GPL-2.0-only
//! Which runs of a repetition passed, from the TAP the runner wrote
//! (`crate::tap`): `ok 3 - patched/c/perftest_send`, `not ok 4 -
//! patched/rust/verbs_resources # cause`, and the `# kernel: DIR` comment of
//! the run's header.

use std::collections::BTreeMap;

/// What the TAP files of one repetition say.
#[derive(Debug, Default, PartialEq)]
pub struct Outcomes {
    /// Whether each run (`model/driver/test`) passed. A SKIP did not: it ran
    /// nothing; a run reported twice passed only if it passed both times.
    pub passed: BTreeMap<String, bool>,
    /// The test kernels the runs' headers name, in first-seen order.
    pub kernels: Vec<String>,
}

/// The name and result of a TAP result line, `None` for other lines.
pub fn result_line(line: &str) -> Option<(&str, bool)> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix("ok ") {
        (true, rest)
    } else {
        (false, line.strip_prefix("not ok ")?)
    };
    let (number, rest) = rest.split_once(" - ")?;
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (name, directive) = match rest.split_once(" # ") {
        Some((name, directive)) => (name, Some(directive)),
        None => (rest, None),
    };
    let skipped = directive.is_some_and(|d| d.starts_with("SKIP"));
    Some((name.trim(), ok && !skipped))
}

impl Outcomes {
    /// Adds the lines of one TAP file.
    pub fn add(&mut self, tap: &str) {
        for line in tap.lines() {
            if let Some((name, passed)) = result_line(line) {
                let entry = self.passed.entry(name.to_string()).or_insert(true);
                *entry &= passed;
            } else if let Some(kernel) = line.strip_prefix("# kernel: ") {
                let kernel = kernel.trim().to_string();
                if !self.kernels.contains(&kernel) {
                    self.kernels.push(kernel);
                }
            }
        }
    }

    /// Whether the run called `name` passed; a run the TAP does not report
    /// (the runner stopped before it) did not.
    pub fn passed(&self, name: &str) -> bool {
        self.passed.get(name).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines() {
        assert_eq!(
            result_line("ok 1 - patched/c/perftest_rdma"),
            Some(("patched/c/perftest_rdma", true))
        );
        assert_eq!(
            result_line("not ok 12 - patched/rust/verbs_resources # FAIL: round 2: x"),
            Some(("patched/rust/verbs_resources", false))
        );
        assert_eq!(
            result_line(
                "ok 3 - patched/rust/perftest_send # SKIP the Rust driver module is not built yet"
            ),
            Some(("patched/rust/perftest_send", false))
        );
        assert_eq!(
            result_line("not ok 4 - stock/c/rping # TODO known failure"),
            Some(("stock/c/rping", false))
        );
        assert_eq!(result_line("1..6"), None);
        assert_eq!(result_line("# ok 1 - x"), None);
        assert_eq!(result_line("3 passed, 0 failed"), None);
    }

    #[test]
    fn files_of_a_repetition() {
        let mut outcomes = Outcomes::default();
        outcomes.add(
            "1..2\n# kernel: /cache/kernel/linux-6.12-x/linux\n\
             ok 1 - patched/c/perftest_send\nnot ok 2 - patched/c/verbs_resources # lab: hung\n\
             1 passed, 1 failed\n",
        );
        outcomes.add(
            "1..2\n# kernel: /cache/kernel/linux-6.12-x/linux\n\
             ok 1 - patched/rust/perftest_send\nok 2 - patched/rust/verbs_resources\n",
        );
        assert!(outcomes.passed("patched/c/perftest_send"));
        assert!(!outcomes.passed("patched/c/verbs_resources"));
        assert!(outcomes.passed("patched/rust/verbs_resources"));
        assert!(!outcomes.passed("patched/rust/perftest_rdma"));
        assert_eq!(outcomes.kernels, ["/cache/kernel/linux-6.12-x/linux"]);
        outcomes.add("not ok 1 - patched/rust/perftest_send # again\n");
        assert!(!outcomes.passed("patched/rust/perftest_send"));
    }
}
