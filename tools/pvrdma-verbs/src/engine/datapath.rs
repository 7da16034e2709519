// SPDX-License-Identifier: GPL-2.0-only
//! The data path: posting work and executing it between QPs.
//!
//! Posted sends wait in their QP's send queue and execute in order while
//! the QP is in RTS. An RC send whose responder has no receive posted stays
//! at the head of the queue (RNR wait) and executes when a receive arrives:
//! `rnr_retry` is not counted, every RNR wait is infinite (as with
//! `rnr_retry` = 7). An RC send nobody answers also stays at the head,
//! retransmitting, until its retry deadline passes (see [`super::retry`]).
//! Receives wait in their RQ or SRQ.

use super::fast_reg;
use super::grh;
use super::limits::{mtu_bytes, MAX_INLINE_DATA, MAX_MSG_SZ, PORT_MTU};
use super::memory::ScatterError;
use super::retry;
use super::route::Route;
use super::wqe::{vendor_err, Completion, Payload, RecvWqe, SendWqe, UdDest};
use super::{Engine, Key};
use crate::ffi;
use pvrdma_fabric::Gid;
use std::time::Instant;

/// A UD send's target as posted: AH pointer, remote QPN and Q_Key.
#[derive(Clone, Copy, Debug)]
pub struct UdTarget {
    /// The AH.
    pub ah: Key,
    /// Destination QP number.
    pub remote_qpn: u32,
    /// Q_Key.
    pub remote_qkey: u32,
}

/// The bytes of a GRH, as a UD receive buffer holds them.
pub const GRH_LEN: usize = 40;

/// The sending QP's state an execution needs.
pub(super) struct Sender {
    pub(super) qpn: u32,
    pub(super) pd: Key,
    pub(super) attr: ffi::ibv_qp_attr,
}

/// How a send ended for the requester.
pub(super) struct Outcome {
    pub(super) status: u32,
    pub(super) vendor_err: u32,
    pub(super) byte_len: u32,
}

/// What the responder of an RC request answers (in-process, or in a packet
/// to the requester's process).
pub(super) enum Answer {
    /// Executed.
    Ack,
    /// An RDMA READ's data.
    ReadData(Vec<u8>),
    /// No receive posted: the requester waits and tries again.
    Rnr,
    /// Refused: the requester's completion status and vendor error.
    Nak(u32, u32),
}

/// An RC request as the responder executes it.
pub(super) struct RcRequest<'a> {
    pub(super) src_qpn: u32,
    pub(super) sl: u8,
    /// `IBV_WR_*`.
    pub(super) opcode: u32,
    /// SEND and RDMA WRITE data.
    pub(super) data: &'a [u8],
    /// Message length (an RDMA READ's: bytes asked for).
    pub(super) len: u64,
    pub(super) imm: Option<u32>,
    /// SEND_WITH_INV: the responder's key to invalidate.
    pub(super) invalidate: Option<u32>,
    pub(super) solicited: bool,
    pub(super) rkey: u32,
    pub(super) remote_addr: u64,
}

pub(super) fn ok(len: u64) -> Option<Outcome> {
    Some(Outcome {
        status: ffi::IBV_WC_SUCCESS,
        vendor_err: 0,
        byte_len: len as u32,
    })
}

pub(super) fn fail(status: u32, vendor_err: u32) -> Option<Outcome> {
    Some(Outcome {
        status,
        vendor_err,
        byte_len: 0,
    })
}

/// The raw bytes of a GID union.
pub fn gid_bytes(g: &ffi::ibv_gid) -> Gid {
    // SAFETY: both union variants are plain bytes of the same size.
    unsafe { g.raw }
}

pub(super) fn has_imm(opcode: u32) -> bool {
    matches!(
        opcode,
        ffi::IBV_WR_SEND_WITH_IMM | ffi::IBV_WR_RDMA_WRITE_WITH_IMM
    )
}

/// A UD datagram on its way: where it comes from and goes, and what its
/// receiver's GRH and completion say.
#[derive(Clone, Copy, Debug)]
pub(super) struct Datagram {
    /// The sending QP.
    pub(super) src_qpn: u32,
    /// The sender's GID.
    pub(super) sgid: Gid,
    /// The destination: GID, QP, GRH fields, service level.
    pub(super) dest: UdDest,
    /// The Q_Key it carries (the sender's own if the WR asked for that).
    pub(super) qkey: u32,
    /// Its immediate data.
    pub(super) imm: Option<u32>,
    /// Whether it asks for a solicited event.
    pub(super) solicited: bool,
}

/// How an RC request that nobody answered ends.
pub(super) fn retry_exceeded() -> Outcome {
    Outcome {
        status: ffi::IBV_WC_RETRY_EXC_ERR,
        vendor_err: vendor_err::NO_RESPONDER,
        byte_len: 0,
    }
}

/// An RC request got no answer (`o` is its retry-exceeded outcome): the
/// first time, start its retry deadline and wait; after the deadline, fail.
pub(super) fn unanswered(me: &Sender, w: &mut SendWqe, o: Outcome) -> Option<Outcome> {
    let now = Instant::now();
    match w.retry_deadline {
        Some(at) if now >= at => Some(o),
        Some(_) => None,
        None => {
            let wait = retry::retry_wait(me.attr.timeout, me.attr.retry_cnt);
            let at = now + wait;
            w.retry_deadline = Some(at);
            retry::schedule(at);
            crate::log::vlog!(
                "rc_retry",
                "qp_num={:#x} wr_id={:#x} dest_qp_num={:#x}: no responder, error in {wait:?}",
                me.qpn,
                w.wr_id,
                me.attr.dest_qp_num
            );
            None
        }
    }
}

impl Engine {
    /// Posts one send WR (`ibv_post_send` calls this per WR, in order).
    pub fn post_send_one(
        &mut self,
        qp: Key,
        mut w: SendWqe,
        num_sge: usize,
        ud: Option<UdTarget>,
    ) -> Result<(), i32> {
        let q = self.qps.get(&qp).ok_or(libc::EINVAL)?;
        if !matches!(
            q.state,
            ffi::IBV_QPS_RTS | ffi::IBV_QPS_SQD | ffi::IBV_QPS_SQE | ffi::IBV_QPS_ERR
        ) {
            return Err(libc::EINVAL);
        }
        let opcode_ok = match q.qp_type {
            _ if fast_reg::is_local(w.opcode) => w.opcode != fast_reg::WR_REG_MR || w.reg.is_some(),
            ffi::IBV_QPT_UD => matches!(w.opcode, ffi::IBV_WR_SEND | ffi::IBV_WR_SEND_WITH_IMM),
            _ => matches!(
                w.opcode,
                ffi::IBV_WR_SEND
                    | ffi::IBV_WR_SEND_WITH_IMM
                    | ffi::IBV_WR_SEND_WITH_INV
                    | ffi::IBV_WR_RDMA_WRITE
                    | ffi::IBV_WR_RDMA_WRITE_WITH_IMM
                    | ffi::IBV_WR_RDMA_READ
            ),
        };
        if !opcode_ok {
            return Err(libc::EINVAL);
        }
        match &w.payload {
            Payload::Inline(d)
                if d.len() as u64 > u64::from(q.cap.max_inline_data.min(MAX_INLINE_DATA)) =>
            {
                return Err(libc::EINVAL)
            }
            _ if num_sge > q.cap.max_send_sge as usize => return Err(libc::EINVAL),
            _ => {}
        }
        if q.sq.len() >= q.cap.max_send_wr as usize {
            return Err(libc::ENOMEM);
        }
        if q.qp_type == ffi::IBV_QPT_UD {
            let t = ud.ok_or(libc::EINVAL)?;
            // Any live AH of this device will do, whatever its PD: QEMU
            // shares one AH per destination GID between the QPs of all
            // PDs, and mlx4/mlx5 do not compare the PDs either.
            let ah = self.ahs.get(&t.ah).ok_or(libc::EINVAL)?;
            let g = &ah.attr.grh;
            w.ud = Some(UdDest {
                dgid: gid_bytes(&g.dgid),
                sgid_index: g.sgid_index,
                hop_limit: g.hop_limit,
                traffic_class: g.traffic_class,
                flow_label: g.flow_label,
                sl: ah.attr.sl,
                remote_qpn: t.remote_qpn & super::qp::QPN_MASK,
                remote_qkey: t.remote_qkey,
            });
        }
        w.signaled |= q.sq_sig_all;
        let flush = matches!(q.state, ffi::IBV_QPS_SQE | ffi::IBV_QPS_ERR);
        if let Some(q) = self.qps.get_mut(&qp) {
            q.sq.push_back(w);
        }
        if flush {
            self.flush_sq(qp);
        }
        Ok(())
    }

    /// Posts one receive WR to a QP's own receive queue.
    pub fn post_recv_one(&mut self, qp: Key, w: RecvWqe) -> Result<(), i32> {
        let q = self.qps.get_mut(&qp).ok_or(libc::EINVAL)?;
        if q.state == ffi::IBV_QPS_RESET
            || q.srq.is_some()
            || w.sges.len() > q.cap.max_recv_sge as usize
        {
            return Err(libc::EINVAL);
        }
        if q.rq.len() >= q.cap.max_recv_wr as usize {
            return Err(libc::ENOMEM);
        }
        let flush = q.state == ffi::IBV_QPS_ERR;
        q.rq.push_back(w);
        if flush {
            self.flush_rq(qp);
        }
        Ok(())
    }

    /// Posts one receive WR to an SRQ.
    pub fn post_srq_recv_one(&mut self, srq: Key, w: RecvWqe) -> Result<(), i32> {
        let s = self.srqs.get_mut(&srq).ok_or(libc::EINVAL)?;
        if w.sges.len() > s.max_sge as usize {
            return Err(libc::EINVAL);
        }
        if s.rq.len() >= s.max_wr as usize {
            return Err(libc::ENOMEM);
        }
        s.rq.push_back(w);
        Ok(())
    }

    /// Executes whatever posted work can execute, then settles CQ
    /// overflows. Called after every post and every QP state change.
    pub fn progress(&mut self) {
        loop {
            loop {
                let ready: Vec<Key> = self
                    .qps
                    .iter()
                    .filter(|(_, q)| q.state == ffi::IBV_QPS_RTS && !q.sq.is_empty())
                    .map(|(k, _)| *k)
                    .collect();
                let mut moved = false;
                for k in ready {
                    while self.step(k) {
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
            if self.pending_errors.is_empty() {
                break;
            }
            self.settle();
        }
    }

    /// Executes the head of `s`'s send queue; false if there is none or it
    /// must wait.
    fn step(&mut self, s: Key) -> bool {
        let Some(q) = self.qps.get_mut(&s) else {
            return false;
        };
        if q.state != ffi::IBV_QPS_RTS {
            return false;
        }
        let Some(mut w) = q.sq.pop_front() else {
            return false;
        };
        let me = Sender {
            qpn: q.qpn,
            pd: q.pd,
            attr: q.attr,
        };
        let rc = q.qp_type == ffi::IBV_QPT_RC;
        if fast_reg::is_local(w.opcode) {
            // At the head, so nothing posted before it is outstanding.
            if let Some(o) = self.exec_local(&me, &w) {
                self.finish_send(s, &w, o);
            }
            return true;
        }
        if rc && self.rc_is_remote(&me) {
            // The queue stays whole: its WRs leave in a window and complete
            // as their answers come.
            if let Some(q) = self.qps.get_mut(&s) {
                q.sq.push_front(w);
            }
            return self.pump_remote(s, &me);
        }
        let outcome = if rc {
            match self.exec_rc(&me, &w) {
                Some(o) if o.vendor_err == vendor_err::NO_RESPONDER => unanswered(&me, &mut w, o),
                other => other,
            }
        } else {
            self.exec_ud(&me, &w)
        };
        let Some(o) = outcome else {
            // RNR or retransmitting: wait at the head of the queue.
            if let Some(q) = self.qps.get_mut(&s) {
                q.sq.push_front(w);
            }
            return false;
        };
        self.finish_send(s, &w, o);
        true
    }

    /// Completes send WR `w` of QP `s` (already off its queue) with
    /// outcome `o`; a failed WR sends an RC QP to the error state, a UD QP
    /// to SQE.
    pub(super) fn finish_send(&mut self, s: Key, w: &SendWqe, o: Outcome) {
        let Some(q) = self.qps.get(&s) else {
            return;
        };
        let (qpn, rc, send_cq) = (q.qpn, q.qp_type == ffi::IBV_QPT_RC, q.send_cq);
        let success = o.status == ffi::IBV_WC_SUCCESS;
        if !success || w.signaled {
            let c = Completion {
                wr_id: w.wr_id,
                status: o.status,
                opcode: w.wc_opcode(),
                vendor_err: o.vendor_err,
                byte_len: o.byte_len,
                qp_num: qpn,
                solicited: !success,
                ..Default::default()
            };
            self.complete(send_cq, s, c);
        }
        if !success {
            if rc {
                self.qp_to_error(s);
            } else {
                self.qp_to_sqe(s);
            }
        }
    }

    /// Takes the next receive of QP `dst` (from its SRQ if it has one),
    /// with the PD its buffers must belong to.
    fn take_receive(&mut self, dst: Key) -> Option<(RecvWqe, Key)> {
        let q = self.qps.get_mut(&dst)?;
        match q.srq {
            Some(srq) => {
                let s = self.srqs.get_mut(&srq)?;
                s.pop().map(|w| (w, s.pd))
            }
            None => q.rq.pop_front().map(|w| (w, q.pd)),
        }
    }

    pub(super) fn has_receive(&self, dst: Key) -> bool {
        match self.qps.get(&dst) {
            Some(q) => match q.srq {
                Some(srq) => self.srqs.get(&srq).is_some_and(|s| !s.rq.is_empty()),
                None => !q.rq.is_empty(),
            },
            None => false,
        }
    }

    /// Delivers `data` into the next receive of `dst`, completing it; on a
    /// receive-side error the receive completes in error and `dst` enters
    /// the error state. Returns the scatter result, `None` if no receive.
    pub(super) fn deliver_receive(
        &mut self,
        dst: Key,
        data: &[u8],
        c: Completion,
    ) -> Option<Result<(), ScatterError>> {
        let (recv, pd) = self.take_receive(dst)?;
        let recv_cq = self.qps.get(&dst)?.recv_cq;
        let result = self.mrs.scatter(&recv.sges, pd, data);
        let mut c = Completion {
            wr_id: recv.wr_id,
            ..c
        };
        match result {
            Ok(()) => self.complete(recv_cq, dst, c),
            Err(e) => {
                (c.status, c.vendor_err) = match e {
                    ScatterError::TooSmall => (ffi::IBV_WC_LOC_LEN_ERR, vendor_err::RECV_TOO_SMALL),
                    ScatterError::Mem(m) => (ffi::IBV_WC_LOC_PROT_ERR, m.vendor_err()),
                };
                (c.byte_len, c.wc_flags, c.solicited) = (0, 0, true);
                self.complete(recv_cq, dst, c);
                self.qp_to_error(dst);
            }
        }
        Some(result)
    }

    /// The connected responder of RC sender `me` in this process, or the
    /// requester's error.
    fn rc_peer(&self, me: &Sender) -> Result<Key, Option<Outcome>> {
        let sgid = self.gids.valid(usize::from(me.attr.ah_attr.grh.sgid_index));
        let dst = self.qp_by_num.get(&me.attr.dest_qp_num).copied();
        let connected = dst.and_then(|d| self.qps.get(&d)).is_some_and(|d| {
            d.qp_type == ffi::IBV_QPT_RC
                && d.can_receive()
                && d.attr.dest_qp_num == me.qpn
                && Some(gid_bytes(&d.attr.ah_attr.grh.dgid)) == sgid
        });
        match dst {
            Some(d) if connected => Ok(d),
            // The responder drops what is not from its connected peer: the
            // requester times out and exhausts its retries.
            _ => Err(Some(retry_exceeded())),
        }
    }

    fn exec_rc(&mut self, me: &Sender, w: &SendWqe) -> Option<Outcome> {
        let (len, data) = match self.request_data(me, w, u64::from(MAX_MSG_SZ)) {
            Ok(r) => r,
            Err(o) => return o,
        };
        let dst = match self.rc_peer(me) {
            Ok(d) => d,
            Err(outcome) => return outcome,
        };
        let req = RcRequest {
            src_qpn: me.qpn,
            sl: me.attr.ah_attr.sl,
            opcode: w.opcode,
            data: &data,
            len,
            imm: has_imm(w.opcode).then_some(w.imm_data),
            invalidate: (w.opcode == ffi::IBV_WR_SEND_WITH_INV).then_some(w.imm_data),
            solicited: w.solicited,
            rkey: w.rkey,
            remote_addr: w.remote_addr,
        };
        match self.respond_rc(dst, &req) {
            Answer::Ack => ok(len),
            Answer::ReadData(bytes) => self.read_response(me, w, &bytes),
            Answer::Rnr => None,
            Answer::Nak(status, vendor_err) => fail(status, vendor_err),
        }
    }

    /// An RC request's length (at most `max_len`) and the bytes it carries
    /// (none for an RDMA READ, whose local buffers are checked instead), or
    /// the requester's local error.
    pub(super) fn request_data(
        &self,
        me: &Sender,
        w: &SendWqe,
        max_len: u64,
    ) -> Result<(u64, Vec<u8>), Option<Outcome>> {
        let len = w.payload.byte_len();
        if len > max_len {
            return Err(fail(ffi::IBV_WC_LOC_LEN_ERR, vendor_err::MSG_TOO_LONG));
        }
        if w.opcode == ffi::IBV_WR_RDMA_READ {
            if let Payload::Sges(s) = &w.payload {
                if let Err(e) = self.mrs.check_writable(s, me.pd) {
                    return Err(fail(ffi::IBV_WC_LOC_PROT_ERR, e.vendor_err()));
                }
            }
            return Ok((len, Vec::new()));
        }
        self.mrs
            .gather(&w.payload, me.pd)
            .map(|data| (len, data))
            .map_err(|e| fail(ffi::IBV_WC_LOC_PROT_ERR, e.vendor_err()))
    }

    /// Scatters an RDMA READ's response into the requester's buffers.
    pub(super) fn read_response(&self, me: &Sender, w: &SendWqe, bytes: &[u8]) -> Option<Outcome> {
        let Payload::Sges(sges) = &w.payload else {
            return fail(ffi::IBV_WC_LOC_QP_OP_ERR, 0);
        };
        match self.mrs.scatter(sges, me.pd, bytes) {
            Ok(()) => ok(bytes.len() as u64),
            Err(_) => fail(ffi::IBV_WC_LOC_PROT_ERR, vendor_err::BOUNDS),
        }
    }

    /// Executes RC request `req` at its connected responder QP `dst`.
    pub(super) fn respond_rc(&mut self, dst: Key, req: &RcRequest<'_>) -> Answer {
        let Some(d) = self.qps.get(&dst) else {
            return Answer::Nak(ffi::IBV_WC_REM_OP_ERR, vendor_err::RESPONDER_ERROR);
        };
        let (dst_qpn, dst_pd, dst_access) = (d.qpn, d.pd, d.attr.qp_access_flags);
        let recv = Completion {
            opcode: ffi::IBV_WC_RECV,
            byte_len: req.len as u32,
            imm_data: req.imm.unwrap_or(0),
            qp_num: dst_qpn,
            src_qp: req.src_qpn,
            wc_flags: if req.imm.is_some() {
                ffi::IBV_WC_WITH_IMM
            } else {
                0
            },
            sl: req.sl,
            solicited: req.solicited,
            ..Default::default()
        };
        let remote_access = |access: u32| {
            if dst_access & access == 0 {
                return Err(Answer::Nak(ffi::IBV_WC_REM_ACCESS_ERR, vendor_err::ACCESS));
            }
            Ok(access)
        };
        match req.opcode {
            ffi::IBV_WR_SEND | ffi::IBV_WR_SEND_WITH_IMM | ffi::IBV_WR_SEND_WITH_INV => {
                let mut recv = recv;
                if let Some(key) = req.invalidate {
                    // Invalidated as the message is delivered: not before a
                    // receive is there for it (an RNR NAK changes nothing).
                    if !self.has_receive(dst) {
                        return Answer::Rnr;
                    }
                    if let Err(e) = self.mrs.invalidate(dst_pd, key) {
                        return Answer::Nak(ffi::IBV_WC_REM_INV_REQ_ERR, e.vendor_err());
                    }
                    (recv.wc_flags, recv.imm_data) = (ffi::IBV_WC_WITH_INV, key);
                }
                match self.deliver_receive(dst, req.data, recv) {
                    None => Answer::Rnr,
                    Some(Ok(())) => Answer::Ack,
                    Some(Err(ScatterError::TooSmall)) => {
                        Answer::Nak(ffi::IBV_WC_REM_INV_REQ_ERR, vendor_err::RESPONDER_ERROR)
                    }
                    Some(Err(ScatterError::Mem(_))) => {
                        Answer::Nak(ffi::IBV_WC_REM_OP_ERR, vendor_err::RESPONDER_ERROR)
                    }
                }
            }
            ffi::IBV_WR_RDMA_WRITE | ffi::IBV_WR_RDMA_WRITE_WITH_IMM => {
                let access = match remote_access(ffi::IBV_ACCESS_REMOTE_WRITE) {
                    Ok(a) => a,
                    Err(nak) => return nak,
                };
                let (rkey, addr) = (req.rkey, req.remote_addr);
                if let Err(e) = self.mrs.check_remote(rkey, dst_pd, addr, req.len, access) {
                    return Answer::Nak(ffi::IBV_WC_REM_ACCESS_ERR, e.vendor_err());
                }
                if req.imm.is_some() && !self.has_receive(dst) {
                    return Answer::Rnr;
                }
                self.mrs.write_remote(rkey, addr, req.data);
                if req.imm.is_some() {
                    let c = Completion {
                        opcode: ffi::IBV_WC_RECV_RDMA_WITH_IMM,
                        ..recv
                    };
                    // No scatter: the data went to the remote address.
                    let _ = self.deliver_receive(dst, &[], c);
                }
                Answer::Ack
            }
            ffi::IBV_WR_RDMA_READ => {
                let access = match remote_access(ffi::IBV_ACCESS_REMOTE_READ) {
                    Ok(a) => a,
                    Err(nak) => return nak,
                };
                let (rkey, addr) = (req.rkey, req.remote_addr);
                if let Err(e) = self.mrs.check_remote(rkey, dst_pd, addr, req.len, access) {
                    return Answer::Nak(ffi::IBV_WC_REM_ACCESS_ERR, e.vendor_err());
                }
                let data = self.mrs.read_remote(rkey, addr, req.len);
                crate::log::vlog!(
                    "rdma_read",
                    "rkey={rkey:#x} addr={addr:#x} len={} first={:02x?}",
                    req.len,
                    &data[..data.len().min(16)]
                );
                Answer::ReadData(data)
            }
            _ => Answer::Nak(ffi::IBV_WC_REM_INV_REQ_ERR, vendor_err::RESPONDER_ERROR),
        }
    }

    fn exec_ud(&mut self, me: &Sender, w: &SendWqe) -> Option<Outcome> {
        let Some(ud) = w.ud else {
            return fail(ffi::IBV_WC_LOC_QP_OP_ERR, 0);
        };
        let len = w.payload.byte_len();
        if len > u64::from(mtu_bytes(PORT_MTU).unwrap_or(0)) {
            return fail(ffi::IBV_WC_LOC_LEN_ERR, vendor_err::MSG_TOO_LONG);
        }
        let data = match self.mrs.gather(&w.payload, me.pd) {
            Ok(d) => d,
            Err(e) => return fail(ffi::IBV_WC_LOC_PROT_ERR, e.vendor_err()),
        };
        let qkey = if ud.remote_qkey & 0x8000_0000 != 0 {
            me.attr.qkey
        } else {
            ud.remote_qkey
        };
        let sgid = self
            .gids
            .valid(usize::from(ud.sgid_index))
            .unwrap_or([0; 16]);
        let datagram = Datagram {
            src_qpn: me.qpn,
            sgid,
            dest: ud,
            qkey,
            imm: has_imm(w.opcode).then_some(w.imm_data),
            solicited: w.solicited,
        };
        match self.router.route(&self.gids, &ud.dgid) {
            Route::Local => self.deliver_ud(&datagram, &data),
            // Unreachable or not, a datagram completes at the sender.
            Route::Remote => self.send_ud_remote(&datagram, data),
        }
        ok(len)
    }

    /// Delivers datagram `d` with `data` (from a QP of this process or
    /// another); anything wrong at the receiver (no such QP, wrong state or
    /// Q_Key, no receive posted) drops it.
    pub(super) fn deliver_ud(&mut self, d: &Datagram, data: &[u8]) {
        let Datagram {
            src_qpn,
            sgid,
            dest: ud,
            qkey,
            imm,
            solicited,
        } = *d;
        let Some(&dst) = self.qp_by_num.get(&ud.remote_qpn) else {
            return;
        };
        let Some(q) = self.qps.get(&dst) else {
            return;
        };
        if q.qp_type != ffi::IBV_QPT_UD || !q.can_receive() {
            return;
        }
        if q.attr.qkey != qkey {
            self.qkey_violations = self.qkey_violations.wrapping_add(1);
            return;
        }
        // The header of the receiving GID's type (the sender's port has the
        // same type: RoCE v1 and v2 ports do not reach each other).
        let ty = self.gids.gid_type(&ud.dgid).unwrap_or_default();
        let mut msg = Vec::with_capacity(GRH_LEN + data.len());
        msg.extend_from_slice(&grh::build(ty, &ud, &sgid, data.len(), imm.is_some()));
        msg.extend_from_slice(data);
        let c = Completion {
            opcode: ffi::IBV_WC_RECV,
            byte_len: msg.len() as u32,
            imm_data: imm.unwrap_or(0),
            qp_num: q.qpn,
            src_qp: src_qpn,
            wc_flags: ffi::IBV_WC_GRH
                | if imm.is_some() {
                    ffi::IBV_WC_WITH_IMM
                } else {
                    0
                },
            sl: ud.sl,
            solicited,
            ..Default::default()
        };
        // No receive posted: the datagram is dropped.
        let _ = self.deliver_receive(dst, &msg, c);
    }
}
