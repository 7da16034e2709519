// SPDX-License-Identifier: GPL-2.0-only
//! The QP state machine through ibv_modify_qp/ibv_query_qp, and CQ overflow.

#![warn(clippy::undocumented_unsafe_blocks)]

mod common;

use common::*;
use pvrdma_verbs::exports::{cq::*, qp::*};
use pvrdma_verbs::ffi::*;
use std::ptr::null_mut;

fn query(qp: *mut ibv_qp) -> (ibv_qp_attr, ibv_qp_init_attr) {
    let mut a = ibv_qp_attr::default();
    let mut i = ibv_qp_init_attr::default();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_query_qp(qp, &mut a, 0x1f_ffff, &mut i) }, 0);
    (a, i)
}

#[test]
fn rc_walk_and_query_returns_the_attributes() {
    let s = side();
    let qp = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let (a, i) = query(qp);
    assert_eq!(a.qp_state, IBV_QPS_RESET);
    assert_eq!(
        (i.qp_type, i.send_cq, i.recv_cq, i.sq_sig_all),
        (IBV_QPT_RC, s.cq, s.cq, 0)
    );
    assert_eq!((a.cap.max_send_wr, a.cap.max_recv_sge), (16, 4));
    let (gid, index) = fresh_gid();
    to_init(qp, IBV_QPT_RC, 0, IBV_ACCESS_REMOTE_WRITE);
    assert_eq!(qp_state(qp), IBV_QPS_INIT);
    to_rtr(qp, IBV_QPT_RC, index, gid, 0x1234);
    to_rts(qp, IBV_QPT_RC);
    let (a, _) = query(qp);
    assert_eq!(a.qp_state, IBV_QPS_RTS);
    assert_eq!(a.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
    assert_eq!((a.port_num, a.pkey_index), (1, 0));
    assert_eq!(
        (a.path_mtu, a.dest_qp_num, a.rq_psn, a.sq_psn),
        (IBV_MTU_1024, 0x1234, 0x1234, 0x4321)
    );
    assert_eq!(
        (a.max_dest_rd_atomic, a.min_rnr_timer, a.max_rd_atomic),
        (1, 12, 1)
    );
    assert_eq!((a.timeout, a.retry_cnt, a.rnr_retry), (14, 7, 7));
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { a.ah_attr.grh.dgid.raw }, gid);
    assert_eq!(
        (
            a.ah_attr.grh.sgid_index,
            a.ah_attr.is_global,
            a.ah_attr.grh.hop_limit
        ),
        (index, 1, 1)
    );
    // RTS -> SQD -> RTS, RTS -> RTS with an optional attribute.
    let mut m = ibv_qp_attr {
        qp_state: IBV_QPS_SQD,
        ..Default::default()
    };
    assert_eq!(modify(qp, &mut m, IBV_QP_STATE), 0);
    assert_eq!(qp_state(qp), IBV_QPS_SQD);
    m.qp_state = IBV_QPS_RTS;
    assert_eq!(modify(qp, &mut m, IBV_QP_STATE), 0);
    m.min_rnr_timer = 3;
    assert_eq!(modify(qp, &mut m, IBV_QP_MIN_RNR_TIMER), 0);
    assert_eq!(query(qp).0.min_rnr_timer, 3);
    // CUR_STATE must match.
    m.cur_qp_state = IBV_QPS_RTR;
    assert_eq!(
        modify(qp, &mut m, IBV_QP_STATE | IBV_QP_CUR_STATE),
        libc::EINVAL
    );
    m.cur_qp_state = IBV_QPS_RTS;
    assert_eq!(modify(qp, &mut m, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
    // -> ERR -> RESET, and RESET forgets the attributes.
    m.qp_state = IBV_QPS_ERR;
    assert_eq!(modify(qp, &mut m, IBV_QP_STATE), 0);
    assert_eq!(qp_state(qp), IBV_QPS_ERR);
    m.qp_state = IBV_QPS_RTS;
    assert_eq!(modify(qp, &mut m, IBV_QP_STATE), libc::EINVAL);
    m.qp_state = IBV_QPS_RESET;
    assert_eq!(modify(qp, &mut m, IBV_QP_STATE), 0);
    let (a, _) = query(qp);
    assert_eq!((a.qp_state, a.dest_qp_num), (IBV_QPS_RESET, 0));
    destroy_all(&[qp], s.ctx);
}

#[test]
fn invalid_transitions_masks_and_values() {
    let s = side();
    let qp = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let (gid, index) = fresh_gid();
    let mut a = ibv_qp_attr {
        qp_state: IBV_QPS_RTR,
        ..Default::default()
    };
    // RESET -> RTR, RESET -> ERR: invalid.
    assert_eq!(modify(qp, &mut a, IBV_QP_STATE), libc::EINVAL);
    a.qp_state = IBV_QPS_ERR;
    assert_eq!(modify(qp, &mut a, IBV_QP_STATE), libc::EINVAL);
    // INIT without ACCESS_FLAGS (RC requires it), and with a UD-only QKEY.
    a = ibv_qp_attr {
        qp_state: IBV_QPS_INIT,
        port_num: 1,
        ..Default::default()
    };
    assert_eq!(
        modify(qp, &mut a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
        libc::EINVAL
    );
    let init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    assert_eq!(modify(qp, &mut a, init | IBV_QP_QKEY), libc::EINVAL);
    // Bad values: port 2, pkey index 1, unknown access bit.
    a.port_num = 2;
    assert_eq!(modify(qp, &mut a, init), libc::EINVAL);
    a.port_num = 1;
    a.pkey_index = 1;
    assert_eq!(modify(qp, &mut a, init), libc::EINVAL);
    a.pkey_index = 0;
    a.qp_access_flags = 1 << 12;
    assert_eq!(modify(qp, &mut a, init), libc::EINVAL);
    a.qp_access_flags = 0;
    assert_eq!(modify(qp, &mut a, init), 0);
    assert_eq!(
        qp_state(qp),
        IBV_QPS_INIT,
        "a failed modify changes nothing"
    );
    // RTR: missing MIN_RNR_TIMER; no GRH; empty sgid entry; bad MTU; QPN > 24 bits.
    let mut r = ibv_qp_attr {
        qp_state: IBV_QPS_RTR,
        path_mtu: IBV_MTU_1024,
        dest_qp_num: 5,
        ..Default::default()
    };
    r.ah_attr = ibv_ah_attr {
        is_global: 1,
        port_num: 1,
        ..Default::default()
    };
    r.ah_attr.grh.dgid = ibv_gid { raw: gid };
    r.ah_attr.grh.sgid_index = index;
    let rtr = IBV_QP_STATE
        | IBV_QP_AV
        | IBV_QP_PATH_MTU
        | IBV_QP_DEST_QPN
        | IBV_QP_RQ_PSN
        | IBV_QP_MAX_DEST_RD_ATOMIC
        | IBV_QP_MIN_RNR_TIMER;
    assert_eq!(
        modify(qp, &mut r, rtr & !IBV_QP_MIN_RNR_TIMER),
        libc::EINVAL
    );
    r.ah_attr.is_global = 0;
    assert_eq!(modify(qp, &mut r, rtr), libc::EINVAL);
    r.ah_attr.is_global = 1;
    r.ah_attr.grh.sgid_index = 127;
    assert_eq!(modify(qp, &mut r, rtr), libc::EINVAL);
    r.ah_attr.grh.sgid_index = index;
    r.path_mtu = 7;
    assert_eq!(modify(qp, &mut r, rtr), libc::EINVAL);
    r.path_mtu = IBV_MTU_1024;
    r.dest_qp_num = 1 << 24;
    assert_eq!(modify(qp, &mut r, rtr), libc::EINVAL);
    r.dest_qp_num = 5;
    r.max_dest_rd_atomic = 200;
    assert_eq!(modify(qp, &mut r, rtr), libc::EINVAL);
    r.max_dest_rd_atomic = 1;
    assert_eq!(modify(qp, &mut r, rtr), 0);
    // RTS: retry count 8 is out of range; SQ_PSN missing.
    let mut t = ibv_qp_attr {
        qp_state: IBV_QPS_RTS,
        timeout: 14,
        retry_cnt: 8,
        rnr_retry: 7,
        max_rd_atomic: 1,
        ..Default::default()
    };
    let rts = IBV_QP_STATE
        | IBV_QP_SQ_PSN
        | IBV_QP_TIMEOUT
        | IBV_QP_RETRY_CNT
        | IBV_QP_RNR_RETRY
        | IBV_QP_MAX_QP_RD_ATOMIC;
    assert_eq!(modify(qp, &mut t, rts), libc::EINVAL);
    t.retry_cnt = 7;
    assert_eq!(modify(qp, &mut t, rts & !IBV_QP_SQ_PSN), libc::EINVAL);
    assert_eq!(modify(qp, &mut t, rts), 0);
    assert_eq!(qp_state(qp), IBV_QPS_RTS);
    // RTS -> INIT: invalid; unknown QP pointer; NULL attr.
    let mut i = ibv_qp_attr {
        qp_state: IBV_QPS_INIT,
        ..Default::default()
    };
    assert_eq!(modify(qp, &mut i, IBV_QP_STATE), libc::EINVAL);
    assert_eq!(modify(0x2000 as *mut _, &mut i, IBV_QP_STATE), libc::EINVAL);
    assert_eq!(
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { ibv_modify_qp(qp, null_mut(), IBV_QP_STATE as i32) },
        libc::EINVAL
    );
    destroy_all(&[qp], s.ctx);
}

#[test]
fn ud_walk_with_qemu_masks() {
    let s = side();
    let qp = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    to_init(qp, IBV_QPT_UD, 0x1234, 0);
    // QEMU's UD RTR with and without QKEY.
    let mut a = ibv_qp_attr {
        qp_state: IBV_QPS_RTR,
        qkey: 0x5678,
        ..Default::default()
    };
    assert_eq!(modify(qp, &mut a, IBV_QP_STATE | IBV_QP_QKEY), 0);
    a.qp_state = IBV_QPS_RTS;
    // AV is not a UD attribute.
    assert_eq!(
        modify(qp, &mut a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_AV),
        libc::EINVAL
    );
    assert_eq!(modify(qp, &mut a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
    assert_eq!(query(qp).0.qkey, 0x5678);
    destroy_all(&[qp], s.ctx);
}

#[test]
fn create_qp_rules() {
    let s = side();
    let mut attr = ibv_qp_init_attr {
        send_cq: s.cq,
        recv_cq: s.cq,
        qp_type: IBV_QPT_UC,
        cap: ibv_qp_cap {
            max_send_wr: 1,
            max_recv_wr: 1,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        },
        ..Default::default()
    };
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe {
        assert!(ibv_create_qp(s.pd, &mut attr).is_null());
        assert_eq!(errno(), libc::EOPNOTSUPP);
        attr.qp_type = IBV_QPT_RC;
        attr.cap.max_send_sge = 1000;
        assert!(ibv_create_qp(s.pd, &mut attr).is_null());
        assert_eq!(errno(), libc::EINVAL);
        attr.cap.max_send_sge = 0;
        attr.send_cq = 0x7000 as *mut _;
        assert!(ibv_create_qp(s.pd, &mut attr).is_null());
        attr.send_cq = s.cq;
        let qp = ibv_create_qp(s.pd, &mut attr);
        assert!(!qp.is_null());
        assert_eq!(
            attr.cap.max_send_sge, 1,
            "actual capacities are written back"
        );
        assert!((*qp).qp_num > 1 && (*qp).qp_num < 1 << 24);
        assert_eq!(((*qp).pd, (*qp).state), (s.pd, IBV_QPS_RESET));
        let qp2 = ibv_create_qp(s.pd, &mut attr);
        assert_ne!((*qp).qp_num, (*qp2).qp_num);
        // CQ and PD in use.
        assert_eq!(ibv_destroy_cq(s.cq), libc::EBUSY);
        assert_eq!(
            pvrdma_verbs::exports::pd_mr::ibv_dealloc_pd(s.pd),
            libc::EBUSY
        );
        assert_eq!(ibv_destroy_qp(qp2), 0);
        assert_eq!(ibv_destroy_qp(qp2), libc::EINVAL);
        destroy_all(&[qp], s.ctx);
    }
}

#[test]
fn cq_overflow_is_an_error_not_corruption() {
    let ctx = open();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let pd = unsafe { pvrdma_verbs::exports::pd_mr::ibv_alloc_pd(ctx) };
    let small = create_cq(ctx, 2, null_mut());
    let qp = create_qp(pd, IBV_QPT_RC, small, small, null_mut());
    let (gid, index) = fresh_gid();
    to_init(qp, IBV_QPT_RC, 0, 0);
    to_rtr(qp, IBV_QPT_RC, index, gid, qpn(qp)); // connected to itself
    to_rts(qp, IBV_QPT_RC);
    let buf = Buf::new(pd, 64, 1, IBV_ACCESS_LOCAL_WRITE);
    let mut ss = [buf.sge(0, 8)];
    for i in 0..2 {
        let mut r = recv_wr(100 + i, &mut ss);
        assert_eq!(post_recv(qp, &mut r).0, 0);
    }
    // Each send makes two completions (send + receive): 4 > 2.
    for i in 0..2 {
        let mut w = send_wr(i, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
        assert_eq!(post_send(qp, &mut w).0, 0);
    }
    assert_eq!(
        qp_state(qp),
        IBV_QPS_ERR,
        "a QP whose completion was lost is in error"
    );
    let mut wc = [ibv_wc::default(); 8];
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let poll_cq = unsafe { (*ctx).ops.poll_cq.unwrap() };
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { poll_cq(small, 8, wc.as_mut_ptr()) }, 2);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { poll_cq(small, 8, wc.as_mut_ptr()) }, -1);
    assert_eq!(errno(), libc::EOVERFLOW);
    drop(buf);
    destroy_all(&[qp], ctx);
}

#[test]
fn qp_numbers_are_reused() {
    // rdma-core's vmw_pvrdma provider and Linux's C driver index tables of max_qp entries with
    // the QP number: after many QPs came and went, numbers must still be small. (Other tests
    // run in parallel and hold a few QPs of their own, hence the margin.)
    let s = side();
    for _ in 0..2000 {
        let qp = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
        assert!(qpn(qp) < 0x11 + 512, "QP number {:#x} not reused", qpn(qp));
        // SAFETY: verbs called the C way, on a QP this test owns.
        assert_eq!(unsafe { ibv_destroy_qp(qp) }, 0);
    }
    destroy_all(&[], s.ctx);
}
