// SPDX-License-Identifier: GPL-2.0

//! The paired network device: the vmxnet3 at function 0 of the same slot, whose link is the
//! RDMA port's link.
//!
//! The RDMA core follows the port's network device once it is set (`set_netdev`) and hands its
//! up and down events to the driver ([`report_port_event`]); this notifier finds the device,
//! follows its registration, and reports a reboot.
//!
//! Layer: RDMA device.

use crate::{
    abi::{CTL_UNQUIESCE, PCI_DEVICE_ID_VMWARE_VMXNET3, PORT},
    device::IbDev,
    hw::Hw,
};
use kernel::{
    net::{
        device::{Device as NetDevice, TrackedRef},
        notifier::{Event, Notifier},
    },
    pci,
    prelude::*,
    rdma::{self, DeviceHandle, PortEvent},
    sync::{aref::ARef, Arc},
};

/// Finds the vmxnet3 function paired with `pdev` (function 0 of its slot).
pub(crate) fn paired_function(pdev: &pci::Device) -> Result<ARef<pci::Device>> {
    let Some(fn0) = pdev.slot_function(0) else {
        dev_err!(pdev, "failed to find paired net device\n");
        return Err(ENODEV);
    };
    if fn0.vendor_id() != pci::Vendor::VMWARE || fn0.device_id() != PCI_DEVICE_ID_VMWARE_VMXNET3 {
        dev_err!(pdev, "failed to find paired vmxnet3 device\n");
        return Err(ENODEV);
    }
    Ok(fn0)
}

/// Follows the paired network device's registration and link state.
pub(crate) struct LinkWatcher {
    pub(crate) hw: Arc<Hw>,
    pub(crate) events: Arc<DeviceHandle<IbDev>>,
    /// The vmxnet3 PCI function whose network device is ours.
    pub(crate) vmxnet3: ARef<pci::Device>,
}

impl LinkWatcher {
    fn is_ours(&self, ndev: &NetDevice) -> bool {
        self.hw
            .netdev
            .lock()
            .as_ref()
            .is_some_and(|ours| core::ptr::eq(ours.as_raw(), ndev.as_raw()))
    }
}

impl Notifier for LinkWatcher {
    fn notify(&self, event: Event, ndev: &NetDevice) {
        match event {
            Event::Register => {
                let mut netdev = self.hw.netdev.lock();
                if netdev.is_none() && ndev.is_child_of(self.vmxnet3.as_ref()) {
                    if let Err(e) = self.events.set_netdev(PORT, Some(ndev)) {
                        dev_warn!(self.hw.dev(), "cannot attach {}: {:?}\n", ndev.name(), e);
                        return;
                    }
                    dev_info!(self.hw.dev(), "paired device to {}\n", ndev.name());
                    *netdev = Some(TrackedRef::new(ndev, GFP_KERNEL));
                }
            }
            Event::Unregister => {
                if self.is_ours(ndev) {
                    let _ = self.events.set_netdev(PORT, None);
                    // Drop our reference now, or the unregistration waits for it forever.
                    *self.hw.netdev.lock() = None;
                }
            }
            // Up and down come through the RDMA core (`report_port_event`); a reboot does not.
            Event::Reboot if self.is_ours(ndev) => {
                // `ENODEV` if the RDMA device is not registered: nobody to tell.
                let _ = self.events.dispatch_port_event(PORT, PortEvent::Error);
            }
            _ => {}
        }
    }
}

/// The port's network device `ndev` had `event` (from the RDMA core): up lets the device leave
/// its quiesced state and activates the port, down takes the port down (as the C driver does).
pub(crate) fn report_port_event(
    dev: &rdma::RegisteredDevice<IbDev>,
    ndev: &NetDevice,
    event: Event,
) {
    let port_event = match event {
        Event::Up => {
            if dev.hw.control(CTL_UNQUIESCE).is_err() {
                dev_err!(dev.hw.dev(), "failed to activate device during link up\n");
                return;
            }
            PortEvent::Active
        }
        Event::Down => PortEvent::Error,
        _ => {
            pr_debug!("{}: event {:?} of its network device\n", ndev.name(), event);
            return;
        }
    };
    if let Err(e) = dev.dispatch_port_event(PORT, port_event) {
        dev_warn!(dev.hw.dev(), "cannot report {:?}: {:?}\n", port_event, e);
    }
}
