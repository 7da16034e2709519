// SPDX-License-Identifier: GPL-2.0-only
//! The data path to another process, one packet at a time: a QP of this
//! process is connected to a QP "behind" a GID this device does not own,
//! the packets it sends are recorded instead of leaving, and the test plays
//! the other side, a correct one and a hostile one. Every packet that does
//! not fit (wrong peer, wrong message, out of order, outside the MR) is
//! refused without touching memory.

#![warn(clippy::undocumented_unsafe_blocks)]

mod common;

use common::*;
use pvrdma_fabric::packet::{flag, Op, Packet, Syndrome, MAX_CHUNK};
use pvrdma_verbs::ffi::*;
use pvrdma_verbs::RemoteFabric;
use std::ptr::null_mut;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The GID of the other process.
const REMOTE_GID: [u8; 16] = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0x77, 0x77, 0x77,
];
/// The QP number of the other process's QP.
const REMOTE_QPN: u32 = 0x777;

/// Records what the engine sends to other processes.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Packet>>>);

impl RemoteFabric for Recorder {
    fn send(&mut self, packets: Vec<Packet>) -> bool {
        self.0.lock().unwrap().extend(packets);
        true
    }
}

impl Recorder {
    fn take(&self) -> Vec<Packet> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// The tests share the process's one engine and its remote fabric.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

struct Remote {
    s: Side,
    qp: *mut ibv_qp,
    gid: [u8; 16],
    rec: Recorder,
}

/// A QP of this process connected to REMOTE_QPN behind REMOTE_GID, with a
/// fresh recorder as the remote fabric.
fn remote(access: u32) -> Remote {
    let rec = Recorder::default();
    pvrdma_verbs::set_remote_fabric(Box::new(rec.clone()));
    let s = side();
    let qp = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let (gid, index) = fresh_gid();
    to_init(qp, IBV_QPT_RC, 0, access);
    to_rtr(qp, IBV_QPT_RC, index, REMOTE_GID, REMOTE_QPN);
    to_rts(qp, IBV_QPT_RC);
    Remote { s, qp, gid, rec }
}

impl Drop for Remote {
    fn drop(&mut self) {
        destroy_all(&[self.qp], self.s.ctx);
    }
}

impl Remote {
    /// A request packet from the peer to our QP.
    fn request(&self, op: Op, msg_id: u32) -> Packet {
        Packet {
            sgid: REMOTE_GID,
            dgid: self.gid,
            src_qpn: REMOTE_QPN,
            dst_qpn: qpn(self.qp),
            msg_id,
            op,
            ..Default::default()
        }
    }

    /// An answer from the peer to the message `msg_id` of our QP.
    fn answer(&self, op: Op, msg_id: u32) -> Packet {
        self.request(op, msg_id)
    }

    fn inject(&self, p: Packet) {
        pvrdma_verbs::engine::lock().packet_received(p);
    }

    fn dropped(&self) -> u64 {
        pvrdma_verbs::engine::lock().remote_dropped
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn requester_sends_a_window_and_completes_in_order_of_the_answers() {
    let _g = serial();
    let r = remote(0);
    let mut src = Buf::new(r.s.pd, 3 * MAX_CHUNK, 0, IBV_ACCESS_LOCAL_WRITE);
    src.mem.copy_from_slice(&pattern(3 * MAX_CHUNK, 5));
    let len = (2 * MAX_CHUNK + 100) as u32;
    let mut sges = [src.sge(0, len)];
    let flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
    let mut wr = send_wr(1, &mut sges, IBV_WR_SEND_WITH_IMM, flags);
    wr.__bindgen_anon_1.imm_data = 0x0102_0304;
    assert_eq!(post_send(r.qp, &mut wr).0, 0);
    // A second WR goes out behind the first, with the next sequence number.
    let mut sges2 = [src.sge(0, 10)];
    let mut wr2 = send_wr(2, &mut sges2, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(r.qp, &mut wr2).0, 0);

    let sent = r.rec.take();
    assert_eq!(sent.len(), 4, "{}", sent.len());
    let (first, second) = (sent[0].msg_id, sent[3].msg_id);
    assert_eq!(second, first.wrapping_add(1));
    let mut joined = Vec::new();
    for p in &sent[..3] {
        let route = (p.op, p.dgid, p.dst_qpn, p.sgid);
        assert_eq!(route, (Op::Send, REMOTE_GID, REMOTE_QPN, r.gid));
        assert_eq!((p.flags, p.imm), (flag::IMM | flag::SOLICITED, 0x0102_0304));
        assert_eq!(
            (p.offset as usize, p.msg_len, p.msg_id),
            (joined.len(), len, first)
        );
        assert!(Packet::decode(&p.encode()).is_ok());
        joined.extend_from_slice(&p.data);
    }
    assert_eq!(joined, src.mem[..len as usize]);
    assert_eq!(sent[3].data, src.mem[..10]);
    assert!(poll(r.s.cq).is_empty(), "completed before its answer");

    // Answers to the second (not the oldest), to no message, or from another
    // QP or GID, change nothing.
    let before = r.dropped();
    r.inject(r.answer(Op::Ack, second));
    r.inject(r.answer(Op::Ack, first.wrapping_sub(1)));
    r.inject(Packet {
        src_qpn: REMOTE_QPN + 1,
        ..r.answer(Op::Ack, first)
    });
    r.inject(Packet {
        sgid: [9; 16],
        ..r.answer(Op::Ack, first)
    });
    r.inject(Packet {
        dgid: [8; 16],
        ..r.answer(Op::Ack, first)
    });
    // A READ response to a SEND does not fit either.
    let read = Packet {
        msg_len: 4,
        data: vec![0; 4],
        ..r.answer(Op::ReadResponse, first)
    };
    r.inject(read);
    assert_eq!(r.dropped(), before + 6);
    assert!(poll(r.s.cq).is_empty());

    // RNR NAK of the first: after a short wait both go out again, in order,
    // with the same numbers (go-back-N: the responder dropped the second).
    r.inject(r.answer(Op::RnrNak, first));
    std::thread::sleep(Duration::from_millis(20));
    let again = r.rec.take();
    let ids: Vec<u32> = again.iter().map(|p| p.msg_id).collect();
    assert_eq!(ids, vec![first, first, first, second], "resent after RNR");
    r.inject(r.answer(Op::Ack, first));
    let wcs = poll_wait(r.s.cq, Duration::from_secs(2));
    assert_eq!(wcs.len(), 1);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status, wcs[0].byte_len),
        (1, IBV_WC_SUCCESS, len)
    );
    // The second is in flight still; its NAK fails it and the QP.
    assert!(r.rec.take().is_empty());
    r.inject(Packet {
        syndrome: Some(Syndrome::InvalidRequest),
        detail: 0x15,
        ..r.answer(Op::Nak, second)
    });
    let wcs = poll_wait(r.s.cq, Duration::from_secs(2));
    assert_eq!(wcs.len(), 1);
    let w = &wcs[0];
    assert_eq!(
        (w.wr_id, w.status, w.vendor_err),
        (2, IBV_WC_REM_INV_REQ_ERR, 0x15)
    );
    assert_eq!(qp_state(r.qp), IBV_QPS_ERR);
}

#[test]
fn a_wr_that_fails_locally_waits_for_those_before_it() {
    let _g = serial();
    let r = remote(0);
    let src = Buf::new(r.s.pd, 64, 1, IBV_ACCESS_LOCAL_WRITE);
    let mut sges = [src.sge(0, 64)];
    let mut wr = send_wr(1, &mut sges, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(r.qp, &mut wr).0, 0);
    let mut bad = [ibv_sge {
        lkey: 0xdead,
        ..src.sge(0, 8)
    }];
    let mut wr2 = send_wr(2, &mut bad, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(r.qp, &mut wr2).0, 0);
    // Only the first left; the second fails once the first is answered.
    let sent = r.rec.take();
    assert_eq!(sent.len(), 1);
    assert!(poll(r.s.cq).is_empty());
    r.inject(r.answer(Op::Ack, sent[0].msg_id));
    let wcs = poll_wait(r.s.cq, Duration::from_secs(2));
    let got: Vec<(u64, u32)> = wcs.iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(got, vec![(1, IBV_WC_SUCCESS), (2, IBV_WC_LOC_PROT_ERR)]);
}

#[test]
fn read_response_is_taken_only_in_order_and_within_the_request() {
    let _g = serial();
    let r = remote(0);
    let dst = Buf::new(r.s.pd, 2 * MAX_CHUNK, 0xee, IBV_ACCESS_LOCAL_WRITE);
    let len = MAX_CHUNK + 10;
    let mut sges = [dst.sge(0, len as u32)];
    let mut wr = send_wr(7, &mut sges, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED);
    wr.wr.rdma.remote_addr = 0x1000;
    wr.wr.rdma.rkey = 0xabc;
    assert_eq!(post_send(r.qp, &mut wr).0, 0);
    let sent = r.rec.take();
    assert_eq!(sent.len(), 1);
    let req = &sent[0];
    assert_eq!(
        (req.op, req.msg_len, req.rkey, req.remote_addr),
        (Op::ReadRequest, len as u32, 0xabc, 0x1000)
    );
    assert!(req.data.is_empty());

    let data = pattern(len, 1);
    let template = Packet {
        msg_len: len as u32,
        ..r.answer(Op::ReadResponse, req.msg_id)
    };
    let segs = Packet::segments(&template, &data);
    assert_eq!(segs.len(), 2);
    let before = r.dropped();
    // The second segment first, a response claiming more than was asked,
    // and one to another message: all dropped, nothing written.
    r.inject(segs[1].clone());
    r.inject(Packet {
        msg_len: len as u32 + 1,
        ..segs[0].clone()
    });
    r.inject(Packet {
        msg_id: req.msg_id ^ 1,
        ..segs[0].clone()
    });
    assert_eq!(r.dropped(), before + 3);
    assert!(dst.mem.iter().all(|&b| b == 0xee));
    // In order: completes, the data lands.
    r.inject(segs[0].clone());
    assert!(poll(r.s.cq).is_empty(), "completed before the last segment");
    r.inject(segs[1].clone());
    let wcs = poll_wait(r.s.cq, Duration::from_secs(2));
    assert_eq!(wcs.len(), 1);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status, wcs[0].opcode, wcs[0].byte_len),
        (7, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, len as u32)
    );
    assert_eq!(dst.mem[..len], data[..]);
    assert!(dst.mem[len..].iter().all(|&b| b == 0xee));
}

#[test]
fn responder_executes_only_its_peers_messages_in_order() {
    let _g = serial();
    let r = remote(RW);
    let recv = Buf::new(r.s.pd, 2 * MAX_CHUNK, 0, IBV_ACCESS_LOCAL_WRITE);
    let len = MAX_CHUNK + 300;
    let data = pattern(len, 9);
    let template = Packet {
        flags: flag::IMM,
        imm: 0x55,
        ..r.request(Op::Send, 40)
    };
    let segs = Packet::segments(&template, &data);

    // No receive posted: RNR NAK once the message is whole.
    r.inject(segs[0].clone());
    r.inject(segs[1].clone());
    let a = r.rec.take();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].op, a[0].msg_id, a[0].dgid, a[0].dst_qpn, a[0].src_qpn),
        (Op::RnrNak, 40, REMOTE_GID, REMOTE_QPN, qpn(r.qp))
    );

    let mut rs = [recv.sge(0, (2 * MAX_CHUNK) as u32)];
    let mut rwr = recv_wr(11, &mut rs);
    assert_eq!(post_recv(r.qp, &mut rwr).0, 0);
    let before = r.dropped();
    // From another QP, another GID, out of order, or continuing another
    // message: dropped, no answer, nothing received.
    r.inject(Packet {
        src_qpn: REMOTE_QPN + 1,
        ..segs[0].clone()
    });
    r.inject(Packet {
        sgid: [3; 16],
        ..segs[0].clone()
    });
    r.inject(segs[1].clone());
    r.inject(segs[0].clone());
    r.inject(Packet {
        msg_id: 41,
        ..segs[1].clone()
    });
    r.inject(Packet {
        offset: segs[1].offset + 1,
        data: segs[1].data[1..].to_vec(),
        ..segs[1].clone()
    });
    assert_eq!(r.dropped(), before + 5);
    assert!(r.rec.take().is_empty());
    assert!(poll(r.s.cq).is_empty());
    assert!(recv.mem.iter().all(|&b| b == 0));
    // The whole message, in order: received and ACKed.
    r.inject(segs[0].clone());
    r.inject(segs[1].clone());
    let a = r.rec.take();
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].op, a[0].msg_id), (Op::Ack, 40));
    let wcs = poll(r.s.cq);
    assert_eq!(wcs.len(), 1);
    let w = &wcs[0];
    assert_eq!(
        (
            w.wr_id,
            w.status,
            w.byte_len,
            w.src_qp,
            w.wc_flags & IBV_WC_WITH_IMM
        ),
        (11, IBV_WC_SUCCESS, len as u32, REMOTE_QPN, IBV_WC_WITH_IMM)
    );
    assert_eq!(recv.mem[..len], data[..]);
}

#[test]
fn responder_takes_messages_only_in_sequence() {
    let _g = serial();
    let r = remote(RW);
    let recv = Buf::new(r.s.pd, 256, 0, IBV_ACCESS_LOCAL_WRITE);
    let send = |id: u32, byte: u8| Packet {
        msg_len: 4,
        data: vec![byte; 4],
        ..r.request(Op::Send, id)
    };
    // 40 finds no receive (RNR); 41, sent behind it, is dropped.
    r.inject(send(40, 0xa));
    r.inject(send(41, 0xb));
    let a = r.rec.take();
    assert_eq!((a.len(), a[0].op, a[0].msg_id), (1, Op::RnrNak, 40));
    for i in 0..2u64 {
        let mut rs = [recv.sge(i as usize * 4, 4)];
        let mut rwr = recv_wr(i, &mut rs);
        assert_eq!(post_recv(r.qp, &mut rwr).0, 0);
    }
    // A gap (42) or 41 again before 40: dropped, nothing received.
    let before = r.dropped();
    r.inject(send(42, 0xc));
    r.inject(send(41, 0xb));
    assert_eq!(r.dropped(), before + 2);
    assert!(r.rec.take().is_empty() && poll(r.s.cq).is_empty());
    // 40 again, then 41: both received, in order, and ACKed.
    r.inject(send(40, 0xa));
    r.inject(send(41, 0xb));
    let ids: Vec<(Op, u32)> = r.rec.take().iter().map(|p| (p.op, p.msg_id)).collect();
    assert_eq!(ids, vec![(Op::Ack, 40), (Op::Ack, 41)]);
    assert_eq!(recv.mem[..8], [0xa, 0xa, 0xa, 0xa, 0xb, 0xb, 0xb, 0xb]);
    assert_eq!(poll(r.s.cq).len(), 2);
}

#[test]
fn responder_refuses_rdma_outside_the_mr() {
    let _g = serial();
    // Each refusal on a connection of its own: after a NAK the responder
    // takes nothing more from that requester (whose QP is in error).
    let refused = |case: &dyn Fn(&Remote, &Buf, &Buf) -> Packet| {
        let r = remote(RW);
        let target = Buf::new(r.s.pd, 4096, 0x11, RW);
        let ro = Buf::new(
            r.s.pd,
            4096,
            0x22,
            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
        );
        r.inject(case(&r, &target, &ro));
        let a = r.rec.take();
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!(
            (a[0].op, a[0].syndrome),
            (Op::Nak, Some(Syndrome::RemoteAccess))
        );
        assert!(a[0].data.is_empty());
        assert!(target.mem.iter().all(|&b| b == 0x11));
        assert!(ro.mem.iter().all(|&b| b == 0x22));
        // Nothing more is taken on that connection.
        let next = Packet {
            rkey: target.rkey(),
            remote_addr: target.addr(0),
            msg_len: 1,
            data: vec![0xff],
            ..r.request(Op::Write, 51)
        };
        let before = r.dropped();
        r.inject(next);
        assert_eq!(r.dropped(), before + 1);
        assert!(target.mem.iter().all(|&b| b == 0x11));
    };
    let write = |r: &Remote, addr: u64, rkey: u32, len: usize| Packet {
        rkey,
        remote_addr: addr,
        msg_len: len as u32,
        data: vec![0xab; len],
        ..r.request(Op::Write, 50)
    };
    // Past the end, before the start, no such key, no remote write right.
    refused(&|r, t, _| write(r, t.addr(4000), t.rkey(), 200));
    refused(&|r, t, _| write(r, t.addr(0) - 1, t.rkey(), 10));
    refused(&|r, t, _| write(r, t.addr(0), 0xdead_beef, 10));
    refused(&|r, _, ro| write(r, ro.addr(0), ro.rkey(), 10));
    // A READ past the end.
    refused(&|r, t, _| Packet {
        rkey: t.rkey(),
        remote_addr: t.addr(4000),
        msg_len: 200,
        ..r.request(Op::ReadRequest, 50)
    });

    // Inside: written and ACKed; a READ inside returns the bytes.
    let r = remote(RW);
    let target = Buf::new(r.s.pd, 4096, 0x11, RW);
    let ro = Buf::new(
        r.s.pd,
        4096,
        0x22,
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
    );
    r.inject(write(&r, target.addr(100), target.rkey(), 50));
    assert_eq!(r.rec.take()[0].op, Op::Ack);
    assert!(target.mem[100..150].iter().all(|&b| b == 0xab));
    assert!(target.mem[..100]
        .iter()
        .chain(&target.mem[150..])
        .all(|&b| b == 0x11));
    r.inject(Packet {
        rkey: ro.rkey(),
        remote_addr: ro.addr(10),
        msg_len: 20,
        ..r.request(Op::ReadRequest, 51)
    });
    let a = r.rec.take();
    assert_eq!(
        (a.len(), a[0].op, a[0].data.clone()),
        (1, Op::ReadResponse, vec![0x22; 20])
    );
    assert!(
        poll(r.s.cq).is_empty(),
        "RDMA without immediate completes nothing at the responder"
    );
}

#[test]
fn unanswered_request_fails_with_retry_exceeded() {
    let _g = serial();
    let r = remote(0);
    let src = Buf::new(r.s.pd, 64, 1, IBV_ACCESS_LOCAL_WRITE);
    let mut sges = [src.sge(0, 64)];
    let mut wr = send_wr(9, &mut sges, IBV_WR_SEND, IBV_SEND_SIGNALED);
    let started = std::time::Instant::now();
    assert_eq!(post_send(r.qp, &mut wr).0, 0);
    assert_eq!(r.rec.take().len(), 1);
    // timeout 14, retry_cnt 7: 8 × 67 ms, then the timer thread fails it.
    let wcs = poll_wait(r.s.cq, Duration::from_secs(5));
    assert_eq!(wcs.len(), 1);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (9, IBV_WC_RETRY_EXC_ERR));
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(qp_state(r.qp), IBV_QPS_ERR);
}
