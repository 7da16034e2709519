// SPDX-License-Identifier: GPL-2.0-only
//! UD data path: AH, GRH at the start of the receive buffer, Q_Keys, drops,
//! and the send-queue-error state.

#![warn(clippy::undocumented_unsafe_blocks)]

mod common;

use common::*;
use pvrdma_verbs::exports::{ah::*, pd_mr::*, qp::*};
use pvrdma_verbs::ffi::*;
use std::ptr::null_mut;

fn ah(pd: *mut ibv_pd, dgid: [u8; 16], sgid_index: u8) -> *mut ibv_ah {
    // QEMU's create_ah.
    let mut a = ibv_ah_attr {
        is_global: 1,
        port_num: 1,
        ..Default::default()
    };
    a.grh.hop_limit = 1;
    a.grh.dgid = ibv_gid { raw: dgid };
    a.grh.sgid_index = sgid_index;
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let ah = unsafe { ibv_create_ah(pd, &mut a) };
    assert!(!ah.is_null(), "create_ah errno {}", errno());
    ah
}

fn ud_send(
    qp: *mut ibv_qp,
    sges: &mut [ibv_sge],
    ah: *mut ibv_ah,
    dqpn: u32,
    qkey: u32,
    id: u64,
) -> i32 {
    let mut w = send_wr(id, sges, IBV_WR_SEND, IBV_SEND_SIGNALED);
    w.wr.ud.ah = ah;
    w.wr.ud.remote_qpn = dqpn;
    w.wr.ud.remote_qkey = qkey;
    post_send(qp, &mut w).0
}

#[test]
fn datagram_arrives_after_a_grh() {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    let b = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    ud_ready(a, 0x1111_1111);
    ud_ready(b, 0x1111_1111);
    let (gid_a, index_a) = fresh_gid();
    let (gid_b, _) = fresh_gid();
    let h = ah(s.pd, gid_b, index_a);
    let mut src = Buf::new(s.pd, 100, 0, IBV_ACCESS_LOCAL_WRITE);
    for (i, b) in src.mem.iter_mut().enumerate() {
        *b = i as u8;
    }
    let dst = Buf::new(s.pd, 200, 0xee, IBV_ACCESS_LOCAL_WRITE);
    // Receive into two SGEs: the GRH spans the first one.
    let mut rs = [dst.sge(0, 30), dst.sge(50, 150)];
    let mut r = recv_wr(7, &mut rs);
    assert_eq!(post_recv(b, &mut r).0, 0);
    let mut ss = [src.sge(0, 60), src.sge(60, 40)];
    assert_eq!(ud_send(a, &mut ss, h, qpn(b), 0x1111_1111, 1), 0);
    let wcs = poll(s.cq);
    assert_eq!(wcs.len(), 2);
    let recv = wcs.iter().find(|w| w.opcode == IBV_WC_RECV).unwrap();
    assert_eq!(recv.status, IBV_WC_SUCCESS);
    assert_eq!(recv.byte_len, 140);
    assert_eq!(recv.src_qp, qpn(a));
    assert_eq!(recv.qp_num, qpn(b));
    assert_eq!(recv.wc_flags & IBV_WC_GRH, IBV_WC_GRH);
    let mut msg = dst.mem[0..30].to_vec();
    msg.extend_from_slice(&dst.mem[50..160]);
    assert_eq!(msg[0] >> 4, 6, "IP version 6");
    assert_eq!(msg[6], 0x1b, "next header");
    assert_eq!(msg[7], 1, "hop limit from the AH");
    assert_eq!(&msg[8..24], &gid_a, "source GID");
    assert_eq!(&msg[24..40], &gid_b, "destination GID");
    assert_eq!(&msg[40..], &src.mem[..]);
    assert!(dst.mem[30..50].iter().all(|&b| b == 0xee));
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_ah(h) }, 0);
    destroy_all(&[a, b], s.ctx);
}

#[test]
fn drops_and_qkeys() {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    let b = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    ud_ready(a, 0xaaaa);
    ud_ready(b, 0xbbbb);
    let (gid, index) = fresh_gid();
    let h = ah(s.pd, gid, index);
    let src = Buf::new(s.pd, 16, 5, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(s.pd, 64, 0, IBV_ACCESS_LOCAL_WRITE);
    let mut ss = [src.sge(0, 16)];
    // No receive posted: dropped, the send still succeeds.
    assert_eq!(ud_send(a, &mut ss, h, qpn(b), 0xbbbb, 1), 0);
    let wcs = poll(s.cq);
    assert_eq!((wcs.len(), wcs[0].status), (1, IBV_WC_SUCCESS));
    let mut rs = [dst.sge(0, 64)];
    let mut r = recv_wr(9, &mut rs);
    assert_eq!(post_recv(b, &mut r).0, 0);
    // Wrong Q_Key: dropped.
    let before = pvrdma_verbs::qkey_violations();
    assert_eq!(ud_send(a, &mut ss, h, qpn(b), 0xaaaa, 2), 0);
    assert_eq!(poll(s.cq).len(), 1);
    assert_eq!(pvrdma_verbs::qkey_violations(), before + 1);
    // No such QP, and a GID that is not ours: dropped.
    assert_eq!(ud_send(a, &mut ss, h, 0xabcdef, 0xbbbb, 3), 0);
    let far = ah(
        s.pd,
        [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        index,
    );
    assert_eq!(ud_send(a, &mut ss, far, qpn(b), 0xbbbb, 4), 0);
    assert_eq!(poll(s.cq).len(), 2);
    // High bit set: the sender QP's own Q_Key is used (0xaaaa: dropped).
    assert_eq!(ud_send(a, &mut ss, h, qpn(b), 0x8000_0000, 5), 0);
    assert_eq!(poll(s.cq).len(), 1);
    // Right Q_Key: delivered to the one posted receive.
    assert_eq!(ud_send(a, &mut ss, h, qpn(b), 0xbbbb, 6), 0);
    let wcs = poll(s.cq);
    assert!(wcs.iter().any(|w| w.wr_id == 9 && w.byte_len == 56));
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_ah(h) }, 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_ah(far) }, 0);
    drop((src, dst));
    destroy_all(&[a, b], s.ctx);
}

#[test]
fn unknown_gid_is_dropped() {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    ud_ready(a, 1);
    let (_, index) = fresh_gid();
    let h = ah(
        s.pd,
        [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9],
        index,
    );
    let src = Buf::new(s.pd, 16, 5, IBV_ACCESS_LOCAL_WRITE);
    let mut ss = [src.sge(0, 16)];
    assert_eq!(ud_send(a, &mut ss, h, 0x20, 1, 1), 0);
    assert_eq!(poll(s.cq)[0].status, IBV_WC_SUCCESS);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_ah(h) }, 0);
    drop(src);
    destroy_all(&[a], s.ctx);
}

#[test]
fn receive_without_room_for_grh_is_a_length_error() {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    let b = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    ud_ready(a, 3);
    ud_ready(b, 3);
    let (gid, index) = fresh_gid();
    let h = ah(s.pd, gid, index);
    let src = Buf::new(s.pd, 16, 5, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(s.pd, 64, 0, IBV_ACCESS_LOCAL_WRITE);
    let mut rs = [dst.sge(0, 40)]; // the GRH fits, the payload does not
    let mut r = recv_wr(9, &mut rs);
    assert_eq!(post_recv(b, &mut r).0, 0);
    let mut ss = [src.sge(0, 16)];
    assert_eq!(ud_send(a, &mut ss, h, qpn(b), 3, 1), 0);
    let wcs = poll(s.cq);
    assert!(wcs
        .iter()
        .any(|w| w.wr_id == 9 && w.status == IBV_WC_LOC_LEN_ERR));
    assert!(wcs
        .iter()
        .any(|w| w.wr_id == 1 && w.status == IBV_WC_SUCCESS));
    assert_eq!(qp_state(b), IBV_QPS_ERR);
    assert_eq!(qp_state(a), IBV_QPS_RTS);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_ah(h) }, 0);
    drop((src, dst));
    destroy_all(&[a, b], s.ctx);
}

#[test]
fn send_errors_go_to_sqe_and_back_to_rts() {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    ud_ready(a, 3);
    let (gid, index) = fresh_gid();
    let h = ah(s.pd, gid, index);
    let big = Buf::new(s.pd, 8192, 5, IBV_ACCESS_LOCAL_WRITE);
    let mut ss = [big.sge(0, 4097)];
    let mut w1 = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    w1.wr.ud.ah = h;
    w1.wr.ud.remote_qpn = qpn(a);
    w1.wr.ud.remote_qkey = 3;
    let mut ok_sge = [big.sge(0, 8)];
    let mut w2 = send_wr(2, &mut ok_sge, IBV_WR_SEND, 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    w2.wr.ud = unsafe { w1.wr.ud };
    w1.next = &mut w2;
    assert_eq!(post_send(a, &mut w1).0, 0);
    let wcs = poll(s.cq);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (1, IBV_WC_LOC_LEN_ERR));
    assert_eq!((wcs[1].wr_id, wcs[1].status), (2, IBV_WC_WR_FLUSH_ERR));
    assert_eq!(qp_state(a), IBV_QPS_SQE);
    let mut attr = ibv_qp_attr {
        qp_state: IBV_QPS_RTS,
        ..Default::default()
    };
    assert_eq!(modify(a, &mut attr, IBV_QP_STATE), 0);
    w2.next = null_mut();
    w2.send_flags = IBV_SEND_SIGNALED;
    assert_eq!(post_send(a, &mut w2).0, 0);
    assert_eq!(poll(s.cq)[0].status, IBV_WC_SUCCESS);
    // Unknown AH pointer: refused at post time.
    w2.wr.ud.ah = 0x4000 as *mut _;
    assert_eq!(post_send(a, &mut w2).0, libc::EINVAL);
    // RDMA is not a UD opcode.
    let mut w3 = send_wr(3, &mut ok_sge, IBV_WR_RDMA_WRITE, 0);
    w3.wr.ud.ah = h;
    assert_eq!(post_send(a, &mut w3).0, libc::EINVAL);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_ah(h) }, 0);
    drop(big);
    destroy_all(&[a], s.ctx);
}

#[test]
fn ah_of_another_pd_serves_a_qp() {
    // QEMU caches one AH per destination GID, created on the PD of the
    // first QP that sent there, and hands it to QPs of every PD.
    let s = side();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let pd_b = unsafe { ibv_alloc_pd(s.ctx) };
    assert!(!pd_b.is_null());
    let a = create_qp(pd_b, IBV_QPT_UD, s.cq, s.cq, null_mut());
    let b = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    ud_ready(a, 0x2222);
    ud_ready(b, 0x2222);
    let (gid_a, index_a) = fresh_gid();
    let (gid_b, _) = fresh_gid();
    let h = ah(s.pd, gid_b, index_a);
    let src = Buf::new(pd_b, 32, 0x5a, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(s.pd, 128, 0, IBV_ACCESS_LOCAL_WRITE);
    let mut rs = [dst.sge(0, 128)];
    let mut r = recv_wr(7, &mut rs);
    assert_eq!(post_recv(b, &mut r).0, 0);
    let mut ss = [src.sge(0, 32)];
    assert_eq!(ud_send(a, &mut ss, h, qpn(b), 0x2222, 1), 0);
    let wcs = poll(s.cq);
    assert_eq!(wcs.len(), 2);
    let statuses: Vec<u32> = wcs.iter().map(|w| w.status).collect();
    assert_eq!(statuses, [IBV_WC_SUCCESS; 2]);
    let recv = wcs.iter().find(|w| w.opcode == IBV_WC_RECV).unwrap();
    assert_eq!((recv.byte_len, recv.src_qp), (72, qpn(a)));
    assert_eq!(recv.wc_flags & IBV_WC_GRH, IBV_WC_GRH);
    assert_eq!(&dst.mem[8..24], &gid_a, "source GID");
    assert_eq!(&dst.mem[24..40], &gid_b, "destination GID");
    assert_eq!(&dst.mem[40..72], &src.mem[..]);
    assert_eq!(qp_state(a), IBV_QPS_RTS);
    // The AH counts on its own PD only: PD A stays busy until the AH and
    // its other users are gone, PD B once its QP and MR are.
    drop((src, dst));
    for q in [a, b] {
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        assert_eq!(unsafe { ibv_destroy_qp(q) }, 0);
    }
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_dealloc_pd(pd_b) }, 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_dealloc_pd(s.pd) }, libc::EBUSY);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_ah(h) }, 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_dealloc_pd(s.pd) }, 0);
    destroy_all(&[], s.ctx);
}

#[test]
fn ah_needs_grh_port_and_valid_sgid() {
    let s = side();
    let mut a = ibv_ah_attr {
        is_global: 0,
        port_num: 1,
        ..Default::default()
    };
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert!(unsafe { ibv_create_ah(s.pd, &mut a) }.is_null());
    assert_eq!(errno(), libc::EINVAL);
    a.is_global = 1;
    a.port_num = 2;
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert!(unsafe { ibv_create_ah(s.pd, &mut a) }.is_null());
    a.port_num = 1;
    a.grh.sgid_index = 120; // empty entry
                            // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert!(unsafe { ibv_create_ah(s.pd, &mut a) }.is_null());
    a.grh.sgid_index = 0;
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let h = unsafe { ibv_create_ah(s.pd, &mut a) };
    assert!(!h.is_null());
    assert_eq!(
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { pvrdma_verbs::exports::pd_mr::ibv_dealloc_pd(s.pd) },
        libc::EBUSY
    );
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_ah(h) }, 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_ah(h) }, libc::EINVAL);
    destroy_all(&[], s.ctx);
}
