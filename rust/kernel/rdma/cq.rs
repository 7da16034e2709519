// SPDX-License-Identifier: GPL-2.0

//! Completion queues: creation attributes, completion and event delivery.

use super::{objects::core_object, ops::Operations, table::Users};
use crate::{bindings, types::Opaque};
use core::sync::atomic::{AtomicBool, Ordering};

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

    /// The creation flags; `None` if a bit names no [`CqFlag`] (a request from a newer core or
    /// user space, which a driver refuses rather than ignores).
    pub fn flags(&self) -> Option<CqFlags> {
        let raw = self.raw().flags;
        (raw & !CqFlags::all_bits() == 0).then_some(CqFlags(raw))
    }
}

crate::impl_flags!(
    /// How a CQ is to be created (C's `enum ib_uverbs_ex_create_cq_flags`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct CqFlags(u32);

    /// One of [`CqFlags`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CqFlag {
        /// Completions carry a timestamp.
        TimestampCompletion =
            bindings::ib_uverbs_ex_create_cq_flags_IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION,
        /// The CQ may overrun without an error.
        IgnoreOverrun = bindings::ib_uverbs_ex_create_cq_flags_IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN,
    }
);

core_object!(
    /// A live completion queue of driver `T`; dereferences to its data.
    Cq, CqStorage, ib_cq, Cq, drop_data, users: Users = Users::new(),
    armed: AtomicBool = AtomicBool::new(false)
);

/// A CQ being destroyed, as [`Operations::destroy_cq`] sees it: its data, without the means to
/// notify its consumer that a live [`Cq`] has ([`Cq::complete`], [`Cq::complete_unsolicited`],
/// [`Cq::dispatch_event`]).
///
/// `ib_free_cq()` stops the polling context of a kernel CQ from `ib_alloc_cq()` before the
/// destroy callback runs (`cancel_work_sync()` of the work that a completion queues on an
/// `IB_POLL_WORKQUEUE` CQ), and frees the CQ after it: a completion notified from the callback
/// would queue that work again, on a CQ about to be freed. Nor does the driver have the CQ as a
/// [`Cq`] anywhere else by then: it left the device's table ([`Device::with_cq`],
/// [`Device::for_each_cq`]) before the core stopped the polling context, and resource tracking
/// ([`Operations::fill_res_cq`]) before that.
///
/// [`Device::with_cq`]: super::Device::with_cq
/// [`Device::for_each_cq`]: super::Device::for_each_cq
///
/// # Invariants
///
/// Wraps a [`Cq`] whose creation succeeded (or is being undone) and that is being destroyed: out
/// of the device's table, its data initialised until the destroy callback returns.
#[repr(transparent)]
pub struct DestroyingCq<T: Operations>(Cq<T>);

impl<T: Operations> DestroyingCq<T> {
    /// # Safety
    ///
    /// `ptr` must be a CQ of driver `T` whose creation succeeded (its data is initialised), live
    /// for `'a`, that is being destroyed (or its creation undone): out of the device's table.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_cq) -> &'a Self {
        // SAFETY: Transparent wrapper of `Cq<T>`, itself transparent over the C object; validity
        // guaranteed by the caller.
        unsafe { &*ptr.cast() }
    }

    /// The device the CQ belongs to.
    pub fn device(&self) -> &super::Device<T> {
        self.0.device()
    }
}

impl<T: Operations> core::ops::Deref for DestroyingCq<T> {
    type Target = T::Cq;

    fn deref(&self) -> &T::Cq {
        // The data, not the `Cq`: that would give back the methods this type leaves out.
        &self.0
    }
}

/// An asynchronous event about a CQ (C's `enum ib_event_type`, the CQ subset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum CqEvent {
    /// The CQ failed (an overrun, or a protection error on its ring).
    Err = bindings::ib_event_type_IB_EVENT_CQ_ERR,
}

impl CqEvent {
    /// The CQ event C's `raw` is; `None` for any other event type.
    pub fn from_raw(raw: u32) -> Option<Self> {
        (raw == Self::Err as u32).then_some(Self::Err)
    }
}

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
    /// uverbs and `__ib_create_cq()` set a CQ's handler and context before `create_cq`, and the
    /// driver publishes the CQ (in the device's table, under its lock) after that. A CQ of
    /// `__ib_alloc_cq()` (the one with `wc`, the core's polling array, allocated before
    /// `create_cq`) is still being set up when `create_cq` returns and the driver can reach it:
    /// the core then sets the handler and what the handler of the polling context uses
    /// (`irq_poll_init()` of `iop`, or `INIT_WORK()`), arms the CQ, and for a workqueue sets
    /// `comp_wq` last. No legitimate notification can come before that (no QP uses the CQ yet),
    /// but a device that lies could send one, and the handler would then schedule an
    /// uninitialised `irq_poll` or queue uninitialised work on a NULL workqueue.
    ///
    /// So such a CQ is ready once it has been armed and, on a workqueue, `comp_wq` is set. The
    /// arming trampoline marks the CQ armed with a release store ([`Cq::note_armed`]), which the
    /// acquire load here pairs with: what the core stored before it arms the CQ is then visible
    /// on any CPU, not only on those that keep stores in order (x86). The fields that may be
    /// being written are read with volatile reads.
    fn ready_handler(&self) -> bindings::ib_comp_handler {
        let cq = self.as_raw();
        // SAFETY: The CQ is live (type invariant): its fields may be read. `wc` is set before
        // `create_cq` and does not change while the CQ lives.
        let polled_by_core = !unsafe { (*cq).wc }.is_null();
        // `__ib_alloc_cq()`'s CQ: its handler and polling context are set once it is armed.
        if polled_by_core && !self.armed().load(Ordering::Acquire) {
            return None;
        }
        // `comp_handler` and `comp_wq` are pointer-sized, aligned fields read with volatile reads,
        // which see NULL (the zeroed allocation) or the value the core stores once.
        // SAFETY: As above.
        let handler = unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*cq).comp_handler)) };
        if !polled_by_core {
            // Set up before `create_cq` (uverbs, `__ib_create_cq()`), or not at all.
            return handler;
        }
        // SAFETY: As above; `poll_ctx` is set before `create_cq` and does not change.
        let ready = match unsafe { (*cq).poll_ctx } {
            bindings::ib_poll_context_IB_POLL_WORKQUEUE
            | bindings::ib_poll_context_IB_POLL_UNBOUND_WORKQUEUE => {
                // SAFETY: As above.
                !unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*cq).comp_wq)) }.is_null()
            }
            _ => true,
        };
        handler.filter(|_| ready)
    }

    /// Marks the CQ armed: its consumer has finished setting it up but for a workqueue's
    /// `comp_wq` (see [`Cq::ready_handler`]). The arming trampoline calls it before the driver
    /// arms the CQ; the release store orders what the core stored before (the handler and its
    /// polling context) before the mark.
    pub(super) fn note_armed(&self) {
        self.armed().store(true, Ordering::Release);
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

    /// Reports an asynchronous event to the CQ's consumer. Returns whether it was delivered (not
    /// if the consumer has no handler).
    pub fn dispatch_event(&self, event: CqEvent) -> bool {
        let cq = self.as_raw();
        // SAFETY: The object is live (type invariant); its device, handler and context are fixed
        // while it lives, and the element names it.
        unsafe {
            super::event::deliver(
                (*cq).device,
                (*cq).event_handler,
                (*cq).cq_context,
                event as u32,
                |e| e.cq = cq,
            )
        }
    }
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_cq)]
mod tests {
    use super::*;
    use crate::{
        alloc::flags::__GFP_ZERO,
        prelude::*,
        rdma::{Device, DriverId, TableIndex},
    };
    use core::{ffi::c_void, sync::atomic::AtomicUsize};

    /// A driver with no callbacks: the test looks at the types its callbacks receive.
    struct NoDriver;

    /// The data of its objects.
    struct Data;

    impl TableIndex for Data {
        fn table_index(&self) -> u32 {
            0
        }
    }

    #[vtable]
    impl Operations for NoDriver {
        const DRIVER_ID: DriverId = DriverId::UNKNOWN;
        const UVERBS_ABI_VERSION: u32 = 0;
        type UserContext = ();
        type Pd = ();
        type Cq = Data;
        type Qp = Data;
        type Srq = Data;
        type Ah = ();
        type Mr = ();
    }

    /// What a call resolves to when the object has no method of that name (nor anything it
    /// dereferences to): a method of [`Fallback`], which every type has, and which a type's own
    /// methods take precedence over.
    struct NoSuchMethod;

    trait Fallback {
        fn complete(&self) -> NoSuchMethod {
            NoSuchMethod
        }

        fn complete_unsolicited(&self) -> NoSuchMethod {
            NoSuchMethod
        }

        fn dispatch_event(&self, _event: CqEvent) -> NoSuchMethod {
            NoSuchMethod
        }
    }

    impl<X: ?Sized> Fallback for X {}

    /// Whether a call's result is that of a method of the object.
    trait Found {
        const FOUND: bool;
    }

    impl Found for NoSuchMethod {
        const FOUND: bool = false;
    }

    impl Found for bool {
        const FOUND: bool = true;
    }

    impl Found for () {
        const FOUND: bool = true;
    }

    /// Whether `call`, made on the CQ that the destroy callback `destroy` receives, calls a
    /// method of that CQ. `destroy` is looked at for its type only, never called.
    fn found_in_destroy<A, R: Found>(
        _destroy: impl Fn(&Device<NoDriver>, &A),
        _call: impl FnOnce(&A) -> R,
    ) -> bool {
        R::FOUND
    }

    /// The CQ that `destroy_cq` gets cannot notify its consumer: `ib_free_cq()` has stopped the
    /// CQ's polling context before it, and a completion would queue the CQ's work again on a CQ
    /// the core frees right after. The same calls on a live CQ are found, which shows that the
    /// test sees the methods.
    #[test]
    fn destroy_cq_cannot_notify() {
        let destroy = <NoDriver as Operations>::destroy_cq;
        assert!(!found_in_destroy(destroy, |cq| cq.complete()));
        assert!(!found_in_destroy(destroy, |cq| cq.complete_unsolicited()));
        assert!(!found_in_destroy(destroy, |cq| cq.dispatch_event(CqEvent::Err)));

        // The fallbacks are found before any `Deref`: the view must not dereference to a `Cq`
        // either (whose methods a call through `*` would reach), only to the driver's data (a
        // build error otherwise).
        fn derefs_to<D: core::ops::Deref<Target = X>, X: ?Sized>() {}
        derefs_to::<DestroyingCq<NoDriver>, <NoDriver as Operations>::Cq>();

        let live = |_: &Device<NoDriver>, _: &Cq<NoDriver>| ();
        assert!(found_in_destroy(live, |cq| cq.complete()));
        assert!(found_in_destroy(live, |cq| cq.complete_unsolicited()));
        assert!(found_in_destroy(live, |cq| cq.dispatch_event(CqEvent::Err)));
    }

    /// How often [`count_completion`] ran.
    static COMPLETIONS: AtomicUsize = AtomicUsize::new(0);

    /// A consumer's completion handler that counts its calls.
    ///
    /// # Safety
    ///
    /// None beyond the C signature: it reads neither argument.
    unsafe extern "C" fn count_completion(_cq: *mut bindings::ib_cq, _ctx: *mut c_void) {
        COMPLETIONS.fetch_add(1, Ordering::Relaxed);
    }

    /// A polling context's function, which the test never runs.
    ///
    /// # Safety
    ///
    /// None beyond the C signature: it reads neither argument.
    unsafe extern "C" fn never_polled(_iop: *mut bindings::irq_poll, _budget: i32) -> i32 {
        0
    }

    /// The memory of a CQ of `NoDriver`, zeroed as the core allocates it.
    fn cq_memory() -> Result<KBox<core::mem::MaybeUninit<CqStorage<NoDriver>>>> {
        Ok(KBox::new_uninit(GFP_KERNEL | __GFP_ZERO)?)
    }

    /// A CQ of `__ib_alloc_cq()` (`wc` set) is ready for its handler only once the core has
    /// armed it: before, its handler and polling context may be set already on the CPU that
    /// sets them up, but another CPU may see them in any order. On a workqueue `comp_wq`, set
    /// after the arming, must be there too. A CQ set up before `create_cq` (no `wc`) is ready
    /// at once.
    #[test]
    fn alloc_cq_ready_once_armed() -> Result {
        let mut wc_array = KBox::<u8>::new(0, GFP_KERNEL)?;
        let wc = core::ptr::from_mut::<u8>(&mut wc_array).cast::<bindings::ib_wc>();
        let mut mem = cq_memory()?;
        let raw = mem.as_mut_ptr().cast::<bindings::ib_cq>();
        // SAFETY: `raw` is the zeroed `ib_cq` at the head of the allocation, valid for writes.
        // The core's fields are written as `__ib_alloc_cq()` writes them after `create_cq` for
        // an `IB_POLL_SOFTIRQ` CQ (`wc` before it).
        unsafe {
            (*raw).wc = wc;
            (*raw).poll_ctx = bindings::ib_poll_context_IB_POLL_SOFTIRQ;
            CqStorage::<NoDriver>::init(raw, Data);
            (*raw).comp_handler = Some(count_completion);
            (*raw).__bindgen_anon_1.iop.poll = Some(never_polled);
        }
        // SAFETY: Initialised just above; `mem` outlives every use of `cq`.
        let cq = unsafe { Cq::<NoDriver>::from_raw(raw) };
        let before = COMPLETIONS.load(Ordering::Relaxed);
        assert!(!cq.complete());
        assert_eq!(COMPLETIONS.load(Ordering::Relaxed), before);
        cq.note_armed();
        assert!(cq.complete());
        assert_eq!(COMPLETIONS.load(Ordering::Relaxed), before + 1);

        // A workqueue CQ, armed, before and after `comp_wq`.
        // SAFETY: As above; the polling context is unused by the test's handler.
        unsafe { (*raw).poll_ctx = bindings::ib_poll_context_IB_POLL_WORKQUEUE };
        assert!(!cq.complete());
        let mut wq = KBox::<u8>::new(0, GFP_KERNEL)?;
        // SAFETY: As above. The workqueue is never used: the test's handler does not queue.
        unsafe { (*raw).comp_wq = core::ptr::from_mut::<u8>(&mut wq).cast() };
        assert!(cq.complete());
        assert_eq!(COMPLETIONS.load(Ordering::Relaxed), before + 2);

        // A CQ of uverbs or `__ib_create_cq()`: no `wc`, its handler set before `create_cq`.
        let mut user_mem = cq_memory()?;
        let user_raw = user_mem.as_mut_ptr().cast::<bindings::ib_cq>();
        // SAFETY: As above.
        unsafe {
            (*user_raw).comp_handler = Some(count_completion);
            CqStorage::<NoDriver>::init(user_raw, Data);
        }
        // SAFETY: As above, with `user_mem`.
        let user_cq = unsafe { Cq::<NoDriver>::from_raw(user_raw) };
        assert!(user_cq.complete());
        assert_eq!(COMPLETIONS.load(Ordering::Relaxed), before + 3);
        // The data (`Data`, which has no `Drop`) is left in the memory the boxes free.
        Ok(())
    }
}
