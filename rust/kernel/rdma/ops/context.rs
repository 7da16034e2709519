// SPDX-License-Identifier: GPL-2.0

//! Trampolines of user contexts (and their `mmap`) and protection domains.

use super::super::{
    mmap::{self, BarPages, EntryRef},
    objects::{NewUserContext, PdStorage, UserContext, UserContextStorage},
    udata::UData,
};
use super::{Adapter, Operations};
use crate::{
    bindings,
    error::{code::EINVAL, from_result},
    ffi::c_int,
};

impl<T: Operations> Adapter<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn alloc_ucontext(
        uctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a context it allocated with `size_ib_ucontext` bytes for
            // one of `T`'s devices, with its device, uverbs file and mmap table set up
            // (`ib_alloc_ucontext()`), which it frees only after `dealloc_ucontext` or after this
            // returns an error; and its call's bundle's `driver_udata`.
            let (dev, udata, mut new) = unsafe {
                (
                    Self::dev((*uctx).device),
                    UData::from_raw(udata),
                    NewUserContext::<T>::new(uctx),
                )
            };
            // On failure `new` is dropped here, which removes what the driver inserted.
            let data = T::alloc_ucontext(dev, &mut new, udata)?;
            // SAFETY: The allocation is a `UserContextStorage<T>`, whose data becomes initialised;
            // `new` is its `NewUserContext`.
            unsafe { UserContextStorage::<T>::init(uctx, new, data) };
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: The core only deallocates contexts whose `alloc_ucontext` succeeded, once, and
        // frees them afterwards. `take` removes the entries of the context's table first.
        let (dev, data) = unsafe {
            (
                Self::dev((*uctx).device),
                UserContextStorage::<T>::take(uctx),
            )
        };
        T::dealloc_ucontext(dev, data);
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn disassociate_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: The core passes a live context of one of `T`'s devices; it is deallocated only
        // after this returns.
        let (dev, ctx) = unsafe { (Self::dev((*uctx).device), UserContext::<T>::from_raw(uctx)) };
        T::disassociate_ucontext(dev, ctx);
    }

    /// The C callback: maps the entry of the context's mmap table that the VMA's offset and
    /// length name (`EINVAL` if there is none), the way the entry says.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn mmap(
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live context of one of `T`'s devices and the VMA of an
            // `mmap()` on its uverbs file (`ib_uverbs_mmap()`). Every entry of the table is an
            // `EntryStorage<BarPages>`: only `NewUserContext::map_bar_uncached` inserts any.
            let entry = unsafe { EntryRef::<BarPages>::get(uctx, vma) }.ok_or(EINVAL)?;
            // SAFETY: This is the context's `mmap` callback, for `vma`, whose length the lookup
            // checked against the entry's, which holds the mapping. The entry is referenced
            // until `entry` is dropped, after the mapping took a reference of its own.
            unsafe { entry.mapping().map(uctx, vma, entry.as_raw()) }?;
            Ok(0)
        })
    }

    /// The C callback: frees an entry of a context's mmap table once its last reference is gone.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn mmap_free(entry: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: The entries of `T`'s contexts are all `EntryStorage<BarPages>` from
        // `MmapEntry::insert_exact` (see `mmap`); the core calls this once, after the last put.
        unsafe { mmap::free::<BarPages>(entry) }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a PD it allocated with `size_ib_pd` bytes for one of `T`'s
            // devices, and a udata that is NULL for kernel callers.
            let (dev, (ctx, udata)) = unsafe { (Self::dev((*pd).device), Self::user(udata)) };
            let data = T::alloc_pd(dev, ctx, udata)?;
            // SAFETY: The allocation is a `PdStorage<T>`; its data becomes initialised.
            unsafe { PdStorage::<T>::init(pd, data) };
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core only deallocates PDs whose `alloc_pd` succeeded, once.
        let (dev, data) = unsafe { (Self::dev((*pd).device), PdStorage::<T>::take(pd)) };
        T::dealloc_pd(dev, data);
        0
    }
}
