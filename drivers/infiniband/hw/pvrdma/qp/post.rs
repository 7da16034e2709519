// SPDX-License-Identifier: GPL-2.0

//! The kernel data path of a QP: posting work requests into its rings, and matching the
//! completions the device reports against what was posted.

use super::{Qp, QpRings};
use crate::{
    abi::{self, *},
    convert::wr_opcode_to_pvrdma,
    device::IbDev,
    pdir::PageDir,
    wq::{Completed, Side, WorkQueue},
};
use core::sync::atomic::Ordering;
use kernel::{
    prelude::*,
    rdma::{
        self, QpState, QpType, RecvWrs, SendFlag, SendWrs, WcOpcode, WcSink, WcStatus,
        WorkCompletion, WrOpcode,
    },
    sync::SpinLockIrq,
};

impl Qp {
    /// Posts send work requests to a kernel QP (see [`rdma::Operations::post_send`]).
    pub(crate) fn post_send(&self, dev: &rdma::Device<IbDev>, wrs: SendWrs<'_, IbDev>) -> Result {
        let QpRings::Kernel { pdir } = &self.rings else {
            return Err(EINVAL);
        };
        // Below RTS a send can only fail; from RTS on the device judges.
        if !self.state().may_send() {
            return Err(EINVAL);
        }
        post_all(
            dev,
            self,
            UAR_QP_SEND,
            pdir,
            &self.sq,
            wrs,
            |ring, pdir, wr, dead| {
                let hdr = send_wqe(self, &wr)?;
                let signaled = wr.send_flags().contains(SendFlag::Signaled);
                let sges = wr.sges();
                // The ID is taken (the request posted) once the queue has accepted the request.
                let take_id = || wr.into_wr_id();
                if dead {
                    return ring.push_unsent::<SqWqeHdr>(take_id, signaled, sges);
                }
                ring.push(pdir, take_id, signaled, hdr, sges)
            },
        )
    }

    /// Posts receive work requests to a kernel QP (see [`rdma::Operations::post_recv`]).
    pub(crate) fn post_recv(&self, dev: &rdma::Device<IbDev>, wrs: RecvWrs<'_>) -> Result {
        // A QP on an SRQ has no receive queue of its own (`post_all` refuses it).
        let QpRings::Kernel { pdir } = &self.rings else {
            return Err(EINVAL);
        };
        if self.state() == QpState::Reset {
            return Err(EINVAL);
        }
        post_all(
            dev,
            self,
            UAR_QP_RECV,
            pdir,
            &self.rq,
            wrs,
            |ring, pdir, wr, dead| {
                let hdr = RqWqeHdr {
                    // Set by `WorkQueue::push`.
                    wr_id: 0,
                    num_sge: u32::try_from(wr.num_sge()).map_err(|_| EINVAL)?,
                    total_len: 0,
                };
                // Every receive is signaled.
                let sges = wr.sges();
                let take_id = || wr.into_wr_id();
                if dead {
                    return ring.push_unsent::<RqWqeHdr>(take_id, true, sges);
                }
                ring.push(pdir, take_id, true, hdr, sges)
            },
        )
    }

    /// What the completion `cqe` that kernel CQ `cq_handle` holds for `qp` completes, after
    /// checking the device's claims: the completion names a queue of the QP that uses this CQ,
    /// and work of it the device may report (see `crate::wq`). `None` for a completion the QP
    /// cannot have.
    pub(crate) fn completed_work(&self, cq_handle: u32, cqe: &Cqe) -> Option<Completed> {
        let (side, seq) = Side::of_device_wr_id(cqe.wr_id)?;
        let (queue, cq) = match side {
            Side::Send => (&self.sq, self.cqs.0),
            Side::Recv => (&self.rq, self.cqs.1),
        };
        if cq != cq_handle {
            return None;
        }
        // A user QP has no queues here: its completions are not the driver's to read.
        (*queue.lock()).as_mut()?.complete(seq)
    }
}

/// Writes one entry per work request into `queue` (with `push`) until one fails, then rings the
/// QP's doorbell once with `doorbell`, so the device sees every entry written before the failure.
/// A QP without that queue (a user QP, or a receive on an SRQ's QP) is refused with `EINVAL`.
/// `push` takes a request's ID only if it accepts the request (it fails before otherwise): the
/// consumer is told that the requests before the one that failed were posted.
///
/// On a dead device (`push`'s last argument) the work requests are checked as usual but only
/// recorded, and no doorbell rings: they are completed as flushed (see `crate::dead`), which is
/// what consumers wait for, a drain's marker among them.
fn post_all<W>(
    dev: &rdma::Device<IbDev>,
    qp: &Qp,
    doorbell: u32,
    pdir: &PageDir,
    queue: &SpinLockIrq<Option<WorkQueue>>,
    wrs: impl Iterator<Item = W>,
    mut push: impl FnMut(&mut WorkQueue, &PageDir, W, bool) -> Result,
) -> Result {
    let dead = dev.hw.is_dead();
    let mut guard = queue.lock();
    let Some(ring) = (*guard).as_mut() else {
        return Err(EINVAL);
    };
    let mut result = Ok(());
    for wr in wrs {
        if let Err(error) = push(ring, pdir, wr, dead) {
            result = Err(error);
            break;
        }
    }
    drop(guard);
    if !dead {
        dev.hw.ring_qp_doorbell(doorbell | qp.handle);
    }
    result
}

/// Completes the outstanding work of kernel QP `qp` that went to kernel CQ `cq_handle` with
/// `WR_FLUSH_ERR`, as far as `sink` has room: a dead device completes nothing (see
/// `crate::dead`). Only the `wr_id`, the status and the QP mean anything in a flushed
/// completion (the opcode tells receives from sends).
pub(crate) fn flush_unfinished(qp: &rdma::Qp<IbDev>, cq_handle: u32, sink: &mut WcSink<'_, IbDev>) {
    let queues = [
        (&qp.sq, qp.cqs.0, WcOpcode::Send),
        (&qp.rq, qp.cqs.1, WcOpcode::Recv),
    ];
    for (queue, cq, opcode) in queues {
        if cq != cq_handle {
            continue;
        }
        let mut guard = queue.lock();
        // A user QP has none (its work is the provider's), nor has a QP on an SRQ a receive queue.
        let Some(queue) = (*guard).as_mut() else {
            continue;
        };
        while sink.has_room() {
            let Some(wr_id) = queue.take_unfinished() else {
                break;
            };
            let wc = WorkCompletion {
                port_num: PORT,
                ..WorkCompletion::new(wr_id, WcStatus::WrFlushErr, opcode)
            };
            sink.push_for(qp, wc);
        }
    }
}

impl Qp {
    /// Whether this kernel QP has outstanding work that a flush would complete on kernel CQ
    /// `cq_handle` (on any CQ with `None`).
    pub(crate) fn has_unfinished(&self, cq_handle: Option<u32>) -> bool {
        let on = |cq: u32| cq_handle.is_none_or(|h| h == cq);
        let unfinished = |queue: &SpinLockIrq<Option<WorkQueue>>| {
            queue.lock().as_ref().is_some_and(|q| q.has_unfinished())
        };
        (on(self.cqs.0) && unfinished(&self.sq)) || (on(self.cqs.1) && unfinished(&self.rq))
    }
}

/// Builds the device's send WQE header for `wr`.
fn send_wqe(qp: &Qp, wr: &rdma::SendWr<'_, IbDev>) -> Result<SqWqeHdr> {
    // No QP is granted inline data (`MAX_USER_INLINE_REQUEST`): a kernel QP's SGEs would hold CPU
    // addresses the device takes for DMA addresses.
    if wr.send_flags().contains(SendFlag::Inline) {
        return Err(EINVAL);
    }
    let opcode = wr.opcode().ok_or(EINVAL)?;
    let dev_opcode = wr_opcode_to_pvrdma(opcode);
    let num_sge = u32::try_from(wr.num_sge()).map_err(|_| EINVAL)?;
    // The `wr_id` the device sees is set by `WorkQueue::push`.
    let mut hdr = SqWqeHdr {
        num_sge,
        opcode: dev_opcode,
        send_flags: u32::from(wr.send_flags()) & abi::send_flags::ALL,
        ..Default::default()
    };
    use WrOpcode as Op;
    if opcode.has_imm() {
        hdr.ex = wr.ex();
    }
    match qp.qp_type {
        QpType::Ud | QpType::Gsi => {
            if !matches!(opcode, Op::Send | Op::SendWithImm) {
                return Err(EINVAL);
            }
            let ud = wr.ud().ok_or(EINVAL)?;
            // A Q_Key with the high bit set means "the QP's own".
            let qkey = if ud.remote_qkey & 0x8000_0000 != 0 {
                qp.qkey.load(Ordering::Relaxed)
            } else {
                ud.remote_qkey
            };
            hdr.wr = SqWrUd {
                remote_qpn: ud.remote_qpn,
                remote_qkey: qkey,
                av: ud.ah.av,
            }
            .into();
        }
        QpType::Rc => match opcode {
            Op::RdmaRead | Op::RdmaWrite | Op::RdmaWriteWithImm => {
                let r = wr.rdma().ok_or(EINVAL)?;
                hdr.wr = SqWrRdma {
                    remote_addr: r.remote_addr,
                    rkey: r.rkey,
                    ..Default::default()
                }
                .into();
            }
            Op::LocalInv | Op::SendWithInv => hdr.ex = wr.ex(),
            Op::RegMr => {
                let reg = wr.reg().ok_or(EINVAL)?;
                hdr.wr = crate::mr::Mr::fast_reg_wr(reg.mr, reg.key, reg.access)?.into();
            }
            Op::Send | Op::SendWithImm => {}
            Op::AtomicCmpAndSwp | Op::AtomicFetchAndAdd => {
                let a = wr.atomic().ok_or(EINVAL)?;
                hdr.wr = SqWrAtomic {
                    remote_addr: a.remote_addr,
                    compare_add: a.compare_add,
                    swap: a.swap,
                    rkey: a.rkey,
                    ..Default::default()
                }
                .into();
            }
        },
        _ => return Err(EINVAL),
    }
    Ok(hdr)
}
