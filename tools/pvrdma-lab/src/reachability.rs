// SPDX-License-Identifier: GPL-2.0-only
//! Every entry of `known-failures.toml` still matches the evidence it was written for, and
//! a near miss of that evidence does not (tests/fixtures/known-failures; its README says how
//! the evidence is laid out). An entry without evidence fails here: an excuse cannot be added
//! without showing what it excuses, nor outlive the matcher's reading of it.

use std::fs;
use std::path::{Path, PathBuf};

use crate::cli::Driver;
use crate::kernel_log::{self, Log, Problem, KMEMLEAK_REPORT};
use crate::known;
use crate::known_failures::catalogue;
use crate::model::DeviceModel;
use crate::reference_bugs::{self, Owner};
use crate::tap::TapResult;
use crate::verdict::Verdict;

/// Where the evidence is.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/known-failures")
}

/// One sample: a failure's message or a kernel log, and kmemleak's report (empty: none).
#[derive(Clone)]
struct Sample {
    name: String,
    text: String,
    kmemleak: String,
}

/// An entry's evidence: the samples it matches, and the near misses it does not.
struct Evidence {
    matches: Vec<Sample>,
    near_misses: Vec<Sample>,
}

/// The evidence in `dir`, whose samples are `match*.EXTENSION` (`txt`: one failure message;
/// `dmesg`: a kernel log, with kmemleak's report beside it if any).
fn evidence(dir: &Path, extension: &str) -> Evidence {
    let what = dir
        .strip_prefix(root())
        .unwrap_or(dir)
        .display()
        .to_string();
    let listing = fs::read_dir(dir).unwrap_or_else(|e| {
        panic!("{what}: {e}: the entry has no evidence (tests/fixtures/known-failures/README.md)")
    });
    let mut names: Vec<String> = listing
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let read = |name: &str| {
        fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{what}/{name}: {e}"))
    };
    let mut matches = Vec::new();
    let mut near_miss_files = Vec::new();
    for name in &names {
        let sample = name
            .strip_suffix(&format!(".{extension}"))
            .filter(|stem| *stem == "match" || stem.starts_with("match-"));
        let kmemleak_of = name
            .strip_suffix(".kmemleak")
            .filter(|stem| extension == "dmesg" && names.contains(&format!("{stem}.dmesg")));
        if let Some(stem) = sample {
            let kmemleak_name = format!("{stem}.kmemleak");
            let kmemleak = if names.contains(&kmemleak_name) {
                read(&kmemleak_name)
            } else {
                String::new()
            };
            let mut text = read(name);
            if extension == "txt" {
                text = text.strip_suffix('\n').unwrap_or(&text).to_string();
                assert!(!text.contains('\n'), "{what}/{name}: more than one line");
            }
            matches.push(Sample {
                name: stem.to_string(),
                text,
                kmemleak,
            });
        } else if name.starts_with("near-miss-") && name.ends_with(".replace") {
            near_miss_files.push(name);
        } else if kmemleak_of.is_none() {
            panic!("{what}/{name}: neither a sample of this entry nor a near miss");
        }
    }
    assert!(
        matches.iter().any(|m| m.name == "match"),
        "{what}: no match.{extension}: the entry has no evidence"
    );
    let near_misses: Vec<Sample> = near_miss_files
        .into_iter()
        .map(|name| near_miss(&format!("{what}/{name}"), name, &read(name), &matches))
        .collect();
    assert!(!near_misses.is_empty(), "{what}: no near-miss-*.replace");
    Evidence {
        matches,
        near_misses,
    }
}

/// The near miss `name` that `spec` (its file, at `what`) makes of one of `matches`.
fn near_miss(what: &str, name: &str, spec: &str, matches: &[Sample]) -> Sample {
    let unescape = |text: &str| text.replace("\\n", "\n");
    let mut of = "match".to_string();
    // (in kmemleak's report, text, replacement)
    let mut replacements: Vec<(bool, String, String)> = Vec::new();
    let mut pending: Option<(bool, String)> = None;
    for line in spec.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let replace = match (
            line.strip_prefix("replace: "),
            line.strip_prefix("replace in kmemleak: "),
        ) {
            (Some(text), _) => Some((false, unescape(text))),
            (_, Some(text)) => Some((true, unescape(text))),
            _ => None,
        };
        if let Some(replace) = replace {
            assert!(pending.is_none(), "{what}: 'replace' without its 'with'");
            pending = Some(replace);
        } else if let Some(text) = line.strip_prefix("with: ") {
            let (in_kmemleak, from) = pending
                .take()
                .unwrap_or_else(|| panic!("{what}: 'with' without a 'replace'"));
            replacements.push((in_kmemleak, from, unescape(text)));
        } else if let Some(sample) = line.strip_prefix("of: ") {
            of = sample.to_string();
        } else {
            panic!("{what}: not a line of a near miss: '{line}'");
        }
    }
    assert!(pending.is_none(), "{what}: 'replace' without its 'with'");
    assert!(!replacements.is_empty(), "{what}: replaces nothing");
    let base = matches
        .iter()
        .find(|m| m.name == of)
        .unwrap_or_else(|| panic!("{what}: no sample '{of}'"));
    let mut sample = Sample {
        name: name.to_string(),
        ..base.clone()
    };
    for (in_kmemleak, from, to) in replacements {
        let target = if in_kmemleak {
            &mut sample.kmemleak
        } else {
            &mut sample.text
        };
        assert!(
            !from.is_empty() && target.contains(&from),
            "{what}: '{from}' is not in {of}"
        );
        *target = target.replace(&from, &to);
    }
    sample
}

fn failed(sample: &Sample) -> Verdict {
    Verdict::Fail {
        cause: sample.text.clone(),
        kernel_problem: false,
    }
}

/// The drivers an entry for `driver` (None: either) concerns.
fn drivers(driver: Option<Driver>) -> Vec<Driver> {
    [Driver::C, Driver::Rust]
        .into_iter()
        .filter(|d| driver.is_none_or(|only| only == *d))
        .collect()
}

/// Whether every failure of `test` in `evidence` is excused on `model` with each of
/// `drivers` (TAP `# TODO`) and every near miss is not (a failure); `what` names the entry.
fn check_failures(
    what: &str,
    model: DeviceModel,
    drivers: &[Driver],
    test: &str,
    evidence: &Evidence,
) {
    for &driver in drivers {
        for sample in &evidence.matches {
            let result = known::tap_result(model, driver, test, failed(sample));
            assert!(
                matches!(result, TapResult::Todo(_)),
                "{what}: does not excuse {} with the {} driver: {result:?}",
                sample.name,
                driver.name()
            );
        }
        for near in &evidence.near_misses {
            let result = known::tap_result(model, driver, test, failed(near));
            assert!(
                matches!(result, TapResult::Fail(_)),
                "{what}: excuses its near miss {} with the {} driver: {result:?}",
                near.name,
                driver.name()
            );
        }
    }
}

#[test]
fn every_known_failure_excuses_its_evidence_and_no_near_miss() {
    for k in &catalogue().known_failures {
        let evidence = evidence(&root().join(&k.id), "txt");
        for driver in drivers(k.driver) {
            let found = known::lookup(k.model, driver, &k.test);
            assert!(found.is_some_and(|f| core::ptr::eq(f, k)), "{}", k.id);
        }
        check_failures(&k.id, k.model, &drivers(k.driver), &k.test, &evidence);
    }
}

#[test]
fn every_test_run_where_it_is_not_applicable_is_excused_only_for_its_own_failures() {
    let all = catalogue();
    for n in &all.not_applicable {
        let evidence = evidence(&root().join(&n.id), "txt");
        let found = known::not_applicable(n.model, &n.test);
        assert!(found.is_some_and(|f| core::ptr::eq(f, n)), "{}", n.id);
        check_failures(&n.id, n.model, &drivers(None), &n.test, &evidence);
    }
    for u in &all.rust_driver_unimplemented {
        let evidence = evidence(&root().join(&u.id), "txt");
        for model in crate::model::ALL {
            check_failures(&u.id, model, &[Driver::Rust], &u.test, &evidence);
        }
    }
}

/// The kernel problems of a sample, as the verdict sees them: its log's, and kmemleak's.
fn problems(sample: &Sample) -> Vec<Problem> {
    let mut problems = kernel_log::scan(Log::Dmesg, &sample.text);
    let leaked = kernel_log::kmemleak_objects(&sample.kmemleak);
    if leaked > 0 {
        problems.push(Problem {
            kind: KMEMLEAK_REPORT,
            places: Vec::new(),
            message: format!("kmemleak: {leaked} unreferenced object(s) (see kmemleak.txt)"),
        });
    }
    problems
}

/// The bugs that excuse every problem of `sample` for `driver`.
fn excused_by(driver: Driver, sample: &Sample) -> Vec<&'static reference_bugs::ReferenceBug> {
    reference_bugs::excuse(
        driver,
        &problems(sample),
        &[(Log::Dmesg, &sample.text)],
        &sample.kmemleak,
    )
}

#[test]
fn every_report_form_matches_its_evidence_and_no_near_miss() {
    for bug in &catalogue().reference_bugs {
        for form in &bug.forms {
            let what = format!("{}/{}", bug.id, form.id);
            let evidence = evidence(&root().join(&bug.id).join(&form.id), "dmesg");
            for sample in &evidence.matches {
                let found = reference_bugs::forms_found(Driver::C, &[(Log::Dmesg, &sample.text)]);
                assert!(
                    found.iter().any(|(_, f)| core::ptr::eq(*f, form)),
                    "{what}: the form matches no report of {}",
                    sample.name
                );
                assert!(!problems(sample).is_empty(), "{what}: {}", sample.name);
                let by_c = excused_by(Driver::C, sample);
                assert!(
                    by_c.len() == 1 && core::ptr::eq(by_c[0], bug),
                    "{what}: {} is not excused as this bug alone",
                    sample.name
                );
                let by_rust = excused_by(Driver::Rust, sample);
                match bug.owner {
                    Owner::Kernel => assert_eq!(by_rust.len(), 1, "{what}: {}", sample.name),
                    Owner::CDriver => assert!(by_rust.is_empty(), "{what}: {}", sample.name),
                }
            }
            for near in &evidence.near_misses {
                assert!(
                    excused_by(Driver::C, near).is_empty(),
                    "{what}: its near miss {} is excused",
                    near.name
                );
            }
        }
    }
}

/// Whether `dir` holds only directories, and their names.
fn subdirectories(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if entry.file_type().unwrap().is_dir() {
            names.push(name);
        } else if dir != root() || name != "README.md" {
            panic!("{}/{name}: evidence of no entry", dir.display());
        }
    }
    names
}

#[test]
fn every_entry_has_evidence_and_all_evidence_is_an_entrys() {
    let all = catalogue();
    let failure_ids: Vec<&String> = all
        .known_failures
        .iter()
        .map(|k| &k.id)
        .chain(all.not_applicable.iter().map(|n| &n.id))
        .chain(all.rust_driver_unimplemented.iter().map(|u| &u.id))
        .collect();
    for id in &failure_ids {
        evidence(&root().join(id), "txt");
    }
    for bug in &all.reference_bugs {
        for form in &bug.forms {
            evidence(&root().join(&bug.id).join(&form.id), "dmesg");
        }
    }
    for name in subdirectories(&root()) {
        if failure_ids.contains(&&name) {
            continue;
        }
        let Some(bug) = all.reference_bugs.iter().find(|b| b.id == name) else {
            panic!("{name}: evidence of no entry of known-failures.toml");
        };
        for form in subdirectories(&root().join(&name)) {
            assert!(
                bug.forms.iter().any(|f| f.id == form),
                "{name}/{form}: evidence of no form of {name}"
            );
        }
    }
}
