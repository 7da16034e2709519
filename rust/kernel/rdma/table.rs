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
//! The table is an [`XArray`] keyed by the whole 32-bit handle, whatever values the device
//! chooses (a device may hand out sparse numbers, such as a backend's QP numbers), locked with
//! interrupts disabled ([`LockIrq`]): lookups run in interrupt context (CQ notifications, and
//! `poll_cq`, which kernel consumers may call from any context). Each kind of table has a lock
//! class of its own, as the driver nests them.
//!
//! The entries are pointers to objects the RDMA core owns, not values the table could own.

use crate::{
    alloc::flags::GFP_KERNEL,
    error::Result,
    ffi::c_void,
    prelude::*,
    sync::LockClassKey,
    types::ForeignOwnable,
    xarray::{AllocKind, LockIrq, XArray},
};
use core::ptr::NonNull;

/// An entry of a table: a pointer to an object the table does not own (one of the RDMA core's),
/// handed back only as a raw pointer.
///
/// # Invariants
///
/// The pointer is non-null and aligned for `C`.
struct Entry<C>(NonNull<C>);

// SAFETY: `into_foreign` gives the pointer, non-null and aligned for `C` (type invariant), so
// aligned to `FOREIGN_ALIGN`; `from_foreign` and the borrows rebuild that pointer. Nothing is
// owned, so nothing is freed or dereferenced here.
unsafe impl<C: 'static> ForeignOwnable for Entry<C> {
    const FOREIGN_ALIGN: usize = core::mem::align_of::<C>();
    type Borrowed<'a> = NonNull<C>;
    type BorrowedMut<'a> = NonNull<C>;

    fn into_foreign(self) -> *mut c_void {
        self.0.as_ptr().cast()
    }

    unsafe fn from_foreign(ptr: *mut c_void) -> Self {
        // SAFETY: `ptr` came from `into_foreign` (guaranteed by the caller): an object's non-null
        // pointer.
        Self(unsafe { NonNull::new_unchecked(ptr.cast()) })
    }

    unsafe fn borrow<'a>(ptr: *mut c_void) -> Self::Borrowed<'a> {
        // SAFETY: As in `from_foreign`.
        unsafe { NonNull::new_unchecked(ptr.cast()) }
    }

    unsafe fn borrow_mut<'a>(ptr: *mut c_void) -> Self::BorrowedMut<'a> {
        // SAFETY: As in `from_foreign`.
        unsafe { NonNull::new_unchecked(ptr.cast()) }
    }
}

// SAFETY: An entry is a pointer that the table never dereferences: it hands it out as a raw
// pointer, and whoever dereferences it (the abstraction, with objects of the RDMA core, which may
// be used from any thread) answers for that.
unsafe impl<C> Send for Entry<C> {}

/// The index of an object's entry in its device's table: the handle the device gave it.
///
/// Implemented by the driver data of the objects that have tables (QPs, CQs, SRQs). It is read
/// when the object enters the table and when it leaves; it should not change in between (the
/// object would not be found under its handle), but if it does, the object still leaves the
/// table before it is freed.
pub trait TableIndex {
    /// The device's handle of the object.
    fn table_index(&self) -> u32;
}

/// A table of live objects of C type `C`, keyed by device handle.
///
/// # Invariants
///
/// Every entry of `xa` is a live object whose data is initialised: it is inserted once the
/// object's creation succeeded and removed before its destruction starts.
#[pin_data]
pub(super) struct ObjectTable<C: 'static> {
    #[pin]
    xa: XArray<Entry<C>, LockIrq>,
}

impl<C: 'static> ObjectTable<C> {
    /// Creates an empty table.
    ///
    /// Each kind of table needs its own lock class (`key`): the driver takes them in a fixed
    /// order (a CQ's table, then the CQ's own lock, then the QP table while polling), which
    /// lockdep can only check if the classes differ.
    pub(super) fn new(
        name: &'static CStr,
        key: Pin<&'static LockClassKey>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            xa <- XArray::new_with_class(AllocKind::Alloc, name, key),
        }? Error)
    }

    /// Enters `obj` under `index`. Fails with `EBUSY` if another live object has that handle
    /// (the device handed it out twice), and with `ENOMEM` if the table cannot grow: the table
    /// allocates under its lock with interrupts off, without sleeping. The caller destroys the
    /// object again on failure.
    ///
    /// # Safety
    ///
    /// `obj` must be a valid, aligned pointer to a live object with initialised data that stays
    /// so until [`Self::remove`] is called for it.
    pub(super) unsafe fn insert(&self, index: u32, obj: *mut C) -> Result {
        // INVARIANT: Non-null (checked) and aligned (guaranteed by the caller).
        let obj = NonNull::new(obj).ok_or(EINVAL)?;
        let mut xa = self.xa.lock();
        // The check and the store are under one lock: a `LockIrq` store never releases it.
        if xa.get(index as usize).is_some() {
            return Err(EBUSY);
        }
        // INVARIANT: Guaranteed by the caller.
        xa.store(index as usize, Entry(obj), GFP_KERNEL)?;
        Ok(())
    }

    /// Removes `obj` from the table: it is looked for under `index`, and if it is not there
    /// (a driver whose [`TableIndex`] changed since the object was entered), in every entry. The
    /// object must leave the table whatever its index says, for the table's invariant: it is
    /// freed after this.
    pub(super) fn remove(&self, index: u32, obj: *mut C) {
        let mut xa = self.xa.lock();
        let at = match xa.get(index as usize) {
            Some(o) if o.as_ptr() == obj => Some(index as usize),
            _ => {
                crate::pr_warn_once!(
                    "rdma: an object left its table under another handle than it entered with\n"
                );
                xa.iter().find(|(_, o)| o.as_ptr() == obj).map(|(i, _)| i)
            }
        };
        if let Some(at) = at {
            xa.remove(at);
        }
    }

    /// Runs `f` on the object under `index`, if any, with the table locked (interrupts off): the
    /// object cannot go away while `f` runs, and `f` must not sleep.
    pub(super) fn with<R>(&self, index: u32, f: impl FnOnce(*mut C) -> R) -> Option<R> {
        let xa = self.xa.lock();
        let obj = xa.get(index as usize)?;
        Some(f(obj.as_ptr()))
    }

    /// Runs `f` on every object, in no particular order, with the table locked (interrupts
    /// off): as with [`Self::with`], no object can go away while `f` runs, and `f` must not
    /// sleep. For rare walks over the whole device (flushing the work of a device declared
    /// dead), not for the data path: the lock is held for the whole walk.
    pub(super) fn for_each(&self, mut f: impl FnMut(*mut C)) {
        let xa = self.xa.lock();
        for (_, obj) in xa.iter() {
            f(obj.as_ptr());
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
            unsafe { t.insert(*h, o) }?;
        }
        for (h, o) in handles.iter().zip([10u64, 20, 30, 40]) {
            assert_eq!(value_of(&t, *h), Some(o));
        }
        assert_eq!(value_of(&t, 0x12), None);
        Ok(())
    }

    /// An object whose index changed after it entered the table still leaves it, and only it.
    #[test]
    fn removal_under_another_index() -> Result {
        let mut a = 1u64;
        let mut b = 2u64;
        let t = table()?;
        // SAFETY: `a` and `b` outlive `t` (declared before it).
        unsafe { t.insert(7, &mut a) }?;
        // SAFETY: As above.
        unsafe { t.insert(8, &mut b) }?;
        t.remove(9, &mut a);
        assert_eq!(value_of(&t, 7), None);
        assert_eq!(value_of(&t, 8), Some(2));
        Ok(())
    }

    /// A handle given twice is refused; removal needs the right object and frees the handle.
    #[test]
    fn duplicate_and_remove() -> Result {
        let mut a = 1u64;
        let mut b = 2u64;
        let t = table()?;
        // SAFETY: `a` and `b` outlive `t` (declared before it).
        unsafe { t.insert(7, &mut a) }?;
        // SAFETY: As above.
        assert_eq!(unsafe { t.insert(7, &mut b) }, Err(EBUSY));
        t.remove(7, &mut b);
        assert_eq!(value_of(&t, 7), Some(1));
        t.remove(7, &mut a);
        assert_eq!(value_of(&t, 7), None);
        // SAFETY: As above.
        unsafe { t.insert(7, &mut b) }?;
        assert_eq!(value_of(&t, 7), Some(2));
        Ok(())
    }

    /// Many objects, half of them under handles far apart: every object stays reachable, and
    /// removing every other one loses none of the rest.
    #[test]
    fn growth_and_removal() -> Result {
        const N: usize = 1027;
        let mut objs = KVec::from_elem(0u64, N, GFP_KERNEL)?;
        let t = table()?;
        let handle = |i: usize| {
            if i % 2 == 0 {
                (i as u32) << 12
            } else {
                i as u32
            }
        };
        for (i, o) in objs.iter_mut().enumerate() {
            *o = i as u64;
            // SAFETY: `objs` outlives `t` (declared before it) and is not reallocated.
            unsafe { t.insert(handle(i), o) }?;
        }
        for i in 0..N {
            assert_eq!(value_of(&t, handle(i)), Some(i as u64));
        }
        for i in (0..N).step_by(2) {
            t.remove(handle(i), objs.as_mut_ptr().wrapping_add(i));
        }
        for i in 0..N {
            let expected = (i % 2 == 1).then_some(i as u64);
            assert_eq!(value_of(&t, handle(i)), expected);
        }
        Ok(())
    }

    /// A walk sees every live object once and no removed one.
    #[test]
    fn walk() -> Result {
        let mut objs = [1u64, 2, 3];
        let t = table()?;
        for (h, o) in [30u32, 10, 20].into_iter().zip(objs.iter_mut()) {
            // SAFETY: `objs` outlives `t` (declared before it).
            unsafe { t.insert(h, o) }?;
        }
        t.remove(20, objs.as_mut_ptr().wrapping_add(2));
        // The walk runs under the table's lock, interrupts off: nothing in it may allocate.
        let mut sum = 0;
        let mut n = 0;
        t.for_each(|p| {
            // SAFETY: The pointers are to `objs`, which outlives `t`.
            sum += unsafe { *p };
            n += 1;
        });
        assert_eq!((n, sum), (2, 3));
        Ok(())
    }
}
