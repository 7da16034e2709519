// SPDX-License-Identifier: GPL-2.0-only
//! TAP output (one line per driver/test, a plan, `# ...` diagnostics) and the
//! closing `N passed, N failed[, N skipped][, N todo]` line. Everything printed
//! is also written to `<results>/summary.tap`, and the results as a table to
//! `<results>/matrix.md` (see [`crate::matrix`]). An excused test that passes
//! is a failure (see [`TapResult::UnexpectedPass`]): an excuse is kept only
//! while what it excuses still happens.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::matrix::Matrix;

/// How one test ended, as TAP reports it.
#[derive(Clone, Debug, PartialEq)]
pub enum TapResult {
    /// `ok N - name`.
    Pass,
    /// `not ok N - name # cause`.
    Fail(String),
    /// `ok N - name # SKIP why`.
    Skip(String),
    /// A known failure that happened: `not ok N - name # TODO cause` (the
    /// known cause), not counted as a failure.
    Todo(String),
    /// A test excused as failing (a known failure not marked intermittent, a
    /// test not applicable to its model, a verb the Rust driver lacks) that
    /// passed: its excuse is stale, and an excuse left in place would excuse
    /// the next real failure of the test. `not ok N - name # unexpected pass:
    /// what`, `what` naming the excuse to delete; counted as a failure.
    UnexpectedPass(String),
}

impl TapResult {
    /// Whether it fails the run (counted in `N failed`, stops a run without
    /// `--keep-going`).
    pub fn fails(&self) -> bool {
        matches!(self, TapResult::Fail(_) | TapResult::UnexpectedPass(_))
    }
}

/// Prints TAP and counts results.
pub struct Reporter {
    number: usize,
    passed: usize,
    failed: usize,
    skipped: usize,
    todo: usize,
    copy: Option<File>,
    matrix: Matrix,
    /// Where the table goes: beside the copy.
    matrix_path: Option<PathBuf>,
}

/// One line of TAP: a directive's text cannot hold a newline or a `#` that
/// would start another directive.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            '#' => '♯',
            c => c,
        })
        .collect()
}

impl Reporter {
    /// A reporter that also writes to `copy` (the results' summary.tap), and
    /// the table to `matrix.md` beside it.
    pub fn new(copy: Option<&Path>) -> Reporter {
        Reporter {
            number: 0,
            passed: 0,
            failed: 0,
            skipped: 0,
            todo: 0,
            copy: copy.and_then(|p| File::create(p).ok()),
            matrix: Matrix::default(),
            matrix_path: copy.map(|p| p.with_file_name("matrix.md")),
        }
    }

    fn line(&mut self, line: &str) {
        let mut stdout = io::stdout().lock();
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
        if let Some(copy) = &mut self.copy {
            let _ = writeln!(copy, "{line}");
        }
    }

    /// The plan: `1..count`.
    pub fn plan(&mut self, count: usize) {
        self.line(&format!("1..{count}"));
    }

    /// A diagnostic line, `# text`.
    pub fn comment(&mut self, text: &str) {
        for line in text.lines() {
            self.line(&format!("# {line}"));
        }
    }

    /// `Bail out! reason`.
    pub fn bail_out(&mut self, reason: &str) {
        self.line(&format!("Bail out! {}", clean(reason)));
    }

    /// Gives `name`'s result its place in the table before it comes (the plan's
    /// order; results come as guests end).
    pub fn declare(&mut self, name: &str) {
        self.matrix.declare(name);
    }

    /// Reports one test; returns the line printed.
    pub fn result(&mut self, name: &str, result: &TapResult) -> String {
        self.number += 1;
        let n = self.number;
        let line = match result {
            TapResult::Pass => {
                self.passed += 1;
                format!("ok {n} - {name}")
            }
            TapResult::Fail(cause) => {
                self.failed += 1;
                format!("not ok {n} - {name} # {}", clean(cause))
            }
            TapResult::Skip(why) => {
                self.skipped += 1;
                format!("ok {n} - {name} # SKIP {}", clean(why))
            }
            TapResult::Todo(cause) => {
                self.todo += 1;
                format!("not ok {n} - {name} # TODO {}", clean(cause))
            }
            TapResult::UnexpectedPass(stale) => {
                self.failed += 1;
                format!("not ok {n} - {name} # unexpected pass: {}", clean(stale))
            }
        };
        self.line(&line);
        self.matrix.record(name, result);
        line
    }

    /// The number of failures so far.
    pub fn failed(&self) -> usize {
        self.failed
    }

    /// The closing line: `N passed, N failed[, N skipped][, N todo]`.
    pub fn summary_line(&self) -> String {
        let mut line = format!("{} passed, {} failed", self.passed, self.failed);
        if self.skipped > 0 {
            line.push_str(&format!(", {} skipped", self.skipped));
        }
        if self.todo > 0 {
            line.push_str(&format!(", {} todo (known failures)", self.todo));
        }
        line
    }

    /// Prints the closing line and writes the table.
    pub fn finish(&mut self) {
        let line = self.summary_line();
        self.line(&line);
        if let Some(path) = &self.matrix_path {
            if let Err(e) = std::fs::write(path, self.matrix.render()) {
                eprintln!("pvrdma-lab: cannot write {}: {e}", path.display());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_summary() {
        let mut r = Reporter::new(None);
        assert_eq!(r.result("c/a", &TapResult::Pass), "ok 1 - c/a");
        assert_eq!(
            r.result("c/b", &TapResult::Fail("x # y\nz".into())),
            "not ok 2 - c/b # x ♯ y z"
        );
        assert_eq!(
            r.result("rust/a", &TapResult::Skip("not built".into())),
            "ok 3 - rust/a # SKIP not built"
        );
        assert_eq!(
            r.result("c/d", &TapResult::Todo("device".into())),
            "not ok 4 - c/d # TODO device"
        );
        assert_eq!(
            r.summary_line(),
            "1 passed, 1 failed, 1 skipped, 1 todo (known failures)"
        );
        assert_eq!(r.failed(), 1);
    }

    /// A known failure of the stock model that did not occur fails the run, and
    /// its line says which excuse to delete; an intermittent one that did not
    /// occur is a plain pass.
    #[test]
    fn an_unexpected_pass_fails_the_run() {
        use crate::cli::Driver;
        use crate::known;
        use crate::model::DeviceModel::Stock;
        use crate::verdict::Verdict;
        let mut r = Reporter::new(None);
        let stale = known::tap_result(Stock, Driver::C, "ucmatose", Verdict::Pass);
        let line = r.result("stock/c/ucmatose", &stale);
        assert!(line.starts_with("not ok 1 - stock/c/ucmatose # "), "{line}");
        assert!(!line.contains("# TODO"), "{line}");
        assert!(
            line.contains("delete its entry 'stock-ucmatose-rd-atom' from"),
            "{line}"
        );
        let intermittent = known::tap_result(Stock, Driver::Rust, "unbind_in_use", Verdict::Pass);
        assert_eq!(
            r.result("stock/rust/unbind_in_use", &intermittent),
            "ok 2 - stock/rust/unbind_in_use"
        );
        assert_eq!(r.summary_line(), "1 passed, 1 failed");
        assert_eq!(r.failed(), 1);
    }

    #[test]
    fn plain_summary() {
        let mut r = Reporter::new(None);
        r.result("c/a", &TapResult::Pass);
        assert_eq!(r.summary_line(), "1 passed, 0 failed");
    }
}
