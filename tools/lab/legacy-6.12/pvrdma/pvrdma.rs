// SPDX-License-Identifier: GPL-2.0

//! A driver for VMware's paravirtual RDMA device (PCI 15ad:0820), written in Rust.
//!
//! It brings the device up the way Linux's C driver (`vmw_pvrdma`) does and registers an RDMA
//! device with the same driver ID and user ABI (version 3), so that rdma-core's `vmw_pvrdma`
//! provider works with it unchanged. See `Documentation/bring-up.md` for the sequence.
//!
//! All `unsafe` code lives in the kernel crate's abstractions (`kernel::pci`, `kernel::dma`,
//! `kernel::irq`, `kernel::net`, `kernel::rdma`, ...): this crate has none.

#![deny(unsafe_code)]

mod abi;
// The whole device ABI is transcribed, including what this driver does not use (yet).
#[allow(dead_code)]
mod abi_verbs;
mod ah;
mod cmd;
mod convert;
mod counts;
mod cq;
mod hw;
mod ib;
mod intr;
mod link;
mod mr;
mod pdir;
mod qp;
mod ring;
mod srq;
mod uar;
mod wq;

use abi::*;
use hw::{Hw, InterruptsEnabled, NAME};
use ib::IbDev;
use intr::{AsyncEventIrq, CqNotifyIrq, ResponseIrq};
use kernel::{
    irq, net, pci,
    prelude::*,
    rdma::{self, DeviceHandle},
    sync::Arc,
};
use link::LinkWatcher;

kernel::module_pci_driver! {
    type: Pvrdma,
    name: "pvrdma",
    author: "pvrdma-rs",
    description: "VMware paravirtual RDMA driver (Rust)",
    license: "GPL",
}

kernel::pci_device_table! {
    /// The PCI IDs this driver binds to, also the module's device table.
    static PCI_IDS = [pci::DeviceId::new(PCI_VENDOR_ID_VMWARE, PCI_DEVICE_ID_VMWARE_PVRDMA)];
}

/// A bound pvrdma device.
///
/// The fields are dropped in declaration order, which is the teardown order: stop following the
/// network device, unregister the RDMA device (destroying what user space left), mask the
/// device's interrupts, free the handlers (then the vectors), and finally drop the last
/// reference to the hardware state, which resets the device, frees the shared memory, unmaps
/// the BARs and disables the PCI function.
struct Pvrdma {
    _link: Pin<KBox<net::notifier::Registration<LinkWatcher>>>,
    _ib: rdma::Registration<IbDev>,
    _interrupts: InterruptsEnabled,
    _cq_irq: Option<irq::ThreadedRegistration<CqNotifyIrq>>,
    _async_irq: Option<irq::ThreadedRegistration<AsyncEventIrq>>,
    _response_irq: irq::Registration<ResponseIrq>,
    _hw: Arc<Hw>,
}

impl pci::Driver for Pvrdma {
    const ID_TABLE: &'static dyn pci::IdTable = &PCI_IDS;

    fn probe(pdev: &pci::Device, _id: &pci::DeviceId) -> Result<Pin<KBox<Self>>> {
        let hw = Hw::new(pdev)?;
        let caps = hw.load_dsr()?;

        let vmxnet3 = link::paired_function(pdev)?;
        let Some(netdev) = net::device::Device::find_by_parent(vmxnet3.as_dev()) else {
            pr_err!("{}: failed to get vmxnet3 device\n", pdev.name());
            return Err(ENODEV);
        };
        pr_info!("{}: paired device to {}\n", pdev.name(), netdev.name());
        *hw.netdev.lock() = Some(netdev.clone());

        // One vector per cause with MSI-X; otherwise a single vector for everything.
        let vectors = match pdev.alloc_irq_vectors(1, MAX_INTERRUPTS, pci::IrqTypes::MSIX) {
            Ok(v) => v,
            Err(_) => pdev.alloc_irq_vectors(1, 1, pci::IrqTypes::MSI | pci::IrqTypes::INTX)?,
        };
        let shared = !vectors.is_msix();
        let events = DeviceHandle::new()?;
        let response_irq = irq::Registration::new(
            vectors.line(0)?,
            if shared {
                irq::Flags::SHARED
            } else {
                irq::Flags::NONE
            },
            NAME,
            ResponseIrq {
                hw: hw.clone(),
                shared,
            },
        )?;
        let async_irq = if vectors.count() > 1 {
            Some(irq::ThreadedRegistration::new(
                vectors.line(1)?,
                irq::Flags::NONE,
                NAME,
                AsyncEventIrq {
                    hw: hw.clone(),
                    events: events.clone(),
                },
            )?)
        } else {
            None
        };
        let cq_irq = if vectors.count() > 2 {
            Some(irq::ThreadedRegistration::new(
                vectors.line(2)?,
                irq::Flags::NONE,
                NAME,
                CqNotifyIrq {
                    hw: hw.clone(),
                    events: events.clone(),
                },
            )?)
        } else {
            None
        };
        drop(vectors);

        let interrupts = hw.enable_interrupts();
        if hw.control(CTL_ACTIVATE).is_err() {
            pr_err!("{}: failed to activate device\n", pdev.name());
            return Err(EFAULT);
        }

        let mut ibdev = rdma::UnregisteredDevice::new(
            &crate::THIS_MODULE,
            pdev.as_dev(),
            IbDev::new(hw.clone(), caps)?,
        )?;
        ibdev.set_node_guid(caps.node_guid);
        ibdev.set_phys_port_cnt(PORT);
        ibdev.set_num_comp_vectors(1);
        ibdev.set_node_type_ca();
        // Handles index the tables modulo their size; the C driver sizes them by the device's maxima
        // too, but a table never needs more than 2^16 entries (QP handles are 16 bits in CQEs).
        let table = |max: u32| max.min(1 << 16);
        ibdev.set_object_table_sizes(
            table(caps.max_qp),
            table(caps.max_cq),
            table(caps.max_srq),
        )?;
        ibdev.set_netdev(PORT, &netdev)?;
        let ib = ibdev.register(
            kernel::c_str!("vmw_pvrdma%d"),
            pdev.as_dev(),
            Some(events.clone()),
        )?;

        let link = net::notifier::Registration::register(LinkWatcher {
            hw: hw.clone(),
            events,
            vmxnet3,
        })?;
        pr_info!(
            "{}: attached to device {}\n",
            pdev.name(),
            ib.device().name()
        );

        Ok(KBox::pin(
            Self {
                _link: link,
                _ib: ib,
                _interrupts: interrupts,
                _cq_irq: cq_irq,
                _async_irq: async_irq,
                _response_irq: response_irq,
                _hw: hw,
            },
            GFP_KERNEL,
        )?)
    }

    fn remove(pdev: &pci::Device, _this: Pin<&Self>) {
        pr_info!("{}: detaching from device\n", pdev.name());
    }
}
