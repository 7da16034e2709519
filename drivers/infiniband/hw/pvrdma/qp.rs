// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: RC, UD and GSI (QP1); user QPs (rings in pinned user memory, driven by the
//! provider library) and kernel QPs (rings in the driver's memory, driven by `post_send` and
//! `post_recv`).
//!
//! Layer: RDMA device.

use crate::{
    abi::PAGE_DIR_MAX_PAGES,
    abi::{self, *},
    convert::{qp_attr_from_pvrdma, qp_attr_to_pvrdma},
    device::IbDev,
    pdir::PageDir,
    wq::{Side, WorkQueue},
};
use core::{
    mem::size_of,
    sync::atomic::{AtomicU32, Ordering},
};
use kernel::{
    new_mutex, new_spinlock_irq,
    page::PAGE_SIZE,
    prelude::*,
    rdma::{
        self, QpAttrMask, QpCap, QpInitAttr, QpModifyAttr, QpQuery, QpState, QpType, ResEntry,
        TableIndex, UData, Umem, UserContext,
    },
    sync::{Mutex, MutexGuard, SpinLockIrq},
};

mod post;

pub(crate) use post::flush_unfinished;

/// The most inline data a user QP may ask for: what one send WQE could hold beside its header (a
/// WQE never straddles a page); a larger request is malformed and refused.
///
/// What a QP is granted is none, as with the C driver: the device has no inline data. It gathers
/// every send through its SGEs' lkeys (QEMU's model drops the INLINE flag) and rdma-core's
/// provider copies no data into the WQE, so an inline send from an unregistered buffer, which the
/// verbs allow, fails with a protection error (seen: `rdma_client`, which trusted a grant of 16
/// bytes). rdma-core's tools ask for inline data and use only what they are granted (rdma_client,
/// perftest, rsockets). Kernel QPs may ask for none: kernel consumers put CPU addresses in inline
/// SGEs, which the device would take for DMA addresses.
const MAX_USER_INLINE_REQUEST: u32 = (PAGE_SIZE - size_of::<SqWqeHdr>()) as u32;

/// Where a QP's rings live.
enum QpRings {
    /// In user memory (the provider library's send and receive buffers).
    User {
        pdir: PageDir,
        _send: Umem,
        _recv: Option<Umem>,
    },
    /// In the driver's memory: page 0 holds both ring states, then the send queue, then the
    /// receive queue (absent with an SRQ). The queues' state is the QP's `sq` and `rq`.
    Kernel { pdir: PageDir },
}

impl QpRings {
    /// Whether the rings are in the driver's memory (a kernel QP).
    fn is_kernel(&self) -> bool {
        matches!(self, QpRings::Kernel { .. })
    }

    /// The page directory the device reads both rings through.
    fn pdir(&self) -> &PageDir {
        match self {
            QpRings::User { pdir, .. } | QpRings::Kernel { pdir, .. } => pdir,
        }
    }
}

/// A QP: the device's handle and what the driver must remember of it.
#[pin_data]
pub(crate) struct Qp {
    handle: u32,
    qp_type: QpType,
    /// The state as the driver last set or saw it (C's `qp->state`, a [`QpState`]); changed
    /// under `modify`.
    state: AtomicU32,
    /// Serialises modify and query (C's `qp->mutex`).
    #[pin]
    modify: Mutex<()>,
    /// The Q_Key set with `modify_qp`, used for UD sends asking for it.
    qkey: AtomicU32,
    port: u32,
    cap: QpCap,
    /// The device's handles of the send and receive CQs.
    cqs: (u32, u32),
    rings: QpRings,
    /// A kernel QP's send queue, under its lock; `None` for a user QP. Inline (the QP is
    /// initialised in place), as is `rq`: a kernel QP costs no allocation for them.
    #[pin]
    sq: SpinLockIrq<Option<WorkQueue>>,
    /// A kernel QP's receive queue; `None` for a user QP and for a QP on an SRQ.
    #[pin]
    rq: SpinLockIrq<Option<WorkQueue>>,
}

impl TableIndex for Qp {
    fn table_index(&self) -> u32 {
        self.handle
    }
}

impl Qp {
    /// The driver's details of the QP in `rdma res show qp -dd`: the device's handles of it and
    /// its CQs, and where its rings are.
    pub(crate) fn fill_res(&self, entry: &mut ResEntry<'_>) -> Result {
        entry.put_u32(c"dev_handle", self.handle)?;
        entry.put_u32(c"send_cq_handle", self.cqs.0)?;
        entry.put_u32(c"recv_cq_handle", self.cqs.1)?;
        let rings = match self.rings {
            QpRings::User { .. } => c"user",
            QpRings::Kernel { .. } => c"kernel",
        };
        entry.put_str(c"rings", rings)?;
        entry.put_u64(c"ring_pages", self.rings.pdir().npages() as u64)
    }
}

/// The least memory a provider's ring of `wrs` work requests needs: headers of `hdr` bytes with
/// `sges` scatter/gather entries each (at least one), whatever rounding the provider adds.
/// The counts are bounded by the device's maxima before this is called.
pub(crate) fn user_ring_bytes(wrs: u32, hdr: usize, sges: u32) -> usize {
    wrs as usize * (hdr + size_of::<Sge>() * sges.max(1) as usize)
}

/// The queue sizes of a kernel QP, rounded up as the device needs, and the pages they take.
struct KernelSizes {
    cap: QpCap,
    sq_wqe_size: usize,
    rq_wqe_size: usize,
    /// Pages of the send side, the ring state page included.
    send_pages: usize,
    recv_pages: usize,
}

/// `req` must be within the device's maxima (checked by `Qp::new`).
fn kernel_sizes(req: &QpCap, srq: bool) -> Result<KernelSizes> {
    let pow2 = |n: u32| n.max(1).checked_next_power_of_two().ok_or(EINVAL);
    let sq_wr = pow2(req.max_send_wr)?;
    let sq_sge = pow2(req.max_send_sge)?;
    let sq_wqe_size =
        (size_of::<SqWqeHdr>() + size_of::<abi::Sge>() * sq_sge as usize).next_power_of_two();
    let (rq_wr, rq_sge) = if srq {
        (0, 0)
    } else {
        (pow2(req.max_recv_wr)?, pow2(req.max_recv_sge)?)
    };
    let rq_wqe_size =
        (size_of::<RqWqeHdr>() + size_of::<abi::Sge>() * rq_sge as usize).next_power_of_two();
    // A work queue entry never straddles two pages.
    if sq_wqe_size > PAGE_SIZE || rq_wqe_size > PAGE_SIZE {
        return Err(EINVAL);
    }
    let send_pages =
        QP_NUM_HEADER_PAGES as usize + (sq_wr as usize * sq_wqe_size).div_ceil(PAGE_SIZE);
    let recv_pages = (rq_wr as usize * rq_wqe_size).div_ceil(PAGE_SIZE);
    Ok(KernelSizes {
        cap: QpCap {
            max_send_wr: sq_wr,
            max_send_sge: sq_sge,
            max_recv_wr: rq_wr,
            max_recv_sge: rq_sge,
            max_inline_data: 0,
        },
        sq_wqe_size,
        rq_wqe_size,
        send_pages,
        recv_pages,
    })
}

impl Qp {
    /// Creates a QP (see [`rdma::Operations::create_qp`]).
    pub(crate) fn new(
        dev: &rdma::Device<IbDev>,
        pd: &rdma::Pd<IbDev>,
        attr: &mut QpInitAttr<IbDev>,
        _ctx: Option<&UserContext<IbDev>>,
        udata: Option<&mut UData>,
    ) -> Result<(impl PinInit<Qp>, u32)> {
        if attr.create_flags() != 0 {
            return Err(EOPNOTSUPP);
        }
        let qp_type = attr.qp_type();
        let type_code = match qp_type {
            QpType::Rc => abi::qp_type::RC,
            QpType::Ud => abi::qp_type::UD,
            QpType::Gsi => abi::qp_type::GSI,
            _ => return Err(EOPNOTSUPP),
        };
        let srq = attr.srq();
        if srq.is_some() && dev.caps.max_srq == 0 {
            return Err(EINVAL);
        }
        if qp_type == QpType::Gsi && attr.port_num() != crate::abi::PORT {
            return Err(EINVAL);
        }
        let (Some(send_cq), Some(recv_cq)) = (attr.send_cq(), attr.recv_cq()) else {
            return Err(EINVAL);
        };
        let reservation = dev.counts.qps.take(dev.caps.max_qp)?;
        let pdev = dev.parent();
        let mut cap = attr.cap();
        // Whoever sizes the rings (the provider or `kernel_sizes`), the device must take them.
        let caps = &dev.caps;
        let max_inline_request = if udata.is_some() {
            MAX_USER_INLINE_REQUEST
        } else {
            0
        };
        if cap.max_send_wr > caps.max_qp_wr
            || cap.max_recv_wr > caps.max_qp_wr
            || cap.max_send_sge > caps.max_sge
            || cap.max_recv_sge > caps.max_sge
            || cap.max_inline_data > max_inline_request
        {
            return Err(EINVAL);
        }
        // No inline data is granted (see `MAX_USER_INLINE_REQUEST`).
        cap.max_inline_data = 0;

        let (rings, sq, rq, total_pages, send_pages) = match &udata {
            Some(udata) => {
                let req: UserCreateQp = udata.read()?;
                // The ring state is at the start of the first page the device maps.
                if req.sbuf_addr % PAGE_SIZE as u64 != 0 || req.rbuf_addr % PAGE_SIZE as u64 != 0 {
                    return Err(EINVAL);
                }
                // Providers that know QP handles must have room for the reply that carries them.
                if dev.hw.version >= VERSION_QPHANDLE
                    && udata.out_len() < size_of::<UserCreateQpResp>()
                {
                    return Err(EOPNOTSUPP);
                }
                // The device writes the ring state (the consumer index) in the first page.
                const WRITABLE: rdma::Access = rdma::Access::LocalWrite;
                let recv = match srq {
                    None => Some(Umem::get(
                        dev,
                        udata,
                        req.rbuf_addr,
                        req.rbuf_size.into(),
                        WRITABLE.into(),
                    )?),
                    Some(_) => None,
                };
                let send = Umem::get(
                    dev,
                    udata,
                    req.sbuf_addr,
                    req.sbuf_size.into(),
                    WRITABLE.into(),
                )?;
                let send_pages = send.num_pages();
                // The device lays the rings out from the counts in the command, not from the
                // memory: rings too small for them would have it read and write past them.
                let sq_pages = QP_NUM_HEADER_PAGES as usize
                    + user_ring_bytes(cap.max_send_wr, size_of::<SqWqeHdr>(), cap.max_send_sge)
                        .div_ceil(PAGE_SIZE);
                let rq_pages =
                    user_ring_bytes(cap.max_recv_wr, size_of::<RqWqeHdr>(), cap.max_recv_sge)
                        .div_ceil(PAGE_SIZE);
                if send_pages < sq_pages || recv.as_ref().is_some_and(|r| r.num_pages() < rq_pages)
                {
                    return Err(EINVAL);
                }
                // The send ring's pages, then the receive ring's.
                let pdir = match &recv {
                    Some(recv) => PageDir::for_user(pdev, &dev.hw.pdirs, &[&send, recv])?,
                    None => PageDir::for_user(pdev, &dev.hw.pdirs, &[&send])?,
                };
                let total = pdir.npages();
                (
                    QpRings::User {
                        pdir,
                        _send: send,
                        _recv: recv,
                    },
                    None,
                    None,
                    total,
                    send_pages,
                )
            }
            None => {
                let sizes = kernel_sizes(&cap, srq.is_some())?;
                let total = sizes.send_pages + sizes.recv_pages;
                if total > PAGE_DIR_MAX_PAGES {
                    return Err(EINVAL);
                }
                let pdir = PageDir::new(pdev, &dev.hw.pdirs, total)?;
                let sq = WorkQueue::new(
                    Side::Send,
                    0,
                    QP_NUM_HEADER_PAGES as usize * PAGE_SIZE,
                    sizes.cap.max_send_wr,
                    sizes.cap.max_send_sge,
                    sizes.sq_wqe_size,
                    attr.sq_sig_all(),
                )?;
                let rq = if srq.is_none() {
                    let rq = WorkQueue::new(
                        Side::Recv,
                        size_of::<crate::abi::RingIndexes>(),
                        sizes.send_pages * PAGE_SIZE,
                        sizes.cap.max_recv_wr,
                        sizes.cap.max_recv_sge,
                        sizes.rq_wqe_size,
                        // Every receive is signaled.
                        true,
                    )?;
                    Some(rq)
                } else {
                    None
                };
                cap = sizes.cap;
                (
                    QpRings::Kernel { pdir },
                    Some(sq),
                    rq,
                    total,
                    sizes.send_pages,
                )
            }
        };
        if total_pages > PAGE_DIR_MAX_PAGES || send_pages < QP_NUM_HEADER_PAGES as usize {
            return Err(EINVAL);
        }

        let cmd = CmdCreateQp {
            pdir_dma: rings.pdir().dma_handle(),
            pd_handle: pd.handle,
            send_cq_handle: send_cq.handle,
            recv_cq_handle: recv_cq.handle,
            srq_handle: srq.map_or(0, |srq| srq.handle),
            max_send_wr: cap.max_send_wr,
            max_recv_wr: cap.max_recv_wr,
            max_send_sge: cap.max_send_sge,
            max_recv_sge: cap.max_recv_sge,
            max_inline_data: cap.max_inline_data,
            lkey: 0,
            access_flags: rdma::Access::LocalWrite as u32,
            total_chunks: u16::try_from(total_pages).map_err(|_| EINVAL)?,
            send_chunks: u16::try_from(send_pages - QP_NUM_HEADER_PAGES as usize)
                .map_err(|_| EINVAL)?,
            sq_sig_all: attr.sq_sig_all().into(),
            qp_type: type_code,
            is_srq: srq.is_some().into(),
            ..Default::default()
        };
        // Until the QP is set up: a handle the device gives it is not one whose old QP still has
        // completions in a CQ (see `IbDev::qp_handles`).
        let handles = dev.qp_handles.lock();
        let (qpn, handle) = if dev.hw.version >= VERSION_QPHANDLE {
            let resp: RespCreateQpV2 = dev.hw.command(opcode_verbs::CREATE_QP, &cmd)?;
            (resp.qpn, resp.qp_handle)
        } else {
            let resp: RespCreateQp = dev.hw.command(opcode_verbs::CREATE_QP, &cmd)?;
            (resp.qpn, resp.qpn)
        };
        let cqs = (send_cq.handle, recv_cq.handle);
        let port = attr.port_num();
        let kernel_rings = rings.is_kernel();
        // rdma-core's provider finds a user QP by the low 16 bits of its handle
        // (`qp_tbl[qpn & 0xffff]`): a handle beyond them would name another QP there.
        if handle > 0xffff {
            dev_warn!(
                dev.hw.dev(),
                "device gave a QP handle {:#x} beyond 16 bits\n",
                handle
            );
            // The room is given back by `destroy_locked`, once.
            reservation.keep();
            destroy_locked(dev, &handles, handle, cqs, kernel_rings);
            return Err(EIO);
        }
        // User QPs keep the sizes their provider chose, and no inline data.
        attr.set_cap(&cap);
        if let Some(udata) = udata {
            let reply = UserCreateQpResp {
                qpn,
                qp_handle: handle,
            };
            // Providers of devices before version 20 know only the QP number, which is then also
            // the handle: they get the part of the reply they have room for.
            if let Err(e) = udata.write_prefix(&reply) {
                // The room is given back by `destroy_locked`, once.
                reservation.keep();
                destroy_locked(dev, &handles, handle, cqs, kernel_rings);
                return Err(e);
            }
        }
        reservation.keep();
        // Nothing fails from here on: the device has the QP.
        let qp = pin_init!(Qp {
            handle,
            qp_type,
            state: AtomicU32::new(QpState::Reset.as_raw()),
            modify <- new_mutex!((), "pvrdma::Qp::modify"),
            qkey: AtomicU32::new(0),
            port,
            cap,
            cqs,
            rings,
            sq <- new_spinlock_irq!(sq, "pvrdma::Qp::sq"),
            rq <- new_spinlock_irq!(rq, "pvrdma::Qp::rq"),
        });
        Ok((qp, qpn))
    }

    /// Destroys a QP in the device; its memory goes when the abstraction drops it, after this.
    pub(crate) fn destroy(&self, dev: &rdma::Device<IbDev>) {
        destroy_in_device(dev, self.handle, self.cqs, self.rings.is_kernel());
    }

    /// The state as the driver last set or saw it.
    pub(crate) fn state(&self) -> QpState {
        // Only `QpState` values are stored.
        QpState::from_raw(self.state.load(Ordering::Relaxed)).unwrap_or(QpState::Err)
    }

    /// Modifies a QP (see [`rdma::Operations::modify_qp`]).
    pub(crate) fn modify(
        &self,
        dev: &rdma::Device<IbDev>,
        attr: &QpModifyAttr,
        attr_mask: QpAttrMask,
    ) -> Result {
        let _guard = self.modify.lock();
        let cur = attr.cur_qp_state.unwrap_or_else(|| self.state());
        let next = attr.qp_state.unwrap_or(cur);
        if !rdma::modify_qp_is_ok(cur, next, self.qp_type, attr_mask) {
            return Err(EINVAL);
        }
        if attr.port_num.is_some_and(|port| port != crate::abi::PORT)
            || attr.min_rnr_timer.is_some_and(|timer| timer > 31)
            || attr
                .pkey_index
                .is_some_and(|index| u32::from(index) >= u32::from(dev.caps.max_pkeys))
        {
            return Err(EINVAL);
        }
        check_attr_ranges(attr)?;
        if attr
            .max_dest_rd_atomic
            .is_some_and(|n| u32::from(n) > rd_atomic_limit(dev.caps.max_qp_rd_atom))
            || attr
                .max_rd_atomic
                .is_some_and(|n| u32::from(n) > rd_atomic_limit(dev.caps.max_qp_init_rd_atom))
        {
            return Err(EINVAL);
        }
        if let Some(qkey) = attr.qkey {
            self.qkey.store(qkey, Ordering::Relaxed);
        }
        if cur == next && cur == QpState::Reset {
            return Ok(());
        }
        let cmd = CmdModifyQp {
            qp_handle: self.handle,
            attr_mask: attr_mask.as_raw(),
            attrs: qp_attr_to_pvrdma(attr),
            ..Default::default()
        };
        // A dead device keeps no QP state: moving to ERR or RESET, which tears down rather than
        // sets up, succeeds without it, also when the device died during this very command
        // (consumers drain and destroy QPs after a fatal event, and the RDMA core warns when a
        // drain's move to ERR fails); anything else fails.
        let teardown = matches!(next, QpState::Err | QpState::Reset);
        if !(teardown && dev.hw.is_dead()) {
            let result = dev
                .hw
                .command::<_, crate::abi::RespNoop>(opcode_verbs::MODIFY_QP, &cmd);
            match result {
                Err(e) if !(teardown && dev.hw.is_dead()) => return Err(e),
                _ => {}
            }
        }
        self.state.store(next.as_raw(), Ordering::Relaxed);
        if next == QpState::Reset {
            // A QP back in RESET has no work: what it completed before must not be polled as
            // completions of the work posted after it is reused (C's `pvrdma_reset_qp`).
            flush_cqs(dev, self.handle, self.cqs, self.rings.is_kernel());
            reset_rings(self);
        }
        Ok(())
    }

    /// Queries a QP (see [`rdma::Operations::query_qp`]).
    pub(crate) fn query(
        &self,
        dev: &rdma::Device<IbDev>,
        attr_mask: QpAttrMask,
    ) -> Result<QpQuery> {
        let _guard = self.modify.lock();
        let mut q = QpQuery {
            init_cap: self.cap,
            ..Default::default()
        };
        if self.state() == QpState::Reset {
            q.attr.qp_state = QpState::Reset;
            q.attr.cap = self.cap;
            q.attr.port_num = self.port;
            return Ok(q);
        }
        let cmd = CmdQueryQp {
            qp_handle: self.handle,
            attr_mask: attr_mask.as_raw(),
            ..Default::default()
        };
        let resp: RespQueryQp = dev.hw.command(opcode_verbs::QUERY_QP, &cmd)?;
        q.attr = qp_attr_from_pvrdma(&resp.attrs);
        q.attr.cur_qp_state = q.attr.qp_state;
        // The capabilities are those the QP was created with, which nothing changes afterwards:
        // the driver's record, not the device's echo of them. Kernel consumers size their rings
        // by what this reports (SMC-R does, after RTR), and QEMU 7.2's model answers QUERY_QP
        // with its backend's `ibv_qp_attr` laid over the device's layout, which puts other
        // bytes where the capabilities are.
        q.attr.cap = self.cap;
        self.state
            .store(q.attr.qp_state.as_raw(), Ordering::Relaxed);
        Ok(q)
    }
}

/// Destroys the device's QP `handle` (whose CQs are `cqs`) and gives its room back.
fn destroy_in_device(dev: &rdma::Device<IbDev>, handle: u32, cqs: (u32, u32), kernel_rings: bool) {
    let handles = dev.qp_handles.lock();
    destroy_locked(dev, &handles, handle, cqs, kernel_rings);
}

/// [`destroy_in_device`], the QP handles' lock (`IbDev::qp_handles`) held: no QP is created in
/// the device, which could get `handle` again, before the completions of this one are dropped.
fn destroy_locked(
    dev: &rdma::Device<IbDev>,
    _handles: &MutexGuard<'_, ()>,
    handle: u32,
    cqs: (u32, u32),
    kernel_rings: bool,
) {
    let cmd = CmdDestroyQp {
        qp_handle: handle,
        ..Default::default()
    };
    dev.hw
        .destroy_object::<_, RespDestroyQp>(opcode_verbs::DESTROY_QP, &cmd, "QP", handle);
    // The device produces no more completions for the QP: drop those not polled yet.
    flush_cqs(dev, handle, cqs, kernel_rings);
    dev.counts.qps.release();
}

/// Drops the completions of QP `handle` that its CQs `cqs` hold and nobody polled, if the QP is a
/// kernel QP (rings in the driver's memory; a user QP's CQs are polled by its provider).
fn flush_cqs(dev: &rdma::Device<IbDev>, handle: u32, cqs: (u32, u32), kernel_rings: bool) {
    if kernel_rings {
        let (send, recv) = cqs;
        dev.with_cq(send, |cq| cq.flush_qp(dev, handle));
        if recv != send {
            dev.with_cq(recv, |cq| cq.flush_qp(dev, handle));
        }
    }
}

/// The most RDMA reads and atomics a QP may have outstanding (as responder or as initiator), given
/// the maximum the device reports. A reported 0 means QEMU 7.2's model, which leaves both maxima
/// unset in its capabilities yet programs a depth of 1 into every RC QP it creates
/// (`hw/rdma/rdma_backend.c`): 1 is what it honours, and refusing it would refuse every RC
/// connection (the C driver passes any depth to the device unchecked).
fn rd_atomic_limit(reported: u32) -> u32 {
    reported.max(1)
}

/// Checks the attributes whose range the IB spec fixes (the C driver passes them to the device
/// unchecked).
fn check_attr_ranges(attr: &QpModifyAttr) -> Result {
    let ok = attr
        .qp_access_flags
        .is_none_or(|flags| flags.as_raw() & !abi::access::ALL == 0)
        && attr
            .path_mtu
            .is_none_or(|mtu| (abi::mtu::MTU_256..=abi::mtu::MTU_4096).contains(&mtu))
        && attr.retry_cnt.is_none_or(|n| n <= 7)
        && attr.rnr_retry.is_none_or(|n| n <= 7)
        && attr.timeout.is_none_or(|t| t <= 31);
    if !ok {
        return Err(EINVAL);
    }
    Ok(())
}

/// Empties the rings of a kernel QP moved to RESET.
fn reset_rings(qp: &Qp) {
    if let QpRings::Kernel { pdir } = &qp.rings {
        for queue in [&qp.sq, &qp.rq] {
            if let Some(queue) = (*queue.lock()).as_mut() {
                queue.reset(pdir);
            }
        }
    }
}
