// SPDX-License-Identifier: GPL-2.0-only
//! RC data path: pingpong with SG lists, RNR wait, unsignaled sends, RDMA,
//! and every error completion with its QP state consequence.

#![warn(clippy::undocumented_unsafe_blocks)]

mod common;

use common::*;
use pvrdma_verbs::exports::{cq::*, device::*, pd_mr::*, qp::*};
use pvrdma_verbs::ffi::*;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

struct Pair {
    s: Side,
    a: *mut ibv_qp,
    b: *mut ibv_qp,
}

fn pair(access: u32) -> Pair {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let b = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let (gid, index) = fresh_gid();
    connect_rc(a, b, gid, index, access);
    Pair { s, a, b }
}

impl Drop for Pair {
    fn drop(&mut self) {
        destroy_all(&[self.a, self.b], self.s.ctx);
    }
}

#[test]
fn pingpong_with_sg_lists() {
    let p = pair(0);
    let src = Buf::new(p.s.pd, 256, 0, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(p.s.pd, 256, 0xee, IBV_ACCESS_LOCAL_WRITE);
    let mut src = src;
    for (i, b) in src.mem.iter_mut().enumerate() {
        *b = i as u8;
    }
    for round in 0..3u64 {
        // b receives into two pieces; a sends three pieces.
        let mut rs = [dst.sge(0, 10), dst.sge(100, 100)];
        let mut rwr = recv_wr(100 + round, &mut rs);
        assert_eq!(post_recv(p.b, &mut rwr).0, 0);
        let mut ss = [src.sge(0, 5), src.sge(50, 20), src.sge(200, 30)];
        let mut swr = send_wr(round, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
        assert_eq!(post_send(p.a, &mut swr).0, 0);
        let wcs = poll(p.s.cq);
        assert_eq!(wcs.len(), 2, "round {round}");
        let recv = wcs.iter().find(|w| w.opcode == IBV_WC_RECV).unwrap();
        let send = wcs.iter().find(|w| w.opcode == IBV_WC_SEND).unwrap();
        assert_eq!(send.status, IBV_WC_SUCCESS);
        assert_eq!(send.wr_id, round);
        assert_eq!(send.qp_num, qpn(p.a));
        assert_eq!(recv.status, IBV_WC_SUCCESS);
        assert_eq!(recv.wr_id, 100 + round);
        assert_eq!(recv.byte_len, 55);
        assert_eq!(recv.qp_num, qpn(p.b));
        assert_eq!(recv.src_qp, qpn(p.a));
        assert_eq!(recv.wc_flags & IBV_WC_GRH, 0);
        let expect: Vec<u8> = (0..5).chain(50..70).chain(200..230).collect();
        assert_eq!(&dst.mem[0..10], &expect[0..10]);
        assert_eq!(&dst.mem[100..145], &expect[10..55]);
        assert!(dst.mem[10..100].iter().all(|&b| b == 0xee));
        assert!(dst.mem[145..].iter().all(|&b| b == 0xee));
    }
}

#[test]
fn rnr_wait_completes_when_receive_is_posted() {
    let p = pair(0);
    let src = Buf::new(p.s.pd, 64, 7, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(p.s.pd, 64, 0, IBV_ACCESS_LOCAL_WRITE);
    let mut ss = [src.sge(0, 64)];
    let mut w1 = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    let mut w2 = send_wr(2, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    w1.next = &mut w2;
    assert_eq!(post_send(p.a, &mut w1).0, 0);
    assert!(poll(p.s.cq).is_empty(), "no receive posted: the sends wait");
    let mut rs = [dst.sge(0, 64)];
    let mut r = recv_wr(10, &mut rs);
    assert_eq!(post_recv(p.b, &mut r).0, 0);
    let wcs = poll(p.s.cq);
    assert_eq!(wcs.len(), 2);
    assert!(wcs
        .iter()
        .any(|w| w.wr_id == 1 && w.status == IBV_WC_SUCCESS));
    assert!(dst.mem.iter().all(|&b| b == 7));
    let mut r = recv_wr(11, &mut rs);
    assert_eq!(post_recv(p.b, &mut r).0, 0);
    let wcs = poll(p.s.cq);
    assert!(wcs.iter().any(|w| w.wr_id == 2 && w.opcode == IBV_WC_SEND));
    assert!(wcs.iter().any(|w| w.wr_id == 11 && w.opcode == IBV_WC_RECV));
}

#[test]
fn unsignaled_sends_complete_silently() {
    let p = pair(0);
    let src = Buf::new(p.s.pd, 16, 1, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(p.s.pd, 16, 0, IBV_ACCESS_LOCAL_WRITE);
    let mut rs = [dst.sge(0, 16)];
    for i in 0..2 {
        let mut r = recv_wr(i, &mut rs);
        assert_eq!(post_recv(p.b, &mut r).0, 0);
    }
    let mut ss = [src.sge(0, 16)];
    let mut w = send_wr(5, &mut ss, IBV_WR_SEND, 0);
    assert_eq!(post_send(p.a, &mut w).0, 0);
    let wcs = poll(p.s.cq);
    assert_eq!(wcs.len(), 1);
    assert_eq!(wcs[0].opcode, IBV_WC_RECV);
    let mut w = send_wr(6, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(p.a, &mut w).0, 0);
    assert_eq!(poll(p.s.cq).len(), 2);
}

#[test]
fn sq_sig_all_signals_everything() {
    let s = side();
    let mut attr = ibv_qp_init_attr {
        send_cq: s.cq,
        recv_cq: s.cq,
        qp_type: IBV_QPT_RC,
        sq_sig_all: 1,
        cap: ibv_qp_cap {
            max_send_wr: 4,
            max_recv_wr: 4,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 64,
        },
        ..Default::default()
    };
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let a = unsafe { pvrdma_verbs::exports::qp::ibv_create_qp(s.pd, &mut attr) };
    let b = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let (gid, index) = fresh_gid();
    connect_rc(a, b, gid, index, 0);
    let dst = Buf::new(s.pd, 16, 0, IBV_ACCESS_LOCAL_WRITE);
    let mut rs = [dst.sge(0, 16)];
    let mut r = recv_wr(0, &mut rs);
    assert_eq!(post_recv(b, &mut r).0, 0);
    // Inline data: no lkey needed, copied at post time.
    let mut data = *b"inline-payload!!";
    let mut ss = [ibv_sge {
        addr: data.as_mut_ptr() as u64,
        length: 16,
        lkey: 0,
    }];
    let mut w = send_wr(9, &mut ss, IBV_WR_SEND, IBV_SEND_INLINE);
    assert_eq!(post_send(a, &mut w).0, 0);
    data.fill(0);
    let wcs = poll(s.cq);
    assert_eq!(wcs.len(), 2);
    assert_eq!(&dst.mem[..], b"inline-payload!!");
    destroy_all(&[a, b], s.ctx);
}

#[test]
fn bad_lkey_fails_locally_and_flushes_the_rest() {
    let p = pair(0);
    let src = Buf::new(p.s.pd, 64, 1, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(p.s.pd, 64, 0, IBV_ACCESS_LOCAL_WRITE);
    let mut rs = [dst.sge(0, 64)];
    let mut r = recv_wr(50, &mut rs);
    assert_eq!(post_recv(p.b, &mut r).0, 0);
    let mut bad = [ibv_sge {
        lkey: 0xdead_beef,
        ..src.sge(0, 8)
    }];
    let mut good = [src.sge(0, 8)];
    let mut w1 = send_wr(1, &mut bad, IBV_WR_SEND, IBV_SEND_SIGNALED);
    let mut w2 = send_wr(2, &mut good, IBV_WR_SEND, 0);
    w1.next = &mut w2;
    assert_eq!(post_send(p.a, &mut w1).0, 0);
    let wcs = poll(p.s.cq);
    assert_eq!(wcs.len(), 2);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (1, IBV_WC_LOC_PROT_ERR));
    assert_ne!(wcs[0].vendor_err, 0);
    // Unsignaled, but flushed: flush completions are always generated.
    assert_eq!((wcs[1].wr_id, wcs[1].status), (2, IBV_WC_WR_FLUSH_ERR));
    assert_eq!(qp_state(p.a), IBV_QPS_ERR);
    // Later posts to an ERR QP are flushed too.
    let mut w3 = send_wr(3, &mut good, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(p.a, &mut w3).0, 0);
    let wcs = poll(p.s.cq);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (3, IBV_WC_WR_FLUSH_ERR));
    let mut r = recv_wr(51, &mut rs);
    assert_eq!(post_recv(p.a, &mut r).0, 0);
    let wcs = poll(p.s.cq);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status, wcs[0].opcode),
        (51, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV)
    );
    // The responder never saw anything.
    assert_eq!(qp_state(p.b), IBV_QPS_RTS);
    assert!(dst.mem.iter().all(|&b| b == 0));
}

#[test]
fn sge_out_of_bounds_or_other_pd_is_a_protection_error() {
    for case in 0..2 {
        let p = pair(0);
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        let other_pd = unsafe { ibv_alloc_pd(p.s.ctx) };
        let src = Buf::new(p.s.pd, 64, 1, IBV_ACCESS_LOCAL_WRITE);
        let foreign = Buf::new(other_pd, 64, 1, IBV_ACCESS_LOCAL_WRITE);
        let mut ss = [if case == 0 {
            src.sge(60, 8)
        } else {
            foreign.sge(0, 8)
        }];
        let mut w = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
        assert_eq!(post_send(p.a, &mut w).0, 0);
        let wcs = poll(p.s.cq);
        assert_eq!(wcs[0].status, IBV_WC_LOC_PROT_ERR, "case {case}");
        assert_eq!(qp_state(p.a), IBV_QPS_ERR);
        drop(foreign);
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        assert_eq!(unsafe { ibv_dealloc_pd(other_pd) }, 0);
    }
}

#[test]
fn receive_too_small_is_len_error_and_remote_invalid_request() {
    let p = pair(0);
    let src = Buf::new(p.s.pd, 64, 1, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(p.s.pd, 64, 0, IBV_ACCESS_LOCAL_WRITE);
    let mut rs = [dst.sge(0, 16)];
    let mut r1 = recv_wr(70, &mut rs);
    let mut r2 = recv_wr(71, &mut rs);
    r1.next = &mut r2;
    assert_eq!(post_recv(p.b, &mut r1).0, 0);
    let mut ss = [src.sge(0, 32)];
    let mut w = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(p.a, &mut w).0, 0);
    let wcs = poll(p.s.cq);
    let recv: Vec<_> = wcs.iter().filter(|w| w.opcode == IBV_WC_RECV).collect();
    let send: Vec<_> = wcs.iter().filter(|w| w.opcode == IBV_WC_SEND).collect();
    assert_eq!((recv[0].wr_id, recv[0].status), (70, IBV_WC_LOC_LEN_ERR));
    assert_eq!((recv[1].wr_id, recv[1].status), (71, IBV_WC_WR_FLUSH_ERR));
    assert_eq!(send[0].status, IBV_WC_REM_INV_REQ_ERR);
    assert_eq!(qp_state(p.a), IBV_QPS_ERR);
    assert_eq!(qp_state(p.b), IBV_QPS_ERR);
    assert!(dst.mem.iter().all(|&b| b == 0), "nothing written");
}

#[test]
fn receive_buffer_without_local_write_is_protection_error() {
    let p = pair(0);
    let src = Buf::new(p.s.pd, 64, 1, IBV_ACCESS_LOCAL_WRITE);
    let ro = Buf::new(p.s.pd, 64, 0, 0);
    let mut rs = [ro.sge(0, 64)];
    let mut r = recv_wr(80, &mut rs);
    assert_eq!(post_recv(p.b, &mut r).0, 0);
    let mut ss = [src.sge(0, 8)];
    let mut w = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(p.a, &mut w).0, 0);
    let wcs = poll(p.s.cq);
    assert!(wcs
        .iter()
        .any(|w| w.wr_id == 80 && w.status == IBV_WC_LOC_PROT_ERR));
    assert!(wcs
        .iter()
        .any(|w| w.wr_id == 1 && w.status == IBV_WC_REM_OP_ERR));
    assert!(ro.mem.iter().all(|&b| b == 0));
}

#[test]
fn unknown_destination_gid_exceeds_retries() {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let (_, index) = fresh_gid();
    to_init(a, IBV_QPT_RC, 0, 0);
    let remote = [
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55,
    ];
    to_rtr(a, IBV_QPT_RC, index, remote, 0x99);
    to_rts(a, IBV_QPT_RC);
    let src = Buf::new(s.pd, 8, 1, IBV_ACCESS_LOCAL_WRITE);
    let mut ss = [src.sge(0, 8)];
    let mut w = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(a, &mut w).0, 0);
    let wcs = poll_wait(s.cq, Duration::from_secs(5));
    assert_eq!(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
    assert_eq!(qp_state(a), IBV_QPS_ERR);
    drop(src);
    destroy_all(&[a], s.ctx);
}

#[test]
fn peer_not_connected_back_exceeds_retries() {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let b = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let (gid, index) = fresh_gid();
    to_init(a, IBV_QPT_RC, 0, 0);
    to_rtr(a, IBV_QPT_RC, index, gid, qpn(b));
    to_rts(a, IBV_QPT_RC);
    // b is connected to a QPN that is not a.
    to_init(b, IBV_QPT_RC, 0, 0);
    to_rtr(b, IBV_QPT_RC, index, gid, 0x777);
    let src = Buf::new(s.pd, 8, 1, IBV_ACCESS_LOCAL_WRITE);
    let mut ss = [src.sge(0, 8)];
    let mut w = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(a, &mut w).0, 0);
    let wcs = poll_wait(s.cq, Duration::from_secs(5));
    assert_eq!(wcs[0].status, IBV_WC_RETRY_EXC_ERR);
    drop(src);
    destroy_all(&[a, b], s.ctx);
}

/// Waits up to `timeout_ms` for `fd` to be readable.
fn readable(fd: i32, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, timeout_ms) == 1 && p.revents & libc::POLLIN != 0 }
}

/// An RC QP on a CQ with a completion channel, connected to a QPN that
/// does not exist, with ACK timeout 12 (16.8 ms) and retry_cnt 2.
struct Unanswered {
    ctx: *mut ibv_context,
    ch: *mut ibv_comp_channel,
    cq: *mut ibv_cq,
    qp: *mut ibv_qp,
    buf: Buf,
}

const UNANSWERED_WAIT: Duration = Duration::from_nanos(3 * (4096 << 12));

fn unanswered() -> Unanswered {
    let ctx = open();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let pd = unsafe { ibv_alloc_pd(ctx) };
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let ch = unsafe { ibv_create_comp_channel(ctx) };
    assert!(!pd.is_null() && !ch.is_null());
    let cq = create_cq(ctx, 16, ch);
    let qp = create_qp(pd, IBV_QPT_RC, cq, cq, null_mut());
    let (gid, index) = fresh_gid();
    to_init(qp, IBV_QPT_RC, 0, 0);
    to_rtr(qp, IBV_QPT_RC, index, gid, 0xfedcba);
    to_rts_with_retries(qp, IBV_QPT_RC, 12, 2);
    let buf = Buf::new(pd, 8, 1, IBV_ACCESS_LOCAL_WRITE);
    Unanswered {
        ctx,
        ch,
        cq,
        qp,
        buf,
    }
}

impl Unanswered {
    fn send(&self, id: u64) {
        let mut ss = [self.buf.sge(0, 8)];
        let mut w = send_wr(id, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
        assert_eq!(post_send(self.qp, &mut w).0, 0);
    }

    fn fd(&self) -> i32 {
        // SAFETY: a live channel of this test.
        unsafe { (*self.ch).fd }
    }
}

#[test]
fn unanswered_send_fails_after_the_retry_timeout() {
    let u = unanswered();
    assert_eq!(req_notify(u.cq, false), 0);
    let start = Instant::now();
    u.send(1);
    u.send(2);
    // Retransmitting: no completion yet, the QP stays in RTS.
    assert!(poll(u.cq).is_empty());
    assert_eq!(qp_state(u.qp), IBV_QPS_RTS);
    // The timer raises the channel event without any other verb call.
    assert!(readable(u.fd(), 5000), "no channel event");
    assert!(start.elapsed() >= UNANSWERED_WAIT, "{:?}", start.elapsed());
    let (mut cq, mut cq_ctx) = (null_mut(), null_mut());
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_get_cq_event(u.ch, &mut cq, &mut cq_ctx) }, 0);
    assert_eq!(cq, u.cq);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { ibv_ack_cq_events(u.cq, 1) };
    let wcs = poll(u.cq);
    assert_eq!(wcs.len(), 2);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (1, IBV_WC_RETRY_EXC_ERR));
    assert_eq!(wcs[0].qp_num, qpn(u.qp));
    assert_eq!((wcs[1].wr_id, wcs[1].status), (2, IBV_WC_WR_FLUSH_ERR));
    assert_eq!(qp_state(u.qp), IBV_QPS_ERR);
    // Later WRs are flushed at once.
    u.send(3);
    assert_eq!(poll(u.cq)[0].status, IBV_WC_WR_FLUSH_ERR);
    drop(u.buf);
    destroy_all(&[u.qp], u.ctx);
}

#[test]
fn destroying_the_qp_cancels_its_retry_timeout() {
    let u = unanswered();
    u.send(1);
    assert_eq!(req_notify(u.cq, false), 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_qp(u.qp) }, 0);
    std::thread::sleep(UNANSWERED_WAIT * 3);
    assert!(!readable(u.fd(), 0), "event for a destroyed QP's send");
    assert!(poll(u.cq).is_empty());
    drop(u.buf);
    destroy_all(&[], u.ctx);
}

#[test]
fn rnr_waiter_fails_when_responder_goes_away() {
    let p = pair(0);
    let src = Buf::new(p.s.pd, 8, 1, IBV_ACCESS_LOCAL_WRITE);
    let mut ss = [src.sge(0, 8)];
    let mut w = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(p.a, &mut w).0, 0);
    assert!(poll(p.s.cq).is_empty());
    let mut attr = ibv_qp_attr {
        qp_state: IBV_QPS_ERR,
        ..Default::default()
    };
    assert_eq!(modify(p.b, &mut attr, IBV_QP_STATE), 0);
    let wcs = poll_wait(p.s.cq, Duration::from_secs(5));
    let sent = wcs.iter().find(|w| w.qp_num == qpn(p.a)).unwrap();
    assert_eq!(sent.status, IBV_WC_RETRY_EXC_ERR);
}

#[test]
fn post_send_refusals_set_bad_wr() {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let src = Buf::new(s.pd, 8, 1, IBV_ACCESS_LOCAL_WRITE);
    let mut ss = [src.sge(0, 8)];
    let mut w = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    // RESET: not allowed.
    let (rc, bad) = post_send(a, &mut w);
    assert_eq!(rc, libc::EINVAL);
    assert_eq!(bad, &mut w as *mut _);
    // RESET receive: not allowed either.
    let mut r = recv_wr(1, &mut ss);
    assert_eq!(post_recv(a, &mut r).0, libc::EINVAL);
    let (gid, index) = fresh_gid();
    to_init(a, IBV_QPT_RC, 0, 0);
    assert_eq!(post_recv(a, &mut r).0, 0, "INIT accepts receives");
    to_rtr(a, IBV_QPT_RC, index, gid, qpn(a));
    assert_eq!(post_send(a, &mut w).0, libc::EINVAL, "RTR refuses sends");
    to_rts(a, IBV_QPT_RC);
    // Too many SGEs, unknown opcode, queue full.
    let mut many = [src.sge(0, 1); 5];
    let mut w5 = send_wr(2, &mut many, IBV_WR_SEND, 0);
    assert_eq!(post_send(a, &mut w5).0, libc::EINVAL);
    let mut wop = send_wr(3, &mut ss, IBV_WR_ATOMIC_CMP_AND_SWP, 0);
    assert_eq!(post_send(a, &mut wop).0, libc::EINVAL);
    let mut wrs: Vec<ibv_send_wr> = (0..17)
        .map(|i| send_wr(100 + i, &mut ss, IBV_WR_SEND, 0))
        .collect();
    for i in 0..16 {
        let next: *mut ibv_send_wr = &mut wrs[i + 1];
        wrs[i].next = next;
    }
    // a talks to itself; one receive is posted, so 1 send executes and 15
    // wait (RNR): the 17th finds the queue full.
    let (rc, bad) = post_send(a, &mut wrs[0]);
    assert_eq!(rc, libc::ENOMEM);
    assert_eq!(bad, &mut wrs[16] as *mut _);
    drop(src);
    destroy_all(&[a], s.ctx);
}

#[test]
fn rdma_write_read_and_immediates() {
    let p = pair(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    let local = Buf::new(p.s.pd, 128, 0, RW);
    let remote = Buf::new(p.s.pd, 128, 0, RW);
    let mut local = local;
    local.mem[..16].copy_from_slice(b"0123456789abcdef");
    // WRITE.
    let mut ss = [local.sge(0, 16)];
    let mut w = send_wr(1, &mut ss, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED);
    w.wr.rdma.remote_addr = remote.addr(32);
    w.wr.rdma.rkey = remote.rkey();
    assert_eq!(post_send(p.a, &mut w).0, 0);
    let wcs = poll(p.s.cq);
    assert_eq!(
        (wcs.len(), wcs[0].opcode, wcs[0].status),
        (1, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS)
    );
    assert_eq!(&remote.mem[32..48], b"0123456789abcdef");
    // READ back into another local spot.
    let mut rs = [local.sge(64, 16)];
    let mut r = send_wr(2, &mut rs, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED);
    r.wr.rdma.remote_addr = remote.addr(32);
    r.wr.rdma.rkey = remote.rkey();
    assert_eq!(post_send(p.a, &mut r).0, 0);
    let wcs = poll(p.s.cq);
    assert_eq!(
        (wcs[0].opcode, wcs[0].status, wcs[0].byte_len),
        (IBV_WC_RDMA_READ, IBV_WC_SUCCESS, 16)
    );
    assert_eq!(&local.mem[64..80], b"0123456789abcdef");
    // WRITE_WITH_IMM consumes a receive (RNR until one is posted).
    let mut wi = send_wr(3, &mut ss, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_SEND_SIGNALED);
    wi.wr.rdma.remote_addr = remote.addr(96);
    wi.wr.rdma.rkey = remote.rkey();
    wi.__bindgen_anon_1.imm_data = 0x1122_3344u32.to_be();
    assert_eq!(post_send(p.a, &mut wi).0, 0);
    assert!(poll(p.s.cq).is_empty());
    let mut none: [ibv_sge; 0] = [];
    let mut rr = recv_wr(30, &mut none);
    assert_eq!(post_recv(p.b, &mut rr).0, 0);
    let wcs = poll(p.s.cq);
    let rw = wcs.iter().find(|w| w.wr_id == 30).unwrap();
    assert_eq!(rw.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    assert_eq!(rw.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
    assert_eq!(
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { rw.__bindgen_anon_1.imm_data },
        0x1122_3344u32.to_be()
    );
    assert_eq!(rw.byte_len, 16);
    assert_eq!(&remote.mem[96..112], b"0123456789abcdef");
    // SEND_WITH_IMM.
    let mut rs2 = [remote.sge(0, 16)];
    let mut rr2 = recv_wr(31, &mut rs2);
    assert_eq!(post_recv(p.b, &mut rr2).0, 0);
    let mut si = send_wr(4, &mut ss, IBV_WR_SEND_WITH_IMM, IBV_SEND_SIGNALED);
    si.__bindgen_anon_1.imm_data = 7u32.to_be();
    assert_eq!(post_send(p.a, &mut si).0, 0);
    let wcs = poll(p.s.cq);
    let rw = wcs.iter().find(|w| w.wr_id == 31).unwrap();
    assert_eq!(
        (rw.opcode, rw.wc_flags & IBV_WC_WITH_IMM),
        (IBV_WC_RECV, IBV_WC_WITH_IMM)
    );
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { rw.__bindgen_anon_1.imm_data }, 7u32.to_be());
}

#[test]
fn rdma_access_errors() {
    // The responder QP does not allow remote access (QEMU's INIT passes 0).
    let p = pair(0);
    let local = Buf::new(p.s.pd, 64, 1, RW);
    let remote = Buf::new(p.s.pd, 64, 0, RW);
    let mut ss = [local.sge(0, 8)];
    let mut w = send_wr(1, &mut ss, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED);
    w.wr.rdma.remote_addr = remote.addr(0);
    w.wr.rdma.rkey = remote.rkey();
    assert_eq!(post_send(p.a, &mut w).0, 0);
    assert_eq!(poll(p.s.cq)[0].status, IBV_WC_REM_ACCESS_ERR);
    assert_eq!(qp_state(p.a), IBV_QPS_ERR);
    drop((local, remote));

    let p = pair(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    let local = Buf::new(p.s.pd, 64, 1, RW);
    let ro = Buf::new(
        p.s.pd,
        64,
        0,
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
    );
    let cases: [(u64, u32, u32); 3] = [
        (ro.addr(0), ro.rkey(), IBV_WR_RDMA_WRITE), // MR lacks REMOTE_WRITE
        (ro.addr(60), ro.rkey(), IBV_WR_RDMA_READ), // out of bounds
        (ro.addr(0), 0x7777_7777, IBV_WR_RDMA_READ), // bad rkey
    ];
    for (i, (addr, rkey, op)) in cases.into_iter().enumerate() {
        let mut ss = [local.sge(0, 8)];
        let mut w = send_wr(i as u64, &mut ss, op, IBV_SEND_SIGNALED);
        w.wr.rdma.remote_addr = addr;
        w.wr.rdma.rkey = rkey;
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_RESET,
            ..Default::default()
        };
        assert_eq!(modify(p.a, &mut a, IBV_QP_STATE), 0);
        to_init(p.a, IBV_QPT_RC, 0, 0);
        let (gid, index) = fresh_gid();
        to_rtr(p.a, IBV_QPT_RC, index, gid, qpn(p.b));
        to_rts(p.a, IBV_QPT_RC);
        // b must point back at a over the same gid.
        let mut rb = ibv_qp_attr {
            qp_state: IBV_QPS_RESET,
            ..Default::default()
        };
        assert_eq!(modify(p.b, &mut rb, IBV_QP_STATE), 0);
        to_init(
            p.b,
            IBV_QPT_RC,
            0,
            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
        );
        to_rtr(p.b, IBV_QPT_RC, index, gid, qpn(p.a));
        assert_eq!(post_send(p.a, &mut w).0, 0);
        assert_eq!(poll(p.s.cq)[0].status, IBV_WC_REM_ACCESS_ERR, "case {i}");
    }
    assert!(ro.mem.iter().all(|&b| b == 0));
}

#[test]
fn destroyed_qp_completions_are_purged() {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let b = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let (gid, index) = fresh_gid();
    connect_rc(a, b, gid, index, 0);
    let buf = Buf::new(s.pd, 8, 1, IBV_ACCESS_LOCAL_WRITE);
    let mut rs = [buf.sge(0, 8)];
    let mut r = recv_wr(1, &mut rs);
    assert_eq!(post_recv(b, &mut r).0, 0);
    let mut w = send_wr(2, &mut rs, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(a, &mut w).0, 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { pvrdma_verbs::exports::qp::ibv_destroy_qp(b) }, 0);
    let wcs = poll(s.cq);
    assert_eq!(wcs.len(), 1);
    assert_eq!(wcs[0].qp_num, qpn(a));
    drop(buf);
    destroy_all(&[a], s.ctx);
    let _ = ibv_close_device;
}
