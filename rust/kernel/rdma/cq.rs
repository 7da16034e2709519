// SPDX-License-Identifier: GPL-2.0

//! Completion queues: creation attributes, completion and event delivery.

use super::{objects::core_object, ops::Operations};
use crate::{bindings, types::Opaque};

/// The attributes a CQ is created with (C's `struct ib_cq_init_attr`).
///
/// # Invariants
///
/// Wraps a valid `struct ib_cq_init_attr` for the duration of the create callback.
#[repr(transparent)]
pub struct CqInitAttr(Opaque<bindings::ib_cq_init_attr>);

impl CqInitAttr {
    /// # Safety
    ///
    /// `ptr` must be valid for reads for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *const bindings::ib_cq_init_attr) -> &'a Self {
        // SAFETY: Transparent wrapper; validity guaranteed by the caller.
        unsafe { &*ptr.cast() }
    }

    fn raw(&self) -> &bindings::ib_cq_init_attr {
        // SAFETY: Valid by the type invariant; nobody writes it during the callback.
        unsafe { &*self.0.get() }
    }

    /// The number of entries asked for (at least).
    pub fn cqe(&self) -> u32 {
        self.raw().cqe
    }

    /// The completion vector asked for.
    pub fn comp_vector(&self) -> u32 {
        self.raw().comp_vector
    }

    /// Creation flags (C's `IB_UVERBS_CQ_FLAGS_*`); providers refuse those they do not know.
    pub fn flags(&self) -> u32 {
        self.raw().flags
    }
}

core_object!(
    /// A live completion queue of driver `T`; dereferences to its data.
    Cq, CqStorage, ib_cq, Cq, drop_data
);

/// An asynchronous event about a CQ (C's `IB_EVENT_CQ_ERR`).
pub const CQ_EVENT_ERR: u32 = bindings::ib_event_type_IB_EVENT_CQ_ERR;

impl<T: Operations> Cq<T> {
    /// Tells the CQ's consumer that a completion arrived (calls its `comp_handler`).
    ///
    /// May be called from interrupt context.
    pub fn complete(&self) {
        let cq = self.as_raw();
        // SAFETY: The CQ is live (type invariant); the core sets `comp_handler` and `cq_context`
        // before the CQ is used and does not change them while it lives.
        unsafe {
            if let Some(handler) = (*cq).comp_handler {
                handler(cq, (*cq).cq_context);
            }
        }
    }

    /// Tells the CQ's consumer to poll for completions the driver makes itself (the flushes of
    /// a device that stopped working), unless the consumer polls the CQ only on its own
    /// (`IB_POLL_DIRECT`, whose handler warns about any call).
    ///
    /// May be called from interrupt context.
    pub fn complete_unsolicited(&self) {
        // SAFETY: The CQ is live (type invariant); the core sets `poll_ctx` before the CQ is used
        // and does not change it.
        let direct =
            unsafe { (*self.as_raw()).poll_ctx } == bindings::ib_poll_context_IB_POLL_DIRECT;
        if !direct {
            self.complete();
        }
    }

    /// Reports an asynchronous event (only [`CQ_EVENT_ERR`] concerns a CQ) to the CQ's consumer.
    /// Returns whether it was delivered.
    pub fn dispatch_event(&self, event: u32) -> bool {
        if event != CQ_EVENT_ERR {
            return false;
        }
        let cq = self.as_raw();
        // SAFETY: The object is live (type invariant); its device, handler and context are fixed
        // while it lives, and the element names it.
        unsafe {
            super::event::deliver(
                (*cq).device,
                (*cq).event_handler,
                (*cq).cq_context,
                event,
                |e| e.cq = cq,
            )
        }
    }
}
