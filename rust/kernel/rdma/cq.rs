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
    /// Tells the CQ's consumer that a completion arrived (calls its `comp_handler`). Returns
    /// whether it did: not for a kernel CQ the core is still setting up, which no completion can
    /// have reached yet.
    ///
    /// May be called from interrupt context.
    pub fn complete(&self) -> bool {
        let cq = self.as_raw();
        let Some(handler) = self.ready_handler() else {
            return false;
        };
        // SAFETY: The CQ is live (type invariant) and its consumer is ready (`ready_handler`): the
        // core has set the handler, `cq_context` and what the handler uses, and does not change
        // them while the CQ lives.
        unsafe { handler(cq, (*cq).cq_context) };
        true
    }

    /// The CQ's completion handler, if its consumer has finished setting the CQ up so that the
    /// handler may run.
    ///
    /// uverbs and `__ib_create_cq()` set a CQ's handler and context before `create_cq`. A CQ of
    /// `__ib_alloc_cq()` (the one with `wc`, the core's polling array, allocated before
    /// `create_cq`) is still being set up when `create_cq` returns and the driver can reach it:
    /// the core then sets the handler, then what the handler of the polling context uses
    /// (`irq_poll_init()` of `iop`; `INIT_WORK()`, arming the CQ, then `comp_wq`). No legitimate
    /// notification can come before that (no QP uses the CQ yet), but a device that lies could
    /// send one, and the handler would then schedule an uninitialised `irq_poll` or queue work on
    /// a NULL workqueue. So such a CQ is ready once the field its handler needs that the core sets
    /// last is set; the fields that may be being written are read with volatile reads.
    fn ready_handler(&self) -> bindings::ib_comp_handler {
        let cq = self.as_raw();
        // `wc` and `poll_ctx` are set before `create_cq` and do not change while the CQ lives;
        // the others are pointer-sized, aligned fields read with volatile reads, which see NULL
        // (the zeroed allocation) or the value the core stores.
        // SAFETY: The CQ is live (type invariant): its fields may be read.
        unsafe {
            let handler = core::ptr::read_volatile(core::ptr::addr_of!((*cq).comp_handler));
            if handler.is_none() || (*cq).wc.is_null() {
                // None yet, or not `__ib_alloc_cq()`'s CQ: set up before `create_cq`.
                return handler;
            }
            let ready = match (*cq).poll_ctx {
                bindings::ib_poll_context_IB_POLL_SOFTIRQ => {
                    core::ptr::read_volatile(core::ptr::addr_of!((*cq).__bindgen_anon_1.iop.poll))
                        .is_some()
                }
                bindings::ib_poll_context_IB_POLL_WORKQUEUE
                | bindings::ib_poll_context_IB_POLL_UNBOUND_WORKQUEUE => {
                    !core::ptr::read_volatile(core::ptr::addr_of!((*cq).comp_wq)).is_null()
                }
                _ => true,
            };
            handler.filter(|_| ready)
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
            let _ = self.complete();
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
