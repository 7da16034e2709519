// SPDX-License-Identifier: GPL-2.0-only
//! RC and UD between QPs of two processes: the requester's and the
//! responder's halves of the fabric's data path ([`pvrdma_fabric::packet`]).
//!
//! **Requester.** An RC send WR whose destination GID is not this device's
//! is cut into packets and handed to the router, with the QP's next message
//! sequence number (consecutive per QP); up to [`MAX_IN_FLIGHT`] messages
//! (and [`MAX_IN_FLIGHT_BYTES`]) of a QP are in flight
//! ([`RemoteWait::Sent`]), and they stay in the send queue until answered,
//! oldest first, so WRs complete in order. The answer to the oldest decides
//! it: an ACK completes it; an RDMA READ response is collected and scattered
//! into the WR's buffers; a NAK completes it in error (the QP goes to the
//! error state and flushes the rest); an RNR NAK makes it and every message
//! behind it go out again after [`RNR_DELAY`] (go-back-N: the responder
//! dropped them; every RNR wait is infinite, as for in-process sends). With
//! no answer by its deadline, the QP's retry timeout × (`retry_cnt` + 1) but
//! at least [`MIN_REMOTE_WAIT`], it completes with `IBV_WC_RETRY_EXC_ERR`, as
//! when a peer dies. A WR that fails before it can leave (a bad local key)
//! fails when it reaches the head, after those before it.
//!
//! **Responder.** Packets for a QP are taken only from its connected peer
//! (its `dest_qp_num` and destination GID) while it can receive, and only in
//! order: a message must carry the sequence number after the last one
//! executed (after an RNR NAK or a NAK, the same number again), and each
//! packet continues its message at the offset the previous one ended;
//! anything else is dropped and counted, so a requester that is not the peer
//! times out, as on a real fabric. A complete message is executed
//! by the same code as an in-process request ([`Engine::respond_rc`]), and
//! its answer goes back to the requester. A UD datagram is delivered like an
//! in-process one.
//!
//! Nothing a packet says is trusted beyond what [`Packet::decode`] checked:
//! QP numbers are looked up, the requester's GID and QP must be the
//! responder's peer, answers must carry the oldest message's number, and
//! reassembly takes only contiguous data up to the length of the message
//! (at most [`MAX_MESSAGE`]); memory is touched only through the MR checks
//! every request passes.

use super::datapath::{
    fail, gid_bytes, has_imm, ok, retry_exceeded, unanswered, Answer, Datagram, Outcome, RcRequest,
    Sender,
};
use super::fast_reg;
use super::retry;
use super::route::Route;
use super::wqe::{RemoteWait, SendWqe, UdDest};
use super::{Engine, Key};
use crate::ffi;
use pvrdma_fabric::packet::{flag, Op, Packet, Syndrome, MAX_MESSAGE};
use std::time::{Duration, Instant};

/// How long a requester waits before sending a message again after an RNR NAK.
pub const RNR_DELAY: Duration = Duration::from_millis(1);
/// Most messages of one QP in flight to another process.
pub const MAX_IN_FLIGHT: usize = 16;
/// Most bytes of one QP's messages in flight (one message goes out however
/// long it is): the mux queues at most 128 MiB for a library.
pub const MAX_IN_FLIGHT_BYTES: u64 = 4 << 20;
/// The shortest a requester waits for an answer from another process: its
/// answer crosses two sockets and the mux, whatever the QP's timeout says.
pub const MIN_REMOTE_WAIT: Duration = Duration::from_millis(250);

/// A message from a QP of another process, partly received.
#[derive(Debug)]
pub struct Inbound {
    /// Its first packet, without data (the fields the message is executed with).
    head: Packet,
    /// The data so far.
    data: Vec<u8>,
}

/// The `IBV_WR_*` opcode of a request packet.
fn wr_opcode(p: &Packet) -> u32 {
    let imm = p.flags & flag::IMM != 0;
    if p.op == Op::Send && p.flags & flag::INV != 0 {
        return ffi::IBV_WR_SEND_WITH_INV;
    }
    match (p.op, imm) {
        (Op::Write, false) => ffi::IBV_WR_RDMA_WRITE,
        (Op::Write, true) => ffi::IBV_WR_RDMA_WRITE_WITH_IMM,
        (Op::ReadRequest, _) => ffi::IBV_WR_RDMA_READ,
        (_, false) => ffi::IBV_WR_SEND,
        (_, true) => ffi::IBV_WR_SEND_WITH_IMM,
    }
}

/// The packet op and flags of a send WR.
fn request_op(w: &SendWqe) -> (Op, u8) {
    let op = match w.opcode {
        ffi::IBV_WR_RDMA_WRITE | ffi::IBV_WR_RDMA_WRITE_WITH_IMM => Op::Write,
        ffi::IBV_WR_RDMA_READ => Op::ReadRequest,
        _ => Op::Send,
    };
    let mut flags = 0;
    if has_imm(w.opcode) {
        flags |= flag::IMM;
    }
    if w.opcode == ffi::IBV_WR_SEND_WITH_INV {
        flags |= flag::INV; // the key travels in `imm`
    }
    if w.solicited {
        flags |= flag::SOLICITED;
    }
    (op, flags)
}

impl Engine {
    /// Whether RC sender `me`'s destination GID belongs to another process.
    pub(super) fn rc_is_remote(&self, me: &Sender) -> bool {
        let dgid = gid_bytes(&me.attr.ah_attr.grh.dgid);
        self.router.route(&self.gids, &dgid) == Route::Remote
    }

    /// Drives RC QP `s`'s send queue to another process (its RTS state
    /// checked by the caller): fails the head if its answer is overdue, and
    /// sends the WRs behind it, in order, while the window has room. True
    /// if a WR completed (then the caller calls again).
    pub(super) fn pump_remote(&mut self, s: Key, me: &Sender) -> bool {
        let now = Instant::now();
        let Some(head) = self.qps.get(&s).and_then(|q| q.sq.front()) else {
            return false;
        };
        match &head.remote {
            Some(RemoteWait::Sent { deadline, .. }) if now >= *deadline => {
                crate::log::vlog!(
                    "rc_remote_timeout",
                    "qp_num={:#x} wr_id={:#x}: no answer from the peer",
                    me.qpn,
                    head.wr_id
                );
                let exceeded = retry_exceeded();
                return self.finish_head(s, exceeded);
            }
            // Nothing goes out before the head does again.
            Some(RemoteWait::Rnr { resend_at }) if now < *resend_at => return false,
            _ => {}
        }
        let (mut count, mut bytes) = (0usize, 0u64);
        for i in 0.. {
            let Some(w) = self.qps.get(&s).and_then(|q| q.sq.get(i)).cloned() else {
                return false;
            };
            if fast_reg::is_local(w.opcode) {
                // Executed at the head, and nothing behind it leaves before.
                if i > 0 {
                    return false;
                }
                return match self.exec_local(me, &w) {
                    Some(o) => self.finish_head(s, o),
                    None => false,
                };
            }
            let len = w.payload.byte_len();
            if matches!(w.remote, Some(RemoteWait::Sent { .. })) {
                (count, bytes) = (count + 1, bytes + len);
                continue;
            }
            if count >= MAX_IN_FLIGHT || (count > 0 && bytes + len > MAX_IN_FLIGHT_BYTES) {
                return false;
            }
            match self.send_remote_wqe(s, me, &w) {
                Ok(state) => {
                    if let Some(q) = self.qps.get_mut(&s) {
                        q.sq[i].remote = Some(state.0);
                        q.sq[i].psn = Some(state.1);
                    }
                    (count, bytes) = (count + 1, bytes + len);
                }
                // A WR that fails before it leaves fails in its turn, at the head.
                Err(_) if i > 0 => return false,
                Err(Some(o)) => return self.finish_head(s, o),
                Err(None) => {
                    // Nothing left this process: retry until the deadline,
                    // like a requester whose packets are lost.
                    let lost = retry_exceeded();
                    let Some(head) = self.qps.get_mut(&s).and_then(|q| q.sq.front_mut()) else {
                        return false;
                    };
                    return match unanswered(me, head, lost) {
                        Some(o) => self.finish_head(s, o),
                        None => false,
                    };
                }
            }
        }
        false
    }

    /// Takes the head WR off `s`'s send queue and completes it with `o`.
    fn finish_head(&mut self, s: Key, o: Outcome) -> bool {
        match self.qps.get_mut(&s).and_then(|q| q.sq.pop_front()) {
            Some(w) => {
                self.finish_send(s, &w, o);
                true
            }
            None => false,
        }
    }

    /// Sends RC WR `w` of QP `s` to another process: its state once sent
    /// and its sequence number; or the requester's local error (`Some`), or
    /// `None` if nothing could leave this process.
    fn send_remote_wqe(
        &mut self,
        s: Key,
        me: &Sender,
        w: &SendWqe,
    ) -> Result<(RemoteWait, u32), Option<Outcome>> {
        let (len, data) = self.request_data(me, w, u64::from(MAX_MESSAGE))?;
        let sgid = self
            .gids
            .valid(usize::from(me.attr.ah_attr.grh.sgid_index))
            .ok_or(None)?;
        let q = self.qps.get_mut(&s).ok_or(None)?;
        let psn = match w.psn {
            Some(psn) => psn,
            None => {
                let psn = q.next_psn;
                q.next_psn = psn.wrapping_add(1);
                psn
            }
        };
        let (op, flags) = request_op(w);
        let template = Packet {
            sgid,
            dgid: gid_bytes(&me.attr.ah_attr.grh.dgid),
            src_qpn: me.qpn,
            dst_qpn: me.attr.dest_qp_num,
            msg_id: psn,
            op,
            flags,
            sl: me.attr.ah_attr.sl,
            imm: w.imm_data,
            rkey: w.rkey,
            remote_addr: w.remote_addr,
            ..Default::default()
        };
        let packets = if op == Op::ReadRequest {
            vec![Packet {
                msg_len: len as u32,
                ..template
            }]
        } else {
            Packet::segments(&template, &data)
        };
        if !self.router.send_remote(packets) {
            return Err(None);
        }
        let wait = retry::retry_wait(me.attr.timeout, me.attr.retry_cnt).max(MIN_REMOTE_WAIT);
        let deadline = Instant::now() + wait;
        retry::schedule(deadline);
        let sent = RemoteWait::Sent {
            deadline,
            read: Vec::new(),
        };
        Ok((sent, psn))
    }

    /// Datagram `d` with `data` to another process: one packet, sent or not
    /// (a datagram completes at the sender either way).
    pub(super) fn send_ud_remote(&mut self, d: &Datagram, data: Vec<u8>) {
        let mut flags = 0;
        if d.imm.is_some() {
            flags |= flag::IMM;
        }
        if d.solicited {
            flags |= flag::SOLICITED;
        }
        let ud = &d.dest;
        let packet = Packet {
            sgid: d.sgid,
            dgid: ud.dgid,
            src_qpn: d.src_qpn,
            dst_qpn: ud.remote_qpn,
            op: Op::UdSend,
            flags,
            sl: ud.sl,
            hop_limit: ud.hop_limit,
            traffic_class: ud.traffic_class,
            flow_label: ud.flow_label & 0xf_ffff,
            imm: d.imm.unwrap_or(0),
            qkey: d.qkey,
            msg_len: data.len() as u32,
            data,
            ..Default::default()
        };
        let _ = self.router.send_remote(vec![packet]);
    }

    /// A packet from another process (the fabric client's thread calls
    /// this with the engine locked); then runs whatever can progress.
    pub fn packet_received(&mut self, p: Packet) {
        // What a log line of a dropped packet names (the packet itself may
        // have moved into a message by then).
        let what = (p.op, p.sgid, p.src_qpn, p.dst_qpn, p.msg_id, p.offset);
        let taken = if !self.gids.contains(&p.dgid) {
            Err("destination GID is not this device's")
        } else if p.op.is_answer() {
            self.answer_received(&p)
        } else if p.op == Op::UdSend {
            self.ud_received(&p)
        } else {
            self.request_received(p)
        };
        if let Err(why) = taken {
            self.remote_dropped = self.remote_dropped.wrapping_add(1);
            let (op, sgid, src_qpn, dst_qpn, msg_id, offset) = what;
            crate::log::vlog!(
                "packet_dropped",
                "{op:?} from {} qp {src_qpn:#x} to qp {dst_qpn:#x} msg {msg_id} at {offset}: {why}",
                crate::fmt_gid(&sgid)
            );
        }
        self.progress();
    }

    /// The RC QP number `qpn` if `p` comes from its connected peer.
    fn peer_qp(&self, qpn: u32, p: &Packet) -> Result<Key, &'static str> {
        let key = *self.qp_by_num.get(&qpn).ok_or("no such QP")?;
        let q = self.qps.get(&key).ok_or("no such QP")?;
        if q.qp_type != ffi::IBV_QPT_RC {
            return Err("not an RC QP");
        }
        if q.attr.dest_qp_num != p.src_qpn || gid_bytes(&q.attr.ah_attr.grh.dgid) != p.sgid {
            return Err("not from the QP's connected peer");
        }
        Ok(key)
    }

    /// An answer to the message at the head of a send queue.
    fn answer_received(&mut self, p: &Packet) -> Result<(), &'static str> {
        let s = self.peer_qp(p.dst_qpn, p)?;
        let q = self.qps.get_mut(&s).ok_or("no such QP")?;
        let me = Sender {
            qpn: q.qpn,
            pd: q.pd,
            attr: q.attr,
        };
        let head = q.sq.front_mut().ok_or("nothing in flight")?;
        let requested = head.payload.byte_len();
        let is_read = head.opcode == ffi::IBV_WR_RDMA_READ;
        if head.psn != Some(p.msg_id) {
            return Err("does not answer the oldest message in flight");
        }
        let Some(RemoteWait::Sent { read, .. }) = &mut head.remote else {
            return Err("nothing in flight");
        };
        // Either how the WR ends, or (a READ) the response data to scatter
        // once the WR is off the queue.
        let (outcome, read_data) = match p.op {
            Op::Ack if !is_read => (ok(requested), None),
            Op::ReadResponse if is_read => {
                if u64::from(p.msg_len) != requested || p.offset as usize != read.len() {
                    return Err("READ response out of order or of the wrong length");
                }
                read.extend_from_slice(&p.data);
                if !p.is_last() {
                    return Ok(());
                }
                (None, Some(std::mem::take(read)))
            }
            Op::RnrNak => {
                // Go back: the responder drops the messages behind this one
                // until it comes again, so they all go out again after it.
                let resend_at = Instant::now() + RNR_DELAY;
                for w in q.sq.iter_mut() {
                    if matches!(w.remote, Some(RemoteWait::Sent { .. })) {
                        w.remote = None;
                    }
                }
                if let Some(head) = q.sq.front_mut() {
                    head.remote = Some(RemoteWait::Rnr { resend_at });
                }
                retry::schedule(resend_at);
                return Ok(());
            }
            Op::Nak => {
                let status = match p.syndrome {
                    Some(Syndrome::RemoteAccess) => ffi::IBV_WC_REM_ACCESS_ERR,
                    Some(Syndrome::InvalidRequest) => ffi::IBV_WC_REM_INV_REQ_ERR,
                    _ => ffi::IBV_WC_REM_OP_ERR,
                };
                (fail(status, u32::from(p.detail)), None)
            }
            _ => return Err("answer does not fit the request"),
        };
        let Some(w) = q.sq.pop_front() else {
            return Err("nothing in flight");
        };
        // The retry timer restarts with each answer: the next oldest gets
        // its full wait from now (it may have left long ago).
        if let Some(Some(RemoteWait::Sent { deadline, .. })) =
            q.sq.front_mut().map(|n| &mut n.remote)
        {
            let wait = retry::retry_wait(me.attr.timeout, me.attr.retry_cnt).max(MIN_REMOTE_WAIT);
            *deadline = Instant::now() + wait;
            retry::schedule(*deadline);
        }
        let outcome = match (outcome, read_data) {
            (Some(o), _) => Some(o),
            (None, Some(bytes)) => self.read_response(&me, &w, &bytes),
            (None, None) => fail(ffi::IBV_WC_LOC_QP_OP_ERR, 0),
        };
        // `fail`, `ok` and `read_response` always give an outcome.
        if let Some(o) = outcome {
            self.finish_send(s, &w, o);
        }
        Ok(())
    }

    /// A packet of an RC request; a complete message is executed.
    fn request_received(&mut self, p: Packet) -> Result<(), &'static str> {
        let d = self.peer_qp(p.dst_qpn, &p)?;
        let q = self.qps.get_mut(&d).ok_or("no such QP")?;
        if !q.can_receive() {
            return Err("QP does not receive in its state");
        }
        let first = p.op == Op::ReadRequest || p.offset == 0;
        if first && q.expected_psn.is_some_and(|e| e != p.msg_id) {
            return Err("out of sequence (behind a message that was refused, or a gap)");
        }
        let complete = if p.op == Op::ReadRequest {
            q.inbound = None;
            Some((p, Vec::new()))
        } else if p.offset == 0 {
            let complete = p.is_last();
            let (head, data) = split(p);
            if complete {
                q.inbound = None;
                Some((head, data))
            } else {
                q.inbound = Some(Inbound { head, data });
                None
            }
        } else {
            let Some(i) = q.inbound.as_mut() else {
                return Err("continues no message");
            };
            let h = &i.head;
            if h.msg_id != p.msg_id || h.op != p.op || h.msg_len != p.msg_len {
                return Err("continues another message");
            }
            if p.offset as usize != i.data.len() {
                return Err("out of order");
            }
            i.data.extend_from_slice(&p.data);
            if p.is_last() {
                q.inbound.take().map(|i| (i.head, i.data))
            } else {
                None
            }
        };
        if let Some((head, data)) = complete {
            self.execute_remote(d, &head, &data);
        }
        Ok(())
    }

    /// Executes a complete request message at responder QP `d` and sends
    /// the answer back.
    fn execute_remote(&mut self, d: Key, head: &Packet, data: &[u8]) {
        let req = RcRequest {
            src_qpn: head.src_qpn,
            sl: head.sl,
            opcode: wr_opcode(head),
            data,
            len: u64::from(head.msg_len),
            imm: (head.flags & flag::IMM != 0).then_some(head.imm),
            invalidate: (head.flags & flag::INV != 0).then_some(head.imm),
            solicited: head.flags & flag::SOLICITED != 0,
            rkey: head.rkey,
            remote_addr: head.remote_addr,
        };
        let answer = self.respond_rc(d, &req);
        // What comes next: the message after this one, or this one again
        // (after an RNR NAK; after a NAK, whose requester stops, nothing).
        if let Some(q) = self.qps.get_mut(&d) {
            q.expected_psn = Some(match answer {
                Answer::Ack | Answer::ReadData(_) => head.msg_id.wrapping_add(1),
                Answer::Rnr | Answer::Nak(..) => head.msg_id,
            });
        }
        let template = Packet {
            sgid: head.dgid,
            dgid: head.sgid,
            src_qpn: head.dst_qpn,
            dst_qpn: head.src_qpn,
            msg_id: head.msg_id,
            ..Default::default()
        };
        let packets = match answer {
            Answer::Ack => vec![Packet {
                op: Op::Ack,
                ..template
            }],
            Answer::Rnr => vec![Packet {
                op: Op::RnrNak,
                ..template
            }],
            Answer::Nak(status, vendor_err) => vec![Packet {
                op: Op::Nak,
                syndrome: Some(match status {
                    ffi::IBV_WC_REM_ACCESS_ERR => Syndrome::RemoteAccess,
                    ffi::IBV_WC_REM_INV_REQ_ERR => Syndrome::InvalidRequest,
                    _ => Syndrome::RemoteOperation,
                }),
                detail: vendor_err.min(0xff) as u8,
                ..template
            }],
            Answer::ReadData(bytes) => Packet::segments(
                &Packet {
                    op: Op::ReadResponse,
                    ..template
                },
                &bytes,
            ),
        };
        // An answer that cannot leave is lost: the requester times out.
        let _ = self.router.send_remote(packets);
    }

    /// A UD datagram from another process.
    fn ud_received(&mut self, p: &Packet) -> Result<(), &'static str> {
        let datagram = Datagram {
            src_qpn: p.src_qpn,
            sgid: p.sgid,
            dest: UdDest {
                dgid: p.dgid,
                sgid_index: 0,
                hop_limit: p.hop_limit,
                traffic_class: p.traffic_class,
                flow_label: p.flow_label,
                sl: p.sl,
                remote_qpn: p.dst_qpn,
                remote_qkey: p.qkey,
            },
            qkey: p.qkey,
            imm: (p.flags & flag::IMM != 0).then_some(p.imm),
            solicited: p.flags & flag::SOLICITED != 0,
        };
        self.deliver_ud(&datagram, &p.data);
        Ok(())
    }
}

/// A packet's header (data moved out) and its data.
fn split(mut p: Packet) -> (Packet, Vec<u8>) {
    let data = std::mem::take(&mut p.data);
    (p, data)
}
