// SPDX-License-Identifier: GPL-2.0-only
//! The results of a run as a markdown table (`<results>/matrix.md`): one row
//! per test, one column per device model and driver, and the cause of every
//! result other than a pass as a numbered note under the table (the same
//! cause, in several cells, is one note). An unexpected pass is shown as the
//! failure it is, its note naming the stale excuse to delete. README's table
//! of tools, drivers and device models is copied from it.

use crate::model::DeviceModel;
use crate::tap::TapResult;

/// The results of a run. Rows and columns come in the plan's order (see
/// [`Matrix::declare`]), whatever order the guests ended in; a name never
/// declared takes its place when its result comes.
#[derive(Default)]
pub struct Matrix {
    /// Column names (`model/driver`).
    columns: Vec<String>,
    /// Test names with their results by column index.
    rows: Vec<(String, Vec<Option<TapResult>>)>,
}

impl Matrix {
    /// Gives the test called `model/driver/test` its row and column before any
    /// result comes; names of another form are ignored.
    pub fn declare(&mut self, name: &str) {
        self.place(name);
    }

    /// Records the result of the test called `model/driver/test`; names of
    /// another form are ignored.
    pub fn record(&mut self, name: &str, result: &TapResult) {
        if let Some((row, col)) = self.place(name) {
            self.rows[row].1[col] = Some(result.clone());
        }
    }

    /// The row and column of `name`, made if new.
    fn place(&mut self, name: &str) -> Option<(usize, usize)> {
        let mut parts = name.splitn(3, '/');
        let (Some(model), Some(driver), Some(test)) = (parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let column = format!("{model}/{driver}");
        let col = match self.columns.iter().position(|c| *c == column) {
            Some(i) => i,
            None => {
                self.columns.push(column);
                self.columns.len() - 1
            }
        };
        let row = match self.rows.iter().position(|(t, _)| t == test) {
            Some(i) => i,
            None => {
                self.rows.push((test.to_string(), Vec::new()));
                self.rows.len() - 1
            }
        };
        let cells = &mut self.rows[row].1;
        if cells.len() <= col {
            cells.resize(col + 1, None);
        }
        Some((row, col))
    }

    /// The table and its notes (numbered as they first appear in it), as markdown.
    pub fn render(&self) -> String {
        let mut notes = Notes::default();
        let mut out = String::from("| test |");
        for column in &self.columns {
            let (model, driver) = column.split_once('/').unwrap_or((column, ""));
            let driver = match driver {
                "c" => "C",
                "rust" => "Rust",
                other => other,
            };
            // The column says which device version it ran (model.rs).
            let model = match DeviceModel::parse(model) {
                Ok(m) => format!("{} v{}", m.family().name(), m.device_version()),
                Err(_) => model.to_string(),
            };
            out.push_str(&format!(" {model} · {driver} |"));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(self.columns.len()));
        out.push('\n');
        for (test, cells) in &self.rows {
            out.push_str(&format!("| `{test}` |"));
            for col in 0..self.columns.len() {
                let cell = match cells.get(col) {
                    Some(Some(result)) => notes.cell(result),
                    _ => "not run".to_string(),
                };
                out.push_str(&format!(" {cell} |"));
            }
            out.push('\n');
        }
        if !notes.0.is_empty() {
            out.push('\n');
            for (i, note) in notes.0.iter().enumerate() {
                // A note is one line: a cause may hold newlines or table pipes.
                let note = note.replace(['\n', '\r'], " ").replace('|', "\\|");
                out.push_str(&format!("{}. {note}\n", i + 1));
            }
        }
        out
    }
}

/// The numbered notes under the table: the same text is one note.
#[derive(Default)]
struct Notes(Vec<String>);

impl Notes {
    fn number(&mut self, text: &str) -> usize {
        match self.0.iter().position(|n| n == text) {
            Some(i) => i + 1,
            None => {
                self.0.push(text.to_string());
                self.0.len()
            }
        }
    }

    fn cell(&mut self, result: &TapResult) -> String {
        match result {
            TapResult::Pass => "pass".to_string(),
            TapResult::Fail(cause) => format!("**FAIL** [{}]", self.number(cause)),
            TapResult::Skip(why) => format!("n/a [{}]", self.number(why)),
            TapResult::Todo(cause) => format!("known failure [{}]", self.number(cause)),
            TapResult::UnexpectedPass(stale) => {
                format!("**FAIL**: unexpected pass [{}]", self.number(stale))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_with_shared_notes() {
        let mut m = Matrix::default();
        m.record("patched/c/rping", &TapResult::Pass);
        m.record("patched/rust/rping", &TapResult::Pass);
        m.record("stock/c/rping", &TapResult::Skip("no READ | WRITE".into()));
        m.record(
            "stock/rust/rping",
            &TapResult::Skip("no READ | WRITE".into()),
        );
        m.record("stock/c/ucmatose", &TapResult::Todo("rd_atom 0".into()));
        m.record("patched/c/ucmatose", &TapResult::Fail("boom".into()));
        m.record("bad-name", &TapResult::Pass);
        assert_eq!(
            m.render(),
            "| test | patched v20 · C | patched v20 · Rust | stock v17 · C | stock v17 · Rust |\n\
             |---|---|---|---|---|\n\
             | `rping` | pass | pass | n/a [1] | n/a [1] |\n\
             | `ucmatose` | **FAIL** [2] | not run | known failure [3] | not run |\n\
             \n\
             1. no READ \\| WRITE\n\
             2. boom\n\
             3. rd_atom 0\n"
        );
    }

    /// A known failure that did not occur is a failure in the table, its note
    /// naming the entry to delete; an intermittent one that did not occur is a
    /// pass.
    #[test]
    fn an_unexpected_pass_is_a_failure_naming_the_stale_excuse() {
        use crate::cli::Driver;
        use crate::known;
        use crate::model::DeviceModel::Stock;
        use crate::verdict::Verdict;
        let mut m = Matrix::default();
        m.record(
            "stock/c/ucmatose",
            &known::tap_result(Stock, Driver::C, "ucmatose", Verdict::Pass),
        );
        m.record(
            "stock/c/unbind_in_use",
            &known::tap_result(Stock, Driver::C, "unbind_in_use", Verdict::Pass),
        );
        let table = m.render();
        let mut lines = table.lines();
        assert_eq!(lines.next(), Some("| test | stock v17 · C |"));
        assert_eq!(lines.next(), Some("|---|---|"));
        assert_eq!(
            lines.next(),
            Some("| `ucmatose` | **FAIL**: unexpected pass [1] |")
        );
        assert_eq!(lines.next(), Some("| `unbind_in_use` | pass |"));
        assert_eq!(lines.next(), Some(""));
        let note = lines.next().unwrap_or_default();
        assert!(
            note.starts_with("1. the known failure of ucmatose"),
            "{note}"
        );
        assert!(
            note.contains(
                "delete its entry 'stock-ucmatose-rd-atom' from \
                 tools/pvrdma-lab/known-failures.toml"
            ),
            "{note}"
        );
        assert_eq!(lines.next(), None);
    }

    #[test]
    fn plan_order_whatever_the_order_of_results() {
        let mut m = Matrix::default();
        for name in ["patched/c/a", "patched/c/b", "stock/c/a", "stock/c/b"] {
            m.declare(name);
        }
        m.record("stock/c/b", &TapResult::Skip("why".into()));
        m.record("patched/c/b", &TapResult::Pass);
        m.record("stock/c/a", &TapResult::Fail("late".into()));
        assert_eq!(
            m.render(),
            "| test | patched v20 · C | stock v17 · C |\n\
             |---|---|---|\n\
             | `a` | not run | **FAIL** [1] |\n\
             | `b` | pass | n/a [2] |\n\
             \n\
             1. late\n\
             2. why\n"
        );
    }
}
