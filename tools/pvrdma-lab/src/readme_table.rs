// SPDX-License-Identifier: GPL-2.0-only
//! The README's results table is true of HEAD. The table comes from one `make check` run, and
//! its section says which commit that run tested ("on commit 1234abc"). Once the driver, the
//! abstractions, the tests or the QEMU patches change after that commit, the table describes
//! code that is no longer there. This test then fails, listing what changed, until the table
//! is made again from a run of HEAD (every run writes it to `results/matrix.md`).
//!
//! It needs git and that commit. A copy that is not a git checkout, or a shallow clone without
//! the commit, fails with a message that says so rather than passing unchecked.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The heading of the README's results section.
const SECTION: &str = "## What works, by test, driver and device model";

/// What the table's results depend on: a change under one of these makes it stale.
const PATHS: &[&str] = &["drivers/", "rust/", "tests/", "tools/qemu/"];

/// The checkout this crate belongs to.
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The commit the results section names ("on commit <hex>"), as written there.
fn table_commit(readme: &str) -> Result<String, String> {
    let start = readme
        .find(SECTION)
        .ok_or_else(|| format!("README.md has no section '{SECTION}'"))?;
    let section = &readme[start + SECTION.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let after = section.split("on commit ").nth(1).ok_or_else(|| {
        format!("README.md's section '{SECTION}' does not say which commit its table is from")
    })?;
    let commit: String = after
        .chars()
        .take_while(|c| c.is_ascii_hexdigit())
        .collect();
    if !(7..=40).contains(&commit.len()) {
        return Err(format!(
            "README.md's section '{SECTION}' names no commit after 'on commit ' (found '{}')",
            after.chars().take(20).collect::<String>()
        ));
    }
    Ok(commit)
}

/// `git -C repo args`: its output, or why it could not say.
fn git(repo: &Path, args: &[&str]) -> Result<String, String> {
    // A GIT_DIR of a hook that runs the tests would name another repository than `repo`.
    let output = Command::new("git")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .map_err(|e| format!("git could not be run ({e}): is it installed?"))?;
    if !output.status.success() {
        return Err(format!(
            "git {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The files under [`PATHS`] in which HEAD differs from the commit the README's table names:
/// the commit as written, and the files. An error says why it cannot tell.
fn stale_files(repo: &Path) -> Result<(String, Vec<String>), String> {
    let readme = fs::read_to_string(repo.join("README.md"))
        .map_err(|e| format!("{}: {e}", repo.join("README.md").display()))?;
    let commit = table_commit(&readme)?;
    let not_a_checkout = |why: String| {
        format!(
            "{} is not a git checkout, so it cannot tell whether the README's table (from \
             commit {commit}) is true of it: {why}",
            repo.display()
        )
    };
    let top = git(repo, &["rev-parse", "--show-toplevel"]).map_err(not_a_checkout)?;
    let (top, here) = (fs::canonicalize(&top), fs::canonicalize(repo));
    if top.is_err() || top.as_ref().ok() != here.as_ref().ok() {
        return Err(not_a_checkout(format!(
            "git's work tree is {top:?}, not this directory"
        )));
    }
    let full = git(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{commit}^{{commit}}"),
        ],
    )
    .map_err(|_| {
        let shallow = git(repo, &["rev-parse", "--is-shallow-repository"]).unwrap_or_default();
        let hint = if shallow == "true" {
            "this is a shallow clone: `git fetch --unshallow` brings it".to_string()
        } else {
            "`git fetch` it, or clone the whole history".to_string()
        };
        format!(
            "README.md's table is from commit {commit}, which this clone does not have, so \
             it cannot tell whether the table is true of HEAD ({hint})"
        )
    })?;
    let mut args = vec!["diff", "--name-only", full.as_str(), "HEAD", "--"];
    args.extend(PATHS);
    let changed = git(repo, &args)?;
    Ok((commit, changed.lines().map(str::to_string).collect()))
}

/// What the test says of stale files.
fn stale_message(commit: &str, files: &[String]) -> String {
    format!(
        "README.md's results table comes from `make check` on commit {commit}, and HEAD \
         differs from that commit in {} file(s) under {}:\n  {}\nThe table is not true of \
         HEAD: run `make check` on HEAD and put its results/matrix.md in the README's section \
         '{SECTION}', naming HEAD's commit.",
        files.len(),
        PATHS.join(", "),
        files.join("\n  ")
    )
}

#[test]
fn the_readme_table_is_true_of_head() {
    match stale_files(&checkout()) {
        Err(why) => panic!("{why}"),
        Ok((commit, files)) if !files.is_empty() => panic!("{}", stale_message(&commit, &files)),
        Ok(_) => {}
    }
}

#[test]
fn the_commit_is_read_from_the_results_section_only() {
    let readme = format!(
        "# x\n\nbuilt on commit 0000000 once\n\n{SECTION}\n\nFrom `make check` on this \
         machine on commit ee9cefb, 72 minutes.\n\n| test |\n\n## What they print\n\non \
         commit 1111111\n"
    );
    assert_eq!(table_commit(&readme).as_deref(), Ok("ee9cefb"));
    let no_commit = format!("{SECTION}\n\nFrom a run.\n\n## Next\n\non commit 1234567\n");
    assert!(table_commit(&no_commit)
        .unwrap_err()
        .contains("does not say which commit"));
    let short = format!("{SECTION}\n\non commit abc, 72 minutes\n");
    assert!(table_commit(&short)
        .unwrap_err()
        .contains("names no commit"));
    assert!(table_commit("# x\n")
        .unwrap_err()
        .contains("has no section"));
}

/// A scratch git repository, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("pvrdma-lab-readme-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.0.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// Commits everything; its commit id.
    fn commit(&self, message: &str) -> String {
        let id = ["-c", "user.name=lab", "-c", "user.email=lab@localhost"];
        let mut add = id.to_vec();
        add.extend(["add", "-A"]);
        git(&self.0, &add).unwrap();
        let mut commit = id.to_vec();
        commit.extend([
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "--no-verify",
            "-m",
        ]);
        commit.push(message);
        git(&self.0, &commit).unwrap();
        git(&self.0, &["rev-parse", "--short=7", "HEAD"]).unwrap()
    }

    fn readme(&self, commit: &str) {
        self.write(
            "README.md",
            &format!("# x\n\n{SECTION}\n\nFrom `make check` on commit {commit}.\n\n## Next\n"),
        );
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The check itself, on a repository of its own: a driver change after the table's commit
/// makes the table stale; a change elsewhere (the host tools, the README) does not.
#[test]
fn a_driver_change_after_the_tables_commit_is_found() {
    let repo = Scratch::new("history");
    if let Err(why) = git(&repo.0, &["init", "-q"]) {
        panic!("{why}");
    }
    repo.write("drivers/infiniband/hw/pvrdma/pvrdma.rs", "// one\n");
    repo.write("tools/pvrdma-lab/src/main.rs", "// one\n");
    repo.readme("0000000");
    let tested = repo.commit("the run's commit");
    repo.readme(&tested);
    repo.write("tools/pvrdma-lab/src/main.rs", "// two\n");
    repo.commit("the table, and a host tool");
    assert_eq!(stale_files(&repo.0), Ok((tested.clone(), Vec::new())));

    repo.write("drivers/infiniband/hw/pvrdma/pvrdma.rs", "// two\n");
    repo.write("tests/guest/tests/rping.sh", "#!/bin/sh\n");
    repo.commit("a driver change without the table");
    let (commit, files) = stale_files(&repo.0).unwrap();
    assert_eq!(
        files,
        [
            "drivers/infiniband/hw/pvrdma/pvrdma.rs",
            "tests/guest/tests/rping.sh"
        ]
    );
    let message = stale_message(&commit, &files);
    assert!(
        message.contains(&format!("on commit {tested}")),
        "{message}"
    );
    assert!(
        message.contains("\n  drivers/infiniband/hw/pvrdma/pvrdma.rs\n"),
        "{message}"
    );

    // A commit the clone lacks is not a pass.
    repo.readme("abcdef0");
    let why = stale_files(&repo.0).unwrap_err();
    assert!(
        why.contains("commit abcdef0, which this clone does not have"),
        "{why}"
    );
}

/// A copy that is not a git checkout of its own (a tarball unpacked, say) fails, saying so.
#[test]
fn a_copy_without_git_is_not_a_pass() {
    let copy = Scratch::new("copy");
    copy.readme("ee9cefb");
    // Whether or not some repository holds the temporary directory (a TMPDIR inside a
    // checkout), the copy is not a checkout of its own.
    let why = stale_files(&copy.0).unwrap_err();
    assert!(why.contains("is not a git checkout"), "{why}");
    assert!(why.contains("from commit ee9cefb"), "{why}");
}
