// SPDX-License-Identifier: GPL-2.0

//! The device itself: its registers, the device shared region (DSR), the command channel and
//! the device's rings, shared by the RDMA device, the interrupt handlers and the link watcher.
//!
//! Layer: device. It names neither the RDMA device nor the interrupt handlers: what it needs of
//! the layers above is handed to it (the [`OnDeath`] told when the device is declared dead).

use crate::{
    abi::*,
    cmd::{CmdChannel, Regs, ResponseSignal},
    pdir::DirCache,
    ring::DeviceRing,
    stats::Stats,
};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    device::Core,
    dma::Coherent,
    io::Io,
    net, new_mutex,
    page::{PAGE_SHIFT, PAGE_SIZE},
    pci,
    prelude::*,
    sync::{
        aref::ARef,
        barrier::{mb, Full},
        Arc, Mutex,
    },
};
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// The name under which BARs and interrupts are requested.
pub(crate) const NAME: &CStr = c"pvrdma";

/// The UAR BAR, as far as the driver maps it: the kernel's page.
type Uar = pci::DevresBar<PAGE_SIZE>;

/// What the layer above does once the device is declared dead ([`Hw::declare_dead`]): the RDMA
/// device's flusher (`crate::dead`), which this layer does not name.
///
/// [`Hw`] owns it, and drops it after the registers (which resets the device) and before the
/// shared memory: dropping it must stop whatever it started.
pub(crate) trait OnDeath: Send + Sync {
    /// Called once, when the device was declared dead and reset. Any context; must take no lock
    /// of the RDMA device's (the callers of [`Hw::declare_dead`] may hold them).
    fn declared_dead(&self);
}

/// The device and the memory it shares with the driver.
///
/// Dropping it resets the device first, so that it stops using the shared memory, which is then
/// freed; then the BARs are unmapped (field order). It is shared with the interrupt handlers,
/// which devres may free after the driver's data, so it does not borrow the bound device: the
/// BARs are [`pci::DevresBar`]s, and an access after the device was unbound does nothing.
#[pin_data]
pub(crate) struct Hw {
    /// The registers; dropped first, which resets the device (see [`DeviceRegs`]).
    pub(crate) regs: DeviceRegs,
    /// Whether the device was declared dead (see [`Hw::declare_dead`]).
    dead: AtomicBool,
    /// What the layer above does about a dead device (the flusher, see [`OnDeath`]).
    on_death: Arc<dyn OnDeath>,
    /// The command channel.
    #[pin]
    pub(crate) cmd: CmdChannel,
    async_ring: DeviceRing<Eqe>,
    cq_ring: DeviceRing<Cqne>,
    dsr: Coherent<Dsr>,
    uar: Uar,
    /// Bus address and length of the UAR BAR (user contexts map pages of it).
    uar_start: u64,
    uar_len: u64,
    /// The device version (`VERSION` register), at least `VERSION_ROCEV1`.
    pub(crate) version: u32,
    /// The paired network device, while it is registered.
    #[pin]
    pub(crate) netdev: Mutex<Option<net::device::TrackedRef>>,
    /// The PCI function.
    pub(crate) pdev: ARef<pci::Device>,
    /// What the driver counts (the port's hardware counters); shared with the response
    /// interrupt's handler.
    pub(crate) stats: Arc<Stats>,
    /// The page directories' allocations kept for reuse (the rings' and the objects').
    pub(crate) pdirs: Arc<DirCache>,
}

impl Hw {
    /// Enables `pdev`, maps its BARs and allocates the shared memory. The device does not know
    /// the DSR yet: see [`Hw::load_dsr`]. `on_death` is told when the device is declared dead.
    pub(crate) fn new(
        pdev: &pci::Device<Core<'_>>,
        on_death: Arc<dyn OnDeath>,
    ) -> Result<Arc<Self>> {
        let dev = pdev.as_ref();
        pdev.enable_device_mem()?;
        let regs = pdev
            .iomap_region_sized::<REGS_SIZE>(BAR_REGS, NAME)?
            .into_devres()?;
        let uar = pdev
            .iomap_region_sized::<PAGE_SIZE>(BAR_UAR, NAME)?
            .into_devres()?;
        let uar_start = pdev.resource_start(BAR_UAR)?;
        let uar_len = pdev.resource_len(BAR_UAR)?;
        pdev.set_master();

        let version = regs.access(dev)?.read32(REG_VERSION);
        dev_info!(
            pdev,
            "device version {}, driver version {}\n",
            version,
            DRIVER_VERSION
        );
        if version < VERSION_ROCEV1 {
            dev_err!(pdev, "device version {} is not supported\n", version);
            return Err(ENODEV);
        }

        let req = CmdChannel::alloc_slot(dev)?;
        let resp = CmdChannel::alloc_slot(dev)?;
        let pdirs = DirCache::new()?;
        let async_ring = DeviceRing::<Eqe>::new(dev, &pdirs, NUM_RING_PAGES)?;
        let cq_ring = DeviceRing::<Cqne>::new(dev, &pdirs, NUM_RING_PAGES)?;
        let dsr = Coherent::<Dsr>::zeroed(dev, GFP_KERNEL)?;
        let signal = ResponseSignal::new()?;
        let stats = Arc::new(Stats::new(), GFP_KERNEL)?;

        // The kernel's UAR page is page 0 of BAR 2.
        let uar_pfn = uar_start >> PAGE_SHIFT;
        if version < VERSION_PPN64 && u32::try_from(uar_pfn).is_err() {
            dev_err!(pdev, "UAR page frame beyond 32 bits\n");
            return Err(ENODEV);
        }
        let shared = Dsr {
            driver_version: DRIVER_VERSION,
            gos_info: GOS_INFO_LINUX_64,
            cmd_slot_dma: req.dma_address(),
            resp_slot_dma: resp.dma_address(),
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
        (&dsr).copy_write(shared);

        Arc::pin_init(
            pin_init!(Self {
                cmd <- CmdChannel::new(req, resp, signal),
                async_ring,
                cq_ring,
                dsr,
                regs: DeviceRegs(regs),
                dead: AtomicBool::new(false),
                on_death,
                uar,
                uar_start,
                uar_len,
                version,
                netdev <- new_mutex!(None, "pvrdma::Hw::netdev"),
                pdev: ARef::from(&**pdev),
                stats,
                pdirs,
            }),
            GFP_KERNEL,
        )
    }

    /// Tells the device where the DSR is; the device then fills in its capabilities, which are
    /// returned once checked.
    pub(crate) fn load_dsr(&self) -> Result<Caps> {
        let base = self.dsr.dma_address();
        {
            let regs = self.regs()?;
            // The high half goes last: writing it makes the device load the DSR.
            regs.write32(base as u32, REG_DSRLOW);
            regs.write32((base >> 32) as u32, REG_DSRHIGH);
        }
        mb(Full);
        let caps = (&self.dsr).copy_read().caps;
        self.check_caps(&caps)?;
        Ok(caps)
    }

    /// Checks the capabilities the device reported before anything relies on them.
    fn check_caps(&self, caps: &Caps) -> Result {
        let pdev = &*self.pdev;
        let gid_types = caps.gid_types;
        let supported = caps.mode == DEVICE_MODE_ROCE
            && ((self.version == VERSION_ROCEV1 && gid_types == GID_TYPE_FLAG_ROCE_V1)
                || (self.version >= VERSION_ROCEV2
                    && (gid_types == GID_TYPE_FLAG_ROCE_V1 || gid_types == GID_TYPE_FLAG_ROCE_V2)));
        if !supported {
            dev_err!(pdev, "driver needs RoCE v1 or v2 support\n");
            return Err(EFAULT);
        }
        let (ports, gids, pkeys, uars) = (
            caps.phys_port_cnt,
            caps.gid_tbl_len,
            caps.max_pkeys,
            caps.max_uar,
        );
        if ports != 1 {
            dev_err!(pdev, "device reports {} ports, expected 1\n", ports);
            return Err(EIO);
        }
        if gids == 0 || gids > 1024 {
            dev_err!(pdev, "implausible GID table length {}\n", gids);
            return Err(EIO);
        }
        if pkeys == 0 {
            dev_err!(pdev, "device reports no P_Keys\n");
            return Err(EIO);
        }
        if !uars.is_power_of_two() || self.uar_pages() < 2 {
            dev_err!(pdev, "implausible UAR count {}\n", uars);
            return Err(EIO);
        }
        Ok(())
    }

    /// The number of UAR pages BAR 2 has.
    pub(crate) fn uar_pages(&self) -> u32 {
        u32::try_from(self.uar_len / PAGE_SIZE as u64).unwrap_or(u32::MAX)
    }

    /// The page frame number of UAR page `index` (0 is the kernel's).
    pub(crate) fn uar_pfn(&self, index: u32) -> u64 {
        (self.uar_start >> PAGE_SHIFT) + u64::from(index)
    }

    /// Rings the kernel's CQ doorbell: `value` is a CQ handle with `UAR_CQ_*` bits.
    pub(crate) fn ring_cq_doorbell(&self, value: u32) {
        if let Some(uar) = self.uar.try_access() {
            uar.write32(value, crate::abi::UAR_CQ_OFFSET);
        }
    }

    /// Rings the kernel's QP doorbell: `value` is a QP handle with `UAR_QP_*` bits.
    pub(crate) fn ring_qp_doorbell(&self, value: u32) {
        if let Some(uar) = self.uar.try_access() {
            uar.write32(value, crate::abi::UAR_QP_OFFSET);
        }
    }

    /// The device's name, for messages.
    pub(crate) fn name(&self) -> &CStr {
        self.pdev.as_ref().name()
    }

    /// The PCI function as a generic device, for `dev_*!` messages.
    pub(crate) fn dev(&self) -> &kernel::device::Device {
        self.pdev.as_ref()
    }

    /// The registers, or `ENXIO` once the device is unbound. The guard holds an RCU read lock:
    /// it must not be held across anything that sleeps.
    pub(crate) fn regs(
        &self,
    ) -> Result<kernel::devres::DevresGuard<'_, pci::Bar<'static, REGS_SIZE>>> {
        self.regs.try_access().ok_or(ENXIO)
    }

    /// Writes `value` to `CTL` and returns whether the device accepted it.
    pub(crate) fn control(&self, value: u32) -> Result {
        let regs = self.regs()?;
        regs.write32(value, REG_CTL);
        mb(Full);
        match regs.read32(REG_ERR) {
            0 => Ok(()),
            _ => Err(EIO),
        }
    }

    /// Unmasks all interrupt causes; they are masked again when the result is dropped.
    pub(crate) fn enable_interrupts(self: &Arc<Self>) -> Result<InterruptsEnabled> {
        self.regs()?.write32(0, REG_IMR);
        Ok(InterruptsEnabled(self.clone()))
    }

    /// Runs a device command (see [`CmdChannel::run`]). A device that does not answer for
    /// minutes, or is gone, is declared dead.
    pub(crate) fn command<C: IntoBytes + Immutable, R: FromBytes + IntoBytes>(
        &self,
        code: (u32, u32),
        body: &C,
    ) -> Result<R> {
        self.stats.commands.inc();
        self.cmd
            .run(self.dev(), &self.regs.0, code, body)
            .inspect_err(|e| {
                self.stats.command_errors.inc();
                if *e == ETIMEDOUT {
                    self.declare_dead("the device stopped answering commands");
                } else if *e == ENODEV {
                    // The channel found the device gone (or it was declared dead before, and
                    // this does nothing).
                    self.declare_dead("the device is gone");
                }
            })
    }

    /// Whether the device was declared dead.
    pub(crate) fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// Declares the device dead because of `why`, what it did wrong (see `crate::dead`): no
    /// command runs any more (one under way fails at once), the device is reset, so that it
    /// stops using the driver's memory, and the layer above is told ([`OnDeath`]: the flusher
    /// starts). Only the first call acts.
    ///
    /// Any context; takes no lock of the RDMA device's (its callers may hold them).
    pub(crate) fn declare_dead(&self, why: &str) {
        if self.dead.swap(true, Ordering::AcqRel) {
            return;
        }
        dev_err!(
            self.dev(),
            "{}: declaring the device dead; its work requests complete as flushed\n",
            why
        );
        self.cmd.stop();
        if let Some(regs) = self.regs.try_access() {
            regs.write32(CTL_RESET, REG_CTL);
        }
        self.on_death.declared_dead();
    }

    /// Runs the command that destroys the object `what` (with device handle `handle`) in the
    /// device. A refusal is logged, not returned: for the RDMA core the object is gone either
    /// way, and its memory is freed after this returns. (A dead device was reset and holds no
    /// objects: nothing to log.)
    pub(crate) fn destroy_object<C: IntoBytes + Immutable, R: FromBytes + IntoBytes>(
        &self,
        code: (u32, u32),
        cmd: &C,
        what: &str,
        handle: u32,
    ) {
        if self.is_dead() {
            return;
        }
        if let Err(e) = self.command::<C, R>(code, cmd) {
            dev_warn!(
                self.pdev,
                "could not destroy {} {}: {:?}\n",
                what,
                handle,
                e
            );
        }
    }

    /// Consumes the async event ring, calling `f` for every event: at most one ring's worth,
    /// so that a device producing without end cannot keep the handler looping (the rest waits
    /// for the next interrupt). Fails with `EIO` if the device broke the ring's indexes.
    pub(crate) fn drain_async_events(&self, f: impl FnMut(Eqe)) -> Result {
        self.async_ring.drain(self.name(), "async event", f)
    }

    /// Consumes the CQ notification ring, calling `f` with every CQ handle: at most one ring's
    /// worth (see [`Hw::drain_async_events`]).
    pub(crate) fn drain_cq_notifications(&self, mut f: impl FnMut(u32)) -> Result {
        self.cq_ring
            .drain(self.name(), "CQ notification", |cqne| f(cqne.info))
    }
}

/// The register window, which resets the device when dropped: the first field of [`Hw`], so the
/// device stops using the shared memory before the other fields free it.
pub(crate) struct DeviceRegs(Regs);

impl DeviceRegs {
    /// The registers, if the device is still bound (see [`Hw::regs`]).
    pub(crate) fn try_access(
        &self,
    ) -> Option<kernel::devres::DevresGuard<'_, pci::Bar<'static, REGS_SIZE>>> {
        self.0.try_access()
    }
}

impl Drop for DeviceRegs {
    fn drop(&mut self) {
        // Once the device is unbound the BAR is gone and nothing can be written; the driver's
        // data, and with it the last reference to `Hw` normally, goes before that.
        if let Some(regs) = self.0.try_access() {
            regs.write32(CTL_RESET, REG_CTL);
            mb(Full);
        }
    }
}

/// Interrupts unmasked at the device; masks them again when dropped.
pub(crate) struct InterruptsEnabled(Arc<Hw>);

impl Drop for InterruptsEnabled {
    fn drop(&mut self) {
        if let Some(regs) = self.0.regs.try_access() {
            regs.write32(!0, REG_IMR);
        }
    }
}
