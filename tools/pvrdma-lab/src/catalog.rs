// SPDX-License-Identifier: GPL-2.0-only
//! The guest tests: one shell script per test in `tests/guest/tests/`, whose
//! header says what it checks (`# lab-about: ...`), how long it may run in
//! the guest (`# lab-timeout: SECONDS`) and what the guest's kernel command
//! line needs beyond the lab's own (`# lab-kernel-args: kunit.enable=1`), and
//! whether it runs on two guests joined by one fabric (`# lab-guests: 2`: a
//! server guest and a client guest, for every pair of drivers), and how many
//! times its client guest is started again after it ends
//! (`# lab-client-restarts: 1`: a peer that dies and comes back), and whether
//! the mux delivers the first MAD it routes as a burst of copies
//! (`# lab-mad-burst: 200`: a flood of the receiving QP1; `# lab-mad-burst:
//! 200 RTU`: of the first MAD routed with that CM attribute), and whether it
//! needs a guest of its own rather than one it shares with other tests
//! (`# lab-own-guest: WHY`: it leaves the kernel or the device in a state the
//! next test must not inherit), and at which older pvrdma device versions a
//! default run takes it (`# lab-versions: 17,18`: the patched QEMU presenting
//! version 17 and 18, besides 20; model.rs).

use std::fmt::Display;
use std::fs;
use std::ops::RangeInclusive;
use std::path::Path;
use std::str::FromStr;

use pvrdma_fabric::mad::cm_attr;

/// The guest-side time limit of a script that does not declare one.
const DEFAULT_TIMEOUT_SECS: u64 = 300;
/// The largest time limit a script may declare.
const MAX_TIMEOUT_SECS: u64 = 3600;
/// The most restarts of a two-guest test's client.
const MAX_CLIENT_RESTARTS: u8 = 2;
/// The largest MAD burst (what a destination's outbox in the mux holds).
const MAX_MAD_BURST: u16 = 256;
/// The most kernel arguments a script may add.
const MAX_KERNEL_ARGS: usize = 8;

/// One guest test.
#[derive(Clone, Debug)]
pub struct GuestTest {
    /// The test's name: the script's file name without `.sh`.
    pub name: String,
    /// What the test checks, from its `# lab-about:` line.
    pub about: String,
    /// How long the script may run in the guest, from `# lab-timeout:`.
    pub timeout_secs: u64,
    /// Kernel command line arguments the test needs, from `# lab-kernel-args:`.
    pub kernel_args: Vec<String>,
    /// Guests the test runs on (1, or 2 from `# lab-guests: 2`).
    pub guests: u8,
    /// Two guests: how often the client guest starts again after its QEMU ended.
    pub client_restarts: u8,
    /// How many times the mux delivers the first MAD it routes (1: once), from
    /// `# lab-mad-burst: N`.
    pub mad_burst: u16,
    /// The CM attribute whose first MAD routed is the one delivered `mad_burst`
    /// times (`# lab-mad-burst: N RTU`); none: the first MAD routed.
    pub mad_burst_of: Option<&'static str>,
    /// Why the test needs a guest of its own (none: it may share one).
    pub own_guest: Option<String>,
    /// Why the test must be the last one its guest runs, from `# lab-runs-last:`:
    /// it leaves the kernel or the device model in a state no later test may
    /// inherit (none: any test may follow it).
    pub runs_last: Option<String>,
    /// The older device versions (17 to 19) a default run takes it at, from
    /// `# lab-versions:`.
    pub versions: Vec<u32>,
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
        let header = parse_header(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let own_guest = header.own_guest.clone().or_else(|| {
            if header.guests != 1 {
                Some("two guests".into())
            } else if !header.kernel_args.is_empty() {
                Some("kernel arguments of its own".into())
            } else if header.mad_burst != 1 {
                Some("a MAD burst from the mux".into())
            } else {
                None
            }
        });
        tests.push(GuestTest {
            name: name.to_string(),
            about: header.about,
            timeout_secs: header.timeout_secs,
            kernel_args: header.kernel_args,
            guests: header.guests,
            client_restarts: header.client_restarts,
            mad_burst: header.mad_burst,
            mad_burst_of: header.mad_burst_of,
            own_guest,
            runs_last: header.runs_last,
            versions: header.versions,
        });
    }
    tests.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tests)
}

/// What a script's header says.
#[derive(Debug, PartialEq)]
struct Header {
    about: String,
    timeout_secs: u64,
    kernel_args: Vec<String>,
    guests: u8,
    client_restarts: u8,
    mad_burst: u16,
    mad_burst_of: Option<&'static str>,
    own_guest: Option<String>,
    runs_last: Option<String>,
    versions: Vec<u32>,
}

/// Whether `arg` may go on the guest's kernel command line as one argument:
/// `name` or `name=value` in a restricted alphabet, so a script cannot split
/// or quote its way into the lab's own arguments (`init=`, `lab.*`).
fn valid_kernel_arg(arg: &str) -> bool {
    let name = arg.split('=').next().unwrap_or_default();
    !arg.is_empty()
        && arg.len() <= 64
        && !name.is_empty()
        && name != "init"
        && !name.starts_with("lab.")
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-=,".contains(&b))
}

/// A header's `value` (trimmed) as a number in `range`, or the error naming
/// the header `key`, the range and its `unit`.
fn number_in<T>(key: &str, value: &str, range: RangeInclusive<T>, unit: &str) -> Result<T, String>
where
    T: FromStr + PartialOrd + Display,
{
    let value = value.trim();
    value
        .parse()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            format!(
                "{key} must be {}..={}{unit}, not '{value}'",
                range.start(),
                range.end()
            )
        })
}

/// A header's `value` (trimmed) that says why, or the error naming the header `key`.
fn reason(key: &str, value: &str) -> Result<String, String> {
    match value.trim() {
        "" => Err(format!("{key} must say why")),
        why => Ok(why.to_string()),
    }
}

/// The header (the comment lines at a script's top).
fn parse_header(text: &str) -> Result<Header, String> {
    let mut header = Header {
        about: String::new(),
        timeout_secs: DEFAULT_TIMEOUT_SECS,
        kernel_args: Vec::new(),
        guests: 1,
        client_restarts: 0,
        mad_burst: 1,
        mad_burst_of: None,
        own_guest: None,
        runs_last: None,
        versions: Vec::new(),
    };
    for line in text.lines().take_while(|l| l.starts_with('#')) {
        if let Some(value) = line.strip_prefix("# lab-about:") {
            header.about = value.trim().to_string();
        } else if let Some(value) = line.strip_prefix("# lab-timeout:") {
            header.timeout_secs =
                number_in("lab-timeout", value, 1..=MAX_TIMEOUT_SECS, " seconds")?;
        } else if let Some(value) = line.strip_prefix("# lab-own-guest:") {
            header.own_guest = Some(reason("lab-own-guest", value)?);
        } else if let Some(value) = line.strip_prefix("# lab-runs-last:") {
            header.runs_last = Some(reason("lab-runs-last", value)?);
        } else if let Some(value) = line.strip_prefix("# lab-guests:") {
            header.guests = match value.trim() {
                "1" => 1,
                "2" => 2,
                other => return Err(format!("lab-guests must be 1 or 2, not '{other}'")),
            };
        } else if let Some(value) = line.strip_prefix("# lab-client-restarts:") {
            header.client_restarts =
                number_in("lab-client-restarts", value, 0..=MAX_CLIENT_RESTARTS, "")?;
        } else if let Some(value) = line.strip_prefix("# lab-mad-burst:") {
            let mut words = value.split_whitespace();
            header.mad_burst = number_in(
                "lab-mad-burst",
                words.next().unwrap_or_default(),
                1..=MAX_MAD_BURST,
                "",
            )?;
            header.mad_burst_of = match (words.next().map(cm_attr::by_name), words.next()) {
                (None, _) => None,
                (Some(Some(attr_id)), None) => Some(cm_attr::name(attr_id)),
                _ => {
                    return Err(format!(
                        "lab-mad-burst must be N or N ATTR (a CM attribute: REQ, REP, RTU, ...), \
                         not '{}'",
                        value.trim()
                    ))
                }
            };
        } else if let Some(value) = line.strip_prefix("# lab-versions:") {
            for word in value.split(',') {
                let version = number_in("lab-versions", word, 17..=19, "")?;
                if header.versions.contains(&version) {
                    return Err(format!("lab-versions: {version} twice"));
                }
                header.versions.push(version);
            }
        } else if let Some(value) = line.strip_prefix("# lab-kernel-args:") {
            for arg in value.split_whitespace() {
                if !valid_kernel_arg(arg) {
                    return Err(format!(
                        "lab-kernel-args: '{arg}' is not a kernel argument the lab passes \
                         (name[=value] of letters, digits and ._-=, ; not init= or lab.*)"
                    ));
                }
                header.kernel_args.push(arg.to_string());
            }
            if header.kernel_args.len() > MAX_KERNEL_ARGS {
                return Err(format!(
                    "lab-kernel-args: at most {MAX_KERNEL_ARGS} arguments"
                ));
            }
        }
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_header() {
        let text = "#!/bin/sh\n# lab-versions: 18, 17\n";
        assert_eq!(parse_header(text).unwrap().versions, [18, 17]);
        for bad in ["20", "16", "17,17", "", "x"] {
            let text = format!("#!/bin/sh\n# lab-versions: {bad}\n");
            assert!(parse_header(&text).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_fields() {
        let text = "#!/bin/sh\n# lab-about: checks things\n# lab-timeout: 42\n# lab-kernel-args: kunit.enable=1 quiet\n. lib.sh\n# lab-timeout: 7\n";
        assert_eq!(
            parse_header(text),
            Ok(Header {
                about: "checks things".to_string(),
                timeout_secs: 42,
                kernel_args: vec!["kunit.enable=1".to_string(), "quiet".to_string()],
                guests: 1,
                client_restarts: 0,
                mad_burst: 1,
                mad_burst_of: None,
                own_guest: None,
                runs_last: None,
                versions: Vec::new(),
            })
        );
    }

    #[test]
    fn header_defaults_and_bad_timeout() {
        assert_eq!(
            parse_header("#!/bin/sh\necho\n"),
            Ok(Header {
                about: String::new(),
                timeout_secs: DEFAULT_TIMEOUT_SECS,
                kernel_args: Vec::new(),
                guests: 1,
                client_restarts: 0,
                mad_burst: 1,
                mad_burst_of: None,
                own_guest: None,
                runs_last: None,
                versions: Vec::new(),
            })
        );
        assert_eq!(
            parse_header("# lab-client-restarts: 1\n").map(|h| h.client_restarts),
            Ok(1)
        );
        assert!(parse_header("# lab-client-restarts: 9\n").is_err());
        assert_eq!(
            parse_header("# lab-mad-burst: 200\n").map(|h| h.mad_burst),
            Ok(200)
        );
        assert_eq!(
            parse_header("# lab-mad-burst: 200 RTU\n").map(|h| (h.mad_burst, h.mad_burst_of)),
            Ok((200, Some("RTU")))
        );
        assert!(parse_header("# lab-mad-burst: 200 rtu\n").is_err());
        assert!(parse_header("# lab-mad-burst: 200 RTU REQ\n").is_err());
        assert!(parse_header("# lab-mad-burst: RTU\n").is_err());
        assert!(parse_header("# lab-mad-burst: 0\n").is_err());
        assert!(parse_header("# lab-mad-burst: 257\n").is_err());
        assert_eq!(parse_header("# lab-guests: 2\n").map(|h| h.guests), Ok(2));
        assert!(parse_header("# lab-guests: 3\n").is_err());
        assert_eq!(
            parse_header("# lab-own-guest: kills the device\n").map(|h| h.own_guest),
            Ok(Some("kills the device".to_string()))
        );
        assert!(parse_header("# lab-own-guest:\n").is_err());
        assert_eq!(
            parse_header("# lab-runs-last: leaves nvme-rdma loaded\n").map(|h| h.runs_last),
            Ok(Some("leaves nvme-rdma loaded".to_string()))
        );
        assert!(parse_header("# lab-runs-last:\n").is_err());
        assert!(parse_header("# lab-timeout: 0\n").is_err());
        assert!(parse_header("# lab-timeout: soon\n").is_err());
    }

    #[test]
    fn kernel_args_cannot_reach_the_lab_arguments() {
        for bad in [
            "init=/bin/sh",
            "lab.test=other",
            "a\"b",
            "=1",
            "x=$(reboot)",
            "a;b",
        ] {
            assert!(
                parse_header(&format!("# lab-kernel-args: {bad}\n")).is_err(),
                "{bad}"
            );
        }
        assert!(parse_header("# lab-kernel-args: a b c d e f g h i\n").is_err());
        assert!(
            parse_header("# lab-kernel-args: kunit.enable=1 kunit.filter_glob=rust_*\n").is_err()
        );
        assert!(parse_header("# lab-kernel-args: kunit.enable=1 loglevel=7\n").is_ok());
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
