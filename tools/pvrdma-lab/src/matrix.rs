//! The results of a run as a markdown table (`<results>/matrix.md`): one row
//! per test, one column per device model and driver, and the cause of every
//! result other than a pass as a numbered note under the table (the same
//! cause, in several cells, is one note). README's table of tools, drivers
//! and device models is copied from it.

use crate::tap::TapResult;

/// The results, in the order they came.
#[derive(Default)]
pub struct Matrix {
    /// Column names (`model/driver`), in first-seen order.
    columns: Vec<String>,
    /// Test names, in first-seen order, with their cells by column index.
    rows: Vec<(String, Vec<Option<String>>)>,
    /// The notes' texts; a cell's `[n]` is `notes[n - 1]`.
    notes: Vec<String>,
}

impl Matrix {
    /// Records the result of the test called `model/driver/test`; names of
    /// another form are ignored.
    pub fn record(&mut self, name: &str, result: &TapResult) {
        let mut parts = name.splitn(3, '/');
        let (Some(model), Some(driver), Some(test)) = (parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        let column = format!("{model}/{driver}");
        let col = match self.columns.iter().position(|c| *c == column) {
            Some(i) => i,
            None => {
                self.columns.push(column);
                self.columns.len() - 1
            }
        };
        let cell = self.cell(result);
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
        cells[col] = Some(cell);
    }

    fn note(&mut self, text: &str) -> usize {
        match self.notes.iter().position(|n| n == text) {
            Some(i) => i + 1,
            None => {
                self.notes.push(text.to_string());
                self.notes.len()
            }
        }
    }

    fn cell(&mut self, result: &TapResult) -> String {
        match result {
            TapResult::Pass => "pass".to_string(),
            TapResult::Fail(cause) => format!("**FAIL** [{}]", self.note(cause)),
            TapResult::Skip(why) => format!("n/a [{}]", self.note(why)),
            TapResult::Todo {
                cause,
                passed: false,
            } => format!("known failure [{}]", self.note(cause)),
            TapResult::Todo {
                cause,
                passed: true,
            } => {
                format!("pass, unexpectedly [{}]", self.note(cause))
            }
        }
    }

    /// The table and its notes, as markdown.
    pub fn render(&self) -> String {
        let mut out = String::from("| test |");
        for column in &self.columns {
            let (model, driver) = column.split_once('/').unwrap_or((column, ""));
            let driver = match driver {
                "c" => "C",
                "rust" => "Rust",
                other => other,
            };
            out.push_str(&format!(" {model} · {driver} |"));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(self.columns.len()));
        out.push('\n');
        for (test, cells) in &self.rows {
            out.push_str(&format!("| `{test}` |"));
            for col in 0..self.columns.len() {
                let cell = cells
                    .get(col)
                    .and_then(|c| c.as_deref())
                    .unwrap_or("not run");
                out.push_str(&format!(" {cell} |"));
            }
            out.push('\n');
        }
        if !self.notes.is_empty() {
            out.push('\n');
            for (i, note) in self.notes.iter().enumerate() {
                // A note is one line: a cause may hold newlines or table pipes.
                let note = note.replace(['\n', '\r'], " ").replace('|', "\\|");
                out.push_str(&format!("{}. {note}\n", i + 1));
            }
        }
        out
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
        m.record(
            "stock/c/ucmatose",
            &TapResult::Todo {
                cause: "rd_atom 0".into(),
                passed: false,
            },
        );
        m.record("patched/c/ucmatose", &TapResult::Fail("boom".into()));
        m.record("bad-name", &TapResult::Pass);
        assert_eq!(
            m.render(),
            "| test | patched · C | patched · Rust | stock · C | stock · Rust |\n\
             |---|---|---|---|---|\n\
             | `rping` | pass | pass | n/a [1] | n/a [1] |\n\
             | `ucmatose` | **FAIL** [3] | not run | known failure [2] | not run |\n\
             \n\
             1. no READ \\| WRITE\n\
             2. rd_atom 0\n\
             3. boom\n"
        );
    }
}
