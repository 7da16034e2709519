// SPDX-License-Identifier: GPL-2.0

//! Trampolines of completion queues.

use super::super::{
    cq::{Cq, CqInitAttr, CqStorage, DestroyingCq},
    device::Device,
    umem::UserCqBuffer,
};
use super::tabled::tabled_kind;
use super::{Adapter, Operations};
use crate::{bindings, error::from_result, ffi::c_int, prelude::*};
use core::ptr::NonNull;

tabled_kind!(
    CqKind,
    ib_cq,
    Cq,
    CqStorage,
    Cq,
    cq,
    destroy_cq,
    DestroyingCq
);

impl<T: Operations> Adapter<T> {
    /// Creates the data of CQ `ibcq` with `create` (the kernel's or a user's), enters it in the
    /// device's table and tells the core its number of entries.
    ///
    /// # Safety
    ///
    /// `ibcq` must be a CQ the core allocated for `dev`, whose data is not initialised.
    unsafe fn new_cq<I: PinInit<T::Cq>>(
        dev: &Device<T>,
        ibcq: *mut bindings::ib_cq,
        create: impl FnOnce() -> Result<(I, u32)>,
    ) -> Result {
        let create = || {
            let (init, cqe) = create()?;
            // SAFETY: The core reads the number of entries once the creation succeeded.
            unsafe { (*ibcq).cqe = cqe.min(i32::MAX as u32) as i32 };
            Ok(init)
        };
        // SAFETY: Guaranteed by the caller.
        unsafe { Self::create_tabled::<CqKind<T>, _>(dev, ibcq, create) }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn create_cq(
        ibcq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a CQ it allocated with `size_ib_cq` bytes for one of
            // `T`'s devices, valid attributes, and a bundle that is NULL for kernel callers.
            let (dev, attr, (ctx, udata)) = unsafe {
                (
                    Self::dev((*ibcq).device),
                    CqInitAttr::from_raw(attr),
                    Self::user(bindings::uverbs_attr_bundle_udata(attrs)),
                )
            };
            // SAFETY: The core allocated the CQ for `dev`; its data is not initialised.
            unsafe { Self::new_cq(dev, ibcq, || T::create_cq(dev, attr, ctx, udata)) }?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn create_user_cq(
        ibcq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        from_result(|| {
            // The core calls this for CQs of user contexts only, with their uverbs call's bundle.
            let bundle = NonNull::new(attrs).ok_or(EINVAL)?;
            // SAFETY: The core passes a CQ it allocated with `size_ib_cq` bytes for one of
            // `T`'s devices, valid attributes, and the bundle of a CQ creation by the current
            // process, in progress during this call.
            let (dev, attr, (ctx, udata), buffer) = unsafe {
                (
                    Self::dev((*ibcq).device),
                    CqInitAttr::from_raw(attr),
                    Self::user(bindings::uverbs_attr_bundle_udata(attrs)),
                    UserCqBuffer::from_raw(bundle),
                )
            };
            let (Some(ctx), Some(udata)) = (ctx, udata) else {
                return Err(EINVAL);
            };
            // SAFETY: The core allocated the CQ for `dev`; its data is not initialised.
            unsafe {
                Self::new_cq(dev, ibcq, || {
                    T::create_user_cq(dev, attr, ctx, udata, buffer)
                })
            }?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn destroy_cq(
        ibcq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core only destroys CQs whose creation succeeded, once.
        unsafe { Self::destroy_tabled::<CqKind<T>>(Self::dev((*ibcq).device), ibcq) };
        0
    }

    /// The C callback: the first step of `ib_free_cq()`, which destroys a kernel CQ from
    /// `ib_alloc_cq()` (user CQs and `ib_create_cq()`'s are destroyed by `destroy_cq` alone).
    ///
    /// The CQ leaves the device's table here, before the core stops its polling context
    /// (`cancel_work_sync()`, `irq_poll_disable()`) and frees it: a notification from the device
    /// after that (a stale one, or a device declared dead completing its work) no longer finds
    /// it, so it cannot queue the CQ's work again on a CQ about to be freed. Nor can the driver's
    /// destroy callback, which runs after (`post_destroy_cq`): it gets a [`DestroyingCq`].
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn pre_destroy_cq(ibcq: *mut bindings::ib_cq) -> c_int {
        // SAFETY: `ib_free_cq()` calls it once, for a kernel CQ whose creation succeeded.
        unsafe { Self::leave_table::<CqKind<T>>(Self::dev((*ibcq).device), ibcq) };
        0
    }

    /// The C callback: the last step of `ib_free_cq()`, after `pre_destroy_cq` took the CQ out
    /// of the table and the core stopped its polling context.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn post_destroy_cq(ibcq: *mut bindings::ib_cq) {
        // SAFETY: `ib_free_cq()` calls it once, after `pre_destroy_cq` for the same CQ.
        unsafe { Self::destroy_untabled::<CqKind<T>>(Self::dev((*ibcq).device), ibcq) };
    }
}
