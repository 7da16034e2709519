// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: attributes and events.

use super::{objects::core_object, ops::Operations, table::Users};
use crate::bindings;

core_object!(
    /// A live shared receive queue of driver `T`; dereferences to its data.
    Srq, SrqStorage, ib_srq, Srq, drop_data, users: Users = Users::new()
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

/// The attributes a modify sets (C's `struct ib_srq_attr` with the mask naming them, see
/// [`srq_attr_mask`]): each is `Some` exactly when the mask names it.
///
/// The fields the mask does not name are not read from C at all: callers set only those the
/// mask names (uverbs leaves `max_sge`, which no mask names, uninitialised).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct SrqModifyAttr {
    /// Queue depth, to resize to ([`srq_attr_mask::MAX_WR`]).
    pub max_wr: Option<u32>,
    /// Limit to arm ([`srq_attr_mask::LIMIT`]).
    pub srq_limit: Option<u32>,
}

impl SrqModifyAttr {
    /// The attributes of a modify with `mask`, read from `a`: only the fields `mask` names are
    /// read (bits it has beyond [`srq_attr_mask`] name none).
    ///
    /// # Safety
    ///
    /// For the duration of the call, the fields of `*a` that `mask` names must be valid for
    /// reads and initialised. The other fields may be uninitialised.
    pub(super) unsafe fn from_raw(a: *const bindings::ib_srq_attr, mask: u32) -> Self {
        let max_wr = (mask & srq_attr_mask::MAX_WR != 0).then(|| {
            // SAFETY: The mask names `max_wr`, so the caller guarantees it is valid for reads and
            // initialised; `&raw const` forms no reference to the rest of `*a`.
            unsafe { (&raw const (*a).max_wr).read() }
        });
        let srq_limit = (mask & srq_attr_mask::LIMIT != 0).then(|| {
            // SAFETY: As for `max_wr`.
            unsafe { (&raw const (*a).srq_limit).read() }
        });
        Self { max_wr, srq_limit }
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

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_modify_srq_attr)]
mod tests {
    use super::*;
    use core::mem::MaybeUninit;

    /// The attributes of a modify with `mask`, in an `ib_srq_attr` whose named fields are
    /// `max_wr` and `srq_limit` and whose others are garbage (as uverbs leaves `max_sge`).
    fn modify(mask: u32, max_wr: u32, srq_limit: u32) -> SrqModifyAttr {
        let mut a = MaybeUninit::<bindings::ib_srq_attr>::uninit();
        let p = a.as_mut_ptr();
        // SAFETY: `p` is valid for writes of one `ib_srq_attr`, which the writes fill (garbage,
        // then the named fields); so every field `from_raw` may read is initialised.
        unsafe {
            p.write_bytes(0xad, 1);
            if mask & srq_attr_mask::MAX_WR != 0 {
                (&raw mut (*p).max_wr).write(max_wr);
            }
            if mask & srq_attr_mask::LIMIT != 0 {
                (&raw mut (*p).srq_limit).write(srq_limit);
            }
            SrqModifyAttr::from_raw(p, mask)
        }
    }

    /// A modify reads the fields its mask names and nothing else.
    #[test]
    fn unnamed_fields_are_not_read() {
        let arm = SrqModifyAttr {
            max_wr: None,
            srq_limit: Some(10),
        };
        assert_eq!(modify(srq_attr_mask::LIMIT, 64, 10), arm);
        let resize = SrqModifyAttr {
            max_wr: Some(64),
            srq_limit: None,
        };
        assert_eq!(modify(srq_attr_mask::MAX_WR, 64, 10), resize);
        let both = SrqModifyAttr {
            max_wr: Some(64),
            srq_limit: Some(10),
        };
        assert_eq!(
            modify(srq_attr_mask::MAX_WR | srq_attr_mask::LIMIT, 64, 10),
            both
        );
        // Bits beyond the known ones name nothing.
        assert_eq!(modify(1 << 7, 64, 10), SrqModifyAttr::default());
    }
}
