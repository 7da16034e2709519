// SPDX-License-Identifier: GPL-2.0

//! Hardware counters of a port (C's `struct rdma_stat_desc` and `struct rdma_hw_stats`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A driver names its counters once, in a static table of [`CounterDesc`]
//! ([`Operations::PORT_COUNTERS`]), and fills their values on request
//! ([`Operations::port_counters`]). The RDMA core shows them in
//! `/sys/class/infiniband/<dev>/ports/<port>/hw_counters/` and through `rdma statistic`.
//!
//! [`Operations::PORT_COUNTERS`]: super::Operations::PORT_COUNTERS
//! [`Operations::port_counters`]: super::Operations::port_counters

use crate::{bindings, str::CStr};
use core::ptr;

/// The description of one counter: its name.
///
/// # Invariants
///
/// `self.0.name` points to a NUL-terminated string that lives forever; `self.0.priv_` is NULL.
#[repr(transparent)]
pub struct CounterDesc(bindings::rdma_stat_desc);

// SAFETY: A `CounterDesc` is never changed after it is made, and only points to a `'static`
// string, which any thread may read.
unsafe impl Sync for CounterDesc {}

impl CounterDesc {
    /// A counter called `name` (a file name in sysfs: no `/`).
    pub const fn new(name: &'static CStr) -> Self {
        // INVARIANT: `name` is a `'static` C string; `priv_` is NULL.
        Self(bindings::rdma_stat_desc {
            name: crate::str::as_char_ptr_in_const_context(name),
            flags: 0,
            priv_: ptr::null(),
        })
    }

    /// The C descriptions of `descs`, in order.
    pub(crate) fn as_raw_slice(descs: &'static [Self]) -> *const bindings::rdma_stat_desc {
        // `Self` is a transparent wrapper of `rdma_stat_desc`: an array of one is an array of the
        // other.
        descs.as_ptr().cast()
    }
}
