//! The device models a test can run on: two builds of QEMU 7.2's pvrdma.
//!
//! - `stock`: Debian 12's unmodified `qemu-system-x86_64` (package
//!   `qemu-system-x86`), the compatibility target: what a user of the driver
//!   on QEMU 7.2 has. Its pvrdma turns every work request into a SEND, arms
//!   CQs inverted and reports no RDMA READ resources, so some tests cannot
//!   pass on it (`known-failures.toml`).
//! - `patched`: the same Debian source with the lab's patch series
//!   (`tools/qemu`, built and cached by `tools/qemu/build-qemu`), whose pvrdma
//!   executes RDMA WRITE/READ, immediates and send flags and arms CQs right.

/// A device model: which QEMU runs the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceModel {
    /// Debian's unmodified QEMU 7.2.
    Stock,
    /// QEMU 7.2 with tools/qemu/patches.
    Patched,
}

/// Every model, in the order a run takes them by default: the patched model
/// first (every test can pass on it), then the stock one.
pub const ALL: [DeviceModel; 2] = [DeviceModel::Patched, DeviceModel::Stock];

impl DeviceModel {
    /// The name used on the command line, in TAP lines and in results paths.
    pub fn name(self) -> &'static str {
        match self {
            DeviceModel::Stock => "stock",
            DeviceModel::Patched => "patched",
        }
    }

    /// What the model is, for the run's header.
    pub fn about(self) -> &'static str {
        match self {
            DeviceModel::Stock => "Debian's unmodified QEMU 7.2 (qemu-system-x86)",
            DeviceModel::Patched => "QEMU 7.2 with the lab's pvrdma patches (tools/qemu)",
        }
    }

    /// The model called `name`.
    pub fn parse(name: &str) -> Result<DeviceModel, String> {
        ALL.into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| format!("unknown device model '{name}' (known: patched, stock)"))
    }

    /// Whether `version` (the first line of `qemu-system-x86_64 --version`)
    /// looks like this model's build: tools/qemu/build-qemu puts
    /// `pvrdma-lab <key>` into the patched build's version string.
    pub fn version_matches(self, version: &str) -> bool {
        let lab_build = version.contains("pvrdma-lab");
        match self {
            DeviceModel::Stock => !lab_build,
            DeviceModel::Patched => lab_build,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for model in ALL {
            assert_eq!(DeviceModel::parse(model.name()), Ok(model));
        }
        assert!(DeviceModel::parse("qemu").is_err());
    }

    #[test]
    fn versions() {
        let stock = "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)";
        let patched =
            "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18, pvrdma-lab d51f631688e6a576)";
        assert!(DeviceModel::Stock.version_matches(stock));
        assert!(!DeviceModel::Stock.version_matches(patched));
        assert!(DeviceModel::Patched.version_matches(patched));
        assert!(!DeviceModel::Patched.version_matches(stock));
    }
}
