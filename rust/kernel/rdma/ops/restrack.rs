// SPDX-License-Identifier: GPL-2.0

//! Trampolines of the driver's details in resource tracking (`rdma res`).
//!
//! The core calls them while dumping its tracked objects, holding a reference on the object's
//! tracking entry: destroying an object first waits for every such reference to go
//! (`rdma_restrack_begin_del()`/`rdma_restrack_del()` come before the driver's destroy callback)
//! and an object is tracked only once its creation succeeded, so each callback sees a live
//! object whose data is initialised.

use super::super::{cq::Cq, mr::Mr, qp::Qp, restrack::ResEntry, srq::Srq};
use super::{Adapter, Operations};
use crate::{bindings, error::from_result, ffi::c_int};

impl<T: Operations> Adapter<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn fill_res_qp_entry(
        msg: *mut bindings::sk_buff,
        ibqp: *mut bindings::ib_qp,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A tracked QP of one of `T`'s devices, live during the dump (see the
            // module's documentation), and the message being filled.
            let (dev, qp) = unsafe { (Self::dev((*ibqp).device), Qp::<T>::from_raw(ibqp)) };
            // SAFETY: The message of this callback.
            unsafe { ResEntry::fill(msg, |entry| T::fill_res_qp(dev, qp, entry)) }?;
            Ok(0)
        })
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
        from_result(|| {
            // SAFETY: As in `fill_res_qp_entry`, for a CQ.
            let (dev, cq) = unsafe { (Self::dev((*ibcq).device), Cq::<T>::from_raw(ibcq)) };
            // SAFETY: The message of this callback.
            unsafe { ResEntry::fill(msg, |entry| T::fill_res_cq(dev, cq, entry)) }?;
            Ok(0)
        })
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
        from_result(|| {
            // SAFETY: As in `fill_res_qp_entry`, for an SRQ.
            let (dev, srq) = unsafe { (Self::dev((*ibsrq).device), Srq::<T>::from_raw(ibsrq)) };
            // SAFETY: The message of this callback.
            unsafe { ResEntry::fill(msg, |entry| T::fill_res_srq(dev, srq, entry)) }?;
            Ok(0)
        })
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
        from_result(|| {
            // SAFETY: As in `fill_res_qp_entry`, for a region (which the driver's registration
            // callbacks made, so it heads an `MrStorage<T>`).
            let (dev, mr) = unsafe { (Self::dev((*ibmr).device), Mr::<T>::from_raw(ibmr)) };
            // SAFETY: The message of this callback.
            unsafe { ResEntry::fill(msg, |entry| T::fill_res_mr(dev, mr, entry)) }?;
            Ok(0)
        })
    }
}
