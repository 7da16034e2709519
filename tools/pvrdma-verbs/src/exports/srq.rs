// SPDX-License-Identifier: GPL-2.0-only
//! Shared receive queues.

use crate::engine;
use crate::ffi;
use crate::guard::{errno_result, guard, ptr_result, set_errno};
use crate::log::vlog;

/// `ibv_create_srq`; `init_attr->attr` is updated to the actual values.
///
/// # Safety
/// `init_attr` is NULL or points to a readable and writable
/// `struct ibv_srq_init_attr`.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_srq(
    pd: *mut ffi::ibv_pd,
    init_attr: *mut ffi::ibv_srq_init_attr,
) -> *mut ffi::ibv_srq {
    guard(std::ptr::null_mut(), || {
        if init_attr.is_null() {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        // SAFETY: non-NULL and readable per the contract.
        let mut a = unsafe { init_attr.read_unaligned() };
        let r = engine::lock().create_srq(pd as usize, a.srq_context, &mut a.attr);
        if r.is_ok() {
            // SAFETY: writable per the contract.
            unsafe { (*init_attr).attr = a.attr };
        }
        vlog!(
            "ibv_create_srq",
            "{pd:p} max_wr={} max_sge={} -> {r:?}",
            a.attr.max_wr,
            a.attr.max_sge
        );
        ptr_result(r)
    })
}

/// `ibv_modify_srq`.
///
/// # Safety
/// `attr` is NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn ibv_modify_srq(
    srq: *mut ffi::ibv_srq,
    attr: *mut ffi::ibv_srq_attr,
    mask: i32,
) -> i32 {
    guard(libc::EIO, || {
        if attr.is_null() {
            return errno_result(Err(libc::EINVAL));
        }
        // SAFETY: non-NULL and readable per the contract.
        let a = unsafe { attr.read_unaligned() };
        let r = engine::lock().modify_srq(srq as usize, &a, mask as u32);
        vlog!("ibv_modify_srq", "{srq:p} mask={mask:#x} -> {r:?}");
        errno_result(r)
    })
}

/// `ibv_query_srq`.
///
/// # Safety
/// `attr` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_srq(
    srq: *mut ffi::ibv_srq,
    attr: *mut ffi::ibv_srq_attr,
) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().query_srq(srq as usize);
        let r = r.and_then(|a| {
            if attr.is_null() {
                return Err(libc::EINVAL);
            }
            // SAFETY: non-NULL and writable per the contract.
            unsafe { attr.write_unaligned(a) };
            Ok(())
        });
        vlog!("ibv_query_srq", "{srq:p} -> {r:?}");
        errno_result(r)
    })
}

/// `ibv_destroy_srq`: EBUSY while QPs use it.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_srq(srq: *mut ffi::ibv_srq) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().destroy_srq(srq as usize);
        vlog!("ibv_destroy_srq", "{srq:p} -> {r:?}");
        errno_result(r)
    })
}
