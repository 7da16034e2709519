// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: attributes and events.

use super::{objects::core_object, ops::Operations};
use crate::bindings;

core_object!(
    /// A live shared receive queue of driver `T`; dereferences to its data.
    Srq, SrqStorage, ib_srq, Srq, drop_data
);

/// The attributes of an SRQ (C's `struct ib_srq_attr`).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct SrqAttr {
    /// Queue depth.
    pub max_wr: u32,
    /// Scatter/gather entries per work request.
    pub max_sge: u32,
    /// Limit below which the SRQ raises `SRQ_LIMIT_REACHED` (0: disarmed).
    pub srq_limit: u32,
}

impl SrqAttr {
    pub(super) fn from_raw(a: &bindings::ib_srq_attr) -> Self {
        Self {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
        }
    }

    pub(super) fn write_raw(&self, a: &mut bindings::ib_srq_attr) {
        a.max_wr = self.max_wr;
        a.max_sge = self.max_sge;
        a.srq_limit = self.srq_limit;
    }
}

/// The kind of an SRQ (C's `enum ib_srq_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrqType {
    /// A basic SRQ.
    Basic,
    /// Any other kind (XRC, tag matching), by its C value.
    Other(u32),
}

impl SrqType {
    pub(super) fn from_raw(raw: bindings::ib_srq_type) -> Self {
        match raw {
            bindings::ib_srq_type_IB_SRQT_BASIC => Self::Basic,
            other => Self::Other(other),
        }
    }
}

/// Which attributes a modify concerns (C's `enum ib_srq_attr_mask`).
pub mod srq_attr_mask {
    use crate::bindings;
    /// `max_wr` (resize).
    pub const MAX_WR: u32 = bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR;
    /// `srq_limit` (arm).
    pub const LIMIT: u32 = bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;
}

/// An asynchronous event about an SRQ (C's `enum ib_event_type`, the SRQ subset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SrqEvent {
    /// The SRQ failed.
    Err = bindings::ib_event_type_IB_EVENT_SRQ_ERR,
    /// Fewer than `srq_limit` receives are posted.
    LimitReached = bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
}

impl SrqEvent {
    /// The SRQ event C's `raw` is; `None` for any other event type.
    pub fn from_raw(raw: u32) -> Option<Self> {
        [Self::Err, Self::LimitReached]
            .into_iter()
            .find(|event| *event as u32 == raw)
    }
}

impl<T: Operations> Srq<T> {
    /// Reports an asynchronous event to the SRQ's consumer. Returns whether it was delivered
    /// (not if the consumer has no handler). May be called from interrupt context.
    pub fn dispatch_event(&self, event: SrqEvent) -> bool {
        let srq = self.as_raw();
        // SAFETY: The object is live (type invariant); its device, handler and context are fixed
        // while it lives, and the element names it.
        unsafe {
            super::event::deliver(
                (*srq).device,
                (*srq).event_handler,
                (*srq).srq_context,
                event as u32,
                |e| e.srq = srq,
            )
        }
    }
}
