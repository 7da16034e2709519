// SPDX-License-Identifier: GPL-2.0

//! Trampolines of work completions: polling and arming kernel CQs.

use super::super::{
    cq::Cq,
    wc::{NotifyFlags, WcSink},
};
use super::{Adapter, Operations};
use crate::{bindings, error::from_result, ffi::c_int, prelude::*};

impl<T: Operations> Adapter<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn poll_cq(
        ibcq: *mut bindings::ib_cq,
        num: c_int,
        wc: *mut bindings::ib_wc,
    ) -> c_int {
        from_result(|| {
            let cap = usize::try_from(num).map_err(|_| EINVAL)?;
            // SAFETY: The core passes a live CQ of one of `T`'s devices and room for `num`
            // completions.
            let (dev, cq, mut sink) = unsafe {
                let dev = Self::dev((*ibcq).device);
                (
                    dev,
                    Cq::<T>::from_raw(ibcq),
                    WcSink::new(dev, ibcq, wc, cap),
                )
            };
            T::poll_cq(dev, cq, &mut sink)?;
            Ok(sink.len() as c_int)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn req_notify_cq(
        ibcq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live CQ of one of `T`'s devices.
            let (dev, cq) = unsafe { (Self::dev((*ibcq).device), Cq::<T>::from_raw(ibcq)) };
            // `__ib_alloc_cq()` arms its CQ once the handler's polling context is set up.
            cq.note_armed();
            Ok(c_int::from(T::req_notify_cq(
                dev,
                cq,
                NotifyFlags::from_raw(flags),
            )?))
        })
    }
}
