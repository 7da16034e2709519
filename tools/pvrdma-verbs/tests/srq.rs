// SPDX-License-Identifier: GPL-2.0-only
//! Shared receive queues.

#![warn(clippy::undocumented_unsafe_blocks)]

mod common;

use common::*;
use pvrdma_verbs::exports::srq::*;
use pvrdma_verbs::ffi::*;
use std::ptr::null_mut;

fn create_srq(pd: *mut ibv_pd, max_wr: u32, max_sge: u32) -> *mut ibv_srq {
    // QEMU's rdma_backend_create_srq.
    let mut a = ibv_srq_init_attr {
        srq_context: null_mut(),
        attr: ibv_srq_attr {
            max_wr,
            max_sge,
            srq_limit: 0,
        },
    };
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let srq = unsafe { ibv_create_srq(pd, &mut a) };
    assert!(!srq.is_null(), "create_srq errno {}", errno());
    srq
}

#[test]
fn two_qps_share_one_srq() {
    let s = side();
    let srq = create_srq(s.pd, 8, 2);
    let a = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let b1 = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, srq);
    let a2 = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let b2 = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, srq);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { (*b1).srq }, srq);
    let (gid, index) = fresh_gid();
    connect_rc(a, b1, gid, index, 0);
    connect_rc(a2, b2, gid, index, 0);
    let src = Buf::new(s.pd, 64, 0x5a, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(s.pd, 256, 0, IBV_ACCESS_LOCAL_WRITE);
    // A QP on an SRQ has no receive queue of its own.
    let mut rs = [dst.sge(0, 64)];
    let mut r = recv_wr(1, &mut rs);
    assert_eq!(post_recv(b1, &mut r).0, libc::EINVAL);
    for i in 0..3u64 {
        let mut rs = [
            dst.sge(64 * i as usize, 32),
            dst.sge(64 * i as usize + 32, 32),
        ];
        let mut r = recv_wr(10 + i, &mut rs);
        assert_eq!(post_srq_recv(srq, &mut r).0, 0);
    }
    let mut ss = [src.sge(0, 40)];
    let mut w = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(a, &mut w).0, 0);
    let mut w = send_wr(2, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(a2, &mut w).0, 0);
    let wcs = poll(s.cq);
    let recvs: Vec<_> = wcs.iter().filter(|w| w.opcode == IBV_WC_RECV).collect();
    assert_eq!(recvs.len(), 2);
    assert_eq!(
        (recvs[0].wr_id, recvs[0].qp_num, recvs[0].byte_len),
        (10, qpn(b1), 40)
    );
    assert_eq!(
        (recvs[1].wr_id, recvs[1].qp_num, recvs[1].src_qp),
        (11, qpn(b2), qpn(a2))
    );
    assert!(dst.mem[..40].iter().all(|&b| b == 0x5a));
    assert!(dst.mem[64..104].iter().all(|&b| b == 0x5a));
    // In use: cannot go.
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_srq(srq) }, libc::EBUSY);
    destroy_all(&[a, b1, a2, b2], s.ctx);
}

#[test]
fn limits_query_modify_and_limit_event() {
    let s = side();
    let srq = create_srq(s.pd, 4, 1);
    let mut attr = ibv_srq_attr::default();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_query_srq(srq, &mut attr) }, 0);
    assert_eq!((attr.max_wr, attr.max_sge, attr.srq_limit), (4, 1, 0));
    // Limit must be below max_wr.
    attr.srq_limit = 4;
    assert_eq!(
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { ibv_modify_srq(srq, &mut attr, IBV_SRQ_LIMIT as i32) },
        libc::EINVAL
    );
    attr.srq_limit = 2;
    assert_eq!(
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { ibv_modify_srq(srq, &mut attr, IBV_SRQ_LIMIT as i32) },
        0
    );
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_query_srq(srq, &mut attr) }, 0);
    assert_eq!(attr.srq_limit, 2);
    let buf = Buf::new(s.pd, 64, 0, IBV_ACCESS_LOCAL_WRITE);
    for i in 0..4 {
        let mut rs = [buf.sge(0, 64)]; // room for the GRH
        let mut r = recv_wr(i, &mut rs);
        assert_eq!(post_srq_recv(srq, &mut r).0, 0);
    }
    // Full; too many SGEs.
    let mut rs = [buf.sge(0, 8)];
    let mut r = recv_wr(9, &mut rs);
    assert_eq!(post_srq_recv(srq, &mut r).0, libc::ENOMEM);
    let mut rs2 = [buf.sge(0, 8), buf.sge(8, 8)];
    let mut r2 = recv_wr(9, &mut rs2);
    assert_eq!(post_srq_recv(srq, &mut r2).0, libc::EINVAL);
    // Resize below the posted count fails; above works.
    attr.max_wr = 3;
    assert_eq!(
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { ibv_modify_srq(srq, &mut attr, IBV_SRQ_MAX_WR as i32) },
        libc::EINVAL
    );
    attr.max_wr = 8;
    assert_eq!(
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { ibv_modify_srq(srq, &mut attr, IBV_SRQ_MAX_WR as i32) },
        0
    );
    // Consume three through a UD QP: the limit fires when fewer than 2 remain.
    let a = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    let b = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, srq);
    ud_ready(a, 5);
    ud_ready(b, 5);
    let (gid, index) = fresh_gid();
    let mut aa = ibv_ah_attr {
        is_global: 1,
        port_num: 1,
        ..Default::default()
    };
    aa.grh.dgid = ibv_gid { raw: gid };
    aa.grh.sgid_index = index;
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let h = unsafe { pvrdma_verbs::exports::ah::ibv_create_ah(s.pd, &mut aa) };
    let mut none: [ibv_sge; 0] = [];
    for i in 0..3 {
        let mut w = send_wr(i, &mut none, IBV_WR_SEND, 0);
        w.wr.ud.ah = h;
        w.wr.ud.remote_qpn = qpn(b);
        w.wr.ud.remote_qkey = 5;
        assert_eq!(post_send(a, &mut w).0, 0);
        let fired = pvrdma_verbs::srq_limit_events(srq).unwrap();
        assert_eq!(fired, u32::from(i == 2), "after {} receives", i + 1);
    }
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_query_srq(srq, &mut attr) }, 0);
    assert_eq!(
        (attr.max_wr, attr.srq_limit),
        (8, 0),
        "the limit disarms when it fires"
    );
    let wcs = poll(s.cq);
    assert_eq!(wcs.len(), 3);
    assert!(wcs
        .iter()
        .all(|w| w.status == IBV_WC_SUCCESS && w.byte_len == 40 && w.qp_num == qpn(b)));
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { pvrdma_verbs::exports::ah::ibv_destroy_ah(h) }, 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { pvrdma_verbs::exports::qp::ibv_destroy_qp(b) }, 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_srq(srq) }, 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_srq(srq) }, libc::EINVAL);
    drop(buf);
    destroy_all(&[a], s.ctx);
}

#[test]
fn create_rejects_bad_sizes() {
    let s = side();
    let mut a = ibv_srq_init_attr {
        srq_context: null_mut(),
        attr: ibv_srq_attr {
            max_wr: 0,
            max_sge: 1,
            srq_limit: 0,
        },
    };
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert!(unsafe { ibv_create_srq(s.pd, &mut a) }.is_null());
    a.attr.max_wr = 1 << 30;
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert!(unsafe { ibv_create_srq(s.pd, &mut a) }.is_null());
    a.attr = ibv_srq_attr {
        max_wr: 4,
        max_sge: 1000,
        srq_limit: 0,
    };
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert!(unsafe { ibv_create_srq(s.pd, &mut a) }.is_null());
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert!(unsafe { ibv_create_srq(0x5000 as *mut _, &mut a) }.is_null());
    destroy_all(&[], s.ctx);
}
