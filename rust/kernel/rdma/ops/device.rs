// SPDX-License-Identifier: GPL-2.0

//! Trampolines of the device and port queries and the GID table.

use super::super::{
    attr::{format_c_str, DeviceAttr, GidAttr, PortAttr, PortImmutable},
    device::RegisteredDevice,
    udata::UData,
};
use super::{Adapter, Operations};
use crate::{
    bindings,
    error::from_result,
    ffi::{c_char, c_int, c_void},
    net,
    prelude::*,
};

impl<T: Operations> Adapter<T> {
    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn query_device(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes valid pointers for the duration of the call; `udata` is
            // the `driver_udata` of a uverbs call's bundle, or NULL when the core queries the
            // device itself (registration).
            let (dev, attr, udata) = unsafe {
                (
                    Self::dev(ib),
                    DeviceAttr::from_raw(attr),
                    (!udata.is_null()).then(|| UData::from_raw(udata)),
                )
            };
            T::query_device(dev, attr, udata)?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn query_port(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes valid pointers for the duration of the call.
            let (dev, attr) = unsafe { (Self::dev(ib), PortAttr::from_raw(attr)) };
            T::query_port(dev, port, attr)?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn get_port_immutable(
        ib: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes valid pointers for the duration of the call.
            let (dev, imm) = unsafe { (Self::dev(ib), PortImmutable::from_raw(imm)) };
            T::get_port_immutable(dev, port, imm)?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn get_link_layer(
        ib: *mut bindings::ib_device,
        port: u32,
    ) -> bindings::rdma_link_layer {
        // SAFETY: The core passes a valid device for the duration of the call.
        T::get_link_layer(unsafe { Self::dev(ib) }, port).as_raw()
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn get_dev_fw_str(ib: *mut bindings::ib_device, buf: *mut c_char) {
        let size = bindings::IB_FW_VERSION_NAME_MAX as usize;
        // SAFETY: The core passes a valid device and a buffer of `IB_FW_VERSION_NAME_MAX` bytes,
        // ours for the call. The buffer may be uninitialised (nldev's is on its stack): it is
        // cleared through the raw pointer before a slice is made of it, which also makes every
        // byte before the NUL one that the driver wrote or a zero.
        let (dev, buf) = unsafe {
            core::ptr::write_bytes(buf, 0, size);
            (
                Self::dev(ib),
                core::slice::from_raw_parts_mut(buf.cast::<u8>(), size),
            )
        };
        format_c_str(buf, |out| T::get_dev_fw_str(dev, out));
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn query_gid(
        ib: *mut bindings::ib_device,
        port: u32,
        index: c_int,
        gid: *mut bindings::ib_gid,
    ) -> c_int {
        from_result(|| {
            let index = u32::try_from(index).map_err(|_| EINVAL)?;
            // SAFETY: The core passes a valid device for the duration of the call.
            let value = T::query_gid(unsafe { Self::dev(ib) }, port, index)?;
            // SAFETY: `gid` is valid for writing a `union ib_gid` (16 bytes).
            unsafe { (*gid).raw = value.0 };
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn query_pkey(
        ib: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a valid device for the duration of the call.
            let value = T::query_pkey(unsafe { Self::dev(ib) }, port, index)?;
            // SAFETY: `pkey` is valid for writes.
            unsafe { *pkey = value };
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn add_gid(
        attr: *const bindings::ib_gid_attr,
        _context: *mut *mut c_void,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a valid attribute naming one of `T`'s devices.
            let (dev, attr) = unsafe { (Self::dev((*attr).device), GidAttr::from_raw(attr)) };
            T::add_gid(dev, attr)?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn del_gid(
        attr: *const bindings::ib_gid_attr,
        _context: *mut *mut c_void,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a valid attribute naming one of `T`'s devices.
            let (dev, attr) = unsafe { (Self::dev((*attr).device), GidAttr::from_raw(attr)) };
            T::del_gid(dev, attr)?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    pub(super) unsafe extern "C" fn report_port_event(
        ib: *mut bindings::ib_device,
        ndev: *mut bindings::net_device,
        event: crate::ffi::c_ulong,
    ) {
        // SAFETY: The core's netdevice notifier passes a device of `T` and the network device of
        // the event, valid for the duration of the call. It holds a reference to the device
        // (`ib_device_get_by_netdev()`), which only a device that registration enabled, after it
        // set the port data and GID tables up, gives; unregistration waits for it to be dropped,
        // so the call returns before `ib_unregister_device()` does, after which the device is
        // freed only once `ib_wq` is flushed (`Registration`'s drop, or `register`'s failure).
        let (dev, ndev) = unsafe {
            (
                RegisteredDevice::from_raw(ib),
                net::device::Device::from_raw(ndev),
            )
        };
        // `unsigned long` has at most 64 bits.
        T::report_port_event(dev, ndev, net::notifier::Event::from_raw(event as u64));
    }
}
