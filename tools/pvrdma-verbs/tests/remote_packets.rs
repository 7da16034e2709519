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
fn requester_sends_segments_and_waits_for_the_answer() {
    let _g = serial();
    let r = remote(0);
    let mut src = Buf::new(r.s.pd, 3 * MAX_CHUNK, 0, IBV_ACCESS_LOCAL_WRITE);
    src.mem.copy_from_slice(&pattern(3 * MAX_CHUNK, 5));
    let len = (2 * MAX_CHUNK + 100) as u32;
    let mut sges = [src.sge(0, len)];
    let mut wr = send_wr(
        1,
        &mut sges,
        IBV_WR_SEND_WITH_IMM,
        IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
    );
    wr.__bindgen_anon_1.imm_data = 0x0102_0304;
    assert_eq!(post_send(r.qp, &mut wr).0, 0);
    // A second WR waits behind the first: one message in flight per QP.
    let mut sges2 = [src.sge(0, 10)];
    let mut wr2 = send_wr(2, &mut sges2, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(r.qp, &mut wr2).0, 0);

    let sent = r.rec.take();
    assert_eq!(sent.len(), 3, "{sent:?}");
    let mut joined = Vec::new();
    for p in &sent {
        assert_eq!(
            (p.op, p.dgid, p.dst_qpn, p.sgid),
            (Op::Send, REMOTE_GID, REMOTE_QPN, r.gid)
        );
        assert_eq!(p.flags, flag::IMM | flag::SOLICITED);
        assert_eq!(p.imm, 0x0102_0304);
        assert_eq!((p.offset as usize, p.msg_len), (joined.len(), len));
        assert_eq!(p.msg_id, sent[0].msg_id);
        assert!(Packet::decode(&p.encode()).is_ok());
        joined.extend_from_slice(&p.data);
    }
    assert_eq!(joined, src.mem[..len as usize]);
    assert!(poll(r.s.cq).is_empty(), "completed before its answer");

    // Answers to another message, or from another QP or GID, change nothing.
    let before = r.dropped();
    r.inject(r.answer(Op::Ack, sent[0].msg_id.wrapping_add(1)));
    r.inject(Packet {
        src_qpn: REMOTE_QPN + 1,
        ..r.answer(Op::Ack, sent[0].msg_id)
    });
    r.inject(Packet {
        sgid: [9; 16],
        ..r.answer(Op::Ack, sent[0].msg_id)
    });
    r.inject(Packet {
        dgid: [8; 16],
        ..r.answer(Op::Ack, sent[0].msg_id)
    });
    // A READ response to a SEND does not fit either.
    r.inject(Packet {
        msg_len: 4,
        data: vec![0; 4],
        ..r.answer(Op::ReadResponse, sent[0].msg_id)
    });
    assert_eq!(r.dropped(), before + 5);
    assert!(poll(r.s.cq).is_empty());

    // RNR: the message goes out again, whole, after a short wait.
    r.inject(r.answer(Op::RnrNak, sent[0].msg_id));
    std::thread::sleep(Duration::from_millis(20));
    let again = r.rec.take();
    assert_eq!(again.len(), 3, "resent after RNR: {again:?}");
    r.inject(r.answer(Op::Ack, again[0].msg_id));
    let wcs = poll_wait(r.s.cq, Duration::from_secs(2));
    assert_eq!(wcs.len(), 1);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status, wcs[0].byte_len),
        (1, IBV_WC_SUCCESS, len)
    );
    // Then the second WR went out.
    let second = r.rec.take();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].data, src.mem[..10]);
    r.inject(Packet {
        syndrome: Some(Syndrome::InvalidRequest),
        detail: 0x15,
        ..r.answer(Op::Nak, second[0].msg_id)
    });
    let wcs = poll_wait(r.s.cq, Duration::from_secs(2));
    assert_eq!(wcs.len(), 1);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status, wcs[0].vendor_err),
        (2, IBV_WC_REM_INV_REQ_ERR, 0x15)
    );
    assert_eq!(qp_state(r.qp), IBV_QPS_ERR);
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
fn responder_refuses_rdma_outside_the_mr() {
    let _g = serial();
    let r = remote(RW);
    let target = Buf::new(r.s.pd, 4096, 0x11, RW);
    let ro = Buf::new(
        r.s.pd,
        4096,
        0x22,
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
    );
    let write = |addr: u64, rkey: u32, len: usize| Packet {
        rkey,
        remote_addr: addr,
        msg_len: len as u32,
        data: vec![0xab; len],
        ..r.request(Op::Write, 50)
    };
    let naks = [
        write(target.addr(4000), target.rkey(), 200), // past the end
        write(target.addr(0) - 1, target.rkey(), 10), // before the start
        write(target.addr(0), 0xdead_beef, 10),       // no such key
        write(ro.addr(0), ro.rkey(), 10),             // no remote write
    ];
    for p in naks {
        r.inject(p);
        let a = r.rec.take();
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!(
            (a[0].op, a[0].syndrome),
            (Op::Nak, Some(Syndrome::RemoteAccess))
        );
    }
    assert!(target.mem.iter().all(|&b| b == 0x11));
    assert!(ro.mem.iter().all(|&b| b == 0x22));
    // A READ request past the end: NAK, no data.
    r.inject(Packet {
        rkey: target.rkey(),
        remote_addr: target.addr(4000),
        msg_len: 200,
        ..r.request(Op::ReadRequest, 51)
    });
    let a = r.rec.take();
    assert_eq!((a.len(), a[0].op), (1, Op::Nak));
    // Inside: written, ACKed; a READ inside returns the bytes.
    r.inject(write(target.addr(100), target.rkey(), 50));
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
        ..r.request(Op::ReadRequest, 52)
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
