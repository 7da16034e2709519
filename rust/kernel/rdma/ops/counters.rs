// SPDX-License-Identifier: GPL-2.0

//! Trampolines of the port's hardware counters.

use super::super::counters::CounterDesc;
use super::{Adapter, Operations};
use crate::{bindings, error::from_result, ffi::c_int, prelude::*};
use core::ptr;

impl<T: Operations> Adapter<T> {
    /// The C callback: the counters of a port, as [`Operations::PORT_COUNTERS`] names them.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn alloc_hw_port_stats(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        let Ok(num) = c_int::try_from(T::PORT_COUNTERS.len()) else {
            return ptr::null_mut();
        };
        // SAFETY: The descriptions are a `'static` array of `num` entries, each naming a
        // `'static` string (`CounterDesc`'s invariants); the core frees the result.
        unsafe {
            bindings::rdma_alloc_hw_stats_struct(
                CounterDesc::as_raw_slice(T::PORT_COUNTERS),
                num,
                // The core's default lifespan (10 ms): fits any `unsigned long`.
                bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN as crate::ffi::c_ulong,
            )
        }
    }

    /// The C callback: fills in every counter, whatever `index` asks for (allowed by the core).
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback: `stats` is
    /// one that [`Self::alloc_hw_port_stats`] allocated, locked by the caller (`stats->lock`).
    pub(super) unsafe extern "C" fn get_hw_stats(
        ib: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: c_int,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `ib` is a device of `T` for the duration of the call.
            let dev = unsafe { Self::dev(ib) };
            // SAFETY: `stats` is valid for the duration of the call.
            let num = unsafe { (*stats).num_counters };
            if usize::try_from(num) != Ok(T::PORT_COUNTERS.len()) {
                return Err(EINVAL);
            }
            // SAFETY: `stats` holds `num` values after its header (`rdma_alloc_hw_stats_struct`),
            // and the caller's lock on it makes this the only access to them until we return.
            let values = unsafe {
                core::slice::from_raw_parts_mut(
                    (&raw mut (*stats).value).cast::<u64>(),
                    T::PORT_COUNTERS.len(),
                )
            };
            T::port_counters(dev, port, values)?;
            Ok(num)
        })
    }
}
