// SPDX-License-Identifier: GPL-2.0-only
//! The QEMU command line of a lab guest (Documentation/lab.md explains each part).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use crate::accel::Accel;

/// Guest RAM, shared (`share=on`): QEMU's pvrdma refuses anything else.
const RAM: &str = "1G";
/// vCPUs: a pingpong server and client poll their CQs at the same time.
const CPUS: &str = "2";

/// One end of the link between the two guests of a two-guest test: their
/// vmxnet3s joined by a QEMU stream netdev over a unix socket (the server's
/// QEMU listens, the client's connects), and nothing else.
pub struct Link<'a> {
    /// `server` or `client` (the guest's `lab.role=`).
    pub role: &'a str,
    /// This guest's address (`lab.ip=`), from 192.0.2.0/24.
    pub ip: &'a str,
    /// The other guest's address (`lab.peer=`).
    pub peer_ip: &'a str,
    /// The vmxnet3's MAC address (the two must differ).
    pub mac: &'a str,
    /// The unix socket joining the two vmxnet3s.
    pub socket: &'a Path,
    /// Whether this QEMU listens on it (the other connects).
    pub listen: bool,
    /// Which start of this guest it is (1, then 2 after a restart).
    pub incarnation: u32,
}

/// One test a guest runs, and where it reports.
pub struct Slot<'a> {
    /// The test's name (`tests/guest/tests/NAME.sh`).
    pub test: &'a str,
    /// Its guest-side time limit.
    pub timeout_secs: u64,
    /// Its results directory, shared writable with the guest as `results<N>`
    /// (N counting from 1 in the order of the tests).
    pub results_dir: &'a Path,
}

/// The most tests one guest runs (each is a virtio-9p device of its own).
pub const MAX_SLOTS: usize = 8;

/// An interactive guest (`pvrdma-lab shell`): a shell on its serial console, which QEMU's
/// `-nographic` puts on the runner's terminal, instead of tests.
#[derive(Default)]
pub struct Shell {
    /// QEMU's gdb stub on this TCP port of 127.0.0.1 (what `-s` opens, on every address,
    /// at 1234), and the kernel without KASLR, so that vmlinux's addresses are the
    /// running kernel's.
    pub gdb_port: Option<u16>,
    /// The terminal's rows and columns (`lab.tty=`), for the guest's console.
    pub tty: Option<(u16, u16)>,
    /// The terminal's type (`lab.term=`), when it is a plain name.
    pub term: Option<String>,
}

/// What one guest needs.
pub struct Guest<'a> {
    /// The kernel image.
    pub bzimage: &'a Path,
    /// The guest's init script (a host path: the guest's root is the host's).
    pub init: &'a Path,
    /// `lab.model=`: the device model's name (only recorded by the guest).
    pub model: &'a str,
    /// The pvrdma device version the guest's device presents (17 to 20),
    /// `lab.device_version=` for the tests.
    pub device_version: u32,
    /// Whether QEMU is told it (`-device pvrdma,version=N`): the stock QEMU
    /// has no such property and is always 17.
    pub version_property: bool,
    /// `lab.driver=`.
    pub driver: &'a str,
    /// The driver module the guest loads.
    pub module: &'a Path,
    /// The kernel build dir (modules.order, for module dependencies).
    pub kernel_dir: &'a Path,
    /// The tests to run, one after the other, each with the driver loaded
    /// afresh (one, or at most [`MAX_SLOTS`] tests that share a guest). A shell
    /// guest has one slot, whose test is not run: its results directory gets the
    /// guest's logs.
    pub tests: &'a [Slot<'a>],
    /// Kernel arguments the test needs (checked by the catalog: no spaces or
    /// quotes, never `init=` or `lab.*`).
    pub kernel_args: &'a [String],
    /// The mux's socket, which QEMU's mad chardev connects to.
    pub mad_socket: &'a Path,
    /// The fabric socket the verbs library connects to.
    pub fabric_socket: &'a Path,
    /// The software verbs library, preloaded in place of libibverbs.
    pub verbs_lib: &'a Path,
    /// Where the verbs library logs.
    pub verbs_log: &'a Path,
    /// For a two-guest test: this guest's end of the link to the other.
    pub link: Option<Link<'a>>,
    /// The accelerator (crate::accel chooses it for the run).
    pub accel: Accel,
    /// A shell instead of the tests (`lab.shell=1`).
    pub shell: Option<Shell>,
}

/// A path as a QEMU option value: commas are doubled (QEMU's escape).
fn option_path(path: &Path) -> Result<String, String> {
    let text = path
        .to_str()
        .ok_or_else(|| format!("{}: not UTF-8", path.display()))?;
    Ok(text.replace(',', ",,"))
}

/// A path as a kernel command line value: no spaces, quotes or control characters.
fn cmdline_path(path: &Path) -> Result<&str, String> {
    let text = path
        .to_str()
        .ok_or_else(|| format!("{}: not UTF-8", path.display()))?;
    if text.is_empty()
        || text
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '"')
    {
        return Err(format!(
            "{text:?} cannot be passed on the guest's kernel command line (spaces, quotes or control characters)"
        ));
    }
    Ok(text)
}

impl Guest<'_> {
    /// The kernel command line. `rcupdate.rcu_expedited=1`: a normal RCU grace
    /// period takes long under TCG, and removing an RDMA device waits for
    /// several (an rmmod took 4.5 s, 2.5 s expedited).
    pub fn append(&self) -> Result<String, String> {
        let mut line = format!(
            "console=ttyS0 panic=-1 rcupdate.rcu_expedited=1 root=hostroot rootfstype=9p \
             rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose ro \
             init={init} lab.model={model} lab.device_version={version} lab.driver={driver} \
             lab.module={module} lab.kdir={kdir}",
            init = cmdline_path(self.init)?,
            model = self.model,
            version = self.device_version,
            driver = self.driver,
            module = cmdline_path(self.module)?,
            kdir = cmdline_path(self.kernel_dir)?,
        );
        match &self.shell {
            None => line.push_str(&format!(" lab.tests={}", self.test_list()?)),
            Some(shell) => {
                if self.tests.len() != 1 {
                    return Err(format!(
                        "a shell guest has one results share, not {}",
                        self.tests.len()
                    ));
                }
                line.push_str(" lab.shell=1");
                if let Some((rows, cols)) = shell.tty.filter(|&(r, c)| r > 0 && c > 0) {
                    line.push_str(&format!(" lab.tty={rows}x{cols}"));
                }
                let plain = |t: &&String| {
                    !t.is_empty()
                        && t.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
                };
                if let Some(term) = shell.term.as_ref().filter(plain) {
                    line.push_str(&format!(" lab.term={term}"));
                }
                if shell.gdb_port.is_some() {
                    line.push_str(" nokaslr");
                }
            }
        }
        for arg in self.kernel_args {
            line.push(' ');
            line.push_str(arg);
        }
        if let Some(link) = &self.link {
            line.push_str(&format!(
                " lab.role={} lab.ip={} lab.peer={} lab.incarnation={}",
                link.role, link.ip, link.peer_ip, link.incarnation
            ));
        }
        Ok(line)
    }

    /// `lab.tests=`: `NAME:SECONDS` for each test, comma-separated.
    fn test_list(&self) -> Result<String, String> {
        if self.tests.is_empty() || self.tests.len() > MAX_SLOTS {
            return Err(format!(
                "a guest runs 1 to {MAX_SLOTS} tests, not {}",
                self.tests.len()
            ));
        }
        let list: Vec<String> = self
            .tests
            .iter()
            .map(|slot| format!("{}:{}", slot.test, slot.timeout_secs))
            .collect();
        Ok(list.join(","))
    }

    /// The `-fsdev` and `-device` arguments of each test's results share,
    /// `results1`, `results2`, ... (four arguments each).
    fn results_shares(&self) -> Result<Vec<String>, String> {
        let mut args = Vec::new();
        for (i, slot) in self.tests.iter().enumerate() {
            let n = i + 1;
            args.extend([
                "-fsdev".into(),
                format!(
                    "local,id=results{n},path={},security_model=none",
                    option_path(slot.results_dir)?
                ),
                "-device".into(),
                format!("virtio-9p-pci,fsdev=results{n},mount_tag=results{n}"),
            ]);
        }
        Ok(args)
    }

    /// The arguments after the QEMU binary.
    pub fn args(&self) -> Result<Vec<OsString>, String> {
        let mut args: Vec<String> = vec![
            "-machine".into(),
            "q35,memory-backend=ram0".into(),
            // TCG: one host thread runs both vCPUs in turn (with multi-threaded
            // TCG a vCPU was seen executing an int3 the kernel had already
            // patched away on the other, an "Oops: int3" at boot, and on a
            // 2-core host the single thread is no slower); or KVM.
            "-accel".into(),
            self.accel.qemu_option().into(),
            "-m".into(),
            RAM.into(),
            "-smp".into(),
            CPUS.into(),
            "-object".into(),
            format!("memory-backend-ram,id=ram0,size={RAM},share=on"),
            "-nographic".into(),
            "-no-reboot".into(),
            // Named threads ("ALL CPUs/TCG"): the runner's backtraces of a
            // QEMU that overran say where the vCPU thread was.
            "-name".into(),
            "guest=pvrdma-lab,debug-threads=on".into(),
            // No default NIC: the vmxnet3 below is the only one, with no host
            // backend, so the guest's network reaches nothing outside it.
            "-nic".into(),
            "none".into(),
            "-kernel".into(),
            option_path(self.bzimage)?,
            "-append".into(),
            self.append()?,
            "-fsdev".into(),
            "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap".into(),
            "-device".into(),
            "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot".into(),
        ];
        // The first test's share takes a free slot before the network's fixed
        // one (slot 4); those of the tests after it come after the pvrdma.
        let shares = self.results_shares()?;
        let (first_share, other_shares) = shares.split_at(shares.len().min(4));
        args.extend_from_slice(first_share);
        // pvrdma must be function 1 of the slot whose function 0 is a vmxnet3,
        // which must exist first (QEMU 7.2's pvrdma dereferences it when it
        // is realized). Alone, the vmxnet3 has no backend; in a two-guest
        // test it is joined to the other guest's only, over a unix socket.
        let nic = "vmxnet3,addr=0x4.0,multifunction=on";
        match &self.link {
            None => args.extend(["-device".into(), nic.into()]),
            Some(link) => args.extend([
                "-netdev".into(),
                format!(
                    "stream,id=lab0,server={},addr.type=unix,addr.path={}",
                    if link.listen { "on" } else { "off" },
                    option_path(link.socket)?
                ),
                "-device".into(),
                format!("{nic},netdev=lab0,mac={}", link.mac),
            ]),
        }
        let mut pvrdma = "pvrdma,addr=0x4.1,mad-chardev=mad0".to_string();
        if self.version_property {
            pvrdma.push_str(&format!(",version={}", self.device_version));
        }
        args.extend([
            "-chardev".into(),
            format!("socket,id=mad0,path={}", option_path(self.mad_socket)?),
            "-device".into(),
            pvrdma,
        ]);
        args.extend_from_slice(other_shares);
        if let Some(port) = self.shell.as_ref().and_then(|s| s.gdb_port) {
            args.extend(["-gdb".into(), format!("tcp:127.0.0.1:{port}")]);
        }
        Ok(args.into_iter().map(OsString::from).collect())
    }

    /// The command: QEMU with its arguments and the verbs library's environment.
    pub fn command(&self, qemu: &Path) -> Result<Command, String> {
        let mut command = Command::new(qemu);
        command
            .args(self.args()?)
            .env("LD_PRELOAD", self.verbs_lib)
            .env("PVRDMA_FABRIC", self.fabric_socket)
            .env("PVRDMA_VERBS_LOG", self.verbs_log);
        Ok(command)
    }

    /// The command as a shell line, recorded with the results to rerun by hand.
    pub fn shell_line(&self, qemu: &Path) -> Result<String, String> {
        let mut words = vec![
            format!("LD_PRELOAD={}", quote(&self.verbs_lib.to_string_lossy())),
            format!(
                "PVRDMA_FABRIC={}",
                quote(&self.fabric_socket.to_string_lossy())
            ),
            format!(
                "PVRDMA_VERBS_LOG={}",
                quote(&self.verbs_log.to_string_lossy())
            ),
            quote(&qemu.to_string_lossy()),
        ];
        words.extend(self.args()?.iter().map(|a| quote(&a.to_string_lossy())));
        Ok(words.join(" "))
    }
}

/// `word` quoted for sh when it needs to be.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guest<'a>(tests: &'a [Slot<'a>]) -> Guest<'a> {
        Guest {
            bzimage: Path::new("/k/bzImage"),
            init: Path::new("/c/tests/guest/init.sh"),
            model: "patched",
            device_version: 20,
            version_property: true,
            driver: "c",
            module: Path::new("/k/vmw_pvrdma.ko"),
            kernel_dir: Path::new("/k"),
            tests,
            kernel_args: &[],
            mad_socket: Path::new("/tmp/s/mad.sock"),
            fabric_socket: Path::new("/tmp/s/fabric.sock"),
            verbs_lib: Path::new("/t/libpvrdma_verbs.so"),
            verbs_log: Path::new("/r/verbs.log"),
            link: None,
            accel: Accel::Tcg,
            shell: None,
        }
    }

    #[test]
    fn a_shell_guest() {
        let slots = [slot("shell", 0, "/r/shell")];
        let mut g = guest(&slots);
        g.shell = Some(Shell::default());
        let append = g.append().unwrap();
        assert!(append.ends_with(" lab.kdir=/k lab.shell=1"), "{append}");
        assert!(!append.contains("lab.tests="));
        assert!(!append.contains("nokaslr"));
        let args = args_of(&g);
        assert!(args.contains(&"local,id=results1,path=/r/shell,security_model=none".to_string()));
        assert!(
            args.contains(&"-nographic".to_string()),
            "the console on stdio"
        );
        assert!(!args.iter().any(|a| a.starts_with("-gdb") || a == "-s"));
        g.shell = Some(Shell {
            gdb_port: Some(1234),
            tty: Some((50, 200)),
            term: Some("xterm-256color".into()),
        });
        let append = g.append().unwrap();
        assert!(
            append.ends_with(" lab.shell=1 lab.tty=50x200 lab.term=xterm-256color nokaslr"),
            "{append}"
        );
        let args = args_of(&g);
        let gdb = args.iter().position(|a| a == "-gdb").unwrap();
        assert_eq!(
            args[gdb + 1],
            "tcp:127.0.0.1:1234",
            "the stub on loopback only"
        );
        // What the guest's command line cannot carry is left out.
        g.shell = Some(Shell {
            gdb_port: None,
            tty: Some((0, 80)),
            term: Some("x term".into()),
        });
        assert!(g.append().unwrap().ends_with(" lab.shell=1"));
        // One results share, for the guest's logs.
        let two = [slot("a", 1, "/r/a"), slot("b", 1, "/r/b")];
        let mut g = guest(&two);
        g.shell = Some(Shell::default());
        assert!(g.append().is_err());
    }

    #[test]
    fn the_accelerator() {
        let slots = [slot("ibv_devinfo", 120, "/r")];
        let mut g = guest(&slots);
        let accel = |g: &Guest| {
            let args = args_of(g);
            let at = args.iter().position(|a| a == "-accel").unwrap();
            (
                args[at + 1].clone(),
                args.iter().filter(|a| *a == "-accel").count(),
            )
        };
        assert_eq!(accel(&g), ("tcg,thread=single".to_string(), 1));
        g.accel = Accel::Kvm;
        assert_eq!(accel(&g), ("kvm".to_string(), 1));
    }

    #[test]
    fn command_line() {
        let slots = [slot("ibv_devinfo", 120, "/r,x")];
        let g = guest(&slots);
        let args = args_of(&g);
        assert!(args.contains(&"local,id=results1,path=/r,,x,security_model=none".to_string()));
        assert!(args.contains(&"virtio-9p-pci,fsdev=results1,mount_tag=results1".to_string()));
        assert!(args.contains(&"pvrdma,addr=0x4.1,mad-chardev=mad0,version=20".to_string()));
        let append = g.append().unwrap();
        assert!(append.contains(" lab.tests=ibv_devinfo:120"));
        assert!(append.contains(
            " init=/c/tests/guest/init.sh lab.model=patched lab.device_version=20 lab.driver=c "
        ));
    }

    #[test]
    fn the_stock_qemu_is_not_told_a_version() {
        let slots = [slot("ibv_devinfo", 120, "/r")];
        let mut g = guest(&slots);
        g.model = "stock";
        g.device_version = 17;
        g.version_property = false;
        assert!(args_of(&g).contains(&"pvrdma,addr=0x4.1,mad-chardev=mad0".to_string()));
        assert!(g.append().unwrap().contains(" lab.device_version=17 "));
    }

    #[test]
    fn a_linked_guest_has_its_vmxnet3_joined_to_the_other_only() {
        let slots = [slot("ibv_devinfo", 120, "/r")];
        let mut g = guest(&slots);
        assert!(g
            .args()
            .unwrap()
            .iter()
            .all(|a| !a.to_string_lossy().contains("netdev")));
        g.link = Some(Link {
            role: "client",
            ip: "192.0.2.2",
            peer_ip: "192.0.2.1",
            mac: "52:54:00:00:53:02",
            socket: Path::new("/tmp/s/net.sock"),
            listen: false,
            incarnation: 1,
        });
        let args = args_of(&g);
        assert!(args.contains(
            &"stream,id=lab0,server=off,addr.type=unix,addr.path=/tmp/s/net.sock".to_string()
        ));
        assert!(args.contains(
            &"vmxnet3,addr=0x4.0,multifunction=on,netdev=lab0,mac=52:54:00:00:53:02".to_string()
        ));
        assert!(args.contains(&"none".to_string()), "no default NIC");
        assert!(g
            .append()
            .unwrap()
            .ends_with(" lab.role=client lab.ip=192.0.2.2 lab.peer=192.0.2.1 lab.incarnation=1"));
    }

    #[test]
    fn refuses_unsafe_cmdline_paths() {
        let slots = [slot("ibv_devinfo", 120, "/r")];
        let mut g = guest(&slots);
        g.module = Path::new("/a b/m.ko");
        assert!(g.append().is_err());
    }

    fn args_of(g: &Guest) -> Vec<String> {
        g.args()
            .unwrap()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn slot<'a>(test: &'a str, timeout_secs: u64, dir: &'a str) -> Slot<'a> {
        Slot {
            test,
            timeout_secs,
            results_dir: Path::new(dir),
        }
    }

    #[test]
    fn a_shared_guest_has_a_results_share_per_test() {
        let slots = [slot("a", 60, "/r/a"), slot("b", 300, "/r/b")];
        let g = guest(&slots);
        let args = args_of(&g);
        assert!(args.contains(&"local,id=results2,path=/r/b,security_model=none".to_string()));
        assert!(g.append().unwrap().contains(" lab.tests=a:60,b:300"));
        // The network's devices (fixed slot 4) come before the second share,
        // which QEMU places in the next free slot.
        let pvrdma = args.iter().position(|a| a.starts_with("pvrdma,")).unwrap();
        let second = args.iter().position(|a| a.contains("id=results2")).unwrap();
        let first = args.iter().position(|a| a.contains("id=results1")).unwrap();
        assert!(first < pvrdma && pvrdma < second);
        let none: [Slot; 0] = [];
        assert!(guest(&none).append().is_err());
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a,b=c"), "a,b=c");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
