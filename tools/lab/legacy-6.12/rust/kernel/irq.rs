// SPDX-License-Identifier: GPL-2.0

//! Interrupt handlers.
//!
//! C header: [`include/linux/interrupt.h`](srctree/include/linux/interrupt.h)
//!
//! A [`Registration`] installs a [`Handler`] on an interrupt [`Line`] and removes it when
//! dropped; a [`ThreadedRegistration`] does the same for a [`ThreadedHandler`], whose second half
//! runs in a kernel thread and may sleep. A [`Line`] keeps whatever provides the interrupt number
//! (for PCI, the allocated vectors) alive, so a handler can never outlive its vector.

use crate::{
    bindings,
    error::{to_result, Result},
    prelude::*,
    str::CStr,
    sync::Arc,
};
use core::marker::PhantomPinned;

/// An interrupt line that may be requested, with a reference that keeps it allocated.
pub struct Line {
    irq: u32,
    _owner: Arc<dyn Send + Sync>,
}

impl Line {
    /// Wraps the Linux interrupt number `irq`.
    ///
    /// # Safety
    ///
    /// `irq` must be a valid interrupt number for as long as `owner` is alive.
    pub unsafe fn new(irq: u32, owner: Arc<dyn Send + Sync>) -> Self {
        Self { irq, _owner: owner }
    }

    /// The Linux interrupt number.
    pub fn irq(&self) -> u32 {
        self.irq
    }
}

/// Flags for requesting an interrupt (C's `IRQF_*`).
#[derive(Clone, Copy, Default)]
pub struct Flags(crate::ffi::c_ulong);

impl Flags {
    /// No flags: an exclusive line.
    pub const NONE: Self = Self(0);
    /// The line may be shared with other devices (C's `IRQF_SHARED`).
    pub const SHARED: Self = Self(bindings::IRQF_SHARED as crate::ffi::c_ulong);
    /// Keep the line masked until the threaded handler has run (C's `IRQF_ONESHOT`).
    pub const ONESHOT: Self = Self(bindings::IRQF_ONESHOT as crate::ffi::c_ulong);
}

impl core::ops::BitOr for Flags {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// What a hard interrupt handler did (C's `irqreturn_t`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum IrqReturn {
    /// The interrupt was not from this device.
    None,
    /// The interrupt was handled.
    Handled,
}

/// What the first half of a threaded handler did.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ThreadedIrqReturn {
    /// The interrupt was not from this device.
    None,
    /// The interrupt was handled completely.
    Handled,
    /// Run [`ThreadedHandler::handle_threaded`].
    WakeThread,
}

fn irqreturn(r: IrqReturn) -> bindings::irqreturn_t {
    match r {
        IrqReturn::None => bindings::irqreturn_IRQ_NONE,
        IrqReturn::Handled => bindings::irqreturn_IRQ_HANDLED,
    }
}

/// A hard interrupt handler. It runs in interrupt context: it must not sleep.
pub trait Handler: Send + Sync + 'static {
    /// Handles one interrupt.
    fn handle(&self) -> IrqReturn;
}

/// A threaded interrupt handler: a short first half in interrupt context, then a second half in
/// a kernel thread that may sleep (e.g. take a mutex).
pub trait ThreadedHandler: Send + Sync + 'static {
    /// The first half, in interrupt context. By default, wakes the thread.
    fn handle(&self) -> ThreadedIrqReturn {
        ThreadedIrqReturn::WakeThread
    }

    /// The second half, in process context.
    fn handle_threaded(&self) -> IrqReturn;
}

/// The pinned part of a registration: its address is the `dev_id` cookie of the C handler.
#[pin_data]
struct Inner<H> {
    handler: H,
    #[pin]
    _pin: PhantomPinned,
}

/// A hard interrupt handler installed on a line (C's `request_irq()`/`free_irq()`).
///
/// # Invariants
///
/// `inner` is registered as the `dev_id` of a handler on `line` from `new` until `drop`.
pub struct Registration<H: Handler> {
    inner: Pin<KBox<Inner<H>>>,
    line: Line,
}

impl<H: Handler> Registration<H> {
    /// Installs `handler` on `line`. The handler may run before this function returns.
    pub fn new(line: Line, flags: Flags, name: &'static CStr, handler: H) -> Result<Self> {
        let inner = KBox::pin_init(
            pin_init!(Inner {
                handler,
                _pin: PhantomPinned,
            }),
            GFP_KERNEL,
        )?;
        let cookie = core::ptr::from_ref::<Inner<H>>(&inner).cast_mut().cast();
        // SAFETY: `cookie` points to a pinned box that outlives the registration (it is freed
        // after `free_irq` in `drop`); `name` is `'static`; the line is valid while `line` lives.
        to_result(unsafe {
            bindings::request_threaded_irq(
                line.irq,
                Some(Self::handle_callback),
                None,
                flags.0,
                name.as_char_ptr(),
                cookie,
            )
        })?;
        Ok(Self { inner, line })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn handle_callback(
        _irq: crate::ffi::c_int,
        cookie: *mut crate::ffi::c_void,
    ) -> bindings::irqreturn_t {
        // SAFETY: `cookie` is the `Inner<H>` passed to `request_threaded_irq`, alive until
        // `free_irq` returns, which waits for running handlers.
        let inner = unsafe { &*cookie.cast::<Inner<H>>() };
        irqreturn(inner.handler.handle())
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.inner.handler
    }
}

impl<H: Handler> Drop for Registration<H> {
    fn drop(&mut self) {
        let cookie = core::ptr::from_ref::<Inner<H>>(&self.inner)
            .cast_mut()
            .cast();
        // SAFETY: By the type invariant the handler is installed with this cookie. `free_irq`
        // waits for running handlers, so `inner` is unused once it returns.
        unsafe { bindings::free_irq(self.line.irq, cookie) };
    }
}

/// A threaded interrupt handler installed on a line (C's `request_threaded_irq()`).
///
/// # Invariants
///
/// `inner` is registered as the `dev_id` of a handler on `line` from `new` until `drop`.
pub struct ThreadedRegistration<H: ThreadedHandler> {
    inner: Pin<KBox<Inner<H>>>,
    line: Line,
}

impl<H: ThreadedHandler> ThreadedRegistration<H> {
    /// Installs `handler` on `line`. The handler may run before this function returns.
    pub fn new(line: Line, flags: Flags, name: &'static CStr, handler: H) -> Result<Self> {
        let inner = KBox::pin_init(
            pin_init!(Inner {
                handler,
                _pin: PhantomPinned,
            }),
            GFP_KERNEL,
        )?;
        let cookie = core::ptr::from_ref::<Inner<H>>(&inner).cast_mut().cast();
        // SAFETY: As in `Registration::new`.
        to_result(unsafe {
            bindings::request_threaded_irq(
                line.irq,
                Some(Self::handle_callback),
                Some(Self::thread_callback),
                flags.0,
                name.as_char_ptr(),
                cookie,
            )
        })?;
        Ok(Self { inner, line })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn handle_callback(
        _irq: crate::ffi::c_int,
        cookie: *mut crate::ffi::c_void,
    ) -> bindings::irqreturn_t {
        // SAFETY: As in `Registration::handle_callback`.
        let inner = unsafe { &*cookie.cast::<Inner<H>>() };
        match inner.handler.handle() {
            ThreadedIrqReturn::None => bindings::irqreturn_IRQ_NONE,
            ThreadedIrqReturn::Handled => bindings::irqreturn_IRQ_HANDLED,
            ThreadedIrqReturn::WakeThread => bindings::irqreturn_IRQ_WAKE_THREAD,
        }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn thread_callback(
        _irq: crate::ffi::c_int,
        cookie: *mut crate::ffi::c_void,
    ) -> bindings::irqreturn_t {
        // SAFETY: As in `Registration::handle_callback`; `free_irq` also stops the thread.
        let inner = unsafe { &*cookie.cast::<Inner<H>>() };
        irqreturn(inner.handler.handle_threaded())
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.inner.handler
    }
}

impl<H: ThreadedHandler> Drop for ThreadedRegistration<H> {
    fn drop(&mut self) {
        let cookie = core::ptr::from_ref::<Inner<H>>(&self.inner)
            .cast_mut()
            .cast();
        // SAFETY: As in `Registration::drop`.
        unsafe { bindings::free_irq(self.line.irq, cookie) };
    }
}
