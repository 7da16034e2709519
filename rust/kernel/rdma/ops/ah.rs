// SPDX-License-Identifier: GPL-2.0

//! Trampolines of address handles.

use super::super::{
    ah::{AhAttr, AhStorage},
    objects::Pd,
};
use super::{Adapter, Operations};
use crate::{bindings, error::from_result, ffi::c_int};

impl<T: Operations> Adapter<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn create_ah(
        ibah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes an AH it allocated with `size_ib_ah` bytes for one of
            // `T`'s devices, with its PD set, and valid attributes.
            let (dev, pd, attr, flags, (_, udata)) = unsafe {
                (
                    Self::dev((*ibah).device),
                    Pd::<T>::from_raw((*ibah).pd),
                    AhAttr::from_raw(&*(*init).ah_attr),
                    (*init).flags,
                    Self::user(udata),
                )
            };
            let sleepable = flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0;
            let data = T::create_ah(dev, pd, &attr, sleepable, udata)?;
            // SAFETY: The allocation is an `AhStorage<T>`; its data becomes initialised.
            unsafe { AhStorage::<T>::init(ibah, data) };
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn destroy_ah(ibah: *mut bindings::ib_ah, _flags: u32) -> c_int {
        // SAFETY: The core only destroys AHs whose creation succeeded, once.
        let (dev, data) = unsafe { (Self::dev((*ibah).device), AhStorage::<T>::take(ibah)) };
        T::destroy_ah(dev, data);
        0
    }
}
