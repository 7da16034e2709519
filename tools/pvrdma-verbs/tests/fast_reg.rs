// SPDX-License-Identifier: GPL-2.0-only
//! Fast registration: an MR allocated without access, registered
//! by a REG_MR work request under a new key variant, reachable by RDMA with
//! exactly that key, invalidated by LOCAL_INV or by the peer's
//! SEND_WITH_INV, after which its key reaches nothing.

#![warn(clippy::undocumented_unsafe_blocks)]

mod common;

use common::*;
use pvrdma_verbs::engine::fast_reg::{WC_REG_MR, WR_REG_MR};
use pvrdma_verbs::exports::pd_mr::*;
use pvrdma_verbs::ffi::*;
use std::ptr::null_mut;

/// RC QPs `a` (the requester, the consumer's side) and `b` (its peer, whose
/// MRs the tests register), connected, one CQ.
struct Pair {
    s: Side,
    a: *mut ibv_qp,
    b: *mut ibv_qp,
}

fn pair() -> Pair {
    let s = side();
    let a = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let b = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let (gid, index) = fresh_gid();
    connect_rc(a, b, gid, index, RW);
    Pair { s, a, b }
}

impl Pair {
    /// New QPs in place of these (an error completion left one in ERR).
    fn reconnect(&mut self) {
        for q in [self.a, self.b] {
            // SAFETY: a QP of this test, destroyed once.
            assert_eq!(unsafe { pvrdma_verbs::exports::qp::ibv_destroy_qp(q) }, 0);
        }
        let s = &self.s;
        self.a = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
        self.b = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
        let (gid, index) = fresh_gid();
        connect_rc(self.a, self.b, gid, index, RW);
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        destroy_all(&[self.a, self.b], self.s.ctx);
    }
}

/// A fast-registration MR over a buffer of its own.
struct FastMr {
    mem: Vec<u8>,
    mr: *mut ibv_mr,
}

impl FastMr {
    fn new(pd: *mut ibv_pd, len: usize) -> FastMr {
        let mut mem = vec![0u8; len];
        // SAFETY: the buffer outlives the MR (dropped after dereg below).
        let mr = unsafe { pvrdma_sw_alloc_fast_reg_mr(pd, mem.as_mut_ptr().cast(), len) };
        assert!(!mr.is_null(), "alloc_fast_reg_mr errno {}", errno());
        FastMr { mem, mr }
    }

    fn key(&self) -> u32 {
        // SAFETY: a live MR of this test.
        unsafe { (*self.mr).rkey }
    }
}

impl Drop for FastMr {
    fn drop(&mut self) {
        // SAFETY: a live MR of this test, deregistered once.
        assert_eq!(unsafe { ibv_dereg_mr(self.mr) }, 0);
    }
}

/// The next key variant of `key`, as `ib_inc_rkey()` makes it.
fn inc(key: u32) -> u32 {
    (key & !0xff) | (key.wrapping_add(1) & 0xff)
}

/// A REG_MR work request: `mr` under `key` at `[iova, iova+len)`.
fn reg_wr(wr_id: u64, mr: *mut ibv_mr, key: u32, iova: u64, len: u64, access: u32) -> ibv_send_wr {
    reg_wr_at(wr_id, mr, key, iova, 0, len, access)
}

/// A REG_MR work request whose range starts `offset` bytes into the MR.
fn reg_wr_at(
    wr_id: u64,
    mr: *mut ibv_mr,
    key: u32,
    iova: u64,
    offset: u64,
    len: u64,
    access: u32,
) -> ibv_send_wr {
    let mut w = send_wr(wr_id, &mut [], WR_REG_MR, IBV_SEND_SIGNALED);
    w.wr.rdma.remote_addr = offset;
    w.sg_list = null_mut();
    // The bind_mw member of the WR's union: what the device reads for this
    // opcode.
    w.__bindgen_anon_2.bind_mw.mw = null_mut();
    w.__bindgen_anon_2.bind_mw.rkey = key;
    w.__bindgen_anon_2.bind_mw.bind_info = ibv_mw_bind_info {
        mr,
        addr: iova,
        length: len,
        mw_access_flags: access,
    };
    w
}

/// A LOCAL_INV (or, with `opcode`, SEND_WITH_INV) of `key`.
fn inv_wr(wr_id: u64, sges: &mut [ibv_sge], opcode: u32, key: u32) -> ibv_send_wr {
    let mut w = send_wr(wr_id, sges, opcode, IBV_SEND_SIGNALED);
    if sges.is_empty() {
        w.sg_list = null_mut();
    }
    w.__bindgen_anon_1.invalidate_rkey = key;
    w
}

/// What a list of completions is, for messages: (wr_id, status, opcode).
fn ids(wcs: &[ibv_wc]) -> Vec<(u64, u32, u32)> {
    wcs.iter().map(|c| (c.wr_id, c.status, c.opcode)).collect()
}

/// Posts `w` on `qp` and returns the completion of `wr_id` (with the
/// others of this round).
fn run(p: &Pair, qp: *mut ibv_qp, w: &mut ibv_send_wr) -> Vec<ibv_wc> {
    let (rc, _) = post_send(qp, w);
    assert_eq!(rc, 0, "post_send errno {}", errno());
    poll_wait(p.s.cq, std::time::Duration::from_secs(5))
}

/// An RDMA WRITE of `src` from `a` to `[addr, +len)` under `rkey`: its status.
fn write(p: &Pair, src: &Buf, addr: u64, len: u32, rkey: u32) -> u32 {
    let mut s = [src.sge(0, len)];
    let mut w = send_wr(77, &mut s, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED);
    w.wr.rdma.remote_addr = addr;
    w.wr.rdma.rkey = rkey;
    let wcs = run(p, p.a, &mut w);
    assert_eq!(wcs.len(), 1, "{:?}", ids(&wcs));
    assert_eq!(wcs[0].wr_id, 77);
    wcs[0].status
}

#[test]
fn a_fast_reg_mr_is_reached_only_while_registered_and_by_its_exact_key() {
    let mut p = pair();
    let fmr = FastMr::new(p.s.pd, 8192);
    let mut src = Buf::new(p.s.pd, 64, 0, IBV_ACCESS_LOCAL_WRITE);
    for (i, b) in src.mem.iter_mut().enumerate() {
        *b = 0x40 + i as u8;
    }
    let key0 = fmr.key();
    let iova = 0x7000_0000_0000u64;

    // Never registered: its key reaches nothing.
    assert_eq!(write(&p, &src, iova, 64, key0), IBV_WC_REM_ACCESS_ERR);

    // REG_MR on b (the MR's owner) under the next variant.
    p.reconnect();
    let key1 = inc(key0);
    let mut w = reg_wr(1, fmr.mr, key1, iova, 4096, RW);
    let wcs = run(&p, p.b, &mut w);
    assert_eq!(wcs.len(), 1);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status, wcs[0].opcode),
        (1, IBV_WC_SUCCESS, WC_REG_MR)
    );
    // SAFETY: a live MR of this test.
    assert_eq!(unsafe { ((*fmr.mr).lkey, (*fmr.mr).rkey) }, (key1, key1));

    // The new key reaches the registered range, the old variant does not,
    // nor does the new key past the range.
    assert_eq!(write(&p, &src, iova + 100, 64, key1), IBV_WC_SUCCESS);
    assert_eq!(&fmr.mem[100..164], &src.mem[..]);
    p.reconnect();
    assert_eq!(write(&p, &src, iova, 64, key0), IBV_WC_REM_ACCESS_ERR);
    p.reconnect();
    assert_eq!(
        write(&p, &src, iova + 4096 - 32, 64, key1),
        IBV_WC_REM_ACCESS_ERR
    );
}

#[test]
fn local_invalidate_frees_the_key_and_a_new_variant_registers_again() {
    let mut p = pair();
    let fmr = FastMr::new(p.s.pd, 4096);
    let src = Buf::new(p.s.pd, 32, 0x5a, IBV_ACCESS_LOCAL_WRITE);
    let key1 = inc(fmr.key());
    let iova = 0x1000u64;
    let mut w = reg_wr(1, fmr.mr, key1, iova, 4096, RW);
    assert_eq!(run(&p, p.b, &mut w)[0].status, IBV_WC_SUCCESS);

    // A second REG_MR of a registered MR is refused (it must be free).
    let mut again = reg_wr(2, fmr.mr, inc(key1), iova, 4096, RW);
    let wcs = run(&p, p.b, &mut again);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (2, IBV_WC_MW_BIND_ERR));
    p.reconnect();

    // LOCAL_INV with the wrong variant fails; with the key, it succeeds.
    let mut bad = inv_wr(3, &mut [], IBV_WR_LOCAL_INV, inc(key1));
    let wcs = run(&p, p.b, &mut bad);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (3, IBV_WC_MW_BIND_ERR));
    p.reconnect();
    let mut inv = inv_wr(4, &mut [], IBV_WR_LOCAL_INV, key1);
    let wcs = run(&p, p.b, &mut inv);
    assert_eq!(wcs.len(), 1);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].status, wcs[0].opcode),
        (4, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV)
    );

    // The invalidated key reaches nothing; invalidating it again fails.
    assert_eq!(write(&p, &src, iova, 32, key1), IBV_WC_REM_ACCESS_ERR);
    p.reconnect();
    let mut twice = inv_wr(5, &mut [], IBV_WR_LOCAL_INV, key1);
    assert_eq!(run(&p, p.b, &mut twice)[0].status, IBV_WC_MW_BIND_ERR);
    p.reconnect();

    // Registered again under the next variant, at another iova, read-only
    // for the peer: a WRITE is refused, the range is there for a READ.
    let key2 = inc(key1);
    let mut w = reg_wr(6, fmr.mr, key2, 0x9000, 2048, IBV_ACCESS_REMOTE_READ);
    assert_eq!(run(&p, p.b, &mut w)[0].status, IBV_WC_SUCCESS);
    assert_eq!(write(&p, &src, 0x9000, 32, key2), IBV_WC_REM_ACCESS_ERR);
    p.reconnect();
    let mut inv = inv_wr(7, &mut [], IBV_WR_LOCAL_INV, key2);
    assert_eq!(run(&p, p.b, &mut inv)[0].status, IBV_WC_SUCCESS);

    // A range that starts inside the host range (a first page's offset):
    // iova 0x20 is byte 0x120 of the buffer; offset + length past the
    // capacity is refused.
    let key3 = inc(key2);
    let mut past = reg_wr_at(8, fmr.mr, key3, 0x20, 0x100, 4096 - 0xff, RW);
    assert_eq!(run(&p, p.b, &mut past)[0].status, IBV_WC_MW_BIND_ERR);
    p.reconnect();
    let mut w = reg_wr_at(9, fmr.mr, key3, 0x20, 0x100, 0x200, RW);
    assert_eq!(run(&p, p.b, &mut w)[0].status, IBV_WC_SUCCESS);
    assert_eq!(write(&p, &src, 0x20, 32, key3), IBV_WC_SUCCESS);
    assert_eq!(&fmr.mem[0x100..0x120], &src.mem[..]);
}

#[test]
fn send_with_invalidate_invalidates_the_responders_key() {
    let p = pair();
    let fmr = FastMr::new(p.s.pd, 4096);
    let src = Buf::new(p.s.pd, 16, 0x33, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(p.s.pd, 16, 0, IBV_ACCESS_LOCAL_WRITE);
    let key1 = inc(fmr.key());
    let mut w = reg_wr(1, fmr.mr, key1, 0x2000, 4096, RW);
    assert_eq!(run(&p, p.b, &mut w)[0].status, IBV_WC_SUCCESS);
    assert_eq!(write(&p, &src, 0x2000, 16, key1), IBV_WC_SUCCESS);

    // a answers with SEND_WITH_INV of b's key: b's receive says so.
    let mut rs = [dst.sge(0, 16)];
    let mut r = recv_wr(10, &mut rs);
    assert_eq!(post_recv(p.b, &mut r).0, 0);
    let mut ss = [src.sge(0, 16)];
    let mut s = inv_wr(11, &mut ss, IBV_WR_SEND_WITH_INV, key1);
    let wcs = run(&p, p.a, &mut s);
    assert_eq!(wcs.len(), 2, "{:?}", ids(&wcs));
    let send = wcs.iter().find(|c| c.wr_id == 11).unwrap();
    let recv = wcs.iter().find(|c| c.wr_id == 10).unwrap();
    assert_eq!((send.status, send.opcode), (IBV_WC_SUCCESS, IBV_WC_SEND));
    assert_eq!(
        (recv.status, recv.opcode, recv.byte_len),
        (IBV_WC_SUCCESS, IBV_WC_RECV, 16)
    );
    assert_eq!(recv.wc_flags & IBV_WC_WITH_INV, IBV_WC_WITH_INV);
    // SAFETY: the union member the WITH_INV flag says is there.
    assert_eq!(unsafe { recv.__bindgen_anon_1.invalidated_rkey }, key1);
    assert_eq!(&dst.mem[..], &src.mem[..]);

    // The key reaches nothing any more.
    assert_eq!(write(&p, &src, 0x2000, 16, key1), IBV_WC_REM_ACCESS_ERR);
}

#[test]
fn send_with_invalidate_of_a_stale_key_is_refused_and_delivers_nothing() {
    let p = pair();
    let fmr = FastMr::new(p.s.pd, 4096);
    let src = Buf::new(p.s.pd, 16, 0x33, IBV_ACCESS_LOCAL_WRITE);
    let dst = Buf::new(p.s.pd, 16, 0, IBV_ACCESS_LOCAL_WRITE);
    let mut rs = [dst.sge(0, 16)];
    let mut r = recv_wr(10, &mut rs);
    assert_eq!(post_recv(p.b, &mut r).0, 0);
    let mut ss = [src.sge(0, 16)];
    // Never registered: nothing to invalidate.
    let mut s = inv_wr(11, &mut ss, IBV_WR_SEND_WITH_INV, fmr.key());
    let wcs = run(&p, p.a, &mut s);
    assert_eq!(wcs.len(), 1, "{:?}", ids(&wcs));
    assert_eq!((wcs[0].wr_id, wcs[0].status), (11, IBV_WC_REM_INV_REQ_ERR));
    assert!(dst.mem.iter().all(|&b| b == 0), "nothing delivered");
}

#[test]
fn a_registration_names_its_own_mr_within_its_pd_and_capacity() {
    let mut p = pair();
    let fmr = FastMr::new(p.s.pd, 4096);
    let plain = Buf::new(p.s.pd, 4096, 0, RW);
    let key = fmr.key();
    // Past the capacity; another index than the MR's; a plain MR; an
    // access the device refuses (remote write without local write).
    let cases = [
        reg_wr(1, fmr.mr, inc(key), 0, 4097, RW),
        reg_wr(2, fmr.mr, inc(key) + 0x100, 0, 4096, RW),
        reg_wr(3, plain.mr, inc(plain.rkey()), 0, 4096, RW),
        reg_wr(4, fmr.mr, inc(key), 0, 4096, IBV_ACCESS_REMOTE_WRITE),
    ];
    for mut w in cases {
        let wcs = run(&p, p.b, &mut w);
        assert_eq!(wcs.len(), 1, "{:?}", ids(&wcs));
        assert_eq!(wcs[0].status, IBV_WC_MW_BIND_ERR, "wr {}", w.wr_id);
        p.reconnect();
    }
    // The MR is still free, its key still unreachable, and a good
    // registration still works.
    let src = Buf::new(p.s.pd, 16, 1, IBV_ACCESS_LOCAL_WRITE);
    assert_eq!(write(&p, &src, 0, 16, inc(key)), IBV_WC_REM_ACCESS_ERR);
    p.reconnect();
    let mut w = reg_wr(5, fmr.mr, inc(key), 0, 4096, RW);
    assert_eq!(run(&p, p.b, &mut w)[0].status, IBV_WC_SUCCESS);
    assert_eq!(write(&p, &src, 0, 16, inc(key)), IBV_WC_SUCCESS);
}

#[test]
fn a_registration_from_another_pd_is_refused() {
    let p = pair();
    let other = side();
    let fmr = FastMr::new(other.pd, 4096);
    let mut w = reg_wr(1, fmr.mr, inc(fmr.key()), 0, 4096, RW);
    assert_eq!(run(&p, p.b, &mut w)[0].status, IBV_WC_MW_BIND_ERR);
    drop(fmr);
    destroy_all(&[], other.ctx);
}

#[test]
fn local_operations_move_no_data_and_need_their_fields() {
    let p = pair();
    let buf = Buf::new(p.s.pd, 16, 0, RW);
    // A LOCAL_INV with an SGE, a REG_MR that names a memory window.
    let mut s = [buf.sge(0, 16)];
    let mut inv = inv_wr(1, &mut s, IBV_WR_LOCAL_INV, buf.rkey());
    assert_eq!(post_send(p.a, &mut inv).0, libc::EINVAL);
    let mut reg = reg_wr(2, buf.mr, buf.rkey(), 0, 16, RW);
    // Any non-NULL window pointer (never dereferenced).
    reg.__bindgen_anon_2.bind_mw.mw = std::ptr::NonNull::dangling().as_ptr();
    assert_eq!(post_send(p.a, &mut reg).0, libc::EINVAL);
    assert!(poll(p.s.cq).is_empty());
}
