// SPDX-License-Identifier: GPL-2.0

//! Trampolines of queue pairs (their work requests are in `post.rs`).

use super::super::{
    objects::Pd,
    qp::{Qp, QpAttrMask, QpInitAttr, QpModifyAttr, QpStorage},
};
use super::tabled::tabled_kind;
use super::{Adapter, Operations};
use crate::{bindings, error::from_result, ffi::c_int, prelude::*};

tabled_kind!(QpKind, ib_qp, Qp, QpStorage, Qp, qp, destroy_qp, Qp);

impl<T: Operations> Adapter<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn create_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a QP it allocated with `size_ib_qp` bytes for one of `T`'s
            // devices, with its PD set (a live PD of the device), valid attributes whose CQs and
            // SRQ are the device's, and a udata that is NULL for kernel callers.
            let (dev, pd, attr, (ctx, udata)) = unsafe {
                (
                    Self::dev((*ibqp).device),
                    Pd::<T>::from_raw((*ibqp).pd),
                    QpInitAttr::<T>::from_raw(attr),
                    Self::user(udata),
                )
            };
            let create = || {
                let (init, qp_num) = T::create_qp(dev, pd, attr, ctx, udata)?;
                // SAFETY: The core reads the QP number once the creation succeeded.
                unsafe { (*ibqp).qp_num = qp_num };
                Ok(init)
            };
            // SAFETY: The core allocated the QP for `dev`; its data is not initialised.
            unsafe { Self::create_tabled::<QpKind<T>, _>(dev, ibqp, create) }?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn modify_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: c_int,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // Attributes beyond the IB spec's are not offered to drivers.
            let mask = QpAttrMask::from_raw(mask as u32).ok_or(EOPNOTSUPP)?;
            // SAFETY: The core passes a live QP of one of `T`'s devices, and attributes whose
            // fields the mask names are set (`ib_modify_qp()`'s contract); the others may be
            // uninitialised (rdma_cm's are on its stack), and `from_raw` reads only the named
            // ones, through raw pointers.
            let (dev, qp, attr, (_, udata)) = unsafe {
                (
                    Self::dev((*ibqp).device),
                    Qp::<T>::from_raw(ibqp),
                    QpModifyAttr::from_raw(attr, mask)?,
                    Self::user(udata),
                )
            };
            T::modify_qp(dev, qp, &attr, mask, udata)?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn query_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: c_int,
        init_attr: *mut bindings::ib_qp_init_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live QP of one of `T`'s devices.
            let (dev, qp) = unsafe { (Self::dev((*ibqp).device), Qp::<T>::from_raw(ibqp)) };
            let q = T::query_qp(dev, qp, QpAttrMask::from_raw_truncate(mask as u32))?;
            // SAFETY: The core passes both structs valid for writes, and the live QP for reads.
            unsafe {
                q.attr.write_raw(&mut *attr);
                let init = &mut *init_attr;
                // What the consumer created the QP with, as the core keeps it: its own event
                // handler (the core installs a wrapper as `event_handler`), context, CQs, SRQ,
                // type and port (which MODIFY_QP with IB_QP_PORT updates).
                let ib = &*ibqp;
                init.event_handler = ib.registered_event_handler;
                init.qp_context = ib.qp_context;
                init.send_cq = ib.send_cq;
                init.recv_cq = ib.recv_cq;
                init.srq = ib.srq;
                init.xrcd = core::ptr::null_mut();
                init.qp_type = ib.qp_type;
                init.create_flags = 0;
                init.port_num = ib.port;
                init.cap.max_send_wr = q.init_cap.max_send_wr;
                init.cap.max_recv_wr = q.init_cap.max_recv_wr;
                init.cap.max_send_sge = q.init_cap.max_send_sge;
                init.cap.max_recv_sge = q.init_cap.max_recv_sge;
                init.cap.max_inline_data = q.init_cap.max_inline_data;
                init.sq_sig_type = if q.sq_sig_all {
                    bindings::ib_sig_type_IB_SIGNAL_ALL_WR
                } else {
                    bindings::ib_sig_type_IB_SIGNAL_REQ_WR
                };
            }
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn destroy_qp(
        ibqp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core only destroys QPs whose creation succeeded, once.
        unsafe { Self::destroy_tabled::<QpKind<T>>(Self::dev((*ibqp).device), ibqp) };
        0
    }
}
