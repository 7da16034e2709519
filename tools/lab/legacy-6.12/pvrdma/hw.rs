// SPDX-License-Identifier: GPL-2.0

//! The device itself: its registers, the device shared region (DSR), the command channel and
//! the device's rings, shared by the RDMA device, the interrupt handlers and the link watcher.

use crate::{
    abi::*,
    cmd::{CmdChannel, Regs},
    ring::DeviceRing,
};
use kernel::{
    dma::{self, CoherentAllocation},
    net, new_mutex,
    page::PAGE_SIZE,
    pci,
    prelude::*,
    sync::{Arc, Mutex},
    types::{ARef, AsBytes, FromBytes},
};

/// The name under which BARs and interrupts are requested.
pub(crate) const NAME: &CStr = kernel::c_str!("pvrdma");

/// The device and the memory it shares with the driver.
///
/// Dropping it resets the device first, so that it stops using the shared memory, which is then
/// freed; then the BARs are unmapped and the PCI device disabled (field order).
#[pin_data(PinnedDrop)]
pub(crate) struct Hw {
    /// The command channel.
    #[pin]
    pub(crate) cmd: CmdChannel,
    async_ring: DeviceRing<Eqe>,
    cq_ring: DeviceRing<Cqne>,
    dsr: CoherentAllocation<Dsr>,
    /// The registers.
    pub(crate) regs: Regs,
    uar: pci::Bar<PAGE_SIZE>,
    /// The device version (`VERSION` register), at least `VERSION_ROCEV1`.
    pub(crate) version: u32,
    /// The paired network device, while it is registered.
    #[pin]
    pub(crate) netdev: Mutex<Option<ARef<net::device::Device>>>,
    /// The PCI function.
    pub(crate) pdev: ARef<pci::Device>,
    _enabled: pci::EnabledDevice,
}

impl Hw {
    /// Enables `pdev`, maps its BARs and allocates the shared memory. The device does not know
    /// the DSR yet: see [`Hw::load_dsr`].
    pub(crate) fn new(pdev: &pci::Device) -> Result<Arc<Self>> {
        let dev = pdev.as_dev();
        let enabled = pdev.enable_device_mem()?;
        let regs = Regs::new(pdev, BAR_REGS, NAME)?;
        let uar = pci::Bar::<PAGE_SIZE>::new(pdev, BAR_UAR, NAME)?;
        dma::set_mask_and_coherent(dev, 64)?;
        enabled.set_master();

        let version = regs.read32::<REG_VERSION>();
        pr_info!(
            "{}: device version {}, driver version {}\n",
            pdev.name(),
            version,
            DRIVER_VERSION
        );
        if version < VERSION_ROCEV1 {
            pr_err!(
                "{}: device version {} is not supported\n",
                pdev.name(),
                version
            );
            return Err(ENODEV);
        }

        let req = CmdChannel::alloc_slot(dev)?;
        let resp = CmdChannel::alloc_slot(dev)?;
        let async_ring = DeviceRing::<Eqe>::new(dev, NUM_RING_PAGES)?;
        let cq_ring = DeviceRing::<Cqne>::new(dev, NUM_RING_PAGES)?;
        let dsr = CoherentAllocation::<Dsr>::alloc(dev, 1, GFP_KERNEL)?;

        // The kernel's UAR page is page 0 of BAR 2.
        let uar_pfn = uar.start() >> kernel::page::PAGE_SHIFT;
        if version < VERSION_PPN64 && u32::try_from(uar_pfn).is_err() {
            pr_err!("{}: UAR page frame beyond 32 bits\n", pdev.name());
            return Err(ENODEV);
        }
        let shared = Dsr {
            driver_version: DRIVER_VERSION,
            gos_info: GOS_INFO_LINUX_64,
            cmd_slot_dma: req.dma_handle(),
            resp_slot_dma: resp.dma_handle(),
            async_ring_pages: RingPageInfo {
                num_pages: NUM_RING_PAGES,
                reserved: 0,
                pdir_dma: async_ring.pdir().dma_handle(),
            },
            cq_ring_pages: RingPageInfo {
                num_pages: NUM_RING_PAGES,
                reserved: 0,
                pdir_dma: cq_ring.pdir().dma_handle(),
            },
            uar_pfn,
            ..Default::default()
        };
        dsr.write(0, &shared)?;

        Arc::pin_init(
            pin_init!(Self {
                cmd <- CmdChannel::new(req, resp),
                async_ring,
                cq_ring,
                dsr,
                regs,
                uar,
                version,
                netdev <- new_mutex!(None, "pvrdma::Hw::netdev"),
                pdev: pdev.into(),
                _enabled: enabled,
            }),
            GFP_KERNEL,
        )
    }

    /// Tells the device where the DSR is; the device then fills in its capabilities, which are
    /// returned once checked.
    pub(crate) fn load_dsr(&self) -> Result<Caps> {
        let base = self.dsr.dma_handle();
        // The high half goes last: writing it makes the device load the DSR.
        self.regs.write32::<REG_DSRLOW>(base as u32);
        self.regs.write32::<REG_DSRHIGH>((base >> 32) as u32);
        kernel::io::mb();
        let caps = self.dsr.read(0)?.caps;
        self.check_caps(&caps)?;
        Ok(caps)
    }

    /// Checks the capabilities the device reported before anything relies on them.
    fn check_caps(&self, caps: &Caps) -> Result {
        let name = self.pdev.name();
        let gid_types = caps.gid_types;
        let supported = caps.mode == DEVICE_MODE_ROCE
            && ((self.version == VERSION_ROCEV1 && gid_types == GID_TYPE_FLAG_ROCE_V1)
                || (self.version >= VERSION_ROCEV2
                    && (gid_types == GID_TYPE_FLAG_ROCE_V1 || gid_types == GID_TYPE_FLAG_ROCE_V2)));
        if !supported {
            pr_err!("{}: driver needs RoCE v1 or v2 support\n", name);
            return Err(EFAULT);
        }
        let (ports, gids, pkeys, uars) = (
            caps.phys_port_cnt,
            caps.gid_tbl_len,
            caps.max_pkeys,
            caps.max_uar,
        );
        if ports != 1 {
            pr_err!("{}: device reports {} ports, expected 1\n", name, ports);
            return Err(EIO);
        }
        if gids == 0 || gids > 1024 {
            pr_err!("{}: implausible GID table length {}\n", name, gids);
            return Err(EIO);
        }
        if pkeys == 0 {
            pr_err!("{}: device reports no P_Keys\n", name);
            return Err(EIO);
        }
        if !uars.is_power_of_two() || self.uar_pages() < 2 {
            pr_err!("{}: implausible UAR count {}\n", name, uars);
            return Err(EIO);
        }
        Ok(())
    }

    /// The number of UAR pages BAR 2 has.
    pub(crate) fn uar_pages(&self) -> u32 {
        (self.uar.len() / PAGE_SIZE as u64).min(u32::MAX as u64) as u32
    }

    /// The page frame number of UAR page `index` (0 is the kernel's).
    pub(crate) fn uar_pfn(&self, index: u32) -> u64 {
        (self.uar.start() >> kernel::page::PAGE_SHIFT) + index as u64
    }

    /// Rings the kernel's CQ doorbell: `value` is a CQ handle with `UAR_CQ_*` bits.
    pub(crate) fn ring_cq_doorbell(&self, value: u32) {
        self.uar
            .write32::<{ crate::abi_verbs::UAR_CQ_OFFSET }>(value);
    }

    /// Rings the kernel's QP doorbell: `value` is a QP handle with `UAR_QP_*` bits.
    pub(crate) fn ring_qp_doorbell(&self, value: u32) {
        self.uar
            .write32::<{ crate::abi_verbs::UAR_QP_OFFSET }>(value);
    }

    /// Writes `value` to `CTL` and returns whether the device accepted it.
    pub(crate) fn control(&self, value: u32) -> Result {
        self.regs.write32::<REG_CTL>(value);
        kernel::io::mb();
        match self.regs.read32::<REG_ERR>() {
            0 => Ok(()),
            _ => Err(EIO),
        }
    }

    /// Unmasks all interrupt causes; they are masked again when the result is dropped.
    pub(crate) fn enable_interrupts(self: &Arc<Self>) -> InterruptsEnabled {
        self.regs.write32::<REG_IMR>(0);
        InterruptsEnabled(self.clone())
    }

    /// Runs a device command (see [`CmdChannel::run`]).
    pub(crate) fn command<C: AsBytes, R: FromBytes>(
        &self,
        code: (u32, u32),
        body: &C,
    ) -> Result<R> {
        self.cmd.run(&self.regs, code, body)
    }

    /// Runs the command that destroys the object `what` (with device handle `handle`) in the
    /// device. A refusal is logged, not returned: for the RDMA core the object is gone either
    /// way, and its memory is freed after this returns.
    pub(crate) fn destroy_object<C: AsBytes, R: FromBytes>(
        &self,
        code: (u32, u32),
        cmd: &C,
        what: &str,
        handle: u32,
    ) {
        if let Err(e) = self.command::<C, R>(code, cmd) {
            pr_warn!(
                "{}: could not destroy {} {}: {:?}\n",
                self.pdev.name(),
                what,
                handle,
                e
            );
        }
    }

    /// Consumes the async event ring, calling `f` for every event.
    pub(crate) fn drain_async_events(&self, mut f: impl FnMut(Eqe)) {
        loop {
            match self.async_ring.pop() {
                Ok(Some(eqe)) => f(eqe),
                Ok(None) => break,
                Err(_) => {
                    pr_warn!("{}: async event ring indexes invalid\n", self.pdev.name());
                    break;
                }
            }
        }
    }

    /// Consumes the CQ notification ring, calling `f` with every CQ handle.
    pub(crate) fn drain_cq_notifications(&self, mut f: impl FnMut(u32)) {
        loop {
            match self.cq_ring.pop() {
                Ok(Some(cqne)) => f(cqne.info),
                Ok(None) => break,
                Err(_) => {
                    pr_warn!(
                        "{}: CQ notification ring indexes invalid\n",
                        self.pdev.name()
                    );
                    break;
                }
            }
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Hw {
    fn drop(self: Pin<&mut Self>) {
        // Deactivate the device before the memory it knows about is freed.
        self.regs.write32::<REG_CTL>(CTL_RESET);
        kernel::io::mb();
    }
}

/// Interrupts unmasked at the device; masks them again when dropped.
pub(crate) struct InterruptsEnabled(Arc<Hw>);

impl Drop for InterruptsEnabled {
    fn drop(&mut self) {
        self.0.regs.write32::<REG_IMR>(!0);
    }
}
