// SPDX-License-Identifier: GPL-2.0-only
//! A GID's type end to end: QEMU's REG (`gid_type`, QEMU patch 29) ->
//! pvrdma-mux -> GID_ADD -> this device's GID table -> the header a UD
//! receive starts with. One device in this process, joined to a real mux
//! as QEMU's is; one test, as the fabric connection is made once per process.

#![warn(clippy::undocumented_unsafe_blocks)]

mod common;

use common::*;
use pvrdma_fabric::gid::ipv4_mapped_gid;
use pvrdma_fabric::mux_msg::{ErrCode, MsgType, MuxMsg, OpCode, MSG_SIZE};
use pvrdma_fabric::{Gid, GidType, FABRIC_SOCKET_ENV};
use pvrdma_verbs::exports::ah::*;
use pvrdma_verbs::ffi::*;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::ptr::null_mut;
use std::sync::Arc;
use std::time::Duration;

const QKEY: u32 = 0x1111_1111;

/// Registers `gid` of type `ty` as QEMU does (REG on a mad connection,
/// which must stay open: closing it releases the GID).
fn register(mad: &Path, gid: Gid, ty: GidType) -> UnixStream {
    let mut s = UnixStream::connect(mad).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reg = MuxMsg::request(OpCode::Reg, gid);
    reg.gid_type = ty as u32;
    s.write_all(&reg.encode()).unwrap();
    let mut buf = [0u8; MSG_SIZE];
    s.read_exact(&mut buf).unwrap();
    let r = MuxMsg::decode(&buf).unwrap();
    assert_eq!(
        (r.msg_type(), r.err_code()),
        (Some(MsgType::Resp), Some(ErrCode::Ok)),
        "{r}"
    );
    s
}

fn index_of(gid: &Gid) -> u8 {
    let index = pvrdma_verbs::engine::lock().gids.index_of(gid);
    index.expect("the mux added the GID") as u8
}

fn ah(pd: *mut ibv_pd, dgid: Gid, sgid_index: u8) -> *mut ibv_ah {
    let mut a = ibv_ah_attr {
        is_global: 1,
        port_num: 1,
        grh: ibv_global_route {
            dgid: ibv_gid { raw: dgid },
            sgid_index,
            hop_limit: 64,
            ..Default::default()
        },
        ..Default::default()
    };
    // SAFETY: verbs called the C way, on objects this test owns.
    let ah = unsafe { ibv_create_ah(pd, &mut a) };
    assert!(!ah.is_null(), "create_ah errno {}", errno());
    ah
}

#[test]
fn the_type_of_a_reg_decides_the_ud_receive_header() {
    let mux = TestMux::start("gt");
    let (mad, fabric, log) = (mux.mad.clone(), mux.fabric.clone(), Arc::clone(&mux.log));
    // The device connects to the mux on its first open.
    std::env::set_var(FABRIC_SOCKET_ENV, &fabric);
    let s = side();
    let (a, b, c) = (
        ipv4_mapped_gid([192, 0, 2, 1]),
        ipv4_mapped_gid([192, 0, 2, 2]),
        ipv4_mapped_gid([192, 0, 2, 3]),
    );
    let _regs = [
        register(&mad, a, GidType::RoceV2),
        register(&mad, b, GidType::RoceV2),
        register(&mad, c, GidType::RoceV1),
    ];
    let gids = |g: &Gid| pvrdma_verbs::engine::lock().gids.gid_type(g);
    assert_eq!(gids(&a), Some(GidType::RoceV2));
    assert_eq!(gids(&b), Some(GidType::RoceV2));
    assert_eq!(gids(&c), Some(GidType::RoceV1));

    let tx = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    let rx = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    ud_ready(tx, QKEY);
    ud_ready(rx, QKEY);
    let src = Buf::new(s.pd, 100, 0x5a, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(s.pd, 140, 0xee, IBV_ACCESS_LOCAL_WRITE);
    // A datagram from `a` to `dest`: the 40 bytes its receive starts with.
    let receive_header = |dest: Gid| {
        let h = ah(s.pd, dest, index_of(&a));
        let mut rs = [dst.sge(0, 140)];
        let mut r = recv_wr(2, &mut rs);
        assert_eq!(post_recv(rx, &mut r).0, 0);
        let mut ss = [src.sge(0, 100)];
        let mut w = send_wr(1, &mut ss, IBV_WR_SEND, IBV_SEND_SIGNALED);
        w.wr.ud.ah = h;
        w.wr.ud.remote_qpn = qpn(rx);
        w.wr.ud.remote_qkey = QKEY;
        assert_eq!(post_send(tx, &mut w).0, 0);
        let wcs = poll(s.cq);
        let recv = wcs.iter().find(|w| w.opcode == IBV_WC_RECV).unwrap();
        assert_eq!((recv.status, recv.byte_len), (IBV_WC_SUCCESS, 140));
        assert_eq!(&dst.mem[40..], &src.mem[..]);
        // SAFETY: verbs called the C way, on objects this test owns.
        assert_eq!(unsafe { ibv_destroy_ah(h) }, 0);
        let mut g = [0u8; 40];
        g.copy_from_slice(&dst.mem[..40]);
        g
    };

    // To `b`, bound as RoCE v2: an IPv4 header in bytes 20..40.
    let g = receive_header(b);
    assert_eq!(g[..20], [0; 20]);
    assert_eq!((g[20], g[29]), (0x45, 17), "IPv4, protocol UDP");
    assert_eq!(g[32..36], [192, 0, 2, 1]);
    assert_eq!(g[36..40], [192, 0, 2, 2]);
    // To `c`, bound as RoCE v1: the IB GRH.
    let g = receive_header(c);
    assert_eq!((g[0] >> 4, g[6]), (6, 0x1b), "IPv6 layout, next header IBA");
    assert_eq!(g[8..24], a);
    assert_eq!(g[24..40], c);

    destroy_all(&[tx, rx], s.ctx);
    let log = log.lock().unwrap().join("\n");
    assert!(log.contains("RoCEv2"), "{log}");
}
