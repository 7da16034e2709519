// SPDX-License-Identifier: GPL-2.0-only
//! Device list, contexts, and the query verbs.

use crate::engine::{self, context::device_ptr, limits};
use crate::ffi;
use crate::guard::{errno_result, guard, ptr_result, set_errno};
use crate::log::vlog;
use std::ffi::c_char;

/// The ops the inline verbs (`ibv_post_send`, `ibv_poll_cq`, ...) call.
fn context_ops() -> ffi::ibv_context_ops {
    ffi::ibv_context_ops {
        poll_cq: Some(super::cq::ops_poll_cq),
        req_notify_cq: Some(super::cq::ops_req_notify_cq),
        post_send: Some(super::post::ops_post_send),
        post_recv: Some(super::post::ops_post_recv),
        post_srq_recv: Some(super::post::ops_post_srq_recv),
        ..Default::default()
    }
}

/// `ibv_get_device_list`: a NULL-terminated array holding the one device.
///
/// # Safety
/// `num_devices` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_device_list(num_devices: *mut i32) -> *mut *mut ffi::ibv_device {
    guard(std::ptr::null_mut(), || {
        let size = std::mem::size_of::<*mut ffi::ibv_device>();
        // SAFETY: plain allocation, checked below; freed by ibv_free_device_list.
        let list = unsafe { libc::calloc(2, size) } as *mut *mut ffi::ibv_device;
        if list.is_null() {
            set_errno(libc::ENOMEM);
            return list;
        }
        // SAFETY: `list` has room for two pointers (the second stays NULL).
        unsafe { *list = device_ptr() };
        engine::lock().device_lists.insert(list as usize);
        if !num_devices.is_null() {
            // SAFETY: non-NULL, writable per the contract.
            unsafe { *num_devices = 1 };
        }
        vlog!("ibv_get_device_list", "-> {list:p}");
        list
    })
}

/// `ibv_free_device_list` (unknown pointers are ignored).
///
/// # Safety
/// `list` came from `ibv_get_device_list` (anything else is ignored).
#[no_mangle]
pub unsafe extern "C" fn ibv_free_device_list(list: *mut *mut ffi::ibv_device) {
    guard((), || {
        vlog!("ibv_free_device_list", "{list:p}");
        if engine::lock().device_lists.remove(&(list as usize)) {
            // SAFETY: allocated with calloc by ibv_get_device_list, freed once.
            unsafe { libc::free(list.cast()) };
        }
    })
}

/// `ibv_get_device_name`.
///
/// # Safety
/// None beyond the C contract; unknown devices give NULL.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_device_name(device: *mut ffi::ibv_device) -> *const c_char {
    guard(std::ptr::null(), || {
        if device != device_ptr() {
            set_errno(libc::EINVAL);
            return std::ptr::null();
        }
        // SAFETY: the device struct is never freed.
        unsafe { (*device).name.as_ptr() }
    })
}

/// `ibv_get_device_guid` (network order).
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_device_guid(device: *mut ffi::ibv_device) -> u64 {
    guard(0, || {
        if device == device_ptr() {
            u64::from_ne_bytes(limits::NODE_GUID)
        } else {
            0
        }
    })
}

/// `ibv_open_device`: a new context; connects to the fabric socket first
/// if `PVRDMA_FABRIC` is set.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_open_device(device: *mut ffi::ibv_device) -> *mut ffi::ibv_context {
    guard(std::ptr::null_mut(), || {
        let r = if device != device_ptr() {
            Err(libc::ENODEV)
        } else {
            crate::fabric::connect_if_configured()
                .map(|()| engine::lock().open_context(context_ops()))
        };
        vlog!("ibv_open_device", "{device:p} -> {r:?}");
        ptr_result(r)
    })
}

/// `ibv_close_device`: releases everything still created on the context.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_close_device(context: *mut ffi::ibv_context) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().close_context(context as usize);
        vlog!("ibv_close_device", "{context:p} -> {r:?}");
        errno_result(r)
    })
}

/// `ibv_query_device`.
///
/// # Safety
/// `attr` is NULL or points to a writable `struct ibv_device_attr`.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_device(
    context: *mut ffi::ibv_context,
    attr: *mut ffi::ibv_device_attr,
) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().context(context as usize).map(|_| ());
        let r = r.and_then(|()| {
            if attr.is_null() {
                Err(libc::EINVAL)
            } else {
                Ok(())
            }
        });
        if r.is_ok() {
            // SAFETY: non-NULL and writable per the contract.
            unsafe { attr.write_unaligned(limits::device_attr()) };
        }
        vlog!("ibv_query_device", "{context:p} -> {r:?}");
        errno_result(r)
    })
}

/// `ibv_query_port` (the exported symbol, which rdma-core declares with the
/// 48-byte `struct _compat_ibv_port_attr`: exactly that many bytes are
/// written; the inline wrapper zeroed the rest).
///
/// # Safety
/// `attr` is NULL or points to at least 48 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_port(
    context: *mut ffi::ibv_context,
    port_num: u8,
    attr: *mut ffi::_compat_ibv_port_attr,
) -> i32 {
    guard(libc::EIO, || {
        let e = engine::lock();
        let r = e.context(context as usize).map(|_| ());
        let r = r.and_then(|()| {
            if attr.is_null() || port_num != limits::PORT_NUM {
                Err(libc::EINVAL)
            } else {
                Ok(())
            }
        });
        if r.is_ok() {
            let full = limits::port_attr(e.qkey_violations);
            // SAFETY: `full` is a live ibv_port_attr (52 bytes); `attr` has
            // room for the 48-byte compat prefix per the contract.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (&full as *const ffi::ibv_port_attr).cast::<u8>(),
                    attr.cast::<u8>(),
                    ffi::COMPAT_PORT_ATTR_LEN,
                )
            };
        }
        drop(e);
        vlog!("ibv_query_port", "{context:p} port={port_num} -> {r:?}");
        errno_result(r)
    })
}

/// `ibv_query_gid`: 0 and the GID (zero for an empty entry), or -1 with
/// errno EINVAL past the end of the table.
///
/// # Safety
/// `gid` is NULL or points to a writable `union ibv_gid`.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_gid(
    context: *mut ffi::ibv_context,
    port_num: u8,
    index: i32,
    gid: *mut ffi::ibv_gid,
) -> i32 {
    guard(-1, || {
        let e = engine::lock();
        let found = match e.context(context as usize) {
            Ok(_) if port_num == limits::PORT_NUM && index >= 0 && !gid.is_null() => {
                e.gids.query(index as usize)
            }
            _ => None,
        };
        drop(e);
        vlog!(
            "ibv_query_gid",
            "{context:p} port={port_num} index={index} -> {:?}",
            found.map(|g| crate::fmt_gid(&g))
        );
        match found {
            Some(g) => {
                // SAFETY: non-NULL and writable per the contract.
                unsafe { gid.write_unaligned(ffi::ibv_gid { raw: g }) };
                0
            }
            None => {
                set_errno(libc::EINVAL);
                -1
            }
        }
    })
}

/// `ibv_query_pkey`: the one P_Key, network order.
///
/// # Safety
/// `pkey` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_pkey(
    context: *mut ffi::ibv_context,
    port_num: u8,
    index: i32,
    pkey: *mut u16,
) -> i32 {
    guard(-1, || {
        let ok = engine::lock().context(context as usize).is_ok()
            && port_num == limits::PORT_NUM
            && index >= 0
            && (index as u16) < limits::PKEY_TABLE_LEN
            && !pkey.is_null();
        vlog!(
            "ibv_query_pkey",
            "{context:p} port={port_num} index={index} -> {ok}"
        );
        if !ok {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: non-NULL and writable per the contract.
        unsafe { *pkey = limits::DEFAULT_PKEY.to_be() };
        0
    })
}
