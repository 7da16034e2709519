//! TAP output (one line per driver/test, a plan, `# ...` diagnostics) and the
//! closing `N passed, N failed[, N skipped][, N todo]` line. Everything printed
//! is also written to `<results>/summary.tap`, and the results as a table to
//! `<results>/matrix.md` (see [`crate::matrix`]).

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
    /// A known failure: `not ok N - name # TODO cause` when it failed,
    /// `ok N - name # TODO cause` when it passed anyway.
    Todo {
        /// The known cause and its issue.
        cause: String,
        /// Whether the test passed despite the known failure.
        passed: bool,
    },
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
            TapResult::Todo { cause, passed } => {
                self.todo += 1;
                let status = if *passed { "ok" } else { "not ok" };
                format!("{status} {n} - {name} # TODO {}", clean(cause))
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
            r.result(
                "c/d",
                &TapResult::Todo {
                    cause: "device".into(),
                    passed: false
                }
            ),
            "not ok 4 - c/d # TODO device"
        );
        assert_eq!(
            r.summary_line(),
            "1 passed, 1 failed, 1 skipped, 1 todo (known failures)"
        );
        assert_eq!(r.failed(), 1);
    }

    #[test]
    fn plain_summary() {
        let mut r = Reporter::new(None);
        r.result("c/a", &TapResult::Pass);
        assert_eq!(r.summary_line(), "1 passed, 0 failed");
    }
}
