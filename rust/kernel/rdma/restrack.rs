// SPDX-License-Identifier: GPL-2.0

//! A driver's own details of its objects in the RDMA core's resource tracking (`rdma res`).
//!
//! C header: [`include/rdma/restrack.h`](srctree/include/rdma/restrack.h)

use crate::{
    bindings,
    error::{code::EMSGSIZE, to_result},
    ffi::c_int,
    prelude::*,
    str::CStr,
};
use core::marker::PhantomData;

/// The driver's table in the netlink message of one tracked object (C's
/// `RDMA_NLDEV_ATTR_DRIVER` nest), to which the driver adds its own attributes (C's
/// `rdma_nl_put_driver_*()`); `rdma res show <kind> -dd` prints them after the core's.
///
/// Every `put_*` fails with `EMSGSIZE` once the message is full: the core then sends what fits
/// and continues the dump in the next message.
///
/// # Invariants
///
/// `msg` is the socket buffer of a netlink dump in progress whose innermost open nest is the
/// driver's table of one object, for `'a`.
pub struct ResEntry<'a> {
    msg: *mut bindings::sk_buff,
    _dump: PhantomData<&'a mut bindings::sk_buff>,
}

impl ResEntry<'_> {
    /// Opens the driver's table in `msg`, lets `fill` add to it, and closes it; if `fill`
    /// fails, the table is taken out of the message again (what was added with it).
    ///
    /// # Safety
    ///
    /// `msg` must be the message of a `fill_res_*_entry` callback in progress.
    pub(super) unsafe fn fill(
        msg: *mut bindings::sk_buff,
        fill: impl FnOnce(&mut ResEntry<'_>) -> Result,
    ) -> Result {
        // SAFETY: `msg` is a message being filled (guaranteed by the caller).
        let table = unsafe {
            bindings::nla_nest_start_noflag(
                msg,
                bindings::rdma_nldev_attr_RDMA_NLDEV_ATTR_DRIVER as c_int,
            )
        };
        if table.is_null() {
            return Err(EMSGSIZE);
        }
        // INVARIANT: The table just opened is the innermost nest while `entry` lives.
        let mut entry = ResEntry {
            msg,
            _dump: PhantomData,
        };
        match fill(&mut entry) {
            Ok(()) => {
                // SAFETY: `table` is the nest opened above in `msg`, closed once.
                unsafe { bindings::nla_nest_end(msg, table) };
                Ok(())
            }
            Err(e) => {
                // SAFETY: `table` is the nest opened above in `msg`, still open: trimming the
                // message back to it drops what `fill` added.
                unsafe { bindings::nla_nest_cancel(msg, table) };
                Err(e)
            }
        }
    }

    /// Adds `name = value`, printed in decimal.
    pub fn put_u32(&mut self, name: &CStr, value: u32) -> Result {
        // SAFETY: `msg` is a message being filled (type invariant); `name` is NUL-terminated and
        // copied into it.
        to_result(unsafe { bindings::rdma_nl_put_driver_u32(self.msg, name.as_char_ptr(), value) })
    }

    /// Adds `name = value`, printed in hexadecimal.
    pub fn put_u32_hex(&mut self, name: &CStr, value: u32) -> Result {
        // SAFETY: As in `put_u32`.
        to_result(unsafe {
            bindings::rdma_nl_put_driver_u32_hex(self.msg, name.as_char_ptr(), value)
        })
    }

    /// Adds `name = value`, printed in decimal.
    pub fn put_u64(&mut self, name: &CStr, value: u64) -> Result {
        // SAFETY: As in `put_u32`.
        to_result(unsafe { bindings::rdma_nl_put_driver_u64(self.msg, name.as_char_ptr(), value) })
    }

    /// Adds `name = value`, printed in hexadecimal.
    pub fn put_u64_hex(&mut self, name: &CStr, value: u64) -> Result {
        // SAFETY: As in `put_u32`.
        to_result(unsafe {
            bindings::rdma_nl_put_driver_u64_hex(self.msg, name.as_char_ptr(), value)
        })
    }

    /// Adds `name = value`, a string.
    pub fn put_str(&mut self, name: &CStr, value: &CStr) -> Result {
        // SAFETY: As in `put_u32`; `value` is NUL-terminated and copied too.
        to_result(unsafe {
            bindings::rdma_nl_put_driver_string(self.msg, name.as_char_ptr(), value.as_char_ptr())
        })
    }
}
