// SPDX-License-Identifier: GPL-2.0-only
//! The lab's excuses, `known-failures.toml`: embedded in the runner, read and checked once.
//! The file is the catalogue (what is excused, where, and why); [`crate::known`] and
//! [`crate::reference_bugs`] are the matchers that apply it. A file that does not check out
//! stops the runner before it runs anything, with the line and the entry that are wrong:
//! an excuse read some other way than written would excuse what it should not.

use std::sync::OnceLock;

use crate::known::{KnownFailure, NotApplicable, RustDriverUnimplemented};
use crate::model::DeviceModel;
use crate::reference_bugs::{ReferenceBug, ReportForm};
use crate::toml_subset;

mod fields;

use fields::Fields;

/// The data file, as messages name it (an unexpected pass names the entry to delete there).
pub const PATH: &str = "tools/pvrdma-lab/known-failures.toml";

/// The data file, built into the runner: it cannot run without it.
const TEXT: &str = include_str!("../known-failures.toml");

/// Every entry of the data file.
#[derive(Debug)]
pub struct Catalogue {
    /// `[[known_failure]]`.
    pub known_failures: Vec<KnownFailure>,
    /// `[[not_applicable]]`.
    pub not_applicable: Vec<NotApplicable>,
    /// `[[rust_driver_unimplemented]]`.
    pub rust_driver_unimplemented: Vec<RustDriverUnimplemented>,
    /// `[[reference_bug]]`, each with its `[[reference_bug.form]]`s.
    pub reference_bugs: Vec<ReferenceBug>,
}

/// The embedded data file, checked; the error names the file, the line and the entry.
pub fn load() -> Result<&'static Catalogue, String> {
    static CATALOGUE: OnceLock<Result<Catalogue, String>> = OnceLock::new();
    CATALOGUE
        .get_or_init(|| parse(TEXT).map_err(|why| format!("{PATH}: {why}")))
        .as_ref()
        .map_err(Clone::clone)
}

/// The embedded data file. `pvrdma-lab run` checks it ([`load`]) before anything else, and
/// so does a unit test: a run never gets here with a file that does not check out.
pub fn catalogue() -> &'static Catalogue {
    load().unwrap_or_else(|why| panic!("{why}"))
}

/// The entries of `text`, checked.
pub fn parse(text: &str) -> Result<Catalogue, String> {
    let mut catalogue = Catalogue {
        known_failures: Vec::new(),
        not_applicable: Vec::new(),
        rust_driver_unimplemented: Vec::new(),
        reference_bugs: Vec::new(),
    };
    // Every entry's id and line so far (forms not included: their ids are their bug's own).
    let mut ids: Vec<(String, usize)> = Vec::new();
    // The line of the last [[reference_bug]], which its forms follow.
    let mut bug_line = 0;
    for table in toml_subset::parse(text)? {
        let mut fields = Fields::new(&table)?;
        if table.name != "reference_bug.form" {
            if let Some((_, first)) = ids.iter().find(|(id, _)| *id == fields.id) {
                return Err(fields.error(table.line, &format!("the id of line {first} again")));
            }
            ids.push((fields.id.clone(), table.line));
        }
        match table.name.as_str() {
            "known_failure" => {
                let entry = known_failure(&mut fields)?;
                fields.finish()?;
                check_known_failure(&catalogue, &entry, &fields)?;
                catalogue.known_failures.push(entry);
            }
            "not_applicable" => {
                let entry = not_applicable(&mut fields)?;
                fields.finish()?;
                check_not_applicable(&catalogue, &entry, &fields)?;
                catalogue.not_applicable.push(entry);
            }
            "rust_driver_unimplemented" => {
                let entry = RustDriverUnimplemented {
                    id: fields.id.clone(),
                    test: fields.test_name("test")?,
                    missing: fields.prose("missing")?,
                };
                fields.finish()?;
                let earlier = catalogue
                    .rust_driver_unimplemented
                    .iter()
                    .find(|u| u.test == entry.test);
                if let Some(earlier) = earlier {
                    return Err(fields.error(
                        table.line,
                        &format!("{} is listed already, as '{}'", entry.test, earlier.id),
                    ));
                }
                catalogue.rust_driver_unimplemented.push(entry);
            }
            "reference_bug" => {
                let bug = ReferenceBug {
                    id: fields.id.clone(),
                    owner: fields.owner()?,
                    cause: fields.prose("cause")?,
                    forms: Vec::new(),
                };
                fields.finish()?;
                if let Some(last) = catalogue.reference_bugs.last() {
                    if last.forms.is_empty() {
                        return Err(no_forms(last, bug_line));
                    }
                }
                catalogue.reference_bugs.push(bug);
                bug_line = table.line;
            }
            "reference_bug.form" => {
                let Some(bug) = catalogue.reference_bugs.last_mut() else {
                    return Err(fields.error(
                        table.line,
                        "a [[reference_bug.form]] before any [[reference_bug]]",
                    ));
                };
                let form = report_form(&mut fields)?;
                fields.finish()?;
                if bug.forms.iter().any(|f| f.id == form.id) {
                    return Err(fields.error(
                        table.line,
                        &format!("a second form '{}' of '{}'", form.id, bug.id),
                    ));
                }
                bug.forms.push(form);
            }
            other => {
                return Err(format!(
                    "line {}: unknown table [[{other}]] (known: known_failure, not_applicable, \
                     rust_driver_unimplemented, reference_bug, reference_bug.form)",
                    table.line
                ))
            }
        }
    }
    match catalogue.reference_bugs.last() {
        Some(last) if last.forms.is_empty() => Err(no_forms(last, bug_line)),
        _ => Ok(catalogue),
    }
}

fn no_forms(bug: &ReferenceBug, line: usize) -> String {
    format!(
        "line {line}: [[reference_bug]] '{}': no [[reference_bug.form]] follows it: it would \
         match no report",
        bug.id
    )
}

fn known_failure(fields: &mut Fields) -> Result<KnownFailure, String> {
    Ok(KnownFailure {
        id: fields.id.clone(),
        model: fields.model()?,
        driver: fields.driver()?,
        test: fields.test_name("test")?,
        intermittent: fields.boolean("intermittent")?,
        signature: fields.pattern("signature")?,
        cause: fields.prose("cause")?,
    })
}

fn not_applicable(fields: &mut Fields) -> Result<NotApplicable, String> {
    Ok(NotApplicable {
        id: fields.id.clone(),
        model: fields.model()?,
        test: fields.test_name("test")?,
        reason: fields.prose("reason")?,
    })
}

/// A second known failure of the same test on the same model and driver would never be
/// looked at (the first one found excuses), nor would one of a test the model skips.
fn check_known_failure(
    catalogue: &Catalogue,
    entry: &KnownFailure,
    fields: &Fields,
) -> Result<(), String> {
    let overlaps = |k: &&KnownFailure| {
        same_runs(k.model, &k.test, entry.model, &entry.test)
            && (k.driver.is_none() || entry.driver.is_none() || k.driver == entry.driver)
    };
    if let Some(earlier) = catalogue.known_failures.iter().find(overlaps) {
        return Err(fields.error(
            fields.table.line,
            &format!(
                "{} on the {} model has a known failure already, '{}'",
                entry.test,
                entry.model.name(),
                earlier.id
            ),
        ));
    }
    let skipped = catalogue
        .not_applicable
        .iter()
        .find(|n| same_runs(n.model, &n.test, entry.model, &entry.test));
    match skipped {
        Some(other) => Err(not_both(fields, entry.model, &entry.test, &other.id)),
        None => Ok(()),
    }
}

/// A second entry for the same test and model would never be looked at, nor would a known
/// failure of a test the model skips.
fn check_not_applicable(
    catalogue: &Catalogue,
    entry: &NotApplicable,
    fields: &Fields,
) -> Result<(), String> {
    let earlier = catalogue
        .not_applicable
        .iter()
        .find(|n| same_runs(n.model, &n.test, entry.model, &entry.test));
    if let Some(earlier) = earlier {
        return Err(fields.error(
            fields.table.line,
            &format!(
                "{} is not applicable to the {} model already, as '{}'",
                entry.test,
                entry.model.name(),
                earlier.id
            ),
        ));
    }
    let known = catalogue
        .known_failures
        .iter()
        .find(|k| same_runs(k.model, &k.test, entry.model, &entry.test));
    match known {
        Some(other) => Err(not_both(fields, entry.model, &entry.test, &other.id)),
        None => Ok(()),
    }
}

/// Whether two entries speak of some run in common: the same test, on models one of which
/// covers the other (an entry of `patched` covers each version of the patched QEMU).
fn same_runs(model: DeviceModel, test: &str, other_model: DeviceModel, other_test: &str) -> bool {
    test == other_test && (model.covers(other_model) || other_model.covers(model))
}

/// A test is a known failure on a model or not applicable to it, not both.
fn not_both(fields: &Fields, model: DeviceModel, test: &str, other: &str) -> String {
    fields.error(
        fields.table.line,
        &format!(
            "{test} on the {} model is both a known failure and not applicable (with '{other}')",
            model.name()
        ),
    )
}

fn report_form(fields: &mut Fields) -> Result<ReportForm, String> {
    let header = fields.header()?;
    let frames = fields.frames("frames")?;
    let kobject = fields.optional_pattern("kobject")?;
    let leaked_name = match (fields.has("leaked_name"), &kobject) {
        (false, _) => Vec::new(),
        (true, Some(_)) => fields.frames("leaked_name")?,
        (true, None) => {
            return Err(fields.error(
                fields.line_of("leaked_name"),
                "leaked_name without a kobject whose name it would be",
            ))
        }
    };
    Ok(ReportForm {
        id: fields.id.clone(),
        header,
        frames,
        kobject,
        leaked_name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference_bugs::Owner;

    #[test]
    fn the_embedded_file_checks_out() {
        let all = load().unwrap_or_else(|why| panic!("{why}"));
        assert!(!all.known_failures.is_empty());
        assert!(!all.not_applicable.is_empty());
        assert!(!all.reference_bugs.is_empty());
    }

    /// One entry of each kind, as the file has them.
    const VALID: &str = r#"
[[known_failure]]
id = "stock-ucmatose"
model = "stock"
driver = "either"
test = "ucmatose"
intermittent = false
signature = "failure connecting: Invalid argument"
cause = "rd_atom 0"

[[not_applicable]]
id = "stock-rping"
model = "stock"
test = "rping"
reason = "no RDMA READ"

[[rust_driver_unimplemented]]
id = "rust-srq"
test = "verbs_ops"
missing = "SRQs"

[[reference_bug]]
id = "cq-shift"
owner = "c-driver"
cause = "a negative size shifted"

[[reference_bug.form]]
id = "ubsan"
header = ["UBSAN: shift-out-of-bounds", ["a", "b"]]
frames = ["__ubsan_handle_shift_out_of_bounds+", "pvrdma_create_cq+ [vmw_pvrdma]"]
kobject = "queue"
leaked_name = ["kstrdup+"]
"#;

    #[test]
    fn reads_every_kind_of_entry() {
        let all = parse(VALID).unwrap();
        let k = &all.known_failures[0];
        assert_eq!(
            (k.id.as_str(), k.model, k.driver, k.test.as_str()),
            ("stock-ucmatose", DeviceModel::Stock, None, "ucmatose")
        );
        assert_eq!(all.not_applicable[0].reason, "no RDMA READ");
        assert_eq!(all.rust_driver_unimplemented[0].missing, "SRQs");
        let bug = &all.reference_bugs[0];
        assert_eq!((bug.id.as_str(), bug.owner), ("cq-shift", Owner::CDriver));
        let form = &bug.forms[0];
        assert_eq!(
            form.header,
            [vec!["UBSAN: shift-out-of-bounds"], vec!["a", "b"]]
        );
        assert_eq!(form.frames.len(), 2);
        assert_eq!(form.kobject.as_deref(), Some("queue"));
        assert_eq!(form.leaked_name, ["kstrdup+"]);
    }

    /// `VALID` with `from` replaced by `to` (which must be there), or with `to` appended.
    fn broken(from: &str, to: &str) -> String {
        if from.is_empty() {
            return format!("{VALID}{to}");
        }
        assert!(VALID.contains(from), "{from}");
        VALID.replacen(from, to, 1)
    }

    #[test]
    fn a_wrong_entry_is_refused_with_its_line_and_id() {
        for (from, to, error) in [
            (
                "cause = \"rd_atom 0\"",
                "cause = \"rd_atom 0\"\ncuase = \"typo\"",
                "line 10: [[known_failure]] 'stock-ucmatose': unknown key 'cuase'",
            ),
            (
                "id = \"stock-rping\"",
                "id = \"stock-ucmatose\"",
                "line 11: [[not_applicable]] 'stock-ucmatose': the id of line 2 again",
            ),
            (
                "cause = \"rd_atom 0\"",
                "cause = \"\"\"\n  \"\"\"",
                "line 9: [[known_failure]] 'stock-ucmatose': cause is empty: say why",
            ),
            (
                "reason = \"no RDMA READ\"",
                "reason = \" no RDMA READ\"",
                "line 15: [[not_applicable]] 'stock-rping': reason starts or ends with white",
            ),
            (
                "signature = \"failure connecting: Invalid argument\"",
                "signature = \" \"",
                "line 8: [[known_failure]] 'stock-ucmatose': signature is blank",
            ),
            (
                "intermittent = false",
                "intermittent = false\nissue = \"issue 5\"",
                "line 8: [[known_failure]] 'stock-ucmatose': unknown key 'issue'",
            ),
            (
                "model = \"stock\"\ndriver",
                "model = \"qemu\"\ndriver",
                "line 4: [[known_failure]] 'stock-ucmatose': unknown device model 'qemu'",
            ),
            (
                "driver = \"either\"",
                "driver = \"both\"",
                "line 5: [[known_failure]] 'stock-ucmatose': unknown driver 'both'",
            ),
            (
                "owner = \"c-driver\"",
                "owner = \"c\"",
                "line 24: [[reference_bug]] 'cq-shift': unknown owner 'c'",
            ),
            (
                "intermittent = false",
                "intermittent = \"no\"",
                "line 7: [[known_failure]] 'stock-ucmatose': intermittent is a string, not true",
            ),
            (
                "intermittent = false\n",
                "",
                "line 2: [[known_failure]] 'stock-ucmatose': no intermittent",
            ),
            (
                "test = \"rping\"",
                "test = \"rping.sh\"",
                "line 14: [[not_applicable]] 'stock-rping': 'rping.sh' is not a test's name",
            ),
            (
                "id = \"rust-srq\"",
                "id = \"Rust SRQ\"",
                "line 18: [[rust_driver_unimplemented]] 'Rust SRQ': an id is lowercase",
            ),
            (
                "id = \"rust-srq\"\n",
                "",
                "line 17: [[rust_driver_unimplemented]] without an id",
            ),
            (
                "[[not_applicable]]",
                "[[not_aplicable]]",
                "line 11: unknown table [[not_aplicable]]",
            ),
            (
                "frames = [\"__ubsan",
                "frames = [\"__ubsan_handle+0x2c1/0x320\", \"__ubsan",
                "line 30: [[reference_bug.form]] 'ubsan': frames: '__ubsan_handle+0x2c1/0x320' \
                 is not a frame",
            ),
            (
                "\"pvrdma_create_cq+ [vmw_pvrdma]\"",
                "\"pvrdma_create_cq [vmw_pvrdma]\"",
                "line 30: [[reference_bug.form]] 'ubsan': frames: 'pvrdma_create_cq [vmw_pvrdma]'",
            ),
            (
                "frames = [\"__ubsan_handle_shift_out_of_bounds+\", \"pvrdma_create_cq+ [vmw_pvrdma]\"]",
                "frames = []",
                "line 30: [[reference_bug.form]] 'ubsan': frames is empty: it would match any",
            ),
            (
                "header = [\"UBSAN: shift-out-of-bounds\", [\"a\", \"b\"]]",
                "header = [\"UBSAN: shift-out-of-bounds\", [\"a\", \"\"]]",
                "line 29: [[reference_bug.form]] 'ubsan': header must hold texts",
            ),
            (
                "kobject = \"queue\"\n",
                "",
                "line 31: [[reference_bug.form]] 'ubsan': leaked_name without a kobject",
            ),
            (
                "",
                "\n[[reference_bug.form]]\nid = \"ubsan\"\nheader = [\"x\"]\nframes = [\"f+\"]\n",
                "line 34: [[reference_bug.form]] 'ubsan': a second form 'ubsan' of 'cq-shift'",
            ),
            (
                "",
                "\n[[reference_bug]]\nid = \"no-form\"\nowner = \"kernel\"\ncause = \"x\"\n",
                "line 34: [[reference_bug]] 'no-form': no [[reference_bug.form]] follows it",
            ),
            (
                "[[reference_bug]]\nid = \"cq-shift\"\nowner = \"c-driver\"\ncause = \"a negative size shifted\"\n",
                "",
                "line 23: [[reference_bug.form]] 'ubsan': a [[reference_bug.form]] before any",
            ),
            (
                "",
                "\n[[known_failure]]\nid = \"again\"\nmodel = \"stock\"\ndriver = \"rust\"\n\
                 test = \"ucmatose\"\nintermittent = true\n\
                 signature = \"x\"\ncause = \"x\"\n",
                "line 34: [[known_failure]] 'again': ucmatose on the stock model has a known \
                 failure already, 'stock-ucmatose'",
            ),
            (
                "",
                "\n[[not_applicable]]\nid = \"v18\"\nmodel = \"patched-v18\"\ntest = \"rping\"\n\
                 reason = \"x\"\n\n[[not_applicable]]\nid = \"all\"\n\
                 model = \"patched\"\ntest = \"rping\"\nreason = \"x\"\n",
                "line 40: [[not_applicable]] 'all': rping is not applicable to the patched model \
                 already, as 'v18'",
            ),
            (
                "test = \"rping\"",
                "test = \"ucmatose\"",
                "line 11: [[not_applicable]] 'stock-rping': ucmatose on the stock model is both a \
                 known failure and not applicable (with 'stock-ucmatose')",
            ),
        ] {
            let text = broken(from, to);
            match parse(&text) {
                Ok(_) => panic!("accepted: {to}"),
                Err(why) => assert!(why.starts_with(error), "{to}:\n{why}\nnot:\n{error}"),
            }
        }
    }

    /// A known failure per driver of one test is two entries, not one given twice.
    #[test]
    fn a_test_may_fail_differently_with_each_driver() {
        let per_driver = broken("driver = \"either\"", "driver = \"c\"")
            + "\n[[known_failure]]\nid = \"rust\"\nmodel = \"stock\"\ndriver = \"rust\"\n\
               test = \"ucmatose\"\nintermittent = true\n\
               signature = \"x\"\ncause = \"x\"\n";
        let all = parse(&per_driver).unwrap_or_else(|why| panic!("{why}"));
        assert_eq!(all.known_failures.len(), 2);
    }

    #[test]
    fn a_file_that_does_not_parse_is_refused_with_its_line() {
        let text = broken("cause = \"rd_atom 0\"", "cause = \"rd_atom 0");
        assert_eq!(
            parse(&text).unwrap_err(),
            "line 9: a string not closed on its line"
        );
    }
}
