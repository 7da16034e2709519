//! The data path: posting work and executing it between QPs.
//!
//! Posted sends wait in their QP's send queue and execute in order while
//! the QP is in RTS. An RC send whose responder has no receive posted stays
//! at the head of the queue (RNR wait) and executes when a receive arrives:
//! `rnr_retry` is not counted, every RNR wait is infinite (as with
//! `rnr_retry` = 7). An RC send nobody answers also stays at the head,
//! retransmitting, until its retry deadline passes (see [`super::retry`]).
//! Receives wait in their RQ or SRQ.

use super::limits::{mtu_bytes, MAX_INLINE_DATA, MAX_MSG_SZ, PORT_MTU};
use super::memory::ScatterError;
use super::retry;
use super::route::{RemoteMessage, RemoteOutcome, Route};
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
struct Sender {
    qpn: u32,
    pd: Key,
    attr: ffi::ibv_qp_attr,
}

/// How a send ended for the requester.
struct Outcome {
    status: u32,
    vendor_err: u32,
    byte_len: u32,
}

fn ok(len: u64) -> Option<Outcome> {
    Some(Outcome {
        status: ffi::IBV_WC_SUCCESS,
        vendor_err: 0,
        byte_len: len as u32,
    })
}

fn fail(status: u32, vendor_err: u32) -> Option<Outcome> {
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

fn has_imm(opcode: u32) -> bool {
    matches!(
        opcode,
        ffi::IBV_WR_SEND_WITH_IMM | ffi::IBV_WR_RDMA_WRITE_WITH_IMM
    )
}

/// The GRH a UD receive starts with (RoCE v1: an IPv6-format IB GRH).
fn build_grh(ud: &UdDest, sgid: &Gid, payload_len: usize, imm: bool) -> [u8; GRH_LEN] {
    let mut g = [0u8; GRH_LEN];
    let vtf = (6u32 << 28) | (u32::from(ud.traffic_class) << 20) | (ud.flow_label & 0xf_ffff);
    g[0..4].copy_from_slice(&vtf.to_be_bytes());
    // PayLen as on the wire: BTH (12) + DETH (8) + [ImmDt (4)] + payload + ICRC (4).
    let paylen = 24 + payload_len + if imm { 4 } else { 0 };
    g[4..6].copy_from_slice(&(paylen.min(0xffff) as u16).to_be_bytes());
    g[6] = 0x1b; // next header: IBA transport
    g[7] = ud.hop_limit;
    g[8..24].copy_from_slice(sgid);
    g[24..40].copy_from_slice(&ud.dgid);
    g
}

/// An RC request got no answer (`o` is its retry-exceeded outcome): the
/// first time, start its retry deadline and wait; after the deadline, fail.
fn unanswered(me: &Sender, w: &mut SendWqe, o: Outcome) -> Option<Outcome> {
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
            ffi::IBV_QPT_UD => matches!(w.opcode, ffi::IBV_WR_SEND | ffi::IBV_WR_SEND_WITH_IMM),
            _ => matches!(
                w.opcode,
                ffi::IBV_WR_SEND
                    | ffi::IBV_WR_SEND_WITH_IMM
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
        let (rc, send_cq) = (q.qp_type == ffi::IBV_QPT_RC, q.send_cq);
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
        let success = o.status == ffi::IBV_WC_SUCCESS;
        if !success || w.signaled {
            let c = Completion {
                wr_id: w.wr_id,
                status: o.status,
                opcode: w.wc_opcode(),
                vendor_err: o.vendor_err,
                byte_len: o.byte_len,
                qp_num: me.qpn,
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
        true
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

    fn has_receive(&self, dst: Key) -> bool {
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
    fn deliver_receive(
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

    /// The connected responder of RC sender `me`, or the requester's error.
    fn rc_peer(&mut self, me: &Sender, w: &SendWqe, data: &[u8]) -> Result<Key, Option<Outcome>> {
        let retry_exceeded = || fail(ffi::IBV_WC_RETRY_EXC_ERR, vendor_err::NO_RESPONDER);
        let dgid = gid_bytes(&me.attr.ah_attr.grh.dgid);
        let sgid = self.gids.valid(usize::from(me.attr.ah_attr.grh.sgid_index));
        if self.router.route(&self.gids, &dgid) == Route::Remote {
            let msg = RemoteMessage {
                sgid: sgid.unwrap_or([0; 16]),
                src_qpn: me.qpn,
                dgid,
                dst_qpn: me.attr.dest_qp_num,
                qp_type: ffi::IBV_QPT_RC,
                opcode: w.opcode,
                data,
                imm_data: has_imm(w.opcode).then_some(w.imm_data),
                qkey: 0,
            };
            return Err(match self.router.send_remote(&msg) {
                RemoteOutcome::Delivered => ok(data.len() as u64),
                RemoteOutcome::Unreachable => retry_exceeded(),
            });
        }
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
            _ => Err(retry_exceeded()),
        }
    }

    fn exec_rc(&mut self, me: &Sender, w: &SendWqe) -> Option<Outcome> {
        let len = w.payload.byte_len();
        if len > u64::from(MAX_MSG_SZ) {
            return fail(ffi::IBV_WC_LOC_LEN_ERR, vendor_err::MSG_TOO_LONG);
        }
        let data = if w.opcode == ffi::IBV_WR_RDMA_READ {
            if let Payload::Sges(s) = &w.payload {
                if let Err(e) = self.mrs.check_writable(s, me.pd) {
                    return fail(ffi::IBV_WC_LOC_PROT_ERR, e.vendor_err());
                }
            }
            Vec::new()
        } else {
            match self.mrs.gather(&w.payload, me.pd) {
                Ok(d) => d,
                Err(e) => return fail(ffi::IBV_WC_LOC_PROT_ERR, e.vendor_err()),
            }
        };
        let dst = match self.rc_peer(me, w, &data) {
            Ok(d) => d,
            Err(outcome) => return outcome,
        };
        let (dst_qpn, dst_pd, dst_access) = {
            let d = self.qps.get(&dst)?;
            (d.qpn, d.pd, d.attr.qp_access_flags)
        };
        let imm = has_imm(w.opcode);
        let recv = Completion {
            opcode: ffi::IBV_WC_RECV,
            byte_len: len as u32,
            imm_data: if imm { w.imm_data } else { 0 },
            qp_num: dst_qpn,
            src_qp: me.qpn,
            wc_flags: if imm { ffi::IBV_WC_WITH_IMM } else { 0 },
            sl: me.attr.ah_attr.sl,
            solicited: w.solicited,
            ..Default::default()
        };
        match w.opcode {
            ffi::IBV_WR_SEND | ffi::IBV_WR_SEND_WITH_IMM => {
                match self.deliver_receive(dst, &data, recv)? {
                    Ok(()) => ok(len),
                    Err(ScatterError::TooSmall) => {
                        fail(ffi::IBV_WC_REM_INV_REQ_ERR, vendor_err::RESPONDER_ERROR)
                    }
                    Err(ScatterError::Mem(_)) => {
                        fail(ffi::IBV_WC_REM_OP_ERR, vendor_err::RESPONDER_ERROR)
                    }
                }
            }
            ffi::IBV_WR_RDMA_WRITE | ffi::IBV_WR_RDMA_WRITE_WITH_IMM => {
                if dst_access & ffi::IBV_ACCESS_REMOTE_WRITE == 0 {
                    return fail(ffi::IBV_WC_REM_ACCESS_ERR, vendor_err::ACCESS);
                }
                let access = ffi::IBV_ACCESS_REMOTE_WRITE;
                if let Err(e) = self
                    .mrs
                    .check_remote(w.rkey, dst_pd, w.remote_addr, len, access)
                {
                    return fail(ffi::IBV_WC_REM_ACCESS_ERR, e.vendor_err());
                }
                if imm && !self.has_receive(dst) {
                    return None; // RNR
                }
                self.mrs.write_remote(w.rkey, w.remote_addr, &data);
                if imm {
                    let c = Completion {
                        opcode: ffi::IBV_WC_RECV_RDMA_WITH_IMM,
                        ..recv
                    };
                    // No scatter: the data went to the remote address.
                    self.deliver_receive(dst, &[], c)?.ok()?;
                }
                ok(len)
            }
            ffi::IBV_WR_RDMA_READ => {
                if dst_access & ffi::IBV_ACCESS_REMOTE_READ == 0 {
                    return fail(ffi::IBV_WC_REM_ACCESS_ERR, vendor_err::ACCESS);
                }
                let access = ffi::IBV_ACCESS_REMOTE_READ;
                if let Err(e) = self
                    .mrs
                    .check_remote(w.rkey, dst_pd, w.remote_addr, len, access)
                {
                    return fail(ffi::IBV_WC_REM_ACCESS_ERR, e.vendor_err());
                }
                let bytes = self.mrs.read_remote(w.rkey, w.remote_addr, len);
                let Payload::Sges(sges) = &w.payload else {
                    return fail(ffi::IBV_WC_LOC_QP_OP_ERR, 0);
                };
                match self.mrs.scatter(sges, me.pd, &bytes) {
                    Ok(()) => ok(len),
                    Err(_) => fail(ffi::IBV_WC_LOC_PROT_ERR, vendor_err::BOUNDS),
                }
            }
            _ => fail(ffi::IBV_WC_LOC_QP_OP_ERR, 0),
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
        match self.router.route(&self.gids, &ud.dgid) {
            Route::Local => self.deliver_ud_local(me, w, &ud, qkey, &sgid, &data),
            Route::Remote => {
                let msg = RemoteMessage {
                    sgid,
                    src_qpn: me.qpn,
                    dgid: ud.dgid,
                    dst_qpn: ud.remote_qpn,
                    qp_type: ffi::IBV_QPT_UD,
                    opcode: w.opcode,
                    data: &data,
                    imm_data: has_imm(w.opcode).then_some(w.imm_data),
                    qkey,
                };
                // Unreachable or not, a datagram completes at the sender.
                let _ = self.router.send_remote(&msg);
            }
        }
        ok(len)
    }

    /// Delivers a UD datagram in-process; anything wrong at the receiver
    /// (no such QP, wrong state or Q_Key, no receive posted) drops it.
    fn deliver_ud_local(
        &mut self,
        me: &Sender,
        w: &SendWqe,
        ud: &UdDest,
        qkey: u32,
        sgid: &Gid,
        data: &[u8],
    ) {
        let Some(&dst) = self.qp_by_num.get(&ud.remote_qpn) else {
            return;
        };
        let Some(d) = self.qps.get(&dst) else {
            return;
        };
        if d.qp_type != ffi::IBV_QPT_UD || !d.can_receive() {
            return;
        }
        if d.attr.qkey != qkey {
            self.qkey_violations = self.qkey_violations.wrapping_add(1);
            return;
        }
        let imm = has_imm(w.opcode);
        let mut msg = Vec::with_capacity(GRH_LEN + data.len());
        msg.extend_from_slice(&build_grh(ud, sgid, data.len(), imm));
        msg.extend_from_slice(data);
        let c = Completion {
            opcode: ffi::IBV_WC_RECV,
            byte_len: msg.len() as u32,
            imm_data: if imm { w.imm_data } else { 0 },
            qp_num: d.qpn,
            src_qp: me.qpn,
            wc_flags: ffi::IBV_WC_GRH | if imm { ffi::IBV_WC_WITH_IMM } else { 0 },
            sl: ud.sl,
            solicited: w.solicited,
            ..Default::default()
        };
        // No receive posted: the datagram is dropped.
        let _ = self.deliver_receive(dst, &msg, c);
    }
}
