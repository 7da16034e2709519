// SPDX-License-Identifier: GPL-2.0-only
//! Address handles.

use crate::engine;
use crate::ffi;
use crate::guard::{errno_result, guard, ptr_result, set_errno};
use crate::log::vlog;

/// `ibv_create_ah`: needs a GRH (RoCE), port 1 and a valid source GID
/// index.
///
/// # Safety
/// `attr` is NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_ah(
    pd: *mut ffi::ibv_pd,
    attr: *mut ffi::ibv_ah_attr,
) -> *mut ffi::ibv_ah {
    guard(std::ptr::null_mut(), || {
        if attr.is_null() {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        // SAFETY: non-NULL and readable per the contract.
        let a = unsafe { attr.read_unaligned() };
        let r = engine::lock().create_ah(pd as usize, &a);
        vlog!(
            "ibv_create_ah",
            "{pd:p} dgid={} sgid_index={} -> {r:?}",
            crate::fmt_gid(&crate::engine::datapath::gid_bytes(&a.grh.dgid)),
            a.grh.sgid_index
        );
        ptr_result(r)
    })
}

/// `ibv_destroy_ah`.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_ah(ah: *mut ffi::ibv_ah) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().destroy_ah(ah as usize);
        vlog!("ibv_destroy_ah", "{ah:p} -> {r:?}");
        errno_result(r)
    })
}
