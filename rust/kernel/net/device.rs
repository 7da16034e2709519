// SPDX-License-Identifier: GPL-2.0

//! Network devices.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)

use crate::{
    bindings, container_of, device, fmt,
    str::CStr,
    sync::aref::{ARef, AlwaysRefCounted},
    types::Opaque,
};
use core::ptr::NonNull;

/// A network device (C's `struct net_device`).
///
/// Held as [`ARef<Device>`], it is a counted reference (C's `dev_hold()`/`dev_put()`): the
/// device's memory stays valid, although it may be unregistered meanwhile. Whoever holds one must
/// drop it when the device is unregistered (see [`super::notifier`]), or unregistration waits
/// forever.
///
/// # Invariants
///
/// The wrapped `struct net_device` is valid: borrowed for a callback's duration or kept alive by
/// a reference count.
#[repr(transparent)]
pub struct Device(Opaque<bindings::net_device>);

// SAFETY: `struct net_device` is reference counted and may be used and released from any thread.
unsafe impl Send for Device {}
// SAFETY: The methods taking `&self` read fields that do not change while the device is
// registered or that are read with single loads, or call C functions that do their own locking
// (the name is copied under the rename seqlock).
unsafe impl Sync for Device {}

// SAFETY: `dev_hold`/`dev_put` maintain the device's reference count.
unsafe impl AlwaysRefCounted for Device {
    fn inc_ref(&self) {
        // SAFETY: The existence of `&self` means the reference count is non-zero.
        unsafe { bindings::dev_hold(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller gives up one reference that it owned.
        unsafe { bindings::dev_put(obj.cast().as_ptr()) }
    }
}

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
    /// and returns a counted reference to it.
    ///
    /// This is how a function of a multi-function device finds the network interface that a
    /// sibling function's driver registered.
    pub fn find_by_parent(parent: &device::Device) -> Option<ARef<Device>> {
        let mut found = None;
        // SAFETY: The list of network devices of `init_net` is walked under the RTNL lock, which
        // keeps every entry registered (and therefore valid) until `rtnl_unlock`; a counted
        // reference is taken before unlocking.
        unsafe {
            bindings::rtnl_lock();
            let head = core::ptr::addr_of_mut!(bindings::init_net.dev_base_head);
            let mut pos = (*head).next;
            while !core::ptr::eq(pos, head) {
                let ndev = container_of!(pos, bindings::net_device, dev_list);
                let dev = Device::from_raw(ndev);
                if dev.is_child_of(parent) {
                    found = Some(ARef::from(dev));
                    break;
                }
                pos = (*pos).next;
            }
            bindings::rtnl_unlock();
        }
        found
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
