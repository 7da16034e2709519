// SPDX-License-Identifier: GPL-2.0

//! Trampolines of the driver's details in resource tracking (`rdma res`).
//!
//! The core calls them while dumping its tracked objects, holding a reference on the object's
//! tracking entry: destroying an object first waits for every such reference to go
//! (`rdma_restrack_begin_del()`/`rdma_restrack_del()` come before the driver's destroy callback)
//! and an object is tracked only once its creation succeeded, so each callback sees a live
//! object whose data is initialised.

use super::super::{cq::Cq, device::Device, mr::Mr, qp::Qp, restrack::ResEntry, srq::Srq};
use super::{Adapter, Operations};
use crate::{
    bindings,
    error::{from_result, Result},
    ffi::c_int,
};

impl<T: Operations> Adapter<T> {
    /// Lets `fill` add the driver's details of `obj`, a tracked object of device `ib`, to the
    /// dump's message `msg`: the one body of the `fill_res_*_entry` trampolines below.
    ///
    /// # Safety
    ///
    /// `msg` must be the message of a `fill_res_*_entry` callback in progress and `ib` the
    /// device of `obj`, a device of driver `T`.
    unsafe fn fill_res<O>(
        msg: *mut bindings::sk_buff,
        ib: *mut bindings::ib_device,
        obj: &O,
        fill: impl FnOnce(&Device<T>, &O, &mut ResEntry<'_>) -> Result,
    ) -> c_int {
        from_result(|| {
            // SAFETY: Guaranteed by the caller: `ib` is a device of driver `T`, live during the
            // callback, and `msg` the message being filled.
            unsafe { ResEntry::fill(msg, |entry| fill(Self::dev(ib), obj, entry)) }?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn fill_res_qp_entry(
        msg: *mut bindings::sk_buff,
        ibqp: *mut bindings::ib_qp,
    ) -> c_int {
        // SAFETY: A tracked QP of one of `T`'s devices, live during the dump (see the
        // module's documentation), and the message being filled.
        unsafe { Self::fill_res(msg, (*ibqp).device, Qp::<T>::from_raw(ibqp), T::fill_res_qp) }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn fill_res_cq_entry(
        msg: *mut bindings::sk_buff,
        ibcq: *mut bindings::ib_cq,
    ) -> c_int {
        // SAFETY: As in `fill_res_qp_entry`, for a CQ.
        unsafe { Self::fill_res(msg, (*ibcq).device, Cq::<T>::from_raw(ibcq), T::fill_res_cq) }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn fill_res_srq_entry(
        msg: *mut bindings::sk_buff,
        ibsrq: *mut bindings::ib_srq,
    ) -> c_int {
        // SAFETY: As in `fill_res_qp_entry`, for an SRQ.
        unsafe {
            Self::fill_res(
                msg,
                (*ibsrq).device,
                Srq::<T>::from_raw(ibsrq),
                T::fill_res_srq,
            )
        }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn fill_res_mr_entry(
        msg: *mut bindings::sk_buff,
        ibmr: *mut bindings::ib_mr,
    ) -> c_int {
        // SAFETY: As in `fill_res_qp_entry`, for a region (which the driver's registration
        // callbacks made, so it heads an `MrStorage<T>`).
        unsafe { Self::fill_res(msg, (*ibmr).device, Mr::<T>::from_raw(ibmr), T::fill_res_mr) }
    }
}
