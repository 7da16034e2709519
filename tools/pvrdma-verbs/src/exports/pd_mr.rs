// SPDX-License-Identifier: GPL-2.0-only
//! Protection domains and memory registration.

use crate::engine;
use crate::ffi;
use crate::guard::{errno_result, guard, ptr_result};
use crate::log::vlog;
use std::ffi::c_void;

/// `ibv_alloc_pd`.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_alloc_pd(context: *mut ffi::ibv_context) -> *mut ffi::ibv_pd {
    guard(std::ptr::null_mut(), || {
        let r = engine::lock().alloc_pd(context as usize);
        vlog!("ibv_alloc_pd", "{context:p} -> {r:?}");
        ptr_result(r)
    })
}

/// `ibv_dealloc_pd`: EBUSY while objects use the PD.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_dealloc_pd(pd: *mut ffi::ibv_pd) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().dealloc_pd(pd as usize);
        vlog!("ibv_dealloc_pd", "{pd:p} -> {r:?}");
        errno_result(r)
    })
}

fn reg(
    verb: &str,
    pd: *mut ffi::ibv_pd,
    addr: *mut c_void,
    length: usize,
    iova: u64,
    access: u32,
) -> *mut ffi::ibv_mr {
    let r = engine::lock().reg_mr(pd as usize, addr as usize, length, iova, access);
    vlog!(
        verb,
        "{pd:p} addr={addr:p} len={length:#x} iova={iova:#x} access={access:#x} -> {r:?}"
    );
    ptr_result(r)
}

/// `ibv_reg_mr` (the exported symbol; the inline macro calls it for
/// constant access flags without optional bits): iova = addr.
///
/// # Safety
/// `[addr, addr+length)` stays mapped until `ibv_dereg_mr` (verbs contract).
#[no_mangle]
pub unsafe extern "C" fn ibv_reg_mr(
    pd: *mut ffi::ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: i32,
) -> *mut ffi::ibv_mr {
    guard(std::ptr::null_mut(), || {
        reg("ibv_reg_mr", pd, addr, length, addr as u64, access as u32)
    })
}

/// `ibv_reg_mr_iova`.
///
/// # Safety
/// As [`ibv_reg_mr`].
#[no_mangle]
pub unsafe extern "C" fn ibv_reg_mr_iova(
    pd: *mut ffi::ibv_pd,
    addr: *mut c_void,
    length: usize,
    iova: u64,
    access: i32,
) -> *mut ffi::ibv_mr {
    guard(std::ptr::null_mut(), || {
        reg("ibv_reg_mr_iova", pd, addr, length, iova, access as u32)
    })
}

/// `ibv_reg_mr_iova2` (what QEMU 7.2 calls: `ibv_reg_mr` with non-constant
/// access flags expands to `ibv_reg_mr_iova2(pd, addr, len, addr, access)`).
///
/// # Safety
/// As [`ibv_reg_mr`].
#[no_mangle]
pub unsafe extern "C" fn ibv_reg_mr_iova2(
    pd: *mut ffi::ibv_pd,
    addr: *mut c_void,
    length: usize,
    iova: u64,
    access: u32,
) -> *mut ffi::ibv_mr {
    guard(std::ptr::null_mut(), || {
        reg("ibv_reg_mr_iova2", pd, addr, length, iova, access)
    })
}

/// `pvrdma_sw_alloc_fast_reg_mr`: this device's own verb (libibverbs has no
/// fast registration): an MR over `[addr, addr+length)` that no key reaches
/// until a REG_MR work request registers it (`engine::fast_reg`). A device
/// model finds it with `dlsym()`; freed by `ibv_dereg_mr`. NULL and errno on
/// failure, like `ibv_reg_mr`.
///
/// # Safety
/// `[addr, addr+length)` stays mapped until `ibv_dereg_mr` (verbs contract).
#[no_mangle]
pub unsafe extern "C" fn pvrdma_sw_alloc_fast_reg_mr(
    pd: *mut ffi::ibv_pd,
    addr: *mut c_void,
    length: usize,
) -> *mut ffi::ibv_mr {
    guard(std::ptr::null_mut(), || {
        let r = engine::lock().alloc_fast_reg_mr(pd as usize, addr as usize, length);
        vlog!(
            "pvrdma_sw_alloc_fast_reg_mr",
            "{pd:p} addr={addr:p} len={length:#x} -> {r:?}"
        );
        ptr_result(r)
    })
}

/// `ibv_dereg_mr`.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_dereg_mr(mr: *mut ffi::ibv_mr) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().dereg_mr(mr as usize);
        vlog!("ibv_dereg_mr", "{mr:p} -> {r:?}");
        errno_result(r)
    })
}
