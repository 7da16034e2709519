// SPDX-License-Identifier: GPL-2.0

//! What the process of a user context can map: entries of the context's mmap table (C's
//! `struct rdma_user_mmap_entry`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A driver names what can be mapped, and at which offset, while it creates the context
//! ([`NewUserContext::map_bar_uncached`]); the offset is the key of an entry in the core's table.
//! The abstraction's `mmap` looks the entry up by the offset and length user space gives
//! (`rdma_user_mmap_entry_get()`: any other offset or length fails with `EINVAL`) and maps it
//! with `rdma_user_mmap_io()`, which gives the mapping a reference to the entry and lets the core
//! zap the mapping when the device goes away. Drivers never see the VMA or its page offset.
//!
//! The entries are removed when the context is deallocated; the core frees each (`mmap_free`)
//! once its last mapping is gone too, by the time `dealloc_ucontext` returns.
//!
//! [`NewUserContext::map_bar_uncached`]: super::NewUserContext::map_bar_uncached

use crate::{
    alloc::KVec,
    bindings,
    error::{code::EINVAL, to_result, Result},
    ffi::c_ulong,
    page::PAGE_SIZE,
    prelude::*,
    types::Opaque,
};
use core::ptr::NonNull;

/// Pages of a memory BAR of the RDMA device's parent, mapped uncached.
///
/// # Invariants
///
/// The `pages` (at least one) frames from `pfn` on belong to a memory BAR of the parent of the
/// RDMA device of the context whose table holds the entry.
pub(super) struct BarPages {
    pfn: u64,
    pages: usize,
}

impl BarPages {
    /// Describes `pages` pages of a BAR, from page `first_page` of the BAR on.
    ///
    /// # Safety
    ///
    /// `start` and `len` must be the start and length of a memory BAR of the parent of the RDMA
    /// device whose context's table the entry will be inserted into.
    #[inline]
    pub(super) unsafe fn new(start: u64, len: u64, first_page: u64, pages: usize) -> Result<Self> {
        let pfn = bar_frames(start, len, first_page, pages)?;
        // INVARIANT: `bar_frames` checked that the pages are inside the BAR, which is a memory
        // BAR of the parent (guaranteed by the caller), and that there is at least one.
        Ok(Self { pfn, pages })
    }

    /// Maps the pages into `vma`, uncached.
    ///
    /// # Safety
    ///
    /// `vma` must be the VMA of an `mmap()` on the uverbs file of `uctx`, in its `mmap` callback,
    /// and `entry` the entry of `uctx`'s table that holds `self`, whose length is `vma`'s.
    #[inline]
    pub(super) unsafe fn map(
        &self,
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
        entry: *mut bindings::rdma_user_mmap_entry,
    ) -> Result {
        let pfn = c_ulong::try_from(self.pfn).map_err(|_| EINVAL)?;
        let size: c_ulong = self.pages.checked_mul(PAGE_SIZE).ok_or(EINVAL)?;
        // SAFETY: `vma` is valid during the `mmap` callback (guaranteed by the caller), which may
        // read its protection.
        let prot = unsafe { bindings::pgprot_noncached((*vma).vm_page_prot) };
        // SAFETY: Inside the context's `mmap` callback, as `rdma_user_mmap_io()` requires
        // (guaranteed by the caller). The frames are device memory: a memory BAR of the RDMA
        // device's parent (type invariant), not memory the kernel owns. The core zaps the mapping
        // when the RDMA device is unregistered, which happens before the parent is unbound (the
        // `Registration` lives in a `Devres` of the parent); until then the mapping holds a
        // reference to `entry`, and with it to `self`.
        to_result(unsafe { bindings::rdma_user_mmap_io(uctx, vma, pfn, size, prot, entry) })
    }
}

/// Whether resource `bar` of a PCI device, whose flags are `flags`, is one of the device's own
/// memory BARs, assigned and enabled: not its expansion ROM, nor the BARs of its SR-IOV virtual
/// functions or bridge windows (the resources after the standard BARs), which other drivers or
/// devices may own.
pub(super) fn own_memory_bar(bar: u32, flags: c_ulong) -> bool {
    // The flags are those of `struct resource` (`unsigned long`), defined as `u32`s.
    let (mem, unusable) = (
        bindings::IORESOURCE_MEM as c_ulong,
        (bindings::IORESOURCE_UNSET | bindings::IORESOURCE_DISABLED) as c_ulong,
    );
    bar < bindings::PCI_STD_NUM_BARS && flags & mem != 0 && flags & unusable == 0
}

/// The frame of page `first_page` of a BAR at `start` of `len` bytes, if that page and the
/// `pages - 1` after it (at least one in all) are inside the BAR, which must start on a page
/// boundary; `EINVAL` otherwise.
#[inline]
fn bar_frames(start: u64, len: u64, first_page: u64, pages: usize) -> Result<u64> {
    let page_size = PAGE_SIZE as u64;
    let offset = first_page.checked_mul(page_size).ok_or(EINVAL)?;
    let size = u64::try_from(pages)
        .ok()
        .and_then(|p| p.checked_mul(page_size))
        .ok_or(EINVAL)?;
    let end = offset.checked_add(size).ok_or(EINVAL)?;
    if start % page_size != 0 || pages == 0 || end > len {
        return Err(EINVAL);
    }
    Ok(start / page_size + first_page)
}

/// An entry of a context's mmap table: C's entry, then what it maps.
#[repr(C)]
struct EntryStorage<M> {
    ib: Opaque<bindings::rdma_user_mmap_entry>,
    mapping: M,
}

impl<M> EntryStorage<M> {
    /// The C entry at the head of `this`; computes an address only.
    fn c_entry(this: *mut Self) -> *mut bindings::rdma_user_mmap_entry {
        // `ib` is the first field of a `repr(C)` struct, at offset 0.
        this.cast()
    }
}

/// A context's own reference to an entry of its mmap table that maps an `M`. Dropping it removes
/// the entry (`rdma_user_mmap_entry_remove()`): no new mapping of it can be made, and the core
/// frees it (`mmap_free`, [`free`]) when its mappings are gone too. The removal may sleep (it
/// takes the table's mutex for dma-buf exports): an entry is dropped in process context only,
/// where its context is created or deallocated.
///
/// # Invariants
///
/// `self.0` is an `EntryStorage<M>` from `KBox::into_raw`, inserted into the table of a user
/// context that stays live while `self` exists, of a device whose `mmap_free` is [`free::<M>`];
/// `self` holds the reference the insertion gave.
pub(super) struct MmapEntry<M: Send + Sync>(NonNull<EntryStorage<M>>);

impl<M: Send + Sync> MmapEntry<M> {
    /// Inserts `mapping`, `pages` pages long, into `uctx`'s table at page offset `pgoff`
    /// (C's `rdma_user_mmap_entry_insert_exact()`). Fails with `ENOMEM` if the pages are taken
    /// already (or there is no memory), with `EINVAL` for no page.
    ///
    /// # Safety
    ///
    /// `uctx` must be a context of a device whose `mmap_free` is [`free::<M>`], whose table the
    /// core initialised, and which stays live until the returned entry is dropped. The caller
    /// may sleep.
    pub(super) unsafe fn insert_exact(
        uctx: *mut bindings::ib_ucontext,
        pgoff: u32,
        pages: usize,
        mapping: M,
    ) -> Result<Self> {
        let len = pages.checked_mul(PAGE_SIZE).ok_or(EINVAL)?;
        if len == 0 {
            // The core would insert an entry of no page, which no lookup finds.
            return Err(EINVAL);
        }
        let storage = KBox::new(
            EntryStorage {
                // Zeroed: `driver_removed` must start false; the core sets the rest.
                ib: Opaque::zeroed(),
                mapping,
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(storage);
        // The range `pgoff..=pgoff` is what `rdma_user_mmap_entry_insert_exact()`, a static
        // inline, asks for.
        // SAFETY: `raw` is a valid allocation, which the core may keep until it frees it through
        // `mmap_free` (`free::<M>`, guaranteed by the caller) after the last reference is put;
        // `uctx` is live with an initialised table (guaranteed by the caller).
        let ret = unsafe {
            bindings::rdma_user_mmap_entry_insert_range(
                uctx,
                EntryStorage::c_entry(raw),
                len,
                pgoff,
                pgoff,
            )
        };
        if let Err(e) = to_result(ret) {
            // SAFETY: The insertion failed: the core does not know the entry, which no one else
            // references; it came from `KBox::into_raw` above.
            drop(unsafe { KBox::from_raw(raw) });
            return Err(e);
        }
        // INVARIANT: Inserted into `uctx`'s table, live while the entry exists (guaranteed by
        // the caller); the insertion's reference is the entry's.
        // SAFETY: `raw` came from `KBox::into_raw`, so it is not null.
        Ok(Self(unsafe { NonNull::new_unchecked(raw) }))
    }
}

impl<M: Send + Sync> Drop for MmapEntry<M> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the entry is in the table of a live context and `self`
        // holds a reference, which this gives up: the storage is not used afterwards.
        unsafe { bindings::rdma_user_mmap_entry_remove(EntryStorage::c_entry(self.0.as_ptr())) };
    }
}

// SAFETY: The entry is only touched through the core's functions, which lock what they change;
// `M` is `Send + Sync`.
unsafe impl<M: Send + Sync> Send for MmapEntry<M> {}
// SAFETY: `&MmapEntry` gives no access to anything.
unsafe impl<M: Send + Sync> Sync for MmapEntry<M> {}

/// The entries a user context inserted, removed when it is deallocated.
pub(super) type ContextEntries = KVec<MmapEntry<BarPages>>;

/// A reference to an entry, got for one `mmap()`, put when dropped.
///
/// # Invariants
///
/// `self.0` is an `EntryStorage<M>` inserted by [`MmapEntry::insert_exact`]; `self` holds a
/// reference to it.
pub(super) struct EntryRef<M>(NonNull<EntryStorage<M>>);

impl<M> EntryRef<M> {
    /// The entry `vma` asks for in `uctx`'s table (`rdma_user_mmap_entry_get()`): the one whose
    /// first page is the VMA's page offset and whose length is the VMA's, if the VMA is shared
    /// and the entry not removed.
    ///
    /// # Safety
    ///
    /// `uctx` must be a live context each entry of whose table is an `EntryStorage<M>` from
    /// [`MmapEntry::insert_exact`], and `vma` a VMA being mapped on its uverbs file.
    pub(super) unsafe fn get(
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> Option<Self> {
        // SAFETY: Both are valid (guaranteed by the caller).
        let entry = unsafe { bindings::rdma_user_mmap_entry_get(uctx, vma) };
        // INVARIANT: A non-NULL result is an entry of the table, so an `EntryStorage<M>`, at its
        // head (`repr(C)`); the lookup took a reference.
        NonNull::new(entry.cast::<EntryStorage<M>>()).map(Self)
    }

    /// The C entry.
    pub(super) fn as_raw(&self) -> *mut bindings::rdma_user_mmap_entry {
        EntryStorage::c_entry(self.0.as_ptr())
    }

    /// What the entry maps.
    pub(super) fn mapping(&self) -> &M {
        // SAFETY: The storage is live while `self` holds its reference (type invariant); the
        // mapping is never changed after the insertion.
        unsafe { &(*self.0.as_ptr()).mapping }
    }
}

impl<M> Drop for EntryRef<M> {
    fn drop(&mut self) {
        // SAFETY: `self` holds a reference (type invariant), given up here: the storage is not
        // used afterwards.
        unsafe { bindings::rdma_user_mmap_entry_put(self.as_raw()) };
    }
}

/// The core's `mmap_free`: frees an entry whose last reference is gone.
///
/// # Safety
///
/// Only the C side calls it, with an entry of a context of a device whose `mmap_free` this is
/// (so an `EntryStorage<M>` from [`MmapEntry::insert_exact`]), after its last reference was put.
pub(super) unsafe extern "C" fn free<M>(entry: *mut bindings::rdma_user_mmap_entry) {
    // SAFETY: `entry` heads an `EntryStorage<M>` (`repr(C)`) from `KBox::into_raw`, which no one
    // references any more: the core erased it from the table before calling this.
    drop(unsafe { KBox::from_raw(entry.cast::<EntryStorage<M>>()) });
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_mmap)]
mod tests {
    use super::*;
    use core::sync::atomic::{AtomicUsize, Ordering};

    const PAGE: u64 = PAGE_SIZE as u64;

    /// Only a standard memory BAR that is assigned and enabled may be mapped: not an I/O BAR,
    /// the expansion ROM, the BARs of SR-IOV virtual functions (another driver's, and gone when
    /// the functions are), nor an unassigned or disabled resource.
    #[test]
    fn own_memory_bars_only() {
        let flag = |f: u32| f as c_ulong;
        let mem = flag(bindings::IORESOURCE_MEM);
        assert!(own_memory_bar(0, mem));
        assert!(own_memory_bar(bindings::PCI_STD_NUM_BARS - 1, mem));
        assert!(!own_memory_bar(bindings::PCI_STD_NUM_BARS, mem));
        assert!(!own_memory_bar(bindings::PCI_ROM_RESOURCE, mem));
        // The first SR-IOV BAR (or bridge window), after the ROM.
        assert!(!own_memory_bar(bindings::PCI_ROM_RESOURCE + 1, mem));
        assert!(!own_memory_bar(u32::MAX, mem));
        assert!(!own_memory_bar(0, flag(bindings::IORESOURCE_IO)));
        assert!(!own_memory_bar(0, mem | flag(bindings::IORESOURCE_UNSET)));
        assert!(!own_memory_bar(
            0,
            mem | flag(bindings::IORESOURCE_DISABLED)
        ));
    }

    /// Pages inside a page-aligned BAR are accepted, whatever else is refused.
    #[test]
    fn bar_frames_inside_only() {
        let start = 0x1000 * PAGE;
        let len = 4 * PAGE;
        assert_eq!(bar_frames(start, len, 0, 1), Ok(0x1000));
        assert_eq!(bar_frames(start, len, 3, 1), Ok(0x1003));
        assert_eq!(bar_frames(start, len, 0, 4), Ok(0x1000));
        // Past the end, by a page or by overflowing.
        assert_eq!(bar_frames(start, len, 4, 1), Err(EINVAL));
        assert_eq!(bar_frames(start, len, 3, 2), Err(EINVAL));
        assert_eq!(bar_frames(start, len, u64::MAX / PAGE, 1), Err(EINVAL));
        assert_eq!(bar_frames(start, len, u64::MAX, 1), Err(EINVAL));
        assert_eq!(bar_frames(start, len, 0, usize::MAX), Err(EINVAL));
        // No page; a BAR not starting on a page boundary.
        assert_eq!(bar_frames(start, len, 0, 0), Err(EINVAL));
        assert_eq!(bar_frames(start + 8, len, 0, 1), Err(EINVAL));
    }

    /// How many [`Counted`] were dropped.
    static DROPS: AtomicUsize = AtomicUsize::new(0);

    /// A mapping that counts its drops.
    struct Counted;

    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A zeroed context and an entry mapping a [`Counted`], both from `KBox::into_raw`.
    fn fakes() -> Result<(*mut bindings::ib_ucontext, *mut EntryStorage<Counted>)> {
        // SAFETY: All zeroes is a valid `ib_ucontext`: no device, file or table yet.
        let uctx: bindings::ib_ucontext = unsafe { core::mem::zeroed() };
        let uctx = KBox::new(uctx, GFP_KERNEL)?;
        let entry = KBox::new(
            EntryStorage {
                ib: Opaque::zeroed(),
                mapping: Counted,
            },
            GFP_KERNEL,
        )?;
        Ok((KBox::into_raw(uctx), KBox::into_raw(entry)))
    }

    /// An entry with two references (the context's and a mapping's) is freed, once, when the
    /// second is put, not before.
    ///
    /// The context is a fake one: the core's insertion locks the uverbs file of the context,
    /// whose type is private to the core, so the entry is made as an insertion of no page would
    /// leave it. `rdma_user_mmap_entry_put()` frees an entry through its context's table lock
    /// and device (`rdma_user_mmap_entry_free()`: `mmap_xa`, `device->ops.mmap_free`, and the
    /// device's name for a debug message), which the fake has: an allocated, never registered
    /// device.
    #[test]
    fn last_put_frees_once() -> Result {
        // SAFETY: The size covers a whole `struct ib_device`.
        let ib = unsafe {
            bindings::_ib_alloc_device(
                core::mem::size_of::<bindings::ib_device>(),
                &raw mut bindings::init_net,
            )
        };
        if ib.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `ib` was allocated above and is not shared; the free callback is the only one
        // the test makes the core call.
        unsafe { (*ib).ops.mmap_free = Some(free::<Counted>) };
        let (uctx, raw) = match fakes() {
            Ok(pair) => pair,
            Err(e) => {
                // SAFETY: `ib` was allocated above and never registered.
                unsafe { bindings::ib_dealloc_device(ib) };
                return Err(e);
            }
        };
        let entry = EntryStorage::c_entry(raw);
        // SAFETY: Neither the context nor the entry is shared yet. The table is initialised as
        // the core does it; no page of it is the entry's.
        unsafe {
            (*uctx).device = ib;
            bindings::xa_init_flags(&raw mut (*uctx).mmap_xa, bindings::XA_FLAGS_ALLOC);
            (*entry).ucontext = uctx;
            bindings::refcount_set(&raw mut (*entry).ref_.refcount, 2);
        }
        let before = DROPS.load(Ordering::Relaxed);
        // SAFETY: The entry has two references; the context and the device it names are live.
        unsafe { bindings::rdma_user_mmap_entry_put(entry) };
        assert_eq!(DROPS.load(Ordering::Relaxed), before);
        // SAFETY: As above. This is the last reference: the core frees the storage, which is not
        // used afterwards.
        unsafe { bindings::rdma_user_mmap_entry_put(entry) };
        assert_eq!(DROPS.load(Ordering::Relaxed), before + 1);
        // SAFETY: `uctx` came from `KBox::into_raw` above; the entry that named it is freed, and
        // its table is empty (nothing was ever stored in it).
        drop(unsafe { KBox::from_raw(uctx) });
        // SAFETY: `ib` was allocated above and never registered.
        unsafe { bindings::ib_dealloc_device(ib) };
        Ok(())
    }
}
