// SPDX-License-Identifier: GPL-2.0

//! Object counts, kept against the device's limits (C's `atomic_add_unless(&dev->num_*, ...)`).
//!
//! Layer: RDMA device.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;

/// How many objects of one kind exist.
pub(crate) struct Counter(AtomicU32);

impl Counter {
    /// A counter at zero.
    pub(crate) const fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// Reserves room for one more object, if fewer than `max` exist (`ENOMEM` otherwise). The
    /// reservation is given back when dropped, unless [`Reservation::keep`] is called once the
    /// object exists.
    pub(crate) fn take(&self, max: u32) -> Result<Reservation<'_>> {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        Ok(Reservation(self))
    }

    /// Gives back the room of an object that was destroyed.
    pub(crate) fn release(&self) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }
}

/// Room for one object, reserved in a [`Counter`].
pub(crate) struct Reservation<'a>(&'a Counter);

impl Reservation<'_> {
    /// The object exists: its room stays taken until [`Counter::release`].
    pub(crate) fn keep(self) {
        core::mem::forget(self);
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// The object counts of a device.
pub(crate) struct Counts {
    pub(crate) pds: Counter,
    pub(crate) cqs: Counter,
    pub(crate) qps: Counter,
    pub(crate) srqs: Counter,
    pub(crate) mrs: Counter,
    pub(crate) ahs: Counter,
}

impl Counts {
    /// All at zero.
    pub(crate) const fn new() -> Self {
        Self {
            pds: Counter::new(),
            cqs: Counter::new(),
            qps: Counter::new(),
            srqs: Counter::new(),
            mrs: Counter::new(),
            ahs: Counter::new(),
        }
    }
}
