// SPDX-License-Identifier: GPL-2.0

//! Delivering an asynchronous event about one object (QP, CQ, SRQ) to its consumer.

use crate::{bindings, ffi::c_void};

/// A consumer's event handler (C's `void (*)(struct ib_event *, void *)`).
pub(super) type Handler = Option<unsafe extern "C" fn(*mut bindings::ib_event, *mut c_void)>;

/// Calls `handler(&event, context)` for an event of type `event` on `device` whose element
/// `element` sets. Returns whether there was a handler to call.
///
/// # Safety
///
/// `device`, `handler` and `context` must be those of a live object, which `element` names,
/// and the handler must be callable in the current context (handlers may be called from any
/// context).
pub(super) unsafe fn deliver(
    device: *mut bindings::ib_device,
    handler: Handler,
    context: *mut c_void,
    event: u32,
    element: impl FnOnce(&mut bindings::ib_event__bindgen_ty_1),
) -> bool {
    let Some(handler) = handler else {
        return false;
    };
    // SAFETY: All-zeroes is a valid `ib_event`.
    let mut ev: bindings::ib_event = unsafe { core::mem::zeroed() };
    ev.device = device;
    ev.event = event;
    element(&mut ev.element);
    // SAFETY: Guaranteed by the caller; the handler copies what it keeps of the event.
    unsafe { handler(&mut ev, context) };
    true
}
