//! The guest tests: one shell script per test in `tests/guest/tests/`, whose
//! header says what it checks (`# lab-about: ...`) and how long it may run in
//! the guest (`# lab-timeout: SECONDS`).

use std::fs;
use std::path::Path;

/// The guest-side time limit of a script that does not declare one.
const DEFAULT_TIMEOUT_SECS: u64 = 300;
/// The largest time limit a script may declare.
const MAX_TIMEOUT_SECS: u64 = 3600;

/// One guest test.
#[derive(Clone, Debug)]
pub struct GuestTest {
    /// The test's name: the script's file name without `.sh`.
    pub name: String,
    /// What the test checks, from its `# lab-about:` line.
    pub about: String,
    /// How long the script may run in the guest, from `# lab-timeout:`.
    pub timeout_secs: u64,
}

/// Whether `name` can name a test: it is passed on the guest's kernel command
/// line and used as a directory name.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Every test in `dir`, sorted by name.
pub fn discover(dir: &Path) -> Result<Vec<GuestTest>, String> {
    let entries =
        fs::read_dir(dir).map_err(|e| format!("cannot list tests in {}: {e}", dir.display()))?;
    let mut tests = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list tests in {}: {e}", dir.display()))?
            .path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".sh"))
        else {
            continue;
        };
        if !valid_name(name) {
            return Err(format!(
                "{}: test names may only use letters, digits, '_' and '-'",
                path.display()
            ));
        }
        let text = fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let (about, timeout_secs) =
            parse_header(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        tests.push(GuestTest {
            name: name.to_string(),
            about,
            timeout_secs,
        });
    }
    tests.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tests)
}

/// The `# lab-about:` text and `# lab-timeout:` seconds of a script's header
/// (the comment lines at its top).
fn parse_header(text: &str) -> Result<(String, u64), String> {
    let mut about = String::new();
    let mut timeout = DEFAULT_TIMEOUT_SECS;
    for line in text.lines().take_while(|l| l.starts_with('#')) {
        if let Some(value) = line.strip_prefix("# lab-about:") {
            about = value.trim().to_string();
        } else if let Some(value) = line.strip_prefix("# lab-timeout:") {
            timeout = value
                .trim()
                .parse()
                .ok()
                .filter(|t| (1..=MAX_TIMEOUT_SECS).contains(t))
                .ok_or_else(|| {
                    format!(
                        "lab-timeout must be 1..={MAX_TIMEOUT_SECS} seconds, not '{}'",
                        value.trim()
                    )
                })?;
        }
    }
    Ok((about, timeout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields() {
        let text = "#!/bin/sh\n# lab-about: checks things\n# lab-timeout: 42\n. lib.sh\n# lab-timeout: 7\n";
        assert_eq!(parse_header(text), Ok(("checks things".to_string(), 42)));
    }

    #[test]
    fn header_defaults_and_bad_timeout() {
        assert_eq!(
            parse_header("#!/bin/sh\necho\n"),
            Ok((String::new(), DEFAULT_TIMEOUT_SECS))
        );
        assert!(parse_header("# lab-timeout: 0\n").is_err());
        assert!(parse_header("# lab-timeout: soon\n").is_err());
    }

    #[test]
    fn names() {
        assert!(valid_name("ibv_rc_pingpong"));
        assert!(valid_name("insmod-cycles"));
        assert!(!valid_name(""));
        assert!(!valid_name("a b"));
        assert!(!valid_name("../x"));
    }
}
