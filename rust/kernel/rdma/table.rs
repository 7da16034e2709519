// SPDX-License-Identifier: GPL-2.0

//! Tables from device handles to live objects (QPs, CQs, SRQs).
//!
//! A device names objects by the handles it gave them: in completions (the QP), in CQ
//! notifications (the CQ) and in async events (a QP, CQ or SRQ). The abstraction keeps, per
//! device, a table from those handles to the C objects. An object enters its table when its
//! creation succeeded and leaves it before its destruction starts, both in the callback
//! trampolines, so a driver can never reach a freed object through a handle: it only sees
//! objects through [`Device::with_qp`](super::Device::with_qp) and friends, for the duration of a
//! closure. The lookup takes a use of the object under the table's lock ([`Users`]) and the
//! closure runs after the lock is released, as C drivers do with their objects' reference counts:
//! the closure may call the object's consumer (a completion or event handler), which may take its
//! own locks and poll the CQ, which looks QPs up again. The object's destruction, once it left the
//! table, waits for the uses still running.
//!
//! The table is an [`XArray`] keyed by the whole 32-bit handle, whatever values the device
//! chooses (a device may hand out sparse numbers, such as a backend's QP numbers), locked with
//! interrupts disabled ([`LockIrq`]): lookups run in interrupt context (CQ notifications, and
//! `poll_cq`, which kernel consumers may call from any context). Each kind of table has a lock
//! class of its own, as the walks over one table may look objects up in another.
//!
//! The entries are pointers to objects the RDMA core owns, not values the table could own.

use crate::{
    alloc::flags::GFP_KERNEL,
    error::Result,
    ffi::c_void,
    prelude::*,
    sync::{Completion, LockClassKey, Refcount},
    types::ForeignOwnable,
    xarray::{AllocKind, LockIrq, XArray},
};
use core::ptr::NonNull;

/// The uses of an object that has a table: one for its entry, while it is in the table, and one
/// for each lookup running on it.
///
/// A lookup takes its use under the table's lock, while the object is in the table, and puts it
/// when its closure returned. The object's destruction, once the object left its table, puts the
/// entry's use and waits until no use is left ([`Users::drain`]), as C drivers wait on a
/// completion for their objects' reference counts.
///
/// # Invariants
///
/// `count` is at least 1 while the object is in its table (the entry's use), and is raised only
/// then, under the table's lock; `idle` is completed once, when `count` reaches 0, and waited for
/// once, by the one [`Users::drain`] of the object.
#[pin_data]
pub(super) struct Users {
    count: Refcount,
    #[pin]
    idle: Completion,
}

impl Users {
    /// The uses of an object not yet in its table: the entry's own.
    pub(super) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            count: Refcount::new(1),
            idle <- Completion::new(),
        })
    }

    /// Takes a use of an object that is in its table (under the table's lock, so that the
    /// entry's use is not yet put).
    fn get(&self) {
        self.count.inc();
    }

    /// Puts a use; the last one lets [`Users::drain`] return.
    fn put(&self) {
        if self.count.dec_and_test() {
            // One waiter, the drain: `complete()` (not `complete_all()`, which the last put from
            // a hard interrupt handler may not call on PREEMPT_RT).
            self.idle.complete();
        }
    }

    /// Puts the entry's use of an object that left its table, then waits until the lookups that
    /// found it before have put theirs: after this, nothing reaches the object through its
    /// table. Called once per object, where the caller may sleep; never from a closure of a
    /// lookup of the same object, which would wait for itself.
    pub(super) fn drain(&self) {
        self.put();
        self.idle.wait_for_completion();
    }
}

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
/// object's creation succeeded, and removed before its destruction starts, which then waits for
/// the lookups that found it ([`Users`]).
#[pin_data]
pub(super) struct ObjectTable<C: 'static> {
    #[pin]
    xa: XArray<Entry<C>, LockIrq>,
}

impl<C: 'static> ObjectTable<C> {
    /// Creates an empty table.
    ///
    /// Each kind of table needs its own lock class (`key`): a table's lock is only held to find
    /// an object, but the lock of one table may be taken while that of another is held on
    /// another path, which lockdep can only tell from recursion if the classes differ.
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
    /// so until [`Self::remove`] is called for it and the lookups that found it are done (its
    /// [`Users`] drained).
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
    /// freed after this, once its uses are drained ([`Users::drain`]).
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

    /// Runs `f` on the object under `index`, if any, holding a use of it: the use is taken under
    /// the table's lock and put after `f`, which runs with the table unlocked. The object's
    /// destruction waits for `f` (see [`Users`]). `users` gives an object's uses.
    ///
    /// # Safety
    ///
    /// For every object of the table, `users(obj)` must be a valid pointer to the object's
    /// [`Users`], initialised and valid for as long as the object is.
    pub(super) unsafe fn with<R>(
        &self,
        index: u32,
        users: impl Fn(*mut C) -> *const Users,
        f: impl FnOnce(*mut C) -> R,
    ) -> Option<R> {
        let (obj, uses) = {
            let xa = self.xa.lock();
            let obj = xa.get(index as usize)?.as_ptr();
            let uses = users(obj);
            // SAFETY: The object is in the table, so live (type invariant), and so are its uses
            // (guaranteed by the caller).
            unsafe { (*uses).get() };
            (obj, uses)
        };
        let r = f(obj);
        // SAFETY: The use taken above kept the object, and so its uses, alive until now.
        unsafe { (*uses).put() };
        Some(r)
    }

    /// Runs `f` on every object, in order of handle, holding a use of each as [`Self::with`]
    /// does: the table is locked only to find the next object, and `f` runs with it unlocked.
    /// An object entered or removed during the walk may or may not be seen; every object in the
    /// table throughout is seen once. For rare walks over the whole device (flushing the work of
    /// a device declared dead), not for the data path: each step looks its object up again.
    ///
    /// # Safety
    ///
    /// As for [`Self::with`].
    pub(super) unsafe fn for_each(
        &self,
        users: impl Fn(*mut C) -> *const Users,
        mut f: impl FnMut(*mut C),
    ) {
        let mut from = 0;
        loop {
            let (index, obj, uses) = {
                let xa = self.xa.lock();
                let Some((index, obj)) = xa.iter_from(from).next() else {
                    return;
                };
                let uses = users(obj.as_ptr());
                // SAFETY: As in `with`.
                unsafe { (*uses).get() };
                (index, obj.as_ptr(), uses)
            };
            f(obj);
            // SAFETY: As in `with`.
            unsafe { (*uses).put() };
            match index.checked_add(1) {
                Some(next) => from = next,
                None => return,
            }
        }
    }
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_object_table)]
mod tests {
    use super::*;

    /// A test object: its uses and a value.
    #[pin_data]
    struct Obj {
        #[pin]
        users: Users,
        value: u64,
    }

    fn obj(value: u64) -> Result<Pin<KBox<Obj>>> {
        KBox::pin_init(
            pin_init!(Obj {
                users <- Users::new(),
                value,
            }),
            GFP_KERNEL,
        )
    }

    /// The pointer a table keeps: the table only reads through it.
    fn ptr(o: &Obj) -> *mut Obj {
        core::ptr::from_ref(o).cast_mut()
    }

    fn users(p: *mut Obj) -> *const Users {
        // SAFETY: The tables of these tests only hold pointers to live `Obj`s.
        unsafe { &raw const (*p).users }
    }

    fn table() -> Result<Pin<KBox<ObjectTable<Obj>>>> {
        KBox::pin_init(
            ObjectTable::new(crate::c_str!("test"), crate::static_lock_class!()),
            GFP_KERNEL,
        )
    }

    fn value_of(t: &ObjectTable<Obj>, index: u32) -> Option<u64> {
        // SAFETY: `users` gives the uses of the tests' objects, which outlive their tables.
        unsafe { t.with(index, users, |p| (*p).value) }
    }

    /// Handles that a size-based table would put in one slot (equal modulo a power of two, or
    /// beyond 16 bits) name different objects.
    #[test]
    fn sparse_handles() -> Result {
        let objs = [obj(10)?, obj(20)?, obj(30)?, obj(40)?];
        let t = table()?;
        let handles = [0x11u32, 0x11 + 1024, 0x11 + 65536, u32::MAX];
        for (h, o) in handles.iter().zip(objs.iter()) {
            // SAFETY: `objs` outlives `t` (declared before it).
            unsafe { t.insert(*h, ptr(o)) }?;
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
        let (a, b) = (obj(1)?, obj(2)?);
        let t = table()?;
        // SAFETY: `a` and `b` outlive `t` (declared before it).
        unsafe { t.insert(7, ptr(&a)) }?;
        // SAFETY: As above.
        unsafe { t.insert(8, ptr(&b)) }?;
        t.remove(9, ptr(&a));
        assert_eq!(value_of(&t, 7), None);
        assert_eq!(value_of(&t, 8), Some(2));
        Ok(())
    }

    /// A handle given twice is refused; removal needs the right object and frees the handle.
    #[test]
    fn duplicate_and_remove() -> Result {
        let (a, b) = (obj(1)?, obj(2)?);
        let t = table()?;
        // SAFETY: `a` and `b` outlive `t` (declared before it).
        unsafe { t.insert(7, ptr(&a)) }?;
        // SAFETY: As above.
        assert_eq!(unsafe { t.insert(7, ptr(&b)) }, Err(EBUSY));
        t.remove(7, ptr(&b));
        assert_eq!(value_of(&t, 7), Some(1));
        t.remove(7, ptr(&a));
        assert_eq!(value_of(&t, 7), None);
        // SAFETY: As above.
        unsafe { t.insert(7, ptr(&b)) }?;
        assert_eq!(value_of(&t, 7), Some(2));
        Ok(())
    }

    /// Many objects, half of them under handles far apart: every object stays reachable, and
    /// removing every other one loses none of the rest.
    #[test]
    fn growth_and_removal() -> Result {
        const N: usize = 1027;
        let mut objs = KVec::with_capacity(N, GFP_KERNEL)?;
        for i in 0..N {
            objs.push(obj(i as u64)?, GFP_KERNEL)?;
        }
        let t = table()?;
        let handle = |i: usize| {
            if i % 2 == 0 {
                (i as u32) << 12
            } else {
                i as u32
            }
        };
        for (i, o) in objs.iter().enumerate() {
            // SAFETY: `objs` outlives `t` (declared before it); its boxes do not move.
            unsafe { t.insert(handle(i), ptr(o)) }?;
        }
        for i in 0..N {
            assert_eq!(value_of(&t, handle(i)), Some(i as u64));
        }
        for i in (0..N).step_by(2) {
            t.remove(handle(i), ptr(&objs[i]));
        }
        for i in 0..N {
            let expected = (i % 2 == 1).then_some(i as u64);
            assert_eq!(value_of(&t, handle(i)), expected);
        }
        Ok(())
    }

    /// A walk sees every live object once, in order of handle, and no removed one.
    #[test]
    fn walk() -> Result {
        let objs = [obj(1)?, obj(2)?, obj(3)?, obj(4)?];
        let t = table()?;
        for (h, o) in [30u32, 10, 20, u32::MAX].into_iter().zip(objs.iter()) {
            // SAFETY: `objs` outlives `t` (declared before it).
            unsafe { t.insert(h, ptr(o)) }?;
        }
        t.remove(20, ptr(&objs[2]));
        let mut seen = KVec::new();
        // SAFETY: As in `value_of`.
        unsafe {
            t.for_each(users, |p| {
                // The table is unlocked while the walk runs on an object: the walk may look
                // objects up again (a completion handler polls), and allocate.
                let again = value_of(&t, 10);
                seen.push(((*p).value, again), GFP_KERNEL).unwrap_or(())
            })
        };
        assert_eq!(&seen[..], &[(2, Some(2)), (1, Some(2)), (4, Some(2))]);
        Ok(())
    }

    /// A lookup runs with the table unlocked (the driver calls the object's consumer from it,
    /// whose handler may take a lock it also holds around `ib_poll_cq()`, which looks QPs up): a
    /// lookup inside a lookup goes through. Before, the inner lookup spun forever on the lock its
    /// caller held.
    #[test]
    fn lookups_nest() -> Result {
        let (a, b) = (obj(1)?, obj(2)?);
        let t = table()?;
        // SAFETY: `a` and `b` outlive `t` (declared before it).
        unsafe { t.insert(1, ptr(&a)) }?;
        // SAFETY: As above.
        unsafe { t.insert(2, ptr(&b)) }?;
        // SAFETY: As in `value_of`.
        let inner = unsafe { t.with(1, users, |_| value_of(&t, 2)) };
        assert_eq!(inner, Some(Some(2)));
        Ok(())
    }

    /// The destruction of an object waits for the lookups that found it: once the object left
    /// its table and the entry's use is put, its uses are not drained while a lookup that found
    /// it before runs, and are once it returned.
    #[test]
    fn drain_waits_for_lookups() -> Result {
        let a = obj(1)?;
        let t = table()?;
        // SAFETY: `a` outlives `t` (declared before it).
        unsafe { t.insert(1, ptr(&a)) }?;
        // SAFETY: As in `value_of`.
        let during = unsafe {
            t.with(1, users, |_| {
                t.remove(1, ptr(&a));
                // What `drain` does, without waiting.
                a.users.put();
                (value_of(&t, 1), a.users.idle.try_wait_for_completion())
            })
        };
        assert_eq!(during, Some((None, false)));
        assert!(a.users.idle.try_wait_for_completion());
        Ok(())
    }
}
