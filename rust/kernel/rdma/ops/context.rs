// SPDX-License-Identifier: GPL-2.0

//! Trampolines of user contexts (and their `mmap`) and protection domains.

use super::super::{
    objects::{PdStorage, UserContext, UserContextStorage, Vma},
    udata::UData,
};
use super::{Adapter, Operations};
use crate::{bindings, error::from_result, ffi::c_int};

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
            // one of `T`'s devices, and its call's bundle's `driver_udata`.
            let (dev, udata) = unsafe { (Self::dev((*uctx).device), UData::from_raw(udata)) };
            let data = T::alloc_ucontext(dev, udata)?;
            // SAFETY: The allocation is a `UserContextStorage<T>`; its data becomes initialised.
            unsafe { UserContextStorage::<T>::init(uctx, data) };
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: The core only deallocates contexts whose `alloc_ucontext` succeeded, once.
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

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn mmap(
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live context of one of `T`'s devices and a valid VMA.
            let (dev, ctx, vma) = unsafe {
                (
                    Self::dev((*uctx).device),
                    UserContext::<T>::from_raw(uctx),
                    Vma::from_raw(vma),
                )
            };
            T::mmap(dev, ctx, vma)?;
            Ok(0)
        })
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
