// SPDX-License-Identifier: GPL-2.0-only
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
//!   It presents device version 20, as VMware's newest device does (QP
//!   handles apart from QP numbers, RoCE v2, 64-bit page frame numbers).
//! - `patched-v17`, `patched-v18`, `patched-v19`: the patched QEMU presenting
//!   an older device version (`-device pvrdma,version=N`; tools/qemu/versions.md
//!   says what each changes). By default a run takes them only for the tests
//!   whose header lists the version (`# lab-versions: 17,18`).

/// A device model: which QEMU runs the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceModel {
    /// Debian's unmodified QEMU 7.2.
    Stock,
    /// QEMU 7.2 with tools/qemu/patches, at device version 20.
    Patched,
    /// The patched QEMU at device version 19 (64-bit page frame numbers, no
    /// QP handles).
    PatchedV19,
    /// The patched QEMU at device version 18 (RoCE v2, 32-bit page frame
    /// numbers).
    PatchedV18,
    /// The patched QEMU at device version 17 (RoCE v1), what the stock
    /// model presents.
    PatchedV17,
}

/// The models a run takes by default, in that order: the patched model first
/// (every test can pass on it), the older device versions, then the stock one.
pub const ALL: [DeviceModel; 4] = [
    DeviceModel::Patched,
    DeviceModel::PatchedV18,
    DeviceModel::PatchedV17,
    DeviceModel::Stock,
];

/// Every model `--models` accepts.
pub const KNOWN: [DeviceModel; 5] = [
    DeviceModel::Patched,
    DeviceModel::PatchedV19,
    DeviceModel::PatchedV18,
    DeviceModel::PatchedV17,
    DeviceModel::Stock,
];

impl DeviceModel {
    /// The name used on the command line, in TAP lines and in results paths.
    pub fn name(self) -> &'static str {
        match self {
            DeviceModel::Stock => "stock",
            DeviceModel::Patched => "patched",
            DeviceModel::PatchedV19 => "patched-v19",
            DeviceModel::PatchedV18 => "patched-v18",
            DeviceModel::PatchedV17 => "patched-v17",
        }
    }

    /// What the model is, for the run's header.
    pub fn about(self) -> &'static str {
        match self {
            DeviceModel::Stock => {
                "Debian's unmodified QEMU 7.2 (qemu-system-x86), device version 17"
            }
            DeviceModel::Patched => {
                "QEMU 7.2 with the lab's pvrdma patches (tools/qemu), device version 20"
            }
            DeviceModel::PatchedV19 => "the patched QEMU at device version 19",
            DeviceModel::PatchedV18 => "the patched QEMU at device version 18",
            DeviceModel::PatchedV17 => "the patched QEMU at device version 17",
        }
    }

    /// The model called `name`.
    pub fn parse(name: &str) -> Result<DeviceModel, String> {
        KNOWN.into_iter().find(|m| m.name() == name).ok_or_else(|| {
            let names: Vec<&str> = KNOWN.iter().map(|m| m.name()).collect();
            format!(
                "unknown device model '{name}' (known: {})",
                names.join(", ")
            )
        })
    }

    /// The pvrdma device version the model presents.
    pub fn device_version(self) -> u32 {
        match self {
            DeviceModel::Patched => 20,
            DeviceModel::PatchedV19 => 19,
            DeviceModel::PatchedV18 => 18,
            DeviceModel::PatchedV17 | DeviceModel::Stock => 17,
        }
    }

    /// The value of the pvrdma device's `version` property, for the patched
    /// QEMU: always given, so that a change of the model's default never
    /// changes what a column means. None for the stock QEMU, which has no
    /// such property.
    pub fn version_property(self) -> Option<u32> {
        (self.family() == DeviceModel::Patched).then(|| self.device_version())
    }

    /// The QEMU build the model runs: [`DeviceModel::Patched`] for every
    /// version of the patched QEMU. An excuse (tools/pvrdma-lab/known-failures.toml)
    /// given for the family covers each of its versions.
    pub fn family(self) -> DeviceModel {
        match self {
            DeviceModel::Stock => DeviceModel::Stock,
            _ => DeviceModel::Patched,
        }
    }

    /// Whether an excuse given for `self` covers a test run on `model`: the
    /// same model, or `self` is the family of `model`.
    pub fn covers(self, model: DeviceModel) -> bool {
        self == model || self == model.family()
    }

    /// Whether a default run (no `--tests`) takes a test whose
    /// `# lab-versions:` header lists `versions` on this model: the model's
    /// newest version and the stock model take every test; an older version of
    /// the patched QEMU only those that list it.
    pub fn runs_by_default(self, versions: &[u32]) -> bool {
        match self {
            DeviceModel::Patched | DeviceModel::Stock => true,
            _ => versions.contains(&self.device_version()),
        }
    }

    /// Whether `version` (the first line of `qemu-system-x86_64 --version`)
    /// looks like this model's build: tools/qemu/build-qemu puts
    /// `pvrdma-lab <key>` into the patched build's version string.
    pub fn version_matches(self, version: &str) -> bool {
        let lab_build = version.contains("pvrdma-lab");
        match self.family() {
            DeviceModel::Stock => !lab_build,
            _ => lab_build,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for model in KNOWN {
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
        assert!(DeviceModel::PatchedV17.version_matches(patched));
        assert!(!DeviceModel::PatchedV18.version_matches(stock));
    }

    #[test]
    fn device_versions() {
        let versions: Vec<Option<u32>> = KNOWN.iter().map(|m| m.version_property()).collect();
        assert_eq!(versions, [Some(20), Some(19), Some(18), Some(17), None]);
        assert_eq!(DeviceModel::Stock.device_version(), 17);
    }

    #[test]
    fn an_excuse_of_the_patched_model_covers_its_versions_only() {
        for model in KNOWN {
            assert_eq!(
                DeviceModel::Patched.covers(model),
                model != DeviceModel::Stock
            );
            assert_eq!(
                DeviceModel::Stock.covers(model),
                model == DeviceModel::Stock
            );
        }
        assert!(DeviceModel::PatchedV18.covers(DeviceModel::PatchedV18));
        assert!(!DeviceModel::PatchedV18.covers(DeviceModel::Patched));
    }

    #[test]
    fn older_versions_take_only_the_tests_that_list_them() {
        assert!(DeviceModel::Patched.runs_by_default(&[]));
        assert!(DeviceModel::Stock.runs_by_default(&[]));
        assert!(!DeviceModel::PatchedV18.runs_by_default(&[]));
        assert!(DeviceModel::PatchedV18.runs_by_default(&[17, 18]));
        assert!(!DeviceModel::PatchedV19.runs_by_default(&[17, 18]));
    }
}
