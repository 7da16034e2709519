// SPDX-License-Identifier: GPL-2.0

//! Trampolines of shared receive queues.

use super::super::{
    objects::Pd,
    srq::{Srq, SrqAttr, SrqModifyAttr, SrqStorage, SrqType},
};
use super::tabled::tabled_kind;
use super::{Adapter, Operations};
use crate::{bindings, error::from_result, ffi::c_int, prelude::*};

tabled_kind!(SrqKind, ib_srq, Srq, SrqStorage, Srq, srq, destroy_srq, Srq);

impl<T: Operations> Adapter<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn create_srq(
        ibsrq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // A kernel consumer posts to its SRQ through `post_srq_recv`, which the abstractions
            // do not offer: the core would call NULL. Kernel SRQs are refused, as `vmw_pvrdma`
            // refuses them.
            if udata.is_null() {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: The core passes an SRQ it allocated with `size_ib_srq` bytes for one of
            // `T`'s devices, with its PD set, valid attributes and a udata that is NULL for
            // kernel callers.
            let (dev, pd, init, (ctx, udata)) = unsafe {
                (
                    Self::dev((*ibsrq).device),
                    Pd::<T>::from_raw((*ibsrq).pd),
                    &mut *init,
                    Self::user(udata),
                )
            };
            let mut attr = SrqAttr::from_raw(&init.attr);
            let srq_type = SrqType::from_raw(init.srq_type);
            let create = || T::create_srq(dev, pd, srq_type, &mut attr, ctx, udata);
            // SAFETY: The core allocated the SRQ for `dev`; its data is not initialised.
            unsafe { Self::create_tabled::<SrqKind<T>, _>(dev, ibsrq, create) }?;
            // The capacities granted, for the consumer (which reads them once the creation
            // succeeded).
            attr.write_raw(&mut init.attr);
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn modify_srq(
        ibsrq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live SRQ of one of `T`'s devices, and attributes whose
            // fields the mask names are set; the others may be uninitialised (uverbs leaves
            // `max_sge` so), and `from_raw` reads only the named ones, through raw pointers.
            let (dev, srq, attr, (_, udata)) = unsafe {
                (
                    Self::dev((*ibsrq).device),
                    Srq::<T>::from_raw(ibsrq),
                    SrqModifyAttr::from_raw(attr, mask),
                    Self::user(udata),
                )
            };
            T::modify_srq(dev, srq, &attr, mask, udata)?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn query_srq(
        ibsrq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live SRQ of one of `T`'s devices.
            let (dev, srq) = unsafe { (Self::dev((*ibsrq).device), Srq::<T>::from_raw(ibsrq)) };
            let a = T::query_srq(dev, srq)?;
            // SAFETY: The core passes `attr` valid for writes.
            a.write_raw(unsafe { &mut *attr });
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn destroy_srq(
        ibsrq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core only destroys SRQs whose creation succeeded, once.
        unsafe { Self::destroy_tabled::<SrqKind<T>>(Self::dev((*ibsrq).device), ibsrq) };
        0
    }
}
