// SPDX-License-Identifier: GPL-2.0

//! Completion queues: user CQs (a ring in pinned user memory that the provider library polls)
//! and kernel CQs (a ring in coherent memory that `poll_cq` consumes).
//!
//! Layer: RDMA device.

use crate::{
    abi::PAGE_DIR_MAX_PAGES,
    abi::*,
    convert::{network_type_to_ib, wc_flags_to_ib, wc_opcode_to_ib, wc_status_to_ib},
    device::IbDev,
    pdir::PageDir,
    ring::DeviceRing,
    wq::Completed,
};
use kernel::{
    new_spinlock_irq,
    page::PAGE_SIZE,
    prelude::*,
    rdma::{
        self, Access, CqFlags, CqInitAttr, ResEntry, TableIndex, UData, Umem, UserContext,
        UserCqBuffer, WcSink, WorkCompletion, WrId,
    },
    sync::SpinLockIrq,
};

/// A user CQ's ring: in the provider library's memory (page 0 is the ring state, then the
/// entries), pinned, and the page directory the device reads it through.
struct UserRing {
    _pdir: PageDir,
    _umem: Umem,
}

/// A CQ: the device's handle and its ring, in user memory or in the driver's.
#[pin_data]
pub(crate) struct Cq {
    /// The device's handle (what CQ notifications and QP commands name it by).
    pub(crate) handle: u32,
    /// A user CQ's ring; `None` for a kernel CQ.
    user: Option<UserRing>,
    /// A kernel CQ's ring, consumed under the lock; `None` for a user CQ. Inline (the CQ is
    /// initialised in place), so a kernel CQ costs no allocation for it.
    #[pin]
    kernel: SpinLockIrq<Option<DeviceRing<Cqe>>>,
}

impl TableIndex for Cq {
    fn table_index(&self) -> u32 {
        self.handle
    }
}

impl Cq {
    /// Whether the CQ's ring is the driver's (a kernel consumer's CQ).
    pub(crate) fn is_kernel(&self) -> bool {
        self.user.is_none()
    }

    /// The driver's details of the CQ in `rdma res show cq -dd`: the device's handle and where
    /// its ring is.
    pub(crate) fn fill_res(&self, entry: &mut ResEntry<'_>) -> Result {
        entry.put_u32(c"dev_handle", self.handle)?;
        entry.put_str(c"ring", if self.is_kernel() { c"kernel" } else { c"user" })
    }
}

/// What a kernel CQ's completion is to the QP it names.
#[derive(Clone, Copy)]
enum Found {
    /// Outstanding work of the QP: reported.
    Work,
    /// Unsignaled work a later completion completed: nothing to report.
    Retired,
    /// Work the QP does not have: the device lies.
    Impossible,
}

/// Converts a device completion into the RDMA core's, with the caller's `wr_id`.
fn work_completion(cqe: &Cqe, wr_id: WrId) -> WorkCompletion {
    WorkCompletion {
        wr_id,
        status: wc_status_to_ib(cqe.status),
        opcode: wc_opcode_to_ib(cqe.opcode),
        vendor_err: cqe.vendor_err,
        byte_len: cqe.byte_len,
        ex: cqe.imm_data,
        src_qp: cqe.src_qp,
        slid: cqe.slid.into(),
        wc_flags: wc_flags_to_ib(cqe.wc_flags),
        pkey_index: cqe.pkey_index,
        sl: cqe.sl,
        dlid_path_bits: cqe.dlid_path_bits,
        port_num: cqe.port_num.into(),
        smac: cqe.smac,
        vlan_id: 0,
        network_hdr_type: network_type_to_ib(cqe.network_hdr_type),
    }
}

/// The device handle of the QP a CQE names: the low 16 bits of the field, as the C driver and
/// rdma-core's provider read it (`cqe->qp & 0xffff`). A device may put anything above them, and
/// a driver that compared more would drop every kernel completion of such a device (rdma_cm would
/// hang) or take them for lies. QPs whose handles need more than 16 bits are refused at creation
/// (`crate::qp`), so the low bits name the QP completely.
fn qp_handle_of(cqe: &Cqe) -> u32 {
    (cqe.qp & 0xffff) as u32
}

impl Cq {
    /// Creates a kernel CQ, or a user CQ for a context with its udata and ring buffer (see
    /// [`rdma::Operations::create_cq`] and [`rdma::Operations::create_user_cq`]).
    pub(crate) fn new(
        dev: &rdma::Device<IbDev>,
        attr: &CqInitAttr,
        user: Option<(&UserContext<IbDev>, &mut UData, UserCqBuffer<'_>)>,
    ) -> Result<(impl PinInit<Cq>, u32)> {
        // The device has neither timestamps nor overrun-tolerant CQs.
        if attr.flags() != Some(CqFlags::empty()) {
            return Err(EOPNOTSUPP);
        }
        if attr.cqe() == 0 {
            return Err(EINVAL);
        }
        let entries = attr.cqe().checked_next_power_of_two().ok_or(EINVAL)?;
        if entries > dev.caps.max_cqe {
            return Err(EINVAL);
        }
        let reservation = dev.counts.cqs.take(dev.caps.max_cq)?;
        let pdev = dev.parent();
        // The ring state page, then the entries: the device writes `entries` CQEs after the
        // state, whatever memory it was given.
        let ring_pages = 1 + (entries as usize * core::mem::size_of::<Cqe>()).div_ceil(PAGE_SIZE);

        let ctx_handle = user.as_ref().map_or(0, |(ctx, ..)| ctx.ctx_handle);
        let (user_ring, mut kernel_ring, pdir_dma, npages, user_reply) = match user {
            Some((_, udata, buffer)) => {
                let req: UserCreateCq = udata.read()?;
                // The provider's buffer (as its request states it, or as the command's buffer
                // attributes name it, then at least as long) must hold the ring; all of it is
                // pinned and given to the device, which must be able to map it.
                if u64::from(req.buf_size) < (ring_pages * PAGE_SIZE) as u64 {
                    return Err(EINVAL);
                }
                let umem = buffer.pin(
                    dev,
                    req.buf_addr,
                    req.buf_size.into(),
                    Access::LocalWrite.into(),
                )?;
                // The ring state is at the start of the first page the device maps.
                if umem.page_offset() != 0
                    || umem.num_pages() > PAGE_DIR_MAX_PAGES
                    || umem.num_pages() < ring_pages
                {
                    return Err(EINVAL);
                }
                let pdir = PageDir::for_user(pdev, &dev.hw.pdirs, &[&umem])?;
                let (dma, n) = (pdir.dma_handle(), pdir.npages());
                (
                    Some(UserRing {
                        _pdir: pdir,
                        _umem: umem,
                    }),
                    None,
                    dma,
                    n,
                    Some(udata),
                )
            }
            None => {
                let npages = u32::try_from(ring_pages).map_err(|_| EINVAL)?;
                let ring = DeviceRing::<Cqe>::with_slots(pdev, &dev.hw.pdirs, npages, entries)?;
                let dma = ring.pdir().dma_handle();
                (None, Some(ring), dma, npages as usize, None)
            }
        };

        let cmd = CmdCreateCq {
            pdir_dma,
            ctx_handle,
            cqe: entries,
            nchunks: npages as u32,
            ..Default::default()
        };
        let resp: RespCreateCq = dev.hw.command(opcode_verbs::CREATE_CQ, &cmd)?;
        let handle = resp.cq_handle;
        // The device's ring size is what both sides index with: it must fit what was allocated.
        let checked = match &mut kernel_ring {
            Some(ring) => ring.shrink_to(resp.cqe),
            None => {
                if resp.cqe == 0 || resp.cqe > entries {
                    Err(EIO)
                } else {
                    Ok(())
                }
            }
        };
        if let Err(e) = checked {
            dev_warn!(
                dev.hw.dev(),
                "device gave CQ {} an invalid size {}\n",
                resp.cq_handle,
                resp.cqe
            );
            // The room is given back by `destroy_in_device`, once.
            reservation.keep();
            destroy_in_device(dev, handle);
            return Err(e);
        }
        if let Some(udata) = user_reply {
            let reply = UserCreateCqResp {
                cqn: handle,
                reserved: 0,
            };
            if let Err(e) = udata.write(&reply) {
                // The room is given back by `destroy_in_device`, once.
                reservation.keep();
                destroy_in_device(dev, handle);
                return Err(e);
            }
        }
        reservation.keep();
        // Nothing fails from here on: the device has the CQ.
        let cq = pin_init!(Cq {
            handle,
            user: user_ring,
            kernel <- new_spinlock_irq!(kernel_ring, "pvrdma::Cq::ring"),
        });
        Ok((cq, resp.cqe))
    }

    /// Destroys a CQ in the device; its memory goes when the abstraction drops it, after this.
    pub(crate) fn destroy(&self, dev: &rdma::Device<IbDev>) {
        destroy_in_device(dev, self.handle);
    }

    /// Moves completions of a kernel CQ into `sink` (see [`rdma::Operations::poll_cq`]).
    ///
    /// A device that breaks the ring's indexes or reports a completion the driver never asked
    /// for is lying about the state of its queues: it is declared dead (see `crate::dead`), and
    /// from then on this CQ's completions are the flushes of the work outstanding on it.
    pub(crate) fn poll(&self, dev: &rdma::Device<IbDev>, sink: &mut WcSink<'_, IbDev>) -> Result {
        if !self.is_kernel() {
            return Err(EINVAL);
        }
        if !dev.hw.is_dead() {
            if let Err(lie) = self.poll_ring(dev, sink) {
                // After the ring's lock is dropped: declaring the device dead takes the flusher's
                // lock, which is not to nest in a CQ's.
                dev.hw.declare_dead(lie);
            }
        }
        if dev.hw.is_dead() {
            dev.for_each_qp(|qp| crate::qp::flush_unfinished(qp, self.handle, sink));
        }
        Ok(())
    }

    /// Moves the completions the device wrote into the kernel ring to `sink`. Fails with what the
    /// device did wrong if it broke the ring or completed work the driver did not give it.
    fn poll_ring(
        &self,
        dev: &rdma::Device<IbDev>,
        sink: &mut WcSink<'_, IbDev>,
    ) -> core::result::Result<(), &'static str> {
        let ring = self.kernel.lock();
        let Some(ring) = ring.as_ref() else {
            return Ok(());
        };
        let mut polled_device = false;
        // At most one ring's worth of entries per call: completions of unknown QPs take no room in
        // the sink, and a device refilling the ring must not keep this loop going with interrupts
        // off. The consumer polls again for the rest.
        let mut budget = ring.slots();
        while sink.has_room() && budget > 0 {
            match ring.pop() {
                Ok(Some(cqe)) => {
                    budget -= 1;
                    let qp_handle = qp_handle_of(&cqe);
                    // A completion of a QP destroyed meanwhile names nothing: dropped (the
                    // destroy removed those already written; the device writes none after).
                    // What the QP made of the completion (`None`: no live QP has the handle).
                    let mut found: Option<Found> = None;
                    let pushed =
                        sink.push(qp_handle, |qp| match qp.completed_work(self.handle, &cqe) {
                            Some(Completed::Work(wr_id)) => {
                                found = Some(Found::Work);
                                Some(work_completion(&cqe, wr_id))
                            }
                            Some(Completed::Retired) => {
                                found = Some(Found::Retired);
                                None
                            }
                            None => {
                                found = Some(Found::Impossible);
                                None
                            }
                        });
                    match found {
                        Some(Found::Impossible) => {
                            return Err("a kernel CQ's completion names work its QP does not have")
                        }
                        // Unsignaled work a later completion completed: nothing to report.
                        Some(Found::Retired) => continue,
                        Some(Found::Work) | None => {}
                    }
                    if !pushed {
                        dev.hw.stats.stale_events.inc();
                        kernel::pr_warn_once!(
                            "{}: CQ {}: dropped a completion of QP handle {:#x}, which names no QP\n",
                            dev.hw.name(),
                            self.handle,
                            cqe.qp
                        );
                    }
                }
                Ok(None) if !polled_device => {
                    // Ask the device to flush what it has, once.
                    dev.hw.ring_cq_doorbell(self.handle | UAR_CQ_POLL);
                    polled_device = true;
                }
                Ok(None) => break,
                Err(_) => return Err("a kernel CQ's ring indexes are out of range"),
            }
        }
        Ok(())
    }

    /// Arms a kernel CQ (see [`rdma::Operations::req_notify_cq`]).
    pub(crate) fn req_notify(
        &self,
        dev: &rdma::Device<IbDev>,
        flags: rdma::NotifyFlags,
    ) -> Result<bool> {
        if !self.is_kernel() {
            return Err(EINVAL);
        }
        let arm = if flags.solicited_only() {
            UAR_CQ_ARM_SOL
        } else {
            UAR_CQ_ARM
        };
        if dev.hw.is_dead() {
            // Nothing arms a dead device: the flushes are the completions to report (see
            // `crate::dead`, which also calls the completion handlers while work is left).
            let mut unfinished = false;
            dev.for_each_qp(|qp| unfinished |= qp.has_unfinished(Some(self.handle)));
            return Ok(flags.report_missed_events() && unfinished);
        }
        let has_data = {
            let ring = self.kernel.lock();
            dev.hw.ring_cq_doorbell(self.handle | arm);
            match ring.as_ref() {
                Some(ring) if flags.report_missed_events() => ring.has_data(),
                _ => Ok(false),
            }
        };
        // After the ring's lock is dropped (as in `poll`).
        if has_data.is_err() {
            dev.hw
                .declare_dead("a kernel CQ's ring indexes are out of range");
        }
        has_data
    }

    /// Drops the completions of the QP with device handle `qp_handle` from a kernel CQ, so that
    /// they cannot be taken for completions of a later QP with the same handle.
    pub(crate) fn flush_qp(&self, dev: &rdma::Device<IbDev>, qp_handle: u32) {
        let broken = match self.kernel.lock().as_ref() {
            Some(ring) => ring.retain(|cqe| qp_handle_of(cqe) != qp_handle).is_err(),
            None => false,
        };
        // After the ring's lock is dropped: declaring the device dead takes the flusher's lock,
        // which is not to nest in a CQ's.
        if broken {
            dev.hw
                .declare_dead("a kernel CQ's ring indexes are out of range");
        }
    }
}

/// Destroys the device's CQ `handle` and gives its room back.
fn destroy_in_device(dev: &rdma::Device<IbDev>, handle: u32) {
    let cmd = CmdDestroyCq {
        cq_handle: handle,
        ..Default::default()
    };
    dev.hw
        .destroy_object::<_, crate::abi::RespNoop>(opcode_verbs::DESTROY_CQ, &cmd, "CQ", handle);
    dev.counts.cqs.release();
}
