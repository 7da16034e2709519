// SPDX-License-Identifier: GPL-2.0

//! A driver for VMware's paravirtual RDMA device (PCI 15ad:0820), written in Rust.
//!
//! It brings the device up the way Linux's C driver (`vmw_pvrdma`) does and registers an RDMA
//! device with the same driver ID and user ABI (version 3), so that rdma-core's `vmw_pvrdma`
//! provider works with it unchanged. See `Documentation/bring-up.md` for the sequence.
//!
//! All `unsafe` code lives in the kernel crate's abstractions (`kernel::pci`, `kernel::dma`,
//! `kernel::irq`, `kernel::net`, `kernel::rdma`, ...): this crate has none.
//!
//! The modules come in layers, each importing only its own and those below it (every module
//! says which is its own; `tools/lab/driver-layers` checks it):
//!
//! ```text
//! interrupts   intr: the hard interrupt handlers, which hand the device's events to the RDMA
//!              device
//! RDMA device  verbs: rdma::Operations, each callback handed to
//!              ah, context, cq, mr, qp (wq: kernel QPs' queues), srq: the verbs objects, on
//!              device: IbDev (counts, uar); dead: a dead device's flusher; link: the port's link;
//!              convert: the core's values and the device's
//! device       hw: Hw, the registers, the DSR and
//!              cmd: the command channel; ring: the device's rings; pdir, mem: shared memory;
//!              stats: what the driver counts; abi: the device's ABI
//! ```
//!
//! The device layer hears of the layers above only through what they hand it: the flusher that
//! starts when the device is declared dead (`hw::OnDeath`), the response interrupt's handler
//! that the command channel switches (`cmd::CmdChannel::switch_vector`).

#![forbid(unsafe_code)]

mod abi;
mod ah;
mod cmd;
mod context;
mod convert;
mod counts;
mod cq;
mod dead;
mod device;
mod hw;
mod intr;
mod link;
mod mem;
mod mr;
mod pdir;
mod qp;
mod ring;
mod srq;
mod stats;
mod uar;
mod verbs;
mod wq;

use abi::*;
use dead::FlushOnDeath;
use device::IbDev;
use hw::{Hw, InterruptsEnabled, NAME};
use intr::{AsyncEventIrq, CqNotifyIrq, ResponseIrq};
use kernel::{
    device::Core,
    devres::Devres,
    dma::DmaMask,
    irq,
    net::{
        self,
        device::{Device as NetDevice, RtnlUnlocked, TrackedRef},
    },
    pci,
    prelude::*,
    rdma::{self, DeviceHandle},
    sync::Arc,
};
use link::LinkWatcher;

kernel::module_pci_driver! {
    type: Pvrdma,
    name: "pvrdma",
    authors: ["pvrdma-rs"],
    description: "VMware paravirtual RDMA driver (Rust)",
    license: "GPL",
}

kernel::pci_device_table!(
    PCI_TABLE,
    <Pvrdma as pci::Driver>::IdInfo,
    [(
        pci::DeviceId::from_id(pci::Vendor::VMWARE, PCI_DEVICE_ID_VMWARE_PVRDMA as u32),
        ()
    )]
);

/// A bound pvrdma device.
///
/// The fields are dropped in declaration order, which is the teardown order: stop following the
/// network device, unregister the RDMA device (destroying what user space left), mask the
/// device's interrupts, free the handlers, and finally drop the driver's reference to the
/// hardware state. The handlers hold the other references; once they are freed the device is
/// reset and the shared memory freed, with the command channel and the response handler it
/// holds when that has a vector of its own. Devres frees the interrupt vectors and unmaps the
/// BARs after that.
struct Pvrdma {
    _link: net::notifier::Registration<LinkWatcher>,
    _ib: Devres<rdma::Registration<IbDev>>,
    _interrupts: InterruptsEnabled,
    _cq_irq: Option<pci::IrqHandler<CqNotifyIrq>>,
    _async_irq: Option<pci::IrqHandler<AsyncEventIrq>>,
    /// With one vector for every cause; the command channel holds the handler of a vector of
    /// the responses' own.
    _response_irq: Option<pci::IrqHandler<ResponseIrq>>,
    _hw: Arc<Hw>,
}

impl pci::Driver for Pvrdma {
    type IdInfo = ();
    type Data<'bound> = Self;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;
    const DMA_MASK: Option<DmaMask> = Some(DmaMask::new::<64>());
    // The device takes pages through page directories, whatever the segments: large segments
    // only make pinned user memory's scatterlists shorter (as the C driver sets it).
    const DMA_MAX_SEG_SIZE: Option<u32> = Some(u32::MAX);

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        _id_info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<Self, Error> + 'bound {
        Self::new(pdev)
    }

    fn unbind<'bound>(pdev: &'bound pci::Device<Core<'_>>, _this: Pin<&Self>) {
        dev_info!(pdev, "detaching from device\n");
    }
}

impl Pvrdma {
    fn new(pdev: &pci::Device<Core<'_>>) -> Result<Self> {
        let events = DeviceHandle::new()?;
        let hw = Hw::new(pdev, FlushOnDeath::new(events.clone())?)?;
        let caps = hw.load_dsr()?;

        // Probe does not hold RTNL: finding the network device and registering the RDMA device
        // and the notifier take it.
        let rtnl = RtnlUnlocked::new(pdev.as_ref());

        let vmxnet3 = link::paired_function(pdev)?;
        let Some(netdev) = NetDevice::find_by_parent(vmxnet3.as_ref(), &rtnl) else {
            dev_err!(pdev, "failed to get vmxnet3 device\n");
            return Err(ENODEV);
        };
        dev_info!(pdev, "paired device to {}\n", netdev.name());
        *hw.netdev.lock() = Some(TrackedRef::new(&netdev, GFP_KERNEL));

        // One vector per cause with MSI-X; otherwise a single vector for everything.
        let vectors = match pdev.alloc_irq_vectors_devres(
            1,
            MAX_INTERRUPTS,
            pci::IrqTypes::default().with(pci::IrqType::MsiX),
        ) {
            Ok(v) => v,
            Err(_) => pdev.alloc_irq_vectors_devres(
                1,
                1,
                pci::IrqTypes::default()
                    .with(pci::IrqType::Msi)
                    .with(pci::IrqType::Intx),
            )?,
        };
        let shared = !matches!(vectors.irq_type(), pci::IrqType::MsiX);
        let response = ResponseIrq {
            signal: hw.cmd.signal().clone(),
            stats: hw.stats.clone(),
            shared: shared.then(|| hw.clone()),
        };
        // A vector of the responses' own is requested off and handed to the command channel,
        // which turns it on only while a command runs (`cmd`); a shared one stays on (turning it
        // off would mask the other devices on the line).
        let response_irq = if shared {
            Some(vectors.request_irq(0, irq::Flags::SHARED, NAME, response)?)
        } else {
            hw.cmd.switch_vector(vectors.request_exclusive_irq(
                0,
                irq::Flags::TRIGGER_NONE | irq::Flags::NO_AUTOEN,
                NAME,
                response,
            )?)?;
            None
        };
        let async_irq = if vectors.len() > 1 {
            Some(vectors.request_irq(
                1,
                irq::Flags::TRIGGER_NONE,
                NAME,
                AsyncEventIrq {
                    hw: hw.clone(),
                    events: events.clone(),
                },
            )?)
        } else {
            None
        };
        let cq_irq = if vectors.len() > 2 {
            Some(vectors.request_irq(
                2,
                irq::Flags::TRIGGER_NONE,
                NAME,
                CqNotifyIrq {
                    hw: hw.clone(),
                    events: events.clone(),
                },
            )?)
        } else {
            None
        };

        let interrupts = hw.enable_interrupts()?;
        if hw.control(CTL_ACTIVATE).is_err() {
            dev_err!(pdev, "failed to activate device\n");
            return Err(EFAULT);
        }

        let mut ibdev =
            rdma::UnregisteredDevice::new(pdev.as_ref(), PORT, IbDev::new(hw.clone(), caps)?)?;
        ibdev.set_node_guid(caps.node_guid);
        ibdev.set_num_comp_vectors(1);
        ibdev.set_node_type_ca();
        ibdev.set_netdev(PORT, &netdev)?;
        let ib = ibdev.register(c"vmw_pvrdma%d", Some(events.clone()), &rtnl)?;

        let link = net::notifier::Registration::register(
            LinkWatcher {
                hw: hw.clone(),
                events,
                vmxnet3,
            },
            &rtnl,
        )?;
        if let Some(ib) = ib.try_access() {
            dev_info!(pdev, "attached to device {}\n", ib.name());
        }

        Ok(Self {
            _link: link,
            _ib: ib,
            _interrupts: interrupts,
            _cq_irq: cq_irq,
            _async_irq: async_irq,
            _response_irq: response_irq,
            _hw: hw,
        })
    }
}
