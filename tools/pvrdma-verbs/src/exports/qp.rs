// SPDX-License-Identifier: GPL-2.0-only
//! Queue pairs.

use crate::engine::{self, qp::QpRequest};
use crate::ffi;
use crate::guard::{errno_result, guard, ptr_result, set_errno};
use crate::log::vlog;

/// `ibv_create_qp` (RC and UD); `attr->cap` is updated to the actual
/// capacities.
///
/// # Safety
/// `attr` is NULL or points to a readable and writable
/// `struct ibv_qp_init_attr`.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_qp(
    pd: *mut ffi::ibv_pd,
    attr: *mut ffi::ibv_qp_init_attr,
) -> *mut ffi::ibv_qp {
    guard(std::ptr::null_mut(), || {
        if attr.is_null() {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        // SAFETY: non-NULL and readable per the contract.
        let a = unsafe { attr.read_unaligned() };
        let mut req = QpRequest {
            pd: pd as usize,
            send_cq: a.send_cq as usize,
            recv_cq: a.recv_cq as usize,
            srq: (!a.srq.is_null()).then_some(a.srq as usize),
            qp_type: a.qp_type,
            cap: a.cap,
            sq_sig_all: a.sq_sig_all != 0,
            qp_context: a.qp_context,
        };
        let mut e = engine::lock();
        let r = e.create_qp(&mut req);
        let qpn = r.ok().and_then(|p| e.qps.get(&(p as usize))).map(|q| q.qpn);
        drop(e);
        if r.is_ok() {
            // SAFETY: writable per the contract; only `cap` changes.
            unsafe { (*attr).cap = req.cap };
        }
        vlog!(
            "ibv_create_qp",
            "{pd:p} type={} cap={:?} -> {r:?} qpn={qpn:?}",
            a.qp_type,
            (
                req.cap.max_send_wr,
                req.cap.max_recv_wr,
                req.cap.max_send_sge,
                req.cap.max_recv_sge
            )
        );
        ptr_result(r)
    })
}

/// `ibv_modify_qp`: 0 or an errno value (EINVAL for an invalid transition,
/// attribute mask or attribute value).
///
/// # Safety
/// `attr` is NULL or points to a readable `struct ibv_qp_attr`.
#[no_mangle]
pub unsafe extern "C" fn ibv_modify_qp(
    qp: *mut ffi::ibv_qp,
    attr: *mut ffi::ibv_qp_attr,
    attr_mask: i32,
) -> i32 {
    guard(libc::EIO, || {
        if attr.is_null() {
            return errno_result(Err(libc::EINVAL));
        }
        // SAFETY: non-NULL and readable per the contract.
        let a = unsafe { attr.read_unaligned() };
        let r = engine::lock().modify_qp(qp as usize, &a, attr_mask as u32);
        vlog!(
            "ibv_modify_qp",
            "{qp:p} mask={attr_mask:#x} state={} -> {r:?}",
            a.qp_state
        );
        errno_result(r)
    })
}

/// `ibv_query_qp`: every attribute, whatever the mask.
///
/// # Safety
/// `attr` and `init_attr` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_qp(
    qp: *mut ffi::ibv_qp,
    attr: *mut ffi::ibv_qp_attr,
    attr_mask: i32,
    init_attr: *mut ffi::ibv_qp_init_attr,
) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().query_qp(qp as usize);
        vlog!(
            "ibv_query_qp",
            "{qp:p} mask={attr_mask:#x} -> {:?}",
            r.as_ref().map(|(a, _)| a.qp_state)
        );
        let r = r.and_then(|(a, i)| {
            if attr.is_null() {
                return Err(libc::EINVAL);
            }
            // SAFETY: non-NULL and writable per the contract.
            unsafe { attr.write_unaligned(a) };
            if !init_attr.is_null() {
                // SAFETY: non-NULL and writable per the contract.
                unsafe { init_attr.write_unaligned(i) };
            }
            Ok(())
        });
        errno_result(r)
    })
}

/// `ibv_destroy_qp`.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_qp(qp: *mut ffi::ibv_qp) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().destroy_qp(qp as usize);
        vlog!("ibv_destroy_qp", "{qp:p} -> {r:?}");
        errno_result(r)
    })
}
