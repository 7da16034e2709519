// SPDX-License-Identifier: GPL-2.0-only
//! Where the lab's parts are: the checkout's guest scripts and Rust module, the
//! cached test kernel, the host tools built in `tools/target/release`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use crate::accel::Accel;
use crate::cli::RunOptions;
use crate::model::DeviceModel;

/// The checkout this runner was built from (`tools/pvrdma-lab/../..`).
pub fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `tests/guest`: the init script, lib.sh and `tests/*.sh`.
pub fn guest_dir() -> PathBuf {
    checkout().join("tests/guest")
}

/// The directory of the test scripts.
pub fn tests_dir() -> PathBuf {
    guest_dir().join("tests")
}

/// `${PVRDMA_CACHE:-$HOME/.cache/pvrdma-rs}`.
pub fn cache_dir() -> PathBuf {
    match env::var_os("PVRDMA_CACHE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(env::var_os("HOME").unwrap_or_else(|| "/root".into()))
            .join(".cache/pvrdma-rs"),
    }
}

/// Every path a run uses, resolved from the options and the defaults.
#[derive(Debug)]
pub struct Layout {
    /// The guest's init script.
    pub init: PathBuf,
    /// The results directory.
    pub results: PathBuf,
    /// The test kernel's build dir.
    pub kernel_dir: PathBuf,
    /// Whether the test kernel was built with kmemleak (its `.config` says so). A kernel whose
    /// config cannot be read counts as having it: a leak check that did not run then fails.
    pub kernel_has_kmemleak: bool,
    /// The kernel image QEMU boots.
    pub bzimage: PathBuf,
    /// The C driver module.
    pub c_module: PathBuf,
    /// The Rust driver module.
    pub rust_module: PathBuf,
    /// The stock device model's QEMU.
    pub qemu_stock: PathBuf,
    /// The patched device model's QEMU.
    pub qemu_patched: PathBuf,
    /// The rdmacm-mux replacement.
    pub mux: PathBuf,
    /// The software verbs library QEMU preloads.
    pub verbs_lib: PathBuf,
    /// The guests' accelerator: TCG until the run has chosen (crate::accel::choose).
    pub accel: Accel,
}

impl Layout {
    /// Resolves the paths of a run; relative paths become absolute (the guest
    /// sees the host's root, so it needs absolute paths too).
    pub fn resolve(options: &RunOptions) -> Layout {
        let checkout = absolute(&checkout());
        let release = checkout.join("tools/target/release");
        let kernel_dir = absolute(
            &options
                .kernel
                .clone()
                .unwrap_or_else(|| cache_dir().join("kernel/current")),
        );
        Layout {
            init: checkout.join("tests/guest/init.sh"),
            results: absolute(
                &options
                    .results
                    .clone()
                    .unwrap_or_else(|| checkout.join("results")),
            ),
            bzimage: kernel_dir.join("arch/x86/boot/bzImage"),
            c_module: kernel_dir.join("drivers/infiniband/hw/vmw_pvrdma/vmw_pvrdma.ko"),
            kernel_has_kmemleak: fs::read_to_string(kernel_dir.join(".config"))
                .map_or(true, |config| {
                    config_enables(&config, "CONFIG_DEBUG_KMEMLEAK")
                }),
            kernel_dir,
            rust_module: absolute(
                &options
                    .rust_module
                    .clone()
                    .unwrap_or_else(|| checkout.join("drivers/infiniband/hw/pvrdma/pvrdma.ko")),
            ),
            // A bare name is looked up on PATH, as a shell would.
            qemu_stock: options
                .qemu_stock
                .clone()
                .unwrap_or_else(|| PathBuf::from("qemu-system-x86_64")),
            qemu_patched: absolute(
                &options
                    .qemu_patched
                    .clone()
                    .unwrap_or_else(|| cache_dir().join("qemu/current/bin/qemu-system-x86_64")),
            ),
            mux: absolute(
                &options
                    .mux
                    .clone()
                    .unwrap_or_else(|| release.join("pvrdma-mux")),
            ),
            verbs_lib: absolute(
                &options
                    .verbs_lib
                    .clone()
                    .unwrap_or_else(|| release.join("libpvrdma_verbs.so")),
            ),
            accel: Accel::Tcg,
        }
    }
}

impl Layout {
    /// The QEMU of a device model.
    pub fn qemu(&self, model: DeviceModel) -> &Path {
        match model {
            DeviceModel::Stock => &self.qemu_stock,
            _ => &self.qemu_patched,
        }
    }
}

/// `path` made absolute and, where it exists, free of symlinks and `..` (so
/// that what is recorded and handed to the guest names the real file).
pub fn absolute(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

/// Whether a kernel `.config` sets `option` to `y`.
fn config_enables(config: &str, option: &str) -> bool {
    config
        .lines()
        .any(|line| line.strip_prefix(option) == Some("=y"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_options_are_read_exactly() {
        let config = "CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN=y\n# CONFIG_DEBUG_KMEMLEAK is not set\n";
        assert!(!config_enables(config, "CONFIG_DEBUG_KMEMLEAK"));
        assert!(config_enables(
            "CONFIG_X=y\nCONFIG_DEBUG_KMEMLEAK=y\n",
            "CONFIG_DEBUG_KMEMLEAK"
        ));
    }
}
