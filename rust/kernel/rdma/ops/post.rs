// SPDX-License-Identifier: GPL-2.0

//! Trampolines of the kernel data path: posting send and receive work requests.

use super::super::{
    qp::Qp,
    wr::{PostError, RecvWrs, SendWrs},
};
use super::{Adapter, Operations};
use crate::{bindings, ffi::c_int};

impl<T: Operations> Adapter<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn post_send(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> c_int {
        // SAFETY: The core passes a live QP of one of `T`'s devices and a valid chain.
        let (dev, qp) = unsafe { (Self::dev((*ibqp).device), Qp::<T>::from_raw(ibqp)) };
        // SAFETY: As above.
        let wrs = unsafe { SendWrs::new(wr, qp) };
        match T::post_send(dev, qp, wrs) {
            Ok(()) => 0,
            Err(PostError { error, index }) => {
                // SAFETY: `wr` is the valid chain of this post, `bad_wr` is valid for writes or
                // NULL, and `next` reads an element's link.
                unsafe { report_bad_wr(wr, index, bad_wr, |w| (*w).next) };
                error.to_errno()
            }
        }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn post_recv(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> c_int {
        // SAFETY: The core passes a live QP of one of `T`'s devices and a valid chain.
        let (dev, qp, wrs) = unsafe {
            (
                Self::dev((*ibqp).device),
                Qp::<T>::from_raw(ibqp),
                RecvWrs::new(wr),
            )
        };
        match T::post_recv(dev, qp, wrs) {
            Ok(()) => 0,
            Err(PostError { error, index }) => {
                // SAFETY: `wr` is the valid chain of this post, `bad_wr` is valid for writes or
                // NULL, and `next` reads an element's link.
                unsafe { report_bad_wr(wr, index, bad_wr, |w| (*w).next) };
                error.to_errno()
            }
        }
    }
}

/// Points `*bad_wr` at element `index` of the chain of work requests starting at `first`
/// (linked by `next`), or at NULL past its end.
///
/// # Safety
///
/// `first` must be NULL or a valid chain, `next` must return an element's link, and `bad_wr`
/// must be NULL or valid for writes.
unsafe fn report_bad_wr<W>(
    first: *const W,
    index: usize,
    bad_wr: *mut *const W,
    next: impl Fn(*const W) -> *const W,
) {
    let mut bad = first;
    for _ in 0..index {
        if bad.is_null() {
            break;
        }
        bad = next(bad);
    }
    if !bad_wr.is_null() {
        // SAFETY: Guaranteed by the caller.
        unsafe { *bad_wr = bad };
    }
}
