// SPDX-License-Identifier: GPL-2.0-only
//! The data-path ops: `post_send`, `post_recv`, `post_srq_recv`.
//!
//! WRs are taken in list order; the first one refused stops the walk, is
//! stored in `*bad_wr`, and its errno is returned (the earlier ones stay
//! posted). Posted work then executes at once where it can.

use super::read_sges;
use crate::engine::datapath::UdTarget;
use crate::engine::fast_reg::{self, RegMr};
use crate::engine::limits::MAX_INLINE_DATA;
use crate::engine::wqe::{Payload, RecvWqe, SendWqe};
use crate::engine::{self, Engine};
use crate::ffi;
use crate::guard::{guard, set_errno};
use crate::log::vlog;

/// Converts one C send WR; `Err` is the errno for `bad_wr`.
///
/// # Safety
/// `w.sg_list` holds `w.num_sge` readable SGEs; for an inline send their
/// addresses are readable for their lengths.
unsafe fn send_wqe(w: &ffi::ibv_send_wr) -> Result<(SendWqe, usize, UdTarget), i32> {
    if fast_reg::is_local(w.opcode) && w.num_sge != 0 {
        return Err(libc::EINVAL); // a local operation moves no data
    }
    // SAFETY: forwarded from the caller.
    let sges = unsafe { read_sges(w.sg_list, w.num_sge) }?;
    let carries_data = !matches!(w.opcode, ffi::IBV_WR_RDMA_READ);
    let payload = if w.send_flags & ffi::IBV_SEND_INLINE != 0 && carries_data {
        let total: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
        if total > u64::from(MAX_INLINE_DATA) {
            return Err(libc::EINVAL);
        }
        let mut bytes = Vec::with_capacity(total as usize);
        for s in &sges {
            if s.length > 0 && s.addr == 0 {
                return Err(libc::EINVAL);
            }
            if s.length > 0 {
                // SAFETY: inline data is read from the caller's buffers at
                // post time, as the verbs define it.
                bytes.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(s.addr as *const u8, s.length as usize)
                });
            }
        }
        Payload::Inline(bytes)
    } else {
        Payload::Sges(sges)
    };
    // SAFETY: the unions hold plain integers and pointers; every variant is
    // valid for any bits, and only the one matching the opcode/QP type is used.
    let (imm_data, rdma, ud, bind) = unsafe {
        (
            w.__bindgen_anon_1.imm_data,
            w.wr.rdma,
            w.wr.ud,
            w.__bindgen_anon_2.bind_mw,
        )
    };
    // A fast registration names its MR by pointer: a key into the engine's
    // table, looked up, never dereferenced. No memory window is involved.
    let reg = (w.opcode == fast_reg::WR_REG_MR && bind.mw.is_null()).then_some(RegMr {
        mr: bind.bind_info.mr as usize,
        key: bind.rkey,
        iova: bind.bind_info.addr,
        offset: rdma.remote_addr,
        length: bind.bind_info.length,
        access: bind.bind_info.mw_access_flags,
    });
    let wqe = SendWqe {
        wr_id: w.wr_id,
        opcode: w.opcode,
        signaled: w.send_flags & ffi::IBV_SEND_SIGNALED != 0,
        solicited: w.send_flags & ffi::IBV_SEND_SOLICITED != 0,
        imm_data,
        reg,
        payload,
        remote_addr: rdma.remote_addr,
        rkey: rdma.rkey,
        ud: None,
        retry_deadline: None,
        remote: None,
        psn: None,
    };
    let target = UdTarget {
        ah: ud.ah as usize,
        remote_qpn: ud.remote_qpn,
        remote_qkey: ud.remote_qkey,
    };
    Ok((wqe, w.num_sge.max(0) as usize, target))
}

/// Walks a NULL-terminated WR list, posting each with `post`.
///
/// # Safety
/// `first` is NULL or a valid WR list; `bad` is NULL or writable.
unsafe fn walk<W>(
    first: *mut W,
    bad: *mut *mut W,
    next: impl Fn(&W) -> *mut W,
    mut post: impl FnMut(&mut Engine, &W) -> Result<(), i32>,
) -> i32 {
    let mut e = engine::lock();
    let mut cur = first;
    let mut result = 0;
    while !cur.is_null() {
        // SAFETY: `cur` is a non-NULL element of the caller's list.
        let w = unsafe { &*cur };
        if let Err(errno) = post(&mut e, w) {
            if !bad.is_null() {
                // SAFETY: writable per the contract.
                unsafe { *bad = cur };
            }
            result = errno;
            break;
        }
        cur = next(w);
    }
    e.progress();
    drop(e);
    if result != 0 {
        set_errno(result);
    }
    result
}

/// `context->ops.post_send`.
///
/// # Safety
/// `wr` is a valid WR list (SGE lists and inline data readable); `bad_wr`
/// is writable.
pub unsafe extern "C" fn ops_post_send(
    qp: *mut ffi::ibv_qp,
    wr: *mut ffi::ibv_send_wr,
    bad_wr: *mut *mut ffi::ibv_send_wr,
) -> i32 {
    guard(libc::EIO, || {
        let post = |e: &mut Engine, w: &ffi::ibv_send_wr| {
            // SAFETY: the WR comes from the caller's valid list.
            let (wqe, num_sge, target) = unsafe { send_wqe(w) }?;
            let (id, op, len) = (wqe.wr_id, wqe.opcode, wqe.payload.byte_len());
            let r = e.post_send_one(qp as usize, wqe, num_sge, Some(target));
            vlog!(
                "post_send",
                "{qp:p} wr_id={id:#x} opcode={op} len={len} flags={:#x} -> {r:?}",
                w.send_flags
            );
            r
        };
        // SAFETY: forwarded from the caller.
        unsafe { walk(wr, bad_wr, |w| w.next, post) }
    })
}

/// Posts a receive WR list to `target` (a QP or an SRQ) with `post_one`.
///
/// # Safety
/// `wr` is a valid WR list; `bad_wr` is writable.
unsafe fn post_recv_list(
    name: &'static str,
    target: usize,
    wr: *mut ffi::ibv_recv_wr,
    bad_wr: *mut *mut ffi::ibv_recv_wr,
    post_one: fn(&mut Engine, usize, RecvWqe) -> Result<(), i32>,
) -> i32 {
    guard(libc::EIO, || {
        let post = |e: &mut Engine, w: &ffi::ibv_recv_wr| {
            // SAFETY: the WR comes from the caller's valid list.
            let sges = unsafe { read_sges(w.sg_list, w.num_sge) }?;
            let r = post_one(
                e,
                target,
                RecvWqe {
                    wr_id: w.wr_id,
                    sges,
                },
            );
            vlog!(
                name,
                "{target:#x} wr_id={:#x} num_sge={} -> {r:?}",
                w.wr_id,
                w.num_sge
            );
            r
        };
        // SAFETY: forwarded from the caller.
        unsafe { walk(wr, bad_wr, |w| w.next, post) }
    })
}

/// `context->ops.post_recv`.
///
/// # Safety
/// `wr` is a valid WR list; `bad_wr` is writable.
pub unsafe extern "C" fn ops_post_recv(
    qp: *mut ffi::ibv_qp,
    wr: *mut ffi::ibv_recv_wr,
    bad_wr: *mut *mut ffi::ibv_recv_wr,
) -> i32 {
    // SAFETY: forwarded from the caller.
    unsafe { post_recv_list("post_recv", qp as usize, wr, bad_wr, Engine::post_recv_one) }
}

/// `context->ops.post_srq_recv`.
///
/// # Safety
/// `wr` is a valid WR list; `bad_wr` is writable.
pub unsafe extern "C" fn ops_post_srq_recv(
    srq: *mut ffi::ibv_srq,
    wr: *mut ffi::ibv_recv_wr,
    bad_wr: *mut *mut ffi::ibv_recv_wr,
) -> i32 {
    // SAFETY: forwarded from the caller.
    unsafe {
        post_recv_list(
            "post_srq_recv",
            srq as usize,
            wr,
            bad_wr,
            Engine::post_srq_recv_one,
        )
    }
}
