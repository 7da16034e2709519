// SPDX-License-Identifier: GPL-2.0-only
//! Which accelerator runs the guests: KVM where `/dev/kvm` works for the lab's kernel, else
//! TCG (`--accel auto`, the default); `--accel kvm` or `--accel tcg` forces one.
//!
//! A `/dev/kvm` that opens is not enough. The probe asks it for its API version and creates a
//! VM, and the CPU must have virtualisation extensions (`vmx` or `svm` in /proc/cpuinfo): a
//! KVM without them (`kvm_pvm`, on a machine with nested virtualisation in software) creates
//! VMs and runs vCPUs but boots only kernels built for it, not the lab's.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::raw::{c_int, c_ulong};
use std::path::Path;

/// What `--accel` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Choice {
    /// KVM if the probe finds it works, else TCG.
    #[default]
    Auto,
    /// KVM whatever the probe says (QEMU fails to start where it does not work).
    Kvm,
    /// TCG.
    Tcg,
}

impl Choice {
    /// The choice called `name` (`auto`, `kvm` or `tcg`).
    pub fn parse(name: &str) -> Result<Choice, String> {
        match name {
            "auto" => Ok(Choice::Auto),
            "kvm" => Ok(Choice::Kvm),
            "tcg" => Ok(Choice::Tcg),
            _ => Err(format!(
                "--accel: unknown accelerator '{name}' (auto, kvm or tcg)"
            )),
        }
    }
}

/// The accelerator a guest's QEMU runs with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Accel {
    /// QEMU's emulator, one host thread running every vCPU in turn (`thread=single`: with
    /// multi-threaded TCG a vCPU was seen executing an int3 the kernel had already patched
    /// away on the other, and QEMU patch 22 ends a vCPU's turn where it waits on the other).
    #[default]
    Tcg,
    /// The host kernel's KVM: a thread per vCPU.
    Kvm,
}

impl Accel {
    /// The value of QEMU's `-accel`.
    pub fn qemu_option(self) -> &'static str {
        match self {
            Accel::Tcg => "tcg,thread=single",
            Accel::Kvm => "kvm",
        }
    }
}

/// The accelerator chosen and why, for the run's log.
pub struct Chosen {
    /// The accelerator.
    pub accel: Accel,
    /// One line: the accelerator, what the probe found, what was asked.
    pub why: String,
}

/// Chooses the accelerator for `choice`, probing `/dev/kvm` unless TCG was asked for.
pub fn choose(choice: Choice) -> Chosen {
    if choice == Choice::Tcg {
        return decide(choice, None);
    }
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    decide(choice, Some(probe(Path::new("/dev/kvm"), &cpuinfo)))
}

/// The choice for `choice` given the probe's finding (none when it did not run).
fn decide(choice: Choice, probed: Option<Result<(), String>>) -> Chosen {
    const TCG: &str = "tcg (QEMU's emulator, one thread for all vCPUs)";
    let (accel, why) = match (choice, probed) {
        (Choice::Tcg, _) => (Accel::Tcg, format!("{TCG}, as --accel tcg asked")),
        (Choice::Kvm, Some(Err(why))) => (
            Accel::Kvm,
            format!("kvm, as --accel kvm asked, although the probe found it unusable: {why}"),
        ),
        (Choice::Kvm, _) => (Accel::Kvm, "kvm, as --accel kvm asked".into()),
        (Choice::Auto, Some(Ok(()))) => (
            Accel::Kvm,
            "kvm (/dev/kvm works: a VM created, the CPU has virtualisation extensions)".into(),
        ),
        (Choice::Auto, Some(Err(why))) => (Accel::Tcg, format!("{TCG}: no KVM, {why}")),
        (Choice::Auto, None) => (Accel::Tcg, TCG.into()),
    };
    Chosen { accel, why }
}

/// `_IO(KVMIO, 0x00)`.
const KVM_GET_API_VERSION: c_ulong = 0xAE00;
/// `_IO(KVMIO, 0x01)`.
const KVM_CREATE_VM: c_ulong = 0xAE01;
/// The only KVM API version there has been since Linux 2.6.22.
const KVM_API_VERSION: c_int = 12;

extern "C" {
    fn ioctl(fd: c_int, request: c_ulong, ...) -> c_int;
}

/// Whether the KVM device at `path` can run the lab's guests, or why not; `cpuinfo` is
/// /proc/cpuinfo's text.
pub fn probe(path: &Path, cpuinfo: &str) -> Result<(), String> {
    let kvm: File = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => format!("no {}", path.display()),
            io::ErrorKind::PermissionDenied => format!(
                "{} is not open to this user ({e}; the kvm group's members may open it)",
                path.display()
            ),
            _ => format!("cannot open {}: {e}", path.display()),
        })?;
    // SAFETY: KVM_GET_API_VERSION takes no argument and touches no memory of ours; the
    // descriptor is open for the duration of the call.
    let version = unsafe { ioctl(kvm.as_raw_fd(), KVM_GET_API_VERSION, 0 as c_ulong) };
    if version < 0 {
        return Err(format!(
            "KVM_GET_API_VERSION on {} failed: {}",
            path.display(),
            io::Error::last_os_error()
        ));
    }
    if version != KVM_API_VERSION {
        return Err(format!(
            "{} speaks KVM API version {version}, not {KVM_API_VERSION}",
            path.display()
        ));
    }
    // SAFETY: KVM_CREATE_VM takes the machine type (0: the default) by value and returns a
    // new descriptor or -1; it touches no memory of ours.
    let vm = unsafe { ioctl(kvm.as_raw_fd(), KVM_CREATE_VM, 0 as c_ulong) };
    if vm < 0 {
        return Err(format!(
            "KVM_CREATE_VM on {} failed: {}",
            path.display(),
            io::Error::last_os_error()
        ));
    }
    // SAFETY: `vm` is a descriptor KVM_CREATE_VM just returned, owned by nothing else: it
    // is closed here, which destroys the VM.
    drop(unsafe { OwnedFd::from_raw_fd(vm) });
    if !has_virtualisation(cpuinfo) {
        let pvm = Path::new("/sys/module/kvm_pvm").exists();
        return Err(format!(
            "{} creates VMs but the CPU has no virtualisation extensions (no vmx or svm in \
             /proc/cpuinfo){}: a KVM without them boots only kernels built for it",
            path.display(),
            if pvm { ", its KVM is kvm_pvm" } else { "" }
        ));
    }
    Ok(())
}

/// Whether /proc/cpuinfo's `flags` name Intel's (`vmx`) or AMD's (`svm`) virtualisation
/// extensions.
fn has_virtualisation(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .filter_map(|line| line.strip_prefix("flags"))
        .filter_map(|rest| rest.trim_start().strip_prefix(':'))
        .any(|flags| flags.split_whitespace().any(|f| f == "vmx" || f == "svm"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices() {
        assert_eq!(Choice::parse("auto"), Ok(Choice::Auto));
        assert_eq!(Choice::parse("kvm"), Ok(Choice::Kvm));
        assert_eq!(Choice::parse("tcg"), Ok(Choice::Tcg));
        assert!(Choice::parse("hvf").is_err());
        assert!(Choice::parse("").is_err());
    }

    #[test]
    fn auto_takes_kvm_only_when_the_probe_found_it_working() {
        let kvm = decide(Choice::Auto, Some(Ok(())));
        assert_eq!(kvm.accel, Accel::Kvm);
        assert!(kvm.why.starts_with("kvm "), "{}", kvm.why);
        let tcg = decide(Choice::Auto, Some(Err("no /dev/kvm".into())));
        assert_eq!(tcg.accel, Accel::Tcg);
        assert!(tcg.why.starts_with("tcg "), "{}", tcg.why);
        assert!(tcg.why.ends_with("no KVM, no /dev/kvm"), "{}", tcg.why);
    }

    #[test]
    fn a_forced_choice_stands_whatever_the_probe_says() {
        assert_eq!(decide(Choice::Tcg, None).accel, Accel::Tcg);
        let kvm = decide(Choice::Kvm, Some(Err("KVM_CREATE_VM failed".into())));
        assert_eq!(kvm.accel, Accel::Kvm);
        assert!(kvm.why.contains("KVM_CREATE_VM failed"), "{}", kvm.why);
        assert_eq!(decide(Choice::Kvm, Some(Ok(()))).accel, Accel::Kvm);
    }

    #[test]
    fn qemu_options() {
        assert_eq!(Accel::Tcg.qemu_option(), "tcg,thread=single");
        assert_eq!(Accel::Kvm.qemu_option(), "kvm");
    }

    #[test]
    fn virtualisation_flags_are_read_whole() {
        let intel = "processor\t: 0\nflags\t\t: fpu vme vmx sse\nbugs\t\t: spectre\n";
        let amd = "flags\t\t: fpu svm\n";
        let none = "flags\t\t: fpu hypervisor vmxx\nvmx flags\t: ept\n";
        assert!(has_virtualisation(intel));
        assert!(has_virtualisation(amd));
        assert!(!has_virtualisation(none));
        assert!(!has_virtualisation(""));
    }

    #[test]
    fn a_missing_device_is_said_so() {
        let why = probe(Path::new("/nonexistent/kvm"), "flags : vmx\n").unwrap_err();
        assert_eq!(why, "no /nonexistent/kvm");
    }

    /// Whatever this machine has: the probe answers, and never panics. (Here, a /dev/kvm of
    /// kvm_pvm without virtualisation extensions: TCG.)
    #[test]
    fn the_probe_answers_on_this_machine() {
        let chosen = choose(Choice::Auto);
        eprintln!("accelerator: {}", chosen.why);
        assert!(!chosen.why.is_empty());
    }
}
