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
//! many objects as the device lets the driver create. It is a hash table with open addressing
//! (linear probing, deletion by backward shift) in one array that is at most half full, under
//! an IRQ-safe spinlock:
//!
//! - lookups run in interrupt context (CQ notifications, and `poll_cq`, which kernel consumers
//!   may call from any context), where the `XArray`'s own lock, taken without disabling
//!   interrupts, could deadlock against a process-context holder;
//! - an object costs no allocation of its own (a tree would need a node per object): the array
//!   is allocated with the device, sized for [`INITIAL_SLOTS`], and doubled (outside the lock)
//!   only when a creation would fill more than half of it; it never shrinks. Creating and
//!   destroying objects below the high-water mark allocates nothing.
//!
//! The entries are pointers to objects the RDMA core owns, not values the table could own.

use crate::{
    alloc::flags::GFP_KERNEL,
    error::Result,
    prelude::*,
    sync::{LockClassKey, SpinLockIrq},
};
use core::ptr::NonNull;

/// The slots a table starts with: room for half as many objects before the first growth.
pub(super) const INITIAL_SLOTS: usize = 256;

/// One slot of a table: empty, or an object under its handle.
struct Slot<C> {
    index: u32,
    obj: Option<NonNull<C>>,
}

impl<C> Slot<C> {
    const EMPTY: Self = Self {
        index: 0,
        obj: None,
    };
}

// `derive` would require `C: Copy`.
impl<C> Clone for Slot<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Slot<C> {}

/// The slots and what they hold.
///
/// # Invariants
///
/// `slots.len()` is a power of two, at least 2; `live` slots are occupied, and
/// `2 * (live + reserved) <= slots.len()`: at least half of the slots are empty, so that every
/// probe ends at an empty slot and every reserved entry finds one. An occupied slot is reachable
/// from its index's home slot ([`Slots::home`]) without crossing an empty slot.
struct Slots<C> {
    slots: KVec<Slot<C>>,
    live: usize,
    /// Entries promised by [`ObjectTable::reserve`] and not yet inserted or given back.
    reserved: usize,
}

// SAFETY: The pointers are only handed out under the table's lock, while the objects are
// guaranteed live (the table's invariant), and the RDMA core's objects may be used from any
// thread.
unsafe impl<C> Send for Slots<C> {}

impl<C> Slots<C> {
    fn new(len: usize) -> Result<Self> {
        // INVARIANT: `len` is a power of two of at least 2 (callers), nothing is held.
        Ok(Self {
            slots: KVec::from_elem(Slot::EMPTY, len, GFP_KERNEL)?,
            live: 0,
            reserved: 0,
        })
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot where the search for `index` starts: a multiplicative (Fibonacci) hash, so that
    /// handles equal modulo a power of two, or counting up, spread over the array.
    fn home(&self, index: u32) -> usize {
        let hash = u64::from(index.wrapping_mul(0x9e37_79b9));
        // The top bits of the hash, as many as the length has (a power of two of at most 2^32:
        // the array could not be allocated otherwise).
        ((hash * self.slots.len() as u64) >> 32) as usize
    }

    /// Whether one more entry keeps the table at most half full.
    fn has_room(&self) -> bool {
        2 * (self.live + self.reserved + 1) <= self.slots.len()
    }

    /// The position of the occupied slot holding `index`.
    fn find(&self, index: u32) -> Option<usize> {
        let mask = self.mask();
        let mut pos = self.home(index);
        // Ends: at least one slot is empty (invariant); the bound is for the reader.
        for _ in 0..self.slots.len() {
            let slot = self.slots[pos];
            slot.obj?;
            if slot.index == index {
                return Some(pos);
            }
            pos = (pos + 1) & mask;
        }
        None
    }

    /// Puts `obj` under `index` in the first empty slot from its home. The caller has checked
    /// that `index` is not there and that an empty slot exists.
    fn place(&mut self, index: u32, obj: NonNull<C>) {
        let mask = self.mask();
        let mut pos = self.home(index);
        while self.slots[pos].obj.is_some() {
            pos = (pos + 1) & mask;
        }
        self.slots[pos] = Slot {
            index,
            obj: Some(obj),
        };
        self.live += 1;
    }

    /// Empties the slot at `pos` and moves later entries of its run back into the hole, so that
    /// every entry stays reachable from its home (Knuth's algorithm R).
    fn vacate(&mut self, mut pos: usize) {
        let mask = self.mask();
        let mut next = pos;
        loop {
            next = (next + 1) & mask;
            let slot = self.slots[next];
            if slot.obj.is_none() {
                break;
            }
            let home = self.home(slot.index);
            // The entry at `next` may move to `pos` unless its home lies cyclically in
            // (pos, next]: then the hole is before its home and it must stay.
            let stays = if pos <= next {
                pos < home && home <= next
            } else {
                pos < home || home <= next
            };
            if !stays {
                self.slots[pos] = slot;
                pos = next;
            }
        }
        self.slots[pos] = Slot::EMPTY;
        self.live -= 1;
    }

    /// Moves every entry of `self` into `bigger` (empty, with more slots), keeping the counts.
    fn move_into(&mut self, bigger: &mut Self) {
        for slot in self.slots.iter() {
            if let Some(obj) = slot.obj {
                bigger.place(slot.index, obj);
            }
        }
        bigger.reserved = self.reserved;
    }
}

/// A table entry promised ahead of the object it will hold (see [`ObjectTable::reserve`]).
/// Given back when dropped unused.
pub(super) struct Reservation<'a, C> {
    table: &'a ObjectTable<C>,
}

impl<C> Drop for Reservation<'_, C> {
    fn drop(&mut self) {
        self.table.slots.lock().reserved -= 1;
    }
}

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
/// Every pointer in `slots` is a live object whose data is initialised: it is inserted once the
/// object's creation succeeded and removed before its destruction starts.
#[pin_data]
pub(super) struct ObjectTable<C> {
    #[pin]
    slots: SpinLockIrq<Slots<C>>,
}

impl<C> ObjectTable<C> {
    /// An empty table with [`INITIAL_SLOTS`] slots.
    ///
    /// Each kind of table needs its own lock class (`key`): the driver takes them in a fixed
    /// order (a CQ's table, then the CQ's own lock, then the QP table while polling), which
    /// lockdep can only check if the classes differ.
    pub(super) fn new(
        name: &'static CStr,
        key: Pin<&'static LockClassKey>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            slots <- SpinLockIrq::new(Slots::new(INITIAL_SLOTS)?, name, key),
        })
    }

    /// Promises an entry, to be filled by [`Self::insert`]: creating an object reserves its
    /// entry first, so that nothing but a duplicate handle can fail once the device has the
    /// object. Grows the table (the only allocation it makes) when the entry would fill more
    /// than half of it.
    pub(super) fn reserve(&self) -> Result<Reservation<'_, C>> {
        loop {
            let len = {
                let mut slots = self.slots.lock();
                if slots.has_room() {
                    slots.reserved += 1;
                    return Ok(Reservation { table: self });
                }
                slots.slots.len()
            };
            // Allocated without the lock; another reservation may have grown the table
            // meanwhile, in which case this array is dropped and the room checked again.
            let mut bigger = Slots::new(len.checked_mul(2).ok_or(ENOMEM)?)?;
            let mut slots = self.slots.lock();
            if slots.slots.len() < bigger.slots.len() {
                slots.move_into(&mut bigger);
                // INVARIANT: `bigger` holds the same entries and promises, in twice the slots.
                core::mem::swap(&mut *slots, &mut bigger);
            }
            drop(slots);
            // The smaller array (or the unused bigger one) is freed outside the lock.
            drop(bigger);
        }
    }

    /// Enters `obj` under `index`, in the entry `entry` promised. Fails with `EBUSY` if another
    /// live object has that handle (the device handed it out twice).
    ///
    /// # Safety
    ///
    /// `obj` must be a live object with initialised data that stays so until [`Self::remove`] is
    /// called for it.
    pub(super) unsafe fn insert(
        &self,
        entry: Reservation<'_, C>,
        index: u32,
        obj: *mut C,
    ) -> Result {
        let obj = NonNull::new(obj).ok_or(EINVAL)?;
        // The promise is consumed here, not by the reservation's `drop`.
        core::mem::forget(entry);
        let mut slots = self.slots.lock();
        slots.reserved -= 1;
        if slots.find(index).is_some() {
            return Err(EBUSY);
        }
        // INVARIANT: Guaranteed by the caller. There is an empty slot: the promise kept one.
        slots.place(index, obj);
        Ok(())
    }

    /// Removes `obj` from the table: it is looked for under `index`, and if it is not there
    /// (a driver whose [`TableIndex`] changed since the object was entered), in every slot. The
    /// object must leave the table whatever its index says, for the table's invariant: it is
    /// freed after this.
    pub(super) fn remove(&self, index: u32, obj: *mut C) {
        let mut slots = self.slots.lock();
        let holds = |slot: &Slot<C>| slot.obj.is_some_and(|o| o.as_ptr() == obj);
        let pos = match slots.find(index) {
            Some(pos) if holds(&slots.slots[pos]) => Some(pos),
            _ => slots.slots.iter().position(holds),
        };
        if let Some(pos) = pos {
            slots.vacate(pos);
        }
    }

    /// Runs `f` on the object under `index`, if any, with the table locked (interrupts off): the
    /// object cannot go away while `f` runs, and `f` must not sleep.
    pub(super) fn with<R>(&self, index: u32, f: impl FnOnce(*mut C) -> R) -> Option<R> {
        let slots = self.slots.lock();
        let obj = slots.slots[slots.find(index)?].obj?;
        Some(f(obj.as_ptr()))
    }

    /// Runs `f` on every object, in no particular order, with the table locked (interrupts
    /// off): as with [`Self::with`], no object can go away while `f` runs, and `f` must not
    /// sleep. For rare walks over the whole device (flushing the work of a device declared
    /// dead), not for the data path: the lock is held for the whole walk.
    pub(super) fn for_each(&self, mut f: impl FnMut(*mut C)) {
        let slots = self.slots.lock();
        for obj in slots.slots.iter().filter_map(|slot| slot.obj) {
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
            unsafe { t.insert(t.reserve()?, *h, o) }?;
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
        unsafe { t.insert(t.reserve()?, 7, &mut a) }?;
        // SAFETY: As above.
        unsafe { t.insert(t.reserve()?, 8, &mut b) }?;
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

    /// Far more objects than the first array holds: the table grows, every object stays
    /// reachable, and removing every other one (entries moving back into the holes) loses none
    /// of the rest. Handles that collide in a power-of-two array (multiples of its size) are
    /// among them.
    #[test]
    fn growth_and_removal() -> Result {
        const N: usize = 4 * INITIAL_SLOTS + 3;
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
            unsafe { t.insert(t.reserve()?, handle(i), o) }?;
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

    /// A reservation dropped unused gives its entry back: a table can be filled to the same
    /// count again and again without growing.
    #[test]
    fn unused_reservations_are_given_back() -> Result {
        let t = table()?;
        for _ in 0..4 * INITIAL_SLOTS {
            drop(t.reserve()?);
        }
        let slots = t.slots.lock();
        assert_eq!((slots.reserved, slots.slots.len()), (0, INITIAL_SLOTS));
        Ok(())
    }

    /// A walk sees every live object once and no removed one.
    #[test]
    fn walk() -> Result {
        let mut objs = [1u64, 2, 3];
        let t = table()?;
        for (h, o) in [30u32, 10, 20].into_iter().zip(objs.iter_mut()) {
            // SAFETY: `objs` outlives `t` (declared before it).
            unsafe { t.insert(t.reserve()?, h, o) }?;
        }
        t.remove(20, objs.as_mut_ptr().wrapping_add(2));
        // The walk runs under the table's spinlock: nothing in it may allocate.
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
