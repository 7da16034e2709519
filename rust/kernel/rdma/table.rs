// SPDX-License-Identifier: GPL-2.0

//! Tables from device handles to live objects (QPs, CQs, SRQs).
//!
//! A device names objects by the handles it gave them: in completions (the QP), in CQ
//! notifications (the CQ) and in async events (a QP, CQ or SRQ). The abstraction keeps, per
//! device, a table from those handles to the C objects. An object enters its table when its
//! creation succeeded and leaves it before its destruction starts, both in the callback
//! trampolines, so a driver can never reach a freed object through a handle: it only sees
//! objects through [`Device::with_qp`](super::Device::with_qp) and friends, for the duration of a
//! closure that runs under the table's lock.

use crate::{
    alloc::{Flags, KVec},
    error::Result,
    prelude::*,
    sync::{LockClassKey, SpinLockIrq},
};
use core::ptr::NonNull;

/// What a table slot holds: a C object that may be used from any thread.
pub(super) struct Slot<C> {
    index: u32,
    obj: NonNull<C>,
}

// SAFETY: The RDMA core's objects may be used from any thread; the table only hands the pointer
// out under its lock, while the object is guaranteed live.
unsafe impl<C> Send for Slot<C> {}

/// The index of an object's entry in its device's table: the handle the device gave it.
///
/// Implemented by the driver data of the objects that have tables (QPs, CQs, SRQs).
pub trait TableIndex {
    /// The device's handle of the object.
    fn table_index(&self) -> u32;
}

/// A table of live objects of C type `C`, indexed by device handle modulo the table size.
///
/// # Invariants
///
/// Every pointer in `slots` is a live object whose data is initialised: it is inserted once the
/// object's creation succeeded and removed before its destruction starts.
#[pin_data]
pub(super) struct ObjectTable<C> {
    #[pin]
    slots: SpinLockIrq<KVec<Option<Slot<C>>>>,
}

impl<C> ObjectTable<C> {
    /// An empty table (of size 0: every insertion fails until [`Self::resize`]).
    ///
    /// Each kind of table needs its own lock class (`key`): the driver takes them in a fixed
    /// order (a CQ's table, then the CQ's own lock, then the QP table while polling), which
    /// lockdep can only check if the classes differ.
    pub(super) fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        pin_init!(Self {
            slots <- SpinLockIrq::new(KVec::new(), name, key),
        })
    }

    /// Makes the table `size` slots long. Only before the device is registered (when the table is
    /// empty).
    pub(super) fn resize(&self, size: u32, flags: Flags) -> Result {
        let mut slots = KVec::with_capacity(size as usize, flags)?;
        for _ in 0..size {
            slots.push(None, flags)?;
        }
        let mut guard = self.slots.lock();
        if guard.iter().any(Option::is_some) {
            return Err(EBUSY);
        }
        *guard = slots;
        Ok(())
    }

    fn slot(len: usize, index: u32) -> Option<usize> {
        (len != 0).then(|| index as usize % len)
    }

    /// Enters `obj` under `index`. Fails with `EBUSY` if another live object has the slot (the
    /// device handed out a handle twice), or `ENOSPC` if the table has no slots.
    ///
    /// # Safety
    ///
    /// `obj` must be a live object with initialised data that stays so until [`Self::remove`] is
    /// called for it.
    pub(super) unsafe fn insert(&self, index: u32, obj: *mut C) -> Result {
        let obj = NonNull::new(obj).ok_or(EINVAL)?;
        let mut slots = self.slots.lock();
        let i = Self::slot(slots.len(), index).ok_or(ENOSPC)?;
        if slots[i].is_some() {
            return Err(EBUSY);
        }
        // INVARIANT: Guaranteed by the caller.
        slots[i] = Some(Slot { index, obj });
        Ok(())
    }

    /// Removes `obj` from slot `index` if it is there.
    pub(super) fn remove(&self, index: u32, obj: *mut C) {
        let mut slots = self.slots.lock();
        if let Some(i) = Self::slot(slots.len(), index) {
            if slots[i].as_ref().is_some_and(|s| s.obj.as_ptr() == obj) {
                slots[i] = None;
            }
        }
    }

    /// Runs `f` on the object under `index`, if any, with the table locked (interrupts off): the
    /// object cannot go away while `f` runs, and `f` must not sleep.
    pub(super) fn with<R>(&self, index: u32, f: impl FnOnce(*mut C) -> R) -> Option<R> {
        let slots = self.slots.lock();
        let i = Self::slot(slots.len(), index)?;
        // A handle that maps to the slot of another object names nothing.
        let slot = slots[i].as_ref().filter(|s| s.index == index)?;
        Some(f(slot.obj.as_ptr()))
    }
}
