// SPDX-License-Identifier: GPL-2.0

//! Network devices.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)

use crate::{
    alloc::Flags,
    bindings, container_of,
    device::{self, Core},
    fmt,
    prelude::*,
    str::CStr,
    types::{NotThreadSafe, Opaque},
};
use core::{marker::PhantomData, ops::Deref, ptr::NonNull};

/// A network device (C's `struct net_device`).
///
/// A `&Device` is valid while it is borrowed, for a callback's duration for instance. Code that
/// keeps a device beyond that holds a [`TrackedRef`] to it.
///
/// # Invariants
///
/// The wrapped `struct net_device` is valid: borrowed for a callback's duration or kept alive by
/// a reference count.
#[repr(transparent)]
pub struct Device(Opaque<bindings::net_device>);

// SAFETY: The methods taking `&self` read fields that do not change while the device is
// registered or that are read with single loads, or call C functions that do their own locking
// (the name is copied under the rename seqlock).
unsafe impl Sync for Device {}

impl Device {
    /// Borrows a C `struct net_device`.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for the lifetime `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: `Device` is a transparent wrapper; validity is guaranteed by the caller.
        unsafe { &*ptr.cast() }
    }

    /// The raw `struct net_device` pointer.
    pub fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The interface name, e.g. `eth0`.
    ///
    /// The name may change while the device is up; the returned string is a copy, made under
    /// the rename seqlock (C's `netdev_copy_name()`), so it is a whole name, the old or the new.
    /// Not from hard interrupt context: a rename holds the seqlock with bottom halves off only.
    // Not inlined into modules: `netdev_copy_name()` is not exported.
    #[inline(never)]
    pub fn name(&self) -> NameBuf {
        let mut buf = [0u8; bindings::IFNAMSIZ as usize];
        // SAFETY: `self.as_raw()` is a valid `net_device` and `buf` has room for `IFNAMSIZ`
        // bytes, which the function writes at most, a NUL included. It reads the name only
        // between reads of the rename seqlock, retrying while a rename writes it.
        unsafe { bindings::netdev_copy_name(self.as_raw(), buf.as_mut_ptr().cast()) };
        // INVARIANT: A NUL at the end, whatever was copied.
        buf[bindings::IFNAMSIZ as usize - 1] = 0;
        NameBuf(buf)
    }

    /// The interface index.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: `ifindex` is set at registration and then constant.
        unsafe { (*self.as_raw()).ifindex }
    }

    /// The MTU in bytes.
    pub fn mtu(&self) -> u32 {
        // SAFETY: A single aligned load of a field of a valid `net_device`.
        unsafe { core::ptr::addr_of!((*self.as_raw()).mtu).read_volatile() }
    }

    /// The Ethernet (hardware) address.
    pub fn mac_address(&self) -> [u8; 6] {
        let mut mac = [0u8; 6];
        // SAFETY: `dev_addr` of a registered Ethernet device points to at least `addr_len`
        // bytes; only the first `min(addr_len, 6)` are read, with volatile reads (C's
        // `READ_ONCE()`), as a change of address may write them meanwhile.
        unsafe {
            let raw = self.as_raw();
            let addr = (*raw).dev_addr;
            let len = ((*raw).addr_len as usize).min(mac.len());
            if !addr.is_null() {
                for (i, b) in mac.iter_mut().enumerate().take(len) {
                    *b = addr.add(i).read_volatile();
                }
            }
        }
        mac
    }

    /// Whether the interface is up (C's `netif_running()`).
    pub fn is_running(&self) -> bool {
        // SAFETY: `self.as_raw()` is a valid `net_device`.
        unsafe { bindings::netif_running(self.as_raw()) }
    }

    /// Whether the link has a carrier (C's `netif_carrier_ok()`).
    pub fn carrier_ok(&self) -> bool {
        // SAFETY: `self.as_raw()` is a valid `net_device`.
        unsafe { bindings::netif_carrier_ok(self.as_raw()) }
    }

    /// Whether `parent` is this network device's parent device (e.g. its PCI function).
    pub fn is_child_of(&self, parent: &device::Device) -> bool {
        // SAFETY: `dev.parent` is set before registration and constant afterwards.
        let p = unsafe { (*self.as_raw()).dev.parent };
        core::ptr::eq(p, parent.as_raw())
    }

    /// Finds the network device, in the initial network namespace, whose parent is `parent`,
    /// and returns a tracked reference to it.
    ///
    /// This is how a function of a multi-function device finds the network interface that a
    /// sibling function's driver registered.
    ///
    /// It takes the RTNL lock, hence the witness that the caller does not hold it
    /// ([`RtnlUnlocked`]).
    pub fn find_by_parent(parent: &device::Device, _rtnl: &RtnlUnlocked<'_>) -> Option<TrackedRef> {
        let mut found = None;
        // SAFETY: The list of network devices of `init_net` is walked under the RTNL lock, which
        // keeps every entry registered (and therefore valid) until `rtnl_unlock`; a reference is
        // taken before unlocking. The caller does not hold the lock (`_rtnl`), so taking it does
        // not deadlock; allocating the tracker under it may sleep, as the mutex allows.
        unsafe {
            bindings::rtnl_lock();
            let head = core::ptr::addr_of_mut!(bindings::init_net.dev_base_head);
            let mut pos = (*head).next;
            while !core::ptr::eq(pos, head) {
                let ndev = container_of!(pos, bindings::net_device, dev_list);
                let dev = Device::from_raw(ndev);
                if dev.is_child_of(parent) {
                    found = Some(TrackedRef::new(dev, GFP_KERNEL));
                    break;
                }
                pos = (*pos).next;
            }
            bindings::rtnl_unlock();
        }
        found
    }
}

/// A tracked reference to a network device (C's `netdev_hold()` and `netdev_put()` with a
/// `netdevice_tracker`), which keeps its `struct net_device` allocated: dropping it puts the
/// reference.
///
/// The device may be unregistered meanwhile. Whoever holds one must drop it when the device is
/// unregistered (see [`super::notifier`]), or unregistration waits for it forever
/// ("unregister_netdevice: waiting for ... to become free"). With
/// `CONFIG_NET_DEV_REFCNT_TRACKER`, each reference records the stack that took it, and that
/// wait reports the references still held with the stacks that took them, as it does for the C
/// code's tracked references; without, the tracker is empty and this is a plain count (C's
/// `dev_hold()`). A network device is only ever kept through a `TrackedRef`: there is no
/// untracked counted reference (`ARef<Device>`).
///
/// It has no `Clone`: a new reference may allocate its tracker, with flags the caller chooses
/// ([`TrackedRef::new`]).
///
/// # Examples
///
/// ```
/// use kernel::{net::device::{Device, TrackedRef}, prelude::*, sync::Mutex};
///
/// /// Keeps the network device of a port until it is unregistered.
/// fn keep(slot: &Mutex<Option<TrackedRef>>, dev: &Device) {
///     *slot.lock() = Some(TrackedRef::new(dev, GFP_KERNEL));
/// }
/// ```
///
/// # Invariants
///
/// `dev` is a valid `struct net_device` of which this value holds one reference, taken by
/// `netdev_hold(dev, &tracker, ..)`: `tracker` is that reference's tracker. Neither changes.
pub struct TrackedRef {
    dev: NonNull<Device>,
    // Moving it is fine: with the tracker config it is a pointer to the `struct ref_tracker` that
    // `ref_tracker_alloc()` allocated (or NULL if that failed), which keeps no pointer back to it:
    // `ref_tracker_free()` only reads it. Without, it is empty.
    tracker: bindings::netdevice_tracker,
}

// SAFETY: The reference is not tied to the task that took it: `netdev_put()` may run on any CPU
// and in any context (the per-CPU counts are summed; the tracker is freed under the tracker
// directory's spinlock with interrupts off, allocating nothing that may sleep). `&TrackedRef`
// only gives `&Device`, which is `Sync`.
unsafe impl Send for TrackedRef {}
// SAFETY: `&TrackedRef` only gives `&Device`, which is `Sync`.
unsafe impl Sync for TrackedRef {}

impl TrackedRef {
    /// Takes a tracked reference to `dev`.
    ///
    /// `flags` are the tracker's allocation flags: `GFP_KERNEL` where the caller may sleep,
    /// `GFP_ATOMIC` where it may not. With flags that may sleep it cannot fail; otherwise a
    /// failed allocation leaves the reference counted but untracked, as in C.
    pub fn new(dev: &Device, flags: Flags) -> Self {
        // SAFETY: All-zeroes is a valid `netdevice_tracker`: a NULL pointer, or an empty struct.
        let mut tracker: bindings::netdevice_tracker = unsafe { core::mem::zeroed() };
        // SAFETY: `dev` is valid (type invariant), its count is non-zero while it is borrowed and
        // may be raised; `tracker` is valid for writes.
        unsafe { bindings::netdev_hold(dev.as_raw(), &mut tracker, flags.as_raw()) };
        // INVARIANT: The reference was taken just above, with `tracker`.
        Self {
            dev: NonNull::from(dev),
            tracker,
        }
    }
}

impl Deref for TrackedRef {
    type Target = Device;

    fn deref(&self) -> &Device {
        // SAFETY: The device is valid while the reference is held (type invariant).
        unsafe { self.dev.as_ref() }
    }
}

impl Drop for TrackedRef {
    fn drop(&mut self) {
        // SAFETY: By the type invariant this value holds one reference to the device, taken with
        // `tracker`: it is put, with its tracker, once.
        unsafe { bindings::netdev_put(self.dev.as_ptr().cast(), &mut self.tracker) };
    }
}

/// A witness that the current task does not hold the RTNL lock (C's `rtnl_lock()`), and may take
/// it.
///
/// The functions that take the lock, directly or through the C functions they call, require
/// one: [`Device::find_by_parent`],
/// [`notifier::Registration::register`](super::notifier::Registration::register), and those of
/// other subsystems that do (the registration of an RDMA device, whose core adds the GIDs of a
/// RoCE port's network devices under RTNL). The lock is a plain mutex: taking it again where it
/// is held deadlocks. Code that the kernel runs with the lock held cannot get one, which makes
/// that deadlock a build error:
///
/// - netdevice notifiers ([`Notifier::notify`](super::notifier::Notifier::notify)), and the
///   callbacks that other subsystems make from theirs, get a network device and their driver's
///   data, both borrowed;
/// - a witness is made from a bus device in its [`Core`] context, which only the bus callbacks
///   (probe, unbind) hand out. Those run without RTNL: network drivers register and unregister
///   their devices there with `register_netdev()` and `unregister_netdev()`, which take it;
/// - it borrows that device, so it lives no longer than the callback, and it is not `Send`. The
///   data that code running under RTNL reaches (a notifier's, a driver's) is `'static`, so it
///   cannot keep one, and a notifier that registration calls during the driver's probe (the
///   replayed `Register` events) cannot reach the probe's.
///
/// An API that runs code of its caller's with RTNL held must keep that code from having one,
/// e.g. by taking only `'static` closures. Dropping what takes RTNL to drop (a
/// [`notifier::Registration`](super::notifier::Registration), an RDMA device's registration) is
/// not covered: a notifier must not own it.
///
/// That a notifier cannot call these functions cannot be tested: the kernel's doctests are built
/// into the kernel as KUnit tests, so a `compile_fail` example would fail the build instead.
pub struct RtnlUnlocked<'a>(PhantomData<&'a ()>, NotThreadSafe);

impl<'a> RtnlUnlocked<'a> {
    /// The witness of a bus callback's context, from the device the callback was given.
    pub fn new(_dev: &'a device::Device<Core<'_>>) -> Self {
        Self(PhantomData, NotThreadSafe)
    }

    /// A witness for a context that is not a bus callback, such as a module's initialisation or a
    /// test.
    ///
    /// # Safety
    ///
    /// The current task must not hold the RTNL lock during `'a`.
    ///
    /// Breaking this is a deadlock rather than undefined behaviour; the function is `unsafe` all
    /// the same, so that safe code (drivers forbid `unsafe`) cannot make a witness out of
    /// nothing, which is what keeps notifiers from calling the functions that take the lock.
    pub unsafe fn assume() -> Self {
        // With lockdep, which knows the current task's locks, a caller that holds it is told.
        #[cfg(CONFIG_PROVE_LOCKING)]
        {
            // SAFETY: It only reads lockdep's record of the current task's locks.
            let held = unsafe { bindings::lockdep_rtnl_is_held() };
            crate::warn_on!(held);
        }
        Self(PhantomData, NotThreadSafe)
    }
}

/// A copy of an interface name, NUL-terminated.
///
/// # Invariants
///
/// The last byte is NUL.
pub struct NameBuf([u8; bindings::IFNAMSIZ as usize]);

impl NameBuf {
    /// The name as a C string.
    pub fn as_cstr(&self) -> &CStr {
        let len = self
            .0
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.0.len() - 1);
        // SAFETY: `self.0[len]` is the first NUL (the last byte is always NUL).
        unsafe { CStr::from_bytes_with_nul_unchecked(&self.0[..=len]) }
    }
}

impl fmt::Display for NameBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_cstr(), f)
    }
}

#[macros::kunit_tests(rust_net_device)]
mod tests {
    use super::*;

    /// The loopback device of the initial namespace, which is never unregistered.
    fn loopback() -> &'static Device {
        // SAFETY: `init_net`'s loopback device is registered at boot (`net_dev_init()`, before
        // KUnit runs the built-in suites) and never unregistered or freed.
        unsafe { Device::from_raw((*core::ptr::addr_of!(bindings::init_net)).loopback_dev) }
    }

    /// The device's reference count.
    fn refs(dev: &Device) -> i32 {
        // SAFETY: `dev` is a valid `net_device`.
        unsafe { bindings::netdev_refcnt_read(dev.as_raw()) }
    }

    /// A tracked reference holds one count of the device while it exists, and gives it back when
    /// it is dropped.
    #[test]
    fn tracked_ref_drop_releases() {
        let lo = loopback();
        // Others may take or put references to the loopback device meanwhile: one of a few
        // attempts is enough, as a reference that is not given back shows in every one.
        let released = (0..10).any(|_| {
            let before = refs(lo);
            let held = TrackedRef::new(lo, GFP_KERNEL);
            let during = refs(&held);
            drop(held);
            during == before + 1 && refs(lo) == before
        });
        assert!(released);
    }
}
