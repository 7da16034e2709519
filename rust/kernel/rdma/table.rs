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
//!
//! The table is keyed by the whole 32-bit handle, whatever values the device chooses (a device
//! may hand out sparse numbers, such as a backend's QP numbers), and needs no size: it holds as
//! many objects as the device lets the driver create. It is a red-black tree under an IRQ-safe
//! spinlock rather than an `XArray`: lookups run in interrupt context (CQ notifications, and
//! `poll_cq`, which kernel consumers may call from any context), where the `XArray`'s own lock,
//! taken without disabling interrupts, could deadlock against a process-context holder; and the
//! entries are pointers to objects the RDMA core owns, not values the table could own.

use crate::{
    alloc::flags::GFP_KERNEL,
    error::Result,
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
    sync::{LockClassKey, SpinLockIrq},
};
use core::ptr::NonNull;

/// What a table entry holds: a C object that may be used from any thread.
struct Entry<C>(NonNull<C>);

// SAFETY: The RDMA core's objects may be used from any thread; the table only hands the pointer
// out under its lock, while the object is guaranteed live.
unsafe impl<C> Send for Entry<C> {}

/// A table entry allocated ahead of the object it will hold (see [`ObjectTable::reserve`]).
pub(super) struct Reservation<C>(RBTreeNodeReservation<u32, Entry<C>>);

/// The index of an object's entry in its device's table: the handle the device gave it.
///
/// Implemented by the driver data of the objects that have tables (QPs, CQs, SRQs).
pub trait TableIndex {
    /// The device's handle of the object.
    fn table_index(&self) -> u32;
}

/// A table of live objects of C type `C`, keyed by device handle.
///
/// # Invariants
///
/// Every pointer in `entries` is a live object whose data is initialised: it is inserted once the
/// object's creation succeeded and removed before its destruction starts.
#[pin_data]
pub(super) struct ObjectTable<C> {
    #[pin]
    entries: SpinLockIrq<RBTree<u32, Entry<C>>>,
}

impl<C> ObjectTable<C> {
    /// An empty table.
    ///
    /// Each kind of table needs its own lock class (`key`): the driver takes them in a fixed
    /// order (a CQ's table, then the CQ's own lock, then the QP table while polling), which
    /// lockdep can only check if the classes differ.
    pub(super) fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        pin_init!(Self {
            entries <- SpinLockIrq::new(RBTree::new(), name, key),
        })
    }

    /// Allocates an entry, to be filled by [`Self::insert`]: creating an object reserves its
    /// entry first, so that nothing but a duplicate handle can fail once the device has the
    /// object.
    pub(super) fn reserve(&self) -> Result<Reservation<C>> {
        Ok(Reservation(RBTreeNodeReservation::new(GFP_KERNEL)?))
    }

    /// Enters `obj` under `index`, in the entry `entry`. Fails with `EBUSY` if another live
    /// object has that handle (the device handed it out twice).
    ///
    /// # Safety
    ///
    /// `obj` must be a live object with initialised data that stays so until [`Self::remove`] is
    /// called for it.
    pub(super) unsafe fn insert(&self, entry: Reservation<C>, index: u32, obj: *mut C) -> Result {
        let obj = NonNull::new(obj).ok_or(EINVAL)?;
        let node = entry.0.into_node(index, Entry(obj));
        let mut entries = self.entries.lock();
        if entries.get(&index).is_some() {
            drop(entries);
            return Err(EBUSY);
        }
        // INVARIANT: Guaranteed by the caller.
        entries.insert(node);
        Ok(())
    }

    /// Removes `obj` from the table if it is there under `index`.
    pub(super) fn remove(&self, index: u32, obj: *mut C) {
        let mut entries = self.entries.lock();
        let removed = if entries.get(&index).is_some_and(|e| e.0.as_ptr() == obj) {
            entries.remove_node(&index)
        } else {
            None
        };
        drop(entries);
        // The node is freed outside the lock.
        drop(removed);
    }

    /// Runs `f` on the object under `index`, if any, with the table locked (interrupts off): the
    /// object cannot go away while `f` runs, and `f` must not sleep.
    pub(super) fn with<R>(&self, index: u32, f: impl FnOnce(*mut C) -> R) -> Option<R> {
        let entries = self.entries.lock();
        let entry = entries.get(&index)?;
        Some(f(entry.0.as_ptr()))
    }

    /// Runs `f` on every object, in handle order, with the table locked (interrupts off): as
    /// with [`Self::with`], no object can go away while `f` runs, and `f` must not sleep. For
    /// rare walks over the whole device (flushing the work of a device declared dead), not for
    /// the data path: the lock is held for the whole walk.
    pub(super) fn for_each(&self, mut f: impl FnMut(*mut C)) {
        let entries = self.entries.lock();
        for entry in entries.values() {
            f(entry.0.as_ptr());
        }
    }
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_object_table)]
mod tests {
    use super::*;

    fn table() -> Result<Pin<KBox<ObjectTable<u64>>>> {
        KBox::pin_init(
            ObjectTable::new(crate::c_str!("test"), crate::static_lock_class!()),
            GFP_KERNEL,
        )
    }

    fn value_of(t: &ObjectTable<u64>, index: u32) -> Option<u64> {
        // SAFETY: The tests only insert pointers to locals that outlive the table.
        t.with(index, |p| unsafe { *p })
    }

    /// Handles that a size-based table would put in one slot (equal modulo a power of two, or
    /// beyond 16 bits) name different objects.
    #[test]
    fn sparse_handles() -> Result {
        let mut objs = [10u64, 20, 30, 40];
        let t = table()?;
        let handles = [0x11u32, 0x11 + 1024, 0x11 + 65536, u32::MAX];
        for (h, o) in handles.iter().zip(objs.iter_mut()) {
            // SAFETY: `objs` outlives `t` (declared before it).
            unsafe { t.insert(t.reserve()?, *h, o) }?;
        }
        for (h, o) in handles.iter().zip([10u64, 20, 30, 40]) {
            assert_eq!(value_of(&t, *h), Some(o));
        }
        assert_eq!(value_of(&t, 0x12), None);
        Ok(())
    }

    /// A handle given twice is refused; removal needs the right object and frees the handle.
    #[test]
    fn duplicate_and_remove() -> Result {
        let mut a = 1u64;
        let mut b = 2u64;
        let t = table()?;
        // SAFETY: `a` and `b` outlive `t` (declared before it).
        unsafe { t.insert(t.reserve()?, 7, &mut a) }?;
        // SAFETY: As above.
        assert_eq!(unsafe { t.insert(t.reserve()?, 7, &mut b) }, Err(EBUSY));
        t.remove(7, &mut b);
        assert_eq!(value_of(&t, 7), Some(1));
        t.remove(7, &mut a);
        assert_eq!(value_of(&t, 7), None);
        // SAFETY: As above.
        unsafe { t.insert(t.reserve()?, 7, &mut b) }?;
        assert_eq!(value_of(&t, 7), Some(2));
        Ok(())
    }

    /// A walk sees every live object once, in handle order, and no removed one.
    #[test]
    fn walk_in_handle_order() -> Result {
        let mut objs = [1u64, 2, 3];
        let t = table()?;
        for (h, o) in [30u32, 10, 20].into_iter().zip(objs.iter_mut()) {
            // SAFETY: `objs` outlives `t` (declared before it).
            unsafe { t.insert(t.reserve()?, h, o) }?;
        }
        t.remove(20, objs.as_mut_ptr().wrapping_add(2));
        // The walk runs under the table's spinlock: nothing in it may allocate.
        let mut seen = [0u64; 3];
        let mut n = 0;
        t.for_each(|p| {
            if let Some(slot) = seen.get_mut(n) {
                // SAFETY: The pointers are to `objs`, which outlives `t`.
                *slot = unsafe { *p };
            }
            n += 1;
        });
        assert_eq!(n, 2);
        assert_eq!(&seen[..2], &[2u64, 1]);
        Ok(())
    }
}
