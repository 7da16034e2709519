// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: allocation, registration, and handles for code outside callbacks.

use super::{
    cq::Cq,
    ops::{build_ops, Operations},
    qp::Qp,
    srq::Srq,
    table::ObjectTable,
    PortEvent,
};
use crate::{
    bindings,
    device::{self, Bound},
    devres::Devres,
    error::{to_result, Result},
    net,
    prelude::*,
    str::CStr,
    sync::{new_mutex, new_spinlock_irq, Arc, Mutex, SpinLockIrq},
    types::Opaque,
};
use core::{marker::PhantomData, mem::size_of, ptr::NonNull};

/// The allocation `_ib_alloc_device()` makes for a driver: the C device first (the RDMA core
/// requires it at offset 0), then the object tables, then the driver's data.
#[repr(C)]
pub(super) struct DeviceStorage<T> {
    ib: Opaque<bindings::ib_device>,
    tables: Tables,
    data: T,
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
impl<T: Operations> DeviceStorage<T> {
    /// A device for KUnit tests of code that only uses its tables and compares its address: a
    /// zeroed C device never registered nor given operations, initialised tables, and `data`.
    pub(super) fn new_for_test(data: T) -> Result<Pin<KBox<Self>>> {
        let mut storage = KBox::<Self>::new_uninit(GFP_KERNEL | crate::alloc::flags::__GFP_ZERO)?;
        let ptr = storage.as_mut_ptr();
        // SAFETY: `tables` lies inside the allocation, suitably aligned, and never moves (the box
        // is returned pinned). On failure nothing was initialised and the box frees its memory.
        unsafe { pin_init::raw_try_init(core::ptr::addr_of_mut!((*ptr).tables), Tables::new())? };
        // SAFETY: As above; written once.
        unsafe { core::ptr::addr_of_mut!((*ptr).data).write(data) };
        // SAFETY: `ib` is zeroed bytes (a valid `Opaque`), the tables and the data are
        // initialised.
        Ok(KBox::into_pin(unsafe { storage.assume_init() }))
    }

    /// The device of [`Self::new_for_test`], as callbacks would see it.
    pub(super) fn test_device(&self) -> &Device<T> {
        // SAFETY: Not allocated by `UnregisteredDevice::new`, but laid out as its devices are,
        // with the tables and the data initialised for as long as `self` is borrowed; the tests
        // use only the tables and the device's address (no operations, nothing of the C core).
        unsafe { Device::from_raw(self.ib.get()) }
    }
}

/// The tables from device handles to live objects (see [`ObjectTable`]).
#[pin_data]
pub(super) struct Tables {
    #[pin]
    pub(super) cq: ObjectTable<bindings::ib_cq>,
    #[pin]
    pub(super) srq: ObjectTable<bindings::ib_srq>,
    #[pin]
    pub(super) qp: ObjectTable<bindings::ib_qp>,
}

impl Tables {
    // One lock class (and name) per table for every driver: see `HandleLocks::new`.
    #[inline(never)]
    fn new() -> impl PinInit<Self, Error> {
        let cq = ObjectTable::new(
            crate::c_str!("rdma::Tables::cq"),
            crate::static_lock_class!(),
        );
        let srq = ObjectTable::new(
            crate::c_str!("rdma::Tables::srq"),
            crate::static_lock_class!(),
        );
        let qp = ObjectTable::new(
            crate::c_str!("rdma::Tables::qp"),
            crate::static_lock_class!(),
        );
        try_pin_init!(Self {
            cq <- cq,
            srq <- srq,
            qp <- qp,
        }? Error)
    }
}

/// An RDMA device of driver `T`, as seen from the driver's callbacks.
///
/// Dereferences to the driver's data `T`.
///
/// # Invariants
///
/// The wrapped `struct ib_device` is the head of a `DeviceStorage<T>` whose `data` is
/// initialised, and `T`'s operations are installed on it. Values of this type only exist behind
/// references handed out while that holds (callbacks of a device, or an [`UnregisteredDevice`] or
/// [`Registration`] that owns it).
#[repr(transparent)]
pub struct Device<T: Operations>(Opaque<bindings::ib_device>, PhantomData<T>);

// SAFETY: The C part is protected by the RDMA core's own locking; the data is `Sync`.
unsafe impl<T: Operations> Sync for Device<T> {}
// SAFETY: As for `Sync`; `T: Send`.
unsafe impl<T: Operations> Send for Device<T> {}

impl<T: Operations> Device<T> {
    /// Borrows the device a callback was given.
    ///
    /// # Safety
    ///
    /// `ptr` must be a device allocated by [`UnregisteredDevice::<T>::new`], still allocated and
    /// with its data initialised for the lifetime `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `Device<T>` is a transparent wrapper; validity is guaranteed by the caller.
        unsafe { &*ptr.cast() }
    }

    /// The raw `struct ib_device` pointer.
    pub fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The device's object tables.
    pub(super) fn tables(&self) -> &Tables {
        // SAFETY: By the type invariant the device heads a `DeviceStorage<T>`, whose tables are
        // initialised before the data.
        unsafe { &(*self.as_raw().cast::<DeviceStorage<T>>()).tables }
    }

    /// Runs `f` on the live CQ the device knows as `handle`, if there is one.
    ///
    /// `f` runs holding a use of the CQ, taken under the table's lock, which it runs without: the
    /// CQ's destruction waits for `f` to return (so `f` must not destroy it, nor wait for what
    /// destroys it). `f` may call the CQ's consumer, as C drivers do once they let go of their
    /// table's lock. It runs in the caller's context (interrupts are not turned off for it), and
    /// may run on several CPUs at once for one CQ. Returns `None` if no CQ has that handle.
    pub fn with_cq<R>(&self, handle: u32, f: impl FnOnce(&Cq<T>) -> R) -> Option<R> {
        let users = |cq| {
            // SAFETY: The table holds live CQs of driver `T`, whose storage is initialised.
            core::ptr::from_ref(unsafe { Cq::<T>::from_raw(cq) }.users())
        };
        let run = |cq| {
            // SAFETY: By the table's invariant the CQ is live with initialised data while it is
            // in the table, and the use that `run` is called with keeps it so.
            f(unsafe { Cq::from_raw(cq) })
        };
        // SAFETY: `users` gives the uses of the table's CQs, part of the CQs' storage.
        unsafe { self.tables().cq.with(handle, users, run) }
    }

    /// Runs `f` on the live SRQ the device knows as `handle`, if there is one (see
    /// [`Device::with_cq`]).
    pub fn with_srq<R>(&self, handle: u32, f: impl FnOnce(&Srq<T>) -> R) -> Option<R> {
        let users = |srq| {
            // SAFETY: As in `with_cq`.
            core::ptr::from_ref(unsafe { Srq::<T>::from_raw(srq) }.users())
        };
        let run = |srq| {
            // SAFETY: As in `with_cq`.
            f(unsafe { Srq::from_raw(srq) })
        };
        // SAFETY: As in `with_cq`.
        unsafe { self.tables().srq.with(handle, users, run) }
    }

    /// Runs `f` on the live QP the device knows as `handle`, if there is one (see
    /// [`Device::with_cq`]).
    pub fn with_qp<R>(&self, handle: u32, f: impl FnOnce(&Qp<T>) -> R) -> Option<R> {
        let users = |qp| {
            // SAFETY: As in `with_cq`.
            core::ptr::from_ref(unsafe { Qp::<T>::from_raw(qp) }.users())
        };
        let run = |qp| {
            // SAFETY: As in `with_cq`.
            f(unsafe { Qp::from_raw(qp) })
        };
        // SAFETY: As in `with_cq`.
        unsafe { self.tables().qp.with(handle, users, run) }
    }

    /// Runs `f` on every live QP of the device, in no particular order, each as
    /// [`Device::with_qp`] would. A QP created or destroyed meanwhile may or may not be seen. For
    /// rare device-wide work (a device declared dead flushes its QPs' work), not for the data
    /// path: each step looks the next QP up in the table.
    pub fn for_each_qp(&self, mut f: impl FnMut(&Qp<T>)) {
        let users = |qp| {
            // SAFETY: As in `with_cq`.
            core::ptr::from_ref(unsafe { Qp::<T>::from_raw(qp) }.users())
        };
        let run = |qp| {
            // SAFETY: As in `with_cq`.
            f(unsafe { Qp::from_raw(qp) })
        };
        // SAFETY: As in `with_cq`.
        unsafe { self.tables().qp.for_each(users, run) }
    }

    /// Runs `f` on every live CQ of the device, in any order (see [`Device::for_each_qp`]).
    pub fn for_each_cq(&self, mut f: impl FnMut(&Cq<T>)) {
        let users = |cq| {
            // SAFETY: As in `with_cq`.
            core::ptr::from_ref(unsafe { Cq::<T>::from_raw(cq) }.users())
        };
        let run = |cq| {
            // SAFETY: As in `with_cq`.
            f(unsafe { Cq::from_raw(cq) })
        };
        // SAFETY: As in `with_cq`.
        unsafe { self.tables().cq.for_each(users, run) }
    }

    /// The bound device the RDMA device belongs to (its parent), for DMA allocations and
    /// logging.
    pub fn parent(&self) -> &device::Device<Bound> {
        // SAFETY: `UnregisteredDevice::new` set the parent to a bound device. A `&Device<T>` only
        // exists while an `UnregisteredDevice<'a, T>` borrowing the bound parent for `'a` owns the
        // device, or while the device is registered: in its callbacks (none runs once
        // `ib_unregister_device()` returned) and through an attached `DeviceHandle` (detached
        // after that). `Registration` lends none. The device is unregistered at the latest when
        // the driver core announces the parent's unbinding (`BUS_NOTIFY_UNBIND_DRIVER`, or
        // `BUS_NOTIFY_DRIVER_NOT_BOUND` after a failed probe, through the registration's bus
        // notifier), before it calls the driver's `remove` and releases the parent's devres:
        // until then the parent is bound, its driver set, and every devres resource of it in
        // place, for as long as the reference.
        unsafe { device::Device::from_raw((*self.as_raw()).__bindgen_anon_1.dev.parent) }
    }

    /// A copy of the device's name, e.g. `vmw_pvrdma0` (empty before registration), for
    /// messages.
    ///
    /// A copy, not a borrow: the core renames a device (`rdma dev set ... name`) by writing the
    /// new name over the old one under a lock of its own, which drivers cannot take, so a name
    /// read while that happens may be a mix of both (as C's readers of `ib_device::name` see it).
    pub fn name(&self) -> DeviceName {
        // SAFETY: The device is valid (type invariant).
        unsafe { DeviceName::read(self.as_raw()) }
    }
}

/// The size of an RDMA device's name, its NUL included (C's `IB_DEVICE_NAME_MAX`).
const DEVICE_NAME_MAX: usize = bindings::IB_DEVICE_NAME_MAX as usize;

/// A copy of an RDMA device's name (see [`Device::name`]).
///
/// # Invariants
///
/// The last byte is NUL.
#[derive(Clone, Copy)]
pub struct DeviceName([u8; DEVICE_NAME_MAX]);

impl DeviceName {
    /// Reads the name of `dev`.
    ///
    /// # Safety
    ///
    /// `dev` must be a valid, allocated `struct ib_device`.
    unsafe fn read(dev: *mut bindings::ib_device) -> Self {
        // (The type says the C array has `DEVICE_NAME_MAX` bytes.)
        let mut name: [u8; DEVICE_NAME_MAX] =
            // SAFETY: `dev` is valid (guaranteed by the caller): its `name` array may be read,
            // with a volatile read, as a rename may write it meanwhile; any bytes are valid `u8`s.
            unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*dev).name)) };
        // INVARIANT: A NUL at the end, whatever was read.
        name[DEVICE_NAME_MAX - 1] = 0;
        Self(name)
    }

    /// The name, up to its first NUL.
    pub fn as_c_str(&self) -> &CStr {
        // The type invariant puts a NUL in the array, so there is always one to find.
        CStr::from_bytes_until_nul(&self.0).unwrap_or(c"")
    }
}

impl crate::fmt::Display for DeviceName {
    fn fmt(&self, f: &mut crate::fmt::Formatter<'_>) -> crate::fmt::Result {
        crate::fmt::Display::fmt(self.as_c_str(), f)
    }
}

impl<T: Operations> core::ops::Deref for Device<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: By the type invariant the device heads a `DeviceStorage<T>` whose `data` is
        // initialised; it stays so while `self` is borrowed.
        unsafe { &(*self.as_raw().cast::<DeviceStorage<T>>()).data }
    }
}

/// An allocated RDMA device that is not registered yet.
///
/// Dropping it drops the data and frees the device.
///
/// # Invariants
///
/// `ptr` is a device allocated by `_ib_alloc_device` with room for `DeviceStorage<T>`, its data
/// is initialised, `T`'s operations are installed, and it is not registered.
pub struct UnregisteredDevice<'a, T: Operations> {
    ptr: NonNull<DeviceStorage<T>>,
    /// The parent, bound while `'a` lasts.
    parent: &'a device::Device<Bound>,
}

// SAFETY: The device can be configured, registered and freed from any thread.
unsafe impl<T: Operations> Send for UnregisteredDevice<'_, T> {}

impl<'a, T: Operations> UnregisteredDevice<'a, T> {
    /// Allocates a device with `ports` physical ports (numbered from 1) whose parent is
    /// `parent`, and initialises its data with `init`.
    ///
    /// The module that implements `T` (`T::OwnerModule`, which `#[vtable]` sets) owns the
    /// operations: while user space has the device open, it cannot be unloaded.
    ///
    /// The port count is fixed here, before anything can size the core's per-port data by it
    /// (`set_netdev` allocates that data for the ports the device has then, and registration
    /// sets up each port the device has at that time, in the same array).
    pub fn new(
        parent: &'a device::Device<Bound>,
        ports: u32,
        init: impl PinInit<T, Error>,
    ) -> Result<Self> {
        const {
            assert!(
                core::mem::offset_of!(DeviceStorage<T>, ib) == 0,
                "the ib_device must come first"
            )
        };
        // The core warns of a device without ports at registration, and numbers ports in `u8`s
        // in places (MADs, the CM).
        if ports == 0 || ports > u32::from(u8::MAX) {
            return Err(EINVAL);
        }
        // SAFETY: The size covers a whole `struct ib_device`; the result is NULL or a zeroed,
        // initialised device of that size.
        let raw = unsafe {
            bindings::_ib_alloc_device(size_of::<DeviceStorage<T>>(), &raw mut bindings::init_net)
        };
        let ptr = NonNull::new(raw.cast::<DeviceStorage<T>>()).ok_or(ENOMEM)?;
        if ptr.as_ptr() as usize % core::mem::align_of::<DeviceStorage<T>>() != 0 {
            // SAFETY: Allocated just above; nothing else knows it.
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(EINVAL);
        }
        // SAFETY: `tables` and `data` lie inside the allocation, are suitably aligned (checked
        // above) and pinned (the allocation never moves). On failure what was not initialised is
        // not dropped, the tables are dropped if they were initialised, and the device is freed.
        let (tables, data) = unsafe {
            (
                core::ptr::addr_of_mut!((*ptr.as_ptr()).tables),
                core::ptr::addr_of_mut!((*ptr.as_ptr()).data),
            )
        };
        // SAFETY: See above.
        if let Err(e) = unsafe { pin_init::raw_try_init(tables, Tables::new()) } {
            // SAFETY: The device was allocated just above and nothing else knows it.
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(e);
        }
        // SAFETY: See above.
        if let Err(e) = unsafe { pin_init::raw_try_init(data, init) } {
            // SAFETY: The tables were initialised above; the device was allocated just above and
            // nothing else knows it.
            unsafe {
                core::ptr::drop_in_place(tables);
                bindings::ib_dealloc_device(raw);
            }
            return Err(e);
        }
        let ops = build_ops::<T>();
        // SAFETY: `raw` is a valid, unregistered device; `ib_set_device_ops` copies the table.
        // Setting the parent before registration is what C drivers do too, and so is the port
        // count, which no port data depends on yet.
        unsafe {
            bindings::ib_set_device_ops(raw, &ops);
            (*raw).__bindgen_anon_1.dev.parent = parent.as_raw();
            (*raw).phys_port_cnt = ports;
        }
        // INVARIANT: Allocated with room for `DeviceStorage<T>`, data initialised, operations
        // installed, not registered.
        Ok(Self { ptr, parent })
    }

    fn raw(&self) -> *mut bindings::ib_device {
        self.ptr.as_ptr().cast()
    }

    /// The device, as callbacks will see it.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: By the type invariant the device is allocated with its data initialised for as
        // long as `self` lives.
        unsafe { Device::from_raw(self.raw()) }
    }

    /// Sets the node GUID (already in network byte order, as devices report it).
    pub fn set_node_guid(&mut self, guid_be: u64) {
        // SAFETY: The device is valid and not registered, so nobody else reads the field yet.
        unsafe { (*self.raw()).node_guid = guid_be };
    }

    /// Sets the number of completion vectors.
    pub fn set_num_comp_vectors(&mut self, count: u32) {
        // SAFETY: As in `set_node_guid`.
        unsafe { (*self.raw()).num_comp_vectors = count.min(i32::MAX as u32) as i32 };
    }

    /// Marks the device a channel adapter (C's `RDMA_NODE_IB_CA`).
    pub fn set_node_type_ca(&mut self) {
        // SAFETY: As in `set_node_guid`.
        unsafe { (*self.raw()).node_type = bindings::RDMA_NODE_IB_CA as u8 };
    }

    /// Associates `port` with the network device `ndev` (RoCE), before registration.
    ///
    /// The core keeps its own reference to `ndev` until it is replaced or the device is freed.
    pub fn set_netdev(&mut self, port: u32, ndev: &net::device::Device) -> Result {
        // SAFETY: Both devices are valid; the core takes its own reference.
        to_result(unsafe { bindings::ib_device_set_netdev(self.raw(), ndev.as_raw(), port) })
    }

    /// Registers the device under `name` (a name, or a pattern with one `%d` where the core puts
    /// the first free number, such as `"foo%d"`), doing DMA through its parent. Any other `%` is
    /// refused with `EINVAL`: the core runs the pattern through `sscanf()` and `snprintf()` with
    /// one `int`.
    ///
    /// On success the returned [`Registration`] owns the device. It lives in a [`Devres`] of the
    /// parent: dropping the handle unregisters the device, and so does the start of the parent's
    /// unbinding, at the latest, before the parent's driver is removed and its devres released
    /// (see [`Registration`]). If `handle` is given, it is attached once registration completed
    /// and detached once unregistration did.
    ///
    /// The core takes the RTNL lock to add the GIDs of a RoCE port's network devices, hence the
    /// witness that the caller does not hold it ([`RtnlUnlocked`]).
    ///
    /// [`RtnlUnlocked`]: crate::net::device::RtnlUnlocked
    pub fn register(
        self,
        name: &'static CStr,
        handle: Option<Arc<DeviceHandle<T>>>,
        _rtnl: &net::device::RtnlUnlocked<'_>,
    ) -> Result<Devres<Registration<T>>> {
        if !is_name_pattern(name) {
            return Err(EINVAL);
        }
        let unbind = self.parent_unbind(handle)?;
        // SAFETY: The device is valid, initialised and not registered; the parent, which does
        // the DMA, is bound, and the registration is undone before it is unbound (see above). The
        // name is a pattern the core's `%d` formatting takes.
        let registered = to_result(unsafe {
            bindings::ib_register_device(self.raw(), name.as_char_ptr(), self.parent.as_raw())
        });
        if let Err(e) = registered {
            // A registration that failed after the core enabled the device may have had
            // `report_port_event` called, with a `&RegisteredDevice<T>`, until the core undid it:
            // the events it queued must have run before `self`'s drop frees the device (the
            // type invariant of `RegisteredDevice`).
            // SAFETY: `ib_wq` is the core's event queue, allocated while the core is loaded,
            // which it is while one of its devices exists.
            unsafe { bindings::__flush_workqueue(bindings::ib_wq) };
            return Err(e);
        }
        // SAFETY: Registered just above.
        unsafe { self.into_registration(unbind) }
    }

    /// What will unregister the device when the parent's unbinding starts, detaching `handle`.
    fn parent_unbind(
        &self,
        handle: Option<Arc<DeviceHandle<T>>>,
    ) -> Result<Pin<KBox<ParentUnbind<T>>>> {
        let dev = NonNull::new(self.raw()).ok_or(EINVAL)?;
        // SAFETY: The parent is a valid, bound device.
        let bus = unsafe { (*self.parent.as_raw()).bus };
        // INVARIANT: `dev` was allocated by `UnregisteredDevice::new`, which set its parent, and
        // is freed only by the `Registration` that keeps the box, or by `self`, which has not
        // handed it over; a bound device's bus is registered; the callback is `notify`.
        KBox::pin_init(
            pin_init!(ParentUnbind {
                nb <- Opaque::ffi_init(|nb: *mut bindings::notifier_block| {
                    // SAFETY: `nb` is valid for writes; all-zeroes is a valid notifier block.
                    unsafe {
                        nb.write(core::mem::zeroed());
                        (*nb).notifier_call = Some(ParentUnbind::<T>::notify);
                    }
                }),
                dev,
                bus,
                handle,
            }),
            GFP_KERNEL,
        )
    }

    /// Hands the device over to a [`Registration`] in the parent's devres: attaches the handle
    /// and listens for the parent's unbinding.
    ///
    /// # Safety
    ///
    /// The device must be registered, and `unbind` made by [`Self::parent_unbind`] of `self`.
    unsafe fn into_registration(
        self,
        unbind: Pin<KBox<ParentUnbind<T>>>,
    ) -> Result<Devres<Registration<T>>> {
        let parent = self.parent;
        let ptr = self.ptr;
        core::mem::forget(self);
        if let Some(h) = &unbind.handle {
            h.set(Some(DevPtr(unbind.dev)));
        }
        // SAFETY: `nb` is initialised, with `notify` as its callback, and pinned in a box that
        // the registration keeps until its drop unregisters it; `bus` is registered (type
        // invariant of `ParentUnbind`).
        let listening =
            to_result(unsafe { bindings::bus_register_notifier(unbind.bus, unbind.nb.get()) });
        // The parent's unbinding may have been announced before the block was on the chain (a
        // registration from the driver's `remove`, or one racing with an unbinding outside the
        // parent's device lock). The driver core marks the device unbinding
        // (`device_links_busy()`) before it announces it under the chain's lock, which adding the
        // block took after it: the mark is seen here.
        // SAFETY: `parent` is valid; `links.status` is an `enum dl_dev_state` that the driver
        // core writes under its own lock, read once here with a volatile read.
        let status =
            unsafe { core::ptr::read_volatile(&raw const (*parent.as_raw()).links.status) };
        // INVARIANT: The device is registered (guaranteed by the caller) and `unbind.nb` is on
        // the bus's chain. (Adding a new block to a registered bus's chain cannot fail; if it
        // did, the drop below would find the block missing from the chain, which unregistering
        // tolerates.)
        let reg = Registration { ptr, unbind };
        // On failure these drop `reg`, which unregisters the device.
        listening?;
        if status == bindings::dl_dev_state_DL_DEV_UNBINDING {
            return Err(ENODEV);
        }
        Devres::new(parent, reg)
    }

    /// A registration of a device the core never registered, for KUnit tests of what happens
    /// at the parent's unbinding: the core does nothing when asked to unregister it.
    ///
    /// # Safety
    ///
    /// `handle` must be used for nothing but [`DeviceHandle::is_attached`]: what it attaches to
    /// is not registered (its port data and GID tables are not set up).
    #[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
    unsafe fn register_for_test(
        self,
        handle: Arc<DeviceHandle<T>>,
    ) -> Result<Devres<Registration<T>>> {
        let unbind = self.parent_unbind(Some(handle))?;
        // SAFETY: Not registered, which `Registration` needs only for the handle's users (the
        // caller uses the handle for nothing else) and for unregistration, which does nothing
        // for a device the core does not have.
        unsafe { self.into_registration(unbind) }
    }
}

/// Whether `name` is a device name the core takes as its pattern: no `%`, or one `%d`.
fn is_name_pattern(name: &CStr) -> bool {
    let bytes = name.to_bytes();
    let mut conversions = bytes.iter().enumerate().filter(|(_, b)| **b == b'%');
    match (conversions.next(), conversions.next()) {
        (None, _) => true,
        (Some((i, _)), None) => bytes.get(i + 1) == Some(&b'd'),
        _ => false,
    }
}

impl<T: Operations> Drop for UnregisteredDevice<'_, T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the data is initialised and the device is not
        // registered, so no callback can run: the data is dropped once, then the device freed.
        unsafe {
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*self.ptr.as_ptr()).data));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*self.ptr.as_ptr()).tables));
            bindings::ib_dealloc_device(self.raw());
        }
    }
}

/// A registered RDMA device of driver `T`.
///
/// Dropping it unregisters the device (after which the core calls no more callbacks: user
/// contexts and their objects are destroyed through the driver's `dealloc_*` callbacks first),
/// detaches the [`DeviceHandle`], drops the driver's data, and frees the device.
///
/// The device is unregistered earlier, and the handle detached, when the parent's driver is
/// about to be unbound (or its probe failed): callbacks get the parent as a bound device
/// ([`Device::parent`]), and every devres resource of the parent must be there for them, however
/// the driver keeps the registration. Kept in the driver's bus data, the registration is dropped
/// before the parent's devres is released, but moved elsewhere (into the parent's devres, for
/// instance) it would be dropped in the middle of that release, after the resources registered
/// after it. So the registration also listens to the parent's bus for the parent's unbinding,
/// which the driver core announces before it calls the driver's `remove` and releases anything
/// (`BUS_NOTIFY_UNBIND_DRIVER`, and `BUS_NOTIFY_DRIVER_NOT_BOUND` when a probe fails). A device
/// registered after that announcement (from `remove`) is refused. The unregistration then runs
/// under the bus's notifier lock, held for reading: the core's clients, removed then, must not
/// register or unregister notifiers on the parent's bus.
///
/// # Invariants
///
/// `ptr` is a device as described for [`UnregisteredDevice`], registered or unregistered by
/// `unbind` but not freed, with `unbind.dev` pointing to it. `unbind.nb` is registered on the
/// parent's bus, with `ParentUnbind::<T>::notify` as its callback, until `drop`.
pub struct Registration<T: Operations> {
    ptr: NonNull<DeviceStorage<T>>,
    unbind: Pin<KBox<ParentUnbind<T>>>,
}

/// What unregisters a device when its parent's driver is unbound: a notifier block on the
/// parent's bus, and what unregistration detaches.
///
/// # Invariants
///
/// `dev` is a device allocated by [`UnregisteredDevice::<T>::new`] and not freed, whose parent
/// is set and on `bus`, a registered bus; `nb`'s callback is `Self::notify`.
#[pin_data]
struct ParentUnbind<T: Operations> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    dev: NonNull<bindings::ib_device>,
    /// The parent's bus, whose chain `nb` goes on.
    bus: *const bindings::bus_type,
    handle: Option<Arc<DeviceHandle<T>>>,
}

impl<T: Operations> ParentUnbind<T> {
    /// The device's parent.
    fn parent(&self) -> *mut bindings::device {
        // SAFETY: By the type invariant `dev` is allocated, with its parent set.
        unsafe { (*self.dev.as_ptr()).__bindgen_anon_1.dev.parent }
    }

    /// Unregisters the device, then detaches the handle and waits for the port events queued
    /// until then. Once done, doing it again does nothing: the core does nothing for a device it
    /// unregistered (a second caller waits for the first behind the core's unregistration lock).
    fn unregister(&self) {
        // SAFETY: By the type invariant `dev` is allocated; registered, or unregistered already.
        unsafe { bindings::ib_unregister_device(self.dev.as_ptr()) };
        // The handle is detached only now: while the device is being unregistered, the core's
        // clients (a kernel ULP draining its QPs) still wait for the completions and events the
        // handle's users deliver. C drivers keep delivering them until unregistration returns.
        if let Some(h) = &self.handle {
            h.set(None);
        }
        // Port events dispatched until now (through the handle, after the core's own flush of
        // its event queue during unregistration) are work items holding the device's pointer:
        // they must have run before the device goes.
        // SAFETY: `ib_wq` is the core's event queue, allocated while the core is loaded, which
        // it is while one of its devices exists.
        unsafe { bindings::__flush_workqueue(bindings::ib_wq) };
    }

    /// The C callback of the parent's bus notifier.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn notify(
        nb: *mut bindings::notifier_block,
        action: crate::ffi::c_ulong,
        data: *mut crate::ffi::c_void,
    ) -> crate::ffi::c_int {
        // SAFETY: `nb` is the `nb` field of a `ParentUnbind<T>` that a `Registration<T>` keeps
        // registered until its drop unregisters it, which waits for running callbacks.
        let this = unsafe { &*crate::container_of!(Opaque::cast_from(nb), Self, nb) };
        // The bus passes its `enum bus_notifier_event` as an unsigned long.
        let unbinding = action == bindings::bus_notifier_event_BUS_NOTIFY_UNBIND_DRIVER as usize
            || action == bindings::bus_notifier_event_BUS_NOTIFY_DRIVER_NOT_BOUND as usize;
        // Bus notifiers are passed the device the event is about.
        if unbinding && data.cast() == this.parent() {
            this.unregister();
        }
        bindings::NOTIFY_DONE as crate::ffi::c_int
    }
}

// SAFETY: The registration can be dropped from any thread.
unsafe impl<T: Operations> Send for Registration<T> {}
// SAFETY: `&Registration` only gives the device's name, a copy.
unsafe impl<T: Operations> Sync for Registration<T> {}

impl<T: Operations> Registration<T> {
    fn raw(&self) -> *mut bindings::ib_device {
        self.ptr.as_ptr().cast()
    }

    /// A copy of the device's name (see [`Device::name`]).
    ///
    /// The registration lends no [`Device`]: it outlives the start of the parent's unbinding,
    /// after which nothing may see the parent as bound ([`Device::parent`]). Code outside the
    /// device's callbacks reaches the device through a [`DeviceHandle`], which is detached by
    /// then.
    pub fn name(&self) -> DeviceName {
        // SAFETY: By the type invariant the device is allocated while `self` lives.
        unsafe { DeviceName::read(self.raw()) }
    }
}

impl<T: Operations> Drop for Registration<T> {
    fn drop(&mut self) {
        // First, so that the parent's unbinding no longer reaches the device about to be freed.
        // SAFETY: By the type invariants `nb` is registered on `bus`, the parent's, which stays
        // registered while a device on it is bound, as the parent is until the registration is
        // dropped. `bus_unregister_notifier()` waits for a callback in flight.
        unsafe { bindings::bus_unregister_notifier(self.unbind.bus, self.unbind.nb.get()) };
        // Does nothing if the parent's unbinding did it.
        self.unbind.unregister();
        // SAFETY: After unregistration no callback runs any more, the handle is detached and the
        // events queued are done, so nothing reaches the data: it can be dropped, then the
        // device freed.
        unsafe {
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*self.ptr.as_ptr()).data));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*self.ptr.as_ptr()).tables));
            bindings::ib_dealloc_device(self.raw());
        }
    }
}

/// A handle to a registered RDMA device for code that runs outside the device's callbacks.
///
/// Created empty, it is attached by [`UnregisteredDevice::register`] and detached once the device
/// is unregistered (events and completions reach the core's clients while they are being
/// removed), when the parent's unbinding starts or the [`Registration`] is dropped. Operations on
/// a detached handle do nothing.
///
/// Two kinds of users reach the device through it: [`DeviceHandle::with_device`] and
/// [`DeviceHandle::dispatch_port_event`] in any context, hard interrupt handlers included (a CQ's
/// completion handler and the core's event dispatch may be called there), holding an IRQ-safe
/// spinlock; [`DeviceHandle::set_netdev`], which may sleep, holding a mutex. Detaching takes
/// both, so it waits for every user.
///
/// # Invariants
///
/// When `locks.dev` is `Some`, it points to a device allocated by
/// [`UnregisteredDevice::<T>::new`] that is registered or being unregistered, whose data is
/// initialised and stays so while `locks.dev`'s lock or `locks.users` is held: it is set and
/// cleared only with both held, and the device's data is dropped only after it is cleared.
///
/// # Examples
///
/// ```
/// use kernel::{prelude::*, rdma::{DeviceHandle, DriverId, Operations, PortEvent, TableIndex}};
///
/// // A driver with no callbacks.
/// struct NoDriver;
/// struct Tabled;
/// impl TableIndex for Tabled {
///     fn table_index(&self) -> u32 {
///         0
///     }
/// }
/// #[vtable]
/// impl Operations for NoDriver {
///     const DRIVER_ID: DriverId = DriverId::UNKNOWN;
///     const UVERBS_ABI_VERSION: u32 = 0;
///     type UserContext = ();
///     type Pd = ();
///     type Cq = Tabled;
///     type Qp = Tabled;
///     type Srq = Tabled;
///     type Ah = ();
///     type Mr = ();
/// }
///
/// let handle = DeviceHandle::<NoDriver>::new()?;
/// // Not attached to a registered device (yet, or any more): nothing reaches the RDMA core.
/// assert!(!handle.is_attached());
/// assert_eq!(handle.dispatch_port_event(1, PortEvent::Active), Err(ENODEV));
/// assert_eq!(handle.set_netdev(1, None), Err(ENODEV));
/// assert_eq!(handle.with_device(|_| ()), None);
/// # Ok::<(), Error>(())
/// ```
#[pin_data]
pub struct DeviceHandle<T: Operations> {
    #[pin]
    locks: HandleLocks,
    _driver: PhantomData<T>,
}

/// The locks of a [`DeviceHandle`], apart from its generic part: their lock classes are statics
/// of one non-generic function, so every driver's handles share one class (and one name), as
/// lockdep requires of a key.
#[pin_data]
struct HandleLocks {
    /// Held by the users that may sleep, and to attach and detach.
    #[pin]
    users: Mutex<()>,
    /// The device; its lock is held by the users that may not sleep.
    #[pin]
    dev: SpinLockIrq<Option<DevPtr>>,
}

impl HandleLocks {
    // The names and keys are taken here, in this crate's code: `pin_init!` evaluates field
    // initialisers inside its closure, which the calling module may compile into its own code,
    // with its own copy of a name literal (lockdep requires one name per key).
    #[inline(never)]
    fn new() -> impl PinInit<Self> {
        let users = new_mutex!((), "rdma::DeviceHandle::users");
        let dev = new_spinlock_irq!(None, "rdma::DeviceHandle::dev");
        pin_init!(Self {
            users <- users,
            dev <- dev,
        })
    }
}

/// A device pointer that may be sent between threads (the `struct ib_device` is thread safe).
#[derive(Clone, Copy)]
struct DevPtr(NonNull<bindings::ib_device>);

// SAFETY: `struct ib_device` may be used from any thread.
unsafe impl Send for DevPtr {}

impl<T: Operations> DeviceHandle<T> {
    /// Creates a detached handle.
    pub fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                locks <- HandleLocks::new(),
                _driver: PhantomData,
            }),
            GFP_KERNEL,
        )
    }

    fn set(&self, dev: Option<DevPtr>) {
        let _users = self.locks.users.lock();
        *self.locks.dev.lock() = dev;
    }

    /// Runs `f` on the registered device, if it is registered.
    ///
    /// Callable in any context, hard interrupt handlers included: `f` runs with a spinlock held
    /// and interrupts off, so it must not sleep. The device stays allocated with its data
    /// initialised while `f` runs; it may be in the middle of unregistration.
    pub fn with_device<R>(&self, f: impl FnOnce(&RegisteredDevice<T>) -> R) -> Option<R> {
        let guard = self.locks.dev.lock();
        let dev = guard.as_ref()?;
        // SAFETY: By the type invariant the device was allocated by `UnregisteredDevice::<T>::new`,
        // registered, and lives with its data initialised while the lock is held, which it is
        // while `f` runs; the handle is detached before `ib_wq` is flushed and the device
        // freed.
        Some(f(unsafe { RegisteredDevice::from_raw(dev.0.as_ptr()) }))
    }

    /// Whether the device is registered.
    pub fn is_attached(&self) -> bool {
        self.locks.dev.lock().is_some()
    }

    /// Reports `event` on `port` to the RDMA core's clients, in any context (the core queues it;
    /// see [`RegisteredDevice::dispatch_port_event`]). `ENODEV` if the handle is detached.
    pub fn dispatch_port_event(&self, port: u32, event: PortEvent) -> Result {
        self.with_device(|dev| dev.dispatch_port_event(port, event))
            .unwrap_or(Err(ENODEV))
    }

    /// Associates `port` with the network device `ndev`, or with none. May sleep.
    pub fn set_netdev(&self, port: u32, ndev: Option<&net::device::Device>) -> Result {
        let _users = self.locks.users.lock();
        let dev = (*self.locks.dev.lock()).ok_or(ENODEV)?;
        let ndev = ndev.map_or(core::ptr::null_mut(), |n| n.as_raw());
        // SAFETY: By the type invariant the device lives while `users` is held (registered or
        // being unregistered, when the core still accepts netdev changes); `ndev` is NULL or
        // valid, and the core takes its own reference.
        to_result(unsafe { bindings::ib_device_set_netdev(dev.0.as_ptr(), ndev, port) })
    }
}

/// An RDMA device of driver `T` that the RDMA core has registered: the only kind of device that
/// port events can be reported on ([`RegisteredDevice::dispatch_port_event`]).
///
/// Dereferences to [`Device`]. Given by [`DeviceHandle::with_device`] and
/// [`Operations::report_port_event`]; an [`UnregisteredDevice`], and callbacks that the core may
/// call during registration, only have a [`Device`].
///
/// # Invariants
///
/// The wrapped device is a [`Device<T>`] that the core registered: `ib_register_device()` set up
/// its port data and GID tables for every port (`ib_cache_setup_one()`) and got past it, and
/// they stay until the device is freed. The device is freed only after the core's event queue
/// (`ib_wq`) has been flushed since the last `&RegisteredDevice<T>` of it went away: by
/// [`Registration`]'s drop, or after a failed registration by [`UnregisteredDevice::register`].
#[repr(transparent)]
pub struct RegisteredDevice<T: Operations>(Device<T>);

impl<T: Operations> RegisteredDevice<T> {
    /// Borrows a registered device.
    ///
    /// # Safety
    ///
    /// `ptr` must be a device allocated by [`UnregisteredDevice::<T>::new`] that satisfies the
    /// type invariant for the lifetime `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `RegisteredDevice<T>` is a transparent wrapper of `Device<T>`, itself one of
        // the C device; validity is guaranteed by the caller.
        unsafe { &*ptr.cast() }
    }

    /// Reports `event` on `port` to the RDMA core's clients, in any context (the core queues
    /// it).
    ///
    /// Refused with `EINVAL` when `port` is not one of the device's ports (the core's clients
    /// index per-port arrays by it), or when `event` is about InfiniBand's subnet management
    /// (a LID, the subnet manager, re-registration with it) and the port is not an InfiniBand
    /// one.
    pub fn dispatch_port_event(&self, port: u32, event: PortEvent) -> Result {
        // SAFETY: By the type invariant the device is registered: its port data is set up.
        let ev = unsafe { port_event(self.as_raw(), port, event) }?;
        // `ib_dispatch_event` copies the event, allocates atomically and defers the clients'
        // handlers to a work item on `ib_wq`, which keeps the device's pointer without a
        // reference: by the type invariant the device is freed only after that queue is flushed.
        // The work item reads the port's data and GID table, which registration set up, and
        // passes the port, which is in the device's range, to the clients.
        // SAFETY: `self` is a valid, registered `ib_device` and `ev` a valid event.
        unsafe { bindings::ib_dispatch_event(&ev) };
        Ok(())
    }
}

impl<T: Operations> core::ops::Deref for RegisteredDevice<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        &self.0
    }
}

/// The event `event` on `port` of `dev`, for `ib_dispatch_event()`, if the port is one of the
/// device's and the event makes sense for its protocol (see
/// [`RegisteredDevice::dispatch_port_event`]); `EINVAL` otherwise.
///
/// # Safety
///
/// `dev` must be a valid device whose port data is set up for every port of its range (as
/// registration does).
unsafe fn port_event(
    dev: *mut bindings::ib_device,
    port: u32,
    event: PortEvent,
) -> Result<bindings::ib_event> {
    // Every event carries a port: the core's clients read it whatever the event (the multicast
    // client looks the port's capabilities up before it looks at the event), so a device-wide
    // event must name a port of the device too.
    // SAFETY: `dev` is valid (safety requirement); the function reads its port count.
    if !unsafe { bindings::rdma_is_port_valid(dev, port) } {
        return Err(EINVAL);
    }
    // SAFETY: `port` is in the device's range (checked above), whose port data is set up
    // (safety requirement).
    if event.is_ib_only() && !unsafe { bindings::rdma_protocol_ib(dev, port) } {
        return Err(EINVAL);
    }
    // SAFETY: All-zeroes is a valid `ib_event`.
    let mut ev: bindings::ib_event = unsafe { core::mem::zeroed() };
    ev.device = dev;
    ev.element.port_num = port;
    ev.event = event.as_raw();
    Ok(ev)
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_device_name)]
mod tests {
    use super::*;

    /// Names and patterns with one `%d` are taken; any other conversion is refused.
    #[test]
    fn name_patterns() {
        for name in [c"pvrdma", c"pvrdma%d", c"%d", c"x%dy"] {
            assert!(is_name_pattern(name));
        }
        for name in [c"x%s", c"x%lu", c"x%d%d", c"x%", c"x%%d", c"%n"] {
            assert!(!is_name_pattern(name));
        }
    }
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_port_event)]
mod port_event_tests {
    use super::*;
    use crate::alloc::flags::__GFP_ZERO;

    /// The ports of a fake device: `port_data` is indexed by port number, 0 unused.
    type PortData = [bindings::ib_port_data; 2];

    /// A zeroed fake device with one port (1) of capabilities `caps`, and the port data it
    /// points to, which must outlive its use.
    fn one_port_device(caps: u32) -> Result<(KBox<bindings::ib_device>, KBox<PortData>)> {
        // SAFETY: All-zeroes is a valid `ib_device` and valid `ib_port_data` (integers, null
        // pointers, `None` callbacks): the memory is zeroed.
        let (mut dev, mut ports) = unsafe {
            (
                KBox::<bindings::ib_device>::new_uninit(GFP_KERNEL | __GFP_ZERO)?.assume_init(),
                KBox::<PortData>::new_uninit(GFP_KERNEL | __GFP_ZERO)?.assume_init(),
            )
        };
        dev.phys_port_cnt = 1;
        ports[1].immutable.core_cap_flags = caps;
        dev.port_data = ports.as_mut_ptr();
        Ok((dev, ports))
    }

    /// An event names a port of the device, whatever the event: the core's clients index
    /// per-port arrays by it (before the check, port 2 of a one-port device reached them).
    #[test]
    fn port_out_of_range_refused() -> Result {
        let (mut dev, _ports) = one_port_device(crate::rdma::core_cap::IBA_ROCE)?;
        let raw: *mut bindings::ib_device = &mut *dev;
        for event in [PortEvent::Active, PortEvent::Error, PortEvent::DeviceFatal] {
            for port in [0, 2, u32::MAX] {
                // SAFETY: `raw`'s port data covers its one port, 1.
                let refused = unsafe { port_event(raw, port, event) }.err();
                assert_eq!(refused, Some(EINVAL));
            }
            // SAFETY: As above.
            let ev = unsafe { port_event(raw, 1, event) }?;
            // SAFETY: `port_num` is the union member `port_event` set.
            let port_num = unsafe { ev.element.port_num };
            assert_eq!(port_num, 1);
            assert_eq!(ev.event, event.as_raw());
            assert!(core::ptr::eq(ev.device, raw));
        }
        // Through the registered device's method: refused before anything reaches the core
        // (which would run the event's work on this fake device).
        // SAFETY: The fake device is not a registered device of `NoDriver` (no data, no event
        // queue to flush), but the reference is used only for events `port_event` refuses,
        // which read the device's port count and nothing else; it outlives the reference.
        let registered = unsafe { RegisteredDevice::<NoDriver>::from_raw(raw) };
        assert_eq!(
            registered.dispatch_port_event(2, PortEvent::SmChange),
            Err(EINVAL)
        );
        assert_eq!(
            registered.dispatch_port_event(0, PortEvent::DeviceFatal),
            Err(EINVAL)
        );
        Ok(())
    }

    /// Subnet management events are refused on a RoCE port and taken on an InfiniBand one.
    #[test]
    fn subnet_events_need_infiniband() -> Result {
        let (mut roce, _roce_ports) = one_port_device(crate::rdma::core_cap::IBA_ROCE)?;
        let (mut ib, _ib_ports) = one_port_device(bindings::RDMA_CORE_CAP_PROT_IB)?;
        let (roce, ib): (*mut bindings::ib_device, *mut bindings::ib_device) =
            (&mut *roce, &mut *ib);
        for event in [
            PortEvent::LidChange,
            PortEvent::SmChange,
            PortEvent::ClientReregister,
        ] {
            // SAFETY: Both devices' port data cover their one port, 1.
            let (on_roce, on_ib) =
                unsafe { (port_event(roce, 1, event), port_event(ib, 1, event)) };
            assert_eq!(on_roce.err(), Some(EINVAL));
            assert!(on_ib.is_ok());
        }
        for event in [
            PortEvent::GidChange,
            PortEvent::PkeyChange,
            PortEvent::Active,
        ] {
            // SAFETY: As above.
            let (on_roce, on_ib) =
                unsafe { (port_event(roce, 1, event), port_event(ib, 1, event)) };
            assert!(on_roce.is_ok());
            assert!(on_ib.is_ok());
        }
        Ok(())
    }

    /// A driver with no callbacks, for the type of the fake device.
    struct NoDriver;
    struct Tabled;
    impl crate::rdma::TableIndex for Tabled {
        fn table_index(&self) -> u32 {
            0
        }
    }
    #[vtable]
    impl Operations for NoDriver {
        const DRIVER_ID: crate::rdma::DriverId = crate::rdma::DriverId::UNKNOWN;
        const UVERBS_ABI_VERSION: u32 = 0;
        type UserContext = ();
        type Pd = ();
        type Cq = Tabled;
        type Qp = Tabled;
        type Srq = Tabled;
        type Ah = ();
        type Mr = ();
    }
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_registration)]
mod registration_tests {
    use super::*;
    use crate::{
        devres, faux,
        rdma::{DriverId, TableIndex},
    };
    use core::sync::atomic::{AtomicU8, Ordering};

    /// A driver with no callbacks, for the type of the test's device.
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

    /// What the release of [`Later`] saw: 0 nothing yet, 1 a detached handle, 2 an attached one.
    static SEEN: AtomicU8 = AtomicU8::new(0);

    /// A resource of the parent registered after the registration, so released before it by the
    /// parent's devres: it records whether the RDMA device was still registered (its handle
    /// attached) when it went, when a callback could still have reached it as a resource of a
    /// bound parent ([`Device::parent`]).
    struct Later(Arc<DeviceHandle<NoDriver>>);

    impl Drop for Later {
        fn drop(&mut self) {
            let seen = if self.0.is_attached() { 2 } else { 1 };
            SEEN.store(seen, Ordering::Relaxed);
        }
    }

    /// The device is unregistered when the parent's unbinding starts, before any devres
    /// resource of the parent is released, even when the driver leaves the registration to the
    /// parent's devres instead of keeping it in its bus data. Before, the devres release dropped
    /// the registration after the resources registered after it, while callbacks still ran.
    #[test]
    fn unregistered_before_parent_devres() -> Result {
        let faux = faux::Registration::new(c"rust_rdma_registration_test", None)?;
        let handle = DeviceHandle::<NoDriver>::new()?;
        {
            let faux_dev: &faux::Device<Bound> = faux.as_ref();
            let parent: &device::Device<Bound> = faux_dev.as_ref();
            let dev = UnregisteredDevice::<NoDriver>::new(parent, 1, Ok::<_, Error>(NoDriver))?;
            // SAFETY: The handle is only asked whether it is attached.
            let reg = unsafe { dev.register_for_test(handle.clone()) }?;
            assert!(handle.is_attached());
            // The registration left to the parent's devres, then a resource registered after it.
            devres::register(parent, reg, GFP_KERNEL)?;
            devres::register(parent, Later(handle.clone()), GFP_KERNEL)?;
        }
        SEEN.store(0, Ordering::Relaxed);
        // Unbinds the parent and releases its devres, last registered first.
        drop(faux);
        assert_eq!(SEEN.load(Ordering::Relaxed), 1);
        assert!(!handle.is_attached());
        Ok(())
    }
}
