// SPDX-License-Identifier: GPL-2.0

//! Trampolines of memory regions, which the abstraction (not the core) allocates.

use super::super::{
    mr::{AccessFlags, Mr, MrKeys, MrStorage, MrType},
    objects::Pd,
};
use super::{Adapter, Operations};
use crate::{bindings, ffi::c_int, prelude::*};

impl<T: Operations> Adapter<T> {
    /// A new MR for the core: its storage is allocated first, so that once the driver has
    /// registered the region (`register`) nothing can fail and leave the device with a region
    /// the core does not know.
    fn new_mr(register: impl FnOnce() -> Result<(T::Mr, MrKeys)>) -> *mut bindings::ib_mr {
        let slot = match MrStorage::<T>::alloc() {
            Ok(slot) => slot,
            Err(e) => return e.to_ptr(),
        };
        match register() {
            Ok((data, keys)) => MrStorage::<T>::into_raw(slot, data, keys),
            Err(e) => e.to_ptr(),
        }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn get_dma_mr(
        ibpd: *mut bindings::ib_pd,
        access: c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: The core passes a live PD of one of `T`'s devices.
        let (dev, pd) = unsafe { (Self::dev((*ibpd).device), Pd::<T>::from_raw(ibpd)) };
        let Some(access) = AccessFlags::from_raw(access as u32) else {
            return EINVAL.to_ptr();
        };
        Self::new_mr(|| T::get_dma_mr(dev, pd, access))
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn reg_user_mr(
        ibpd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        virt_addr: u64,
        access: c_int,
        dmah: *mut bindings::ib_dmah,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // DMA handles (`alloc_dmah`) are not offered: there is none to honour.
        if !dmah.is_null() {
            return EOPNOTSUPP.to_ptr();
        }
        let Some(access) = AccessFlags::from_raw(access as u32) else {
            return EINVAL.to_ptr();
        };
        // SAFETY: The core passes a live PD of one of `T`'s devices and the udata of the uverbs
        // call.
        let (dev, pd, (_, udata)) = unsafe {
            (
                Self::dev((*ibpd).device),
                Pd::<T>::from_raw(ibpd),
                Self::user(udata),
            )
        };
        Self::new_mr(|| T::reg_user_mr(dev, pd, start, length, virt_addr, access, udata))
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn dereg_mr(
        ibmr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core only deregisters MRs this driver created, once; `device` is set by
        // the core after creation.
        let dev = unsafe { Self::dev((*ibmr).device) };
        // SAFETY: As above.
        let data = unsafe { MrStorage::<T>::from_raw(ibmr) };
        T::dereg_mr(dev, data);
        0
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn alloc_mr(
        ibpd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        // SAFETY: The core passes a live PD of one of `T`'s devices.
        let (dev, pd) = unsafe { (Self::dev((*ibpd).device), Pd::<T>::from_raw(ibpd)) };
        Self::new_mr(|| T::alloc_mr(dev, pd, MrType::from_raw(mr_type), max_num_sg))
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn map_mr_sg(
        ibmr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: c_int,
        sg_offset: *mut crate::ffi::c_uint,
    ) -> c_int {
        // SAFETY: The core passes a live region of one of `T`'s devices (from `alloc_mr`).
        T::map_mr_sg_begin(unsafe { Mr::<T>::from_raw(ibmr) });
        // SAFETY: The core passes a valid scatterlist of `sg_nents` entries and offset; the
        // region is live for the call, and `set_page` only reaches it through `ibmr`.
        unsafe { bindings::ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, Some(Self::set_page)) }
    }

    /// The page callback of `ib_sg_to_pages()`.
    ///
    /// # Safety
    ///
    /// Only `ib_sg_to_pages()` calls it, from `map_mr_sg`, with the region being mapped.
    pub(super) unsafe extern "C" fn set_page(ibmr: *mut bindings::ib_mr, addr: u64) -> c_int {
        // SAFETY: The region is live for the duration of `map_mr_sg`.
        match T::map_mr_sg_page(unsafe { Mr::<T>::from_raw(ibmr) }, addr) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}
