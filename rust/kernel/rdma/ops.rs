// SPDX-License-Identifier: GPL-2.0

//! The operations of an RDMA provider (C's `struct ib_device_ops`).

use super::{
    attr::{DeviceAttr, FwVersion, GidAttr, PortAttr, PortImmutable},
    device::Device,
    objects::{PdStorage, UserContext, UserContextStorage, Vma},
    sysfs::AttributeGroup,
    udata::UData,
    DriverId, Gid, LinkLayer,
};
use crate::{
    bindings,
    error::{from_result, Result, VTABLE_DEFAULT_ERROR},
    ffi::{c_char, c_int, c_void},
    prelude::*,
};
use core::mem::size_of;

/// The callbacks of an RDMA provider driver; `Self` is the driver's per-device data.
///
/// Only the callbacks the implementation provides (`#[vtable]`) are given to the RDMA core. A
/// device that user space opens needs at least `query_device`, `query_port`,
/// `get_port_immutable`, `alloc_ucontext`/`dealloc_ucontext` and `alloc_pd`/`dealloc_pd`.
///
/// Callbacks run in process context and may sleep, unless noted otherwise.
#[vtable]
pub trait Operations: Send + Sync + Sized + 'static {
    /// Which user-space provider binds to this driver.
    const DRIVER_ID: DriverId;

    /// The version of the driver-specific user ABI (`uverbs_abi_ver`).
    const UVERBS_ABI_VERSION: u32;

    /// Data of a user context (one per open of the device by a process).
    type UserContext: Send + Sync;

    /// Data of a protection domain.
    type Pd: Send + Sync;

    /// Read-only sysfs attributes of the device (see [`rdma_device_attributes!`]).
    ///
    /// [`rdma_device_attributes!`]: crate::rdma_device_attributes
    const DEVICE_GROUP: Option<&'static AttributeGroup> = None;

    /// Reports the device's attributes. `udata` carries the (driver-specific) request.
    fn query_device(_dev: &Device<Self>, _attr: &mut DeviceAttr, _udata: &mut UData) -> Result {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Reports the attributes of `port`. `attr` comes zeroed.
    fn query_port(_dev: &Device<Self>, _port: u32, _attr: &mut PortAttr) -> Result {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Reports the attributes of `port` that never change; called once, at registration.
    fn get_port_immutable(_dev: &Device<Self>, _port: u32, _imm: &mut PortImmutable) -> Result {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// The link layer of `port`.
    fn get_link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Writes the firmware version.
    fn get_dev_fw_str(_dev: &Device<Self>, _out: &mut FwVersion<'_>) {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Returns entry `index` of `port`'s GID table.
    fn query_gid(_dev: &Device<Self>, _port: u32, _index: u32) -> Result<Gid> {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Returns entry `index` of `port`'s P_Key table.
    fn query_pkey(_dev: &Device<Self>, _port: u32, _index: u16) -> Result<u16> {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// The RDMA core's RoCE GID table added a GID (at `attr.index()`).
    fn add_gid(_dev: &Device<Self>, _attr: &GidAttr) -> Result {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// The RDMA core's RoCE GID table removed a GID.
    fn del_gid(_dev: &Device<Self>, _attr: &GidAttr) -> Result {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the data of a new user context; `udata` carries the driver-specific request and
    /// response.
    fn alloc_ucontext(_dev: &Device<Self>, _udata: &mut UData) -> Result<Self::UserContext> {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys a user context (also when the device is unregistered while it is open).
    fn dealloc_ucontext(_dev: &Device<Self>, _ctx: Self::UserContext) {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Maps something of `ctx` into user space (`vma`), e.g. with [`UserContext::mmap_io`].
    fn mmap(_dev: &Device<Self>, _ctx: &UserContext<Self>, _vma: &mut Vma) -> Result {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the data of a new protection domain, for user context `ctx` (with its `udata`)
    /// or for a kernel user (both `None`).
    fn alloc_pd(
        _dev: &Device<Self>,
        _ctx: Option<&UserContext<Self>>,
        _udata: Option<&mut UData>,
    ) -> Result<Self::Pd> {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys a protection domain.
    fn dealloc_pd(_dev: &Device<Self>, _pd: Self::Pd) {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }
}

/// The operations table of driver `T`, for `ib_set_device_ops()`, with `owner` set to `module`.
pub(super) fn build_ops<T: Operations>(module: &'static ThisModule) -> bindings::ib_device_ops {
    let mut ops = Adapter::<T>::OPS;
    ops.owner = module.as_ptr();
    if let Some(group) = T::DEVICE_GROUP {
        ops.device_group = group.as_raw();
    }
    ops
}

/// The trampolines from the C callbacks to [`Operations`].
struct Adapter<T: Operations>(core::marker::PhantomData<T>);

impl<T: Operations> Adapter<T> {
    /// The operations table. Built at compile time, so only the trampolines of implemented
    /// callbacks are ever instantiated.
    const OPS: bindings::ib_device_ops = {
        // SAFETY: All-zeroes is a valid `ib_device_ops`: no callbacks, no sizes.
        let mut ops: bindings::ib_device_ops = unsafe { core::mem::zeroed() };
        ops.driver_id = T::DRIVER_ID.as_raw();
        ops.uverbs_abi_ver = T::UVERBS_ABI_VERSION;
        if T::HAS_QUERY_DEVICE {
            ops.query_device = Some(Self::query_device);
        }
        if T::HAS_QUERY_PORT {
            ops.query_port = Some(Self::query_port);
        }
        if T::HAS_GET_PORT_IMMUTABLE {
            ops.get_port_immutable = Some(Self::get_port_immutable);
        }
        if T::HAS_GET_LINK_LAYER {
            ops.get_link_layer = Some(Self::get_link_layer);
        }
        if T::HAS_GET_DEV_FW_STR {
            ops.get_dev_fw_str = Some(Self::get_dev_fw_str);
        }
        if T::HAS_QUERY_GID {
            ops.query_gid = Some(Self::query_gid);
        }
        if T::HAS_QUERY_PKEY {
            ops.query_pkey = Some(Self::query_pkey);
        }
        if T::HAS_ADD_GID {
            ops.add_gid = Some(Self::add_gid);
        }
        if T::HAS_DEL_GID {
            ops.del_gid = Some(Self::del_gid);
        }
        if T::HAS_ALLOC_UCONTEXT {
            ops.alloc_ucontext = Some(Self::alloc_ucontext);
        }
        if T::HAS_DEALLOC_UCONTEXT {
            ops.dealloc_ucontext = Some(Self::dealloc_ucontext);
        }
        if T::HAS_MMAP {
            ops.mmap = Some(Self::mmap);
        }
        if T::HAS_ALLOC_PD {
            ops.alloc_pd = Some(Self::alloc_pd);
        }
        if T::HAS_DEALLOC_PD {
            ops.dealloc_pd = Some(Self::dealloc_pd);
        }
        ops.size_ib_ucontext = size_of::<UserContextStorage<T>>();
        ops.size_ib_pd = size_of::<PdStorage<T>>();
        ops
    };

    /// # Safety
    ///
    /// `ib` must be a device of driver `T` that the core passes to a callback.
    unsafe fn dev<'a>(ib: *mut bindings::ib_device) -> &'a Device<T> {
        // SAFETY: The core only calls `T`'s operations on devices they were installed on, which
        // `UnregisteredDevice::new` did after initialising the data; the device stays allocated
        // during the callback.
        unsafe { Device::from_raw(ib) }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn query_device(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes valid pointers for the duration of the call.
            let (dev, attr, udata) = unsafe {
                (
                    Self::dev(ib),
                    DeviceAttr::from_raw(attr),
                    UData::from_raw(udata),
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
    unsafe extern "C" fn query_port(
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
    unsafe extern "C" fn get_port_immutable(
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
    unsafe extern "C" fn get_link_layer(
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
    unsafe extern "C" fn get_dev_fw_str(ib: *mut bindings::ib_device, buf: *mut c_char) {
        // SAFETY: The core passes a valid device and a buffer of `IB_FW_VERSION_NAME_MAX` bytes.
        let (dev, mut out) = unsafe { (Self::dev(ib), FwVersion::from_raw(buf)) };
        T::get_dev_fw_str(dev, &mut out);
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn query_gid(
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
    unsafe extern "C" fn query_pkey(
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
    unsafe extern "C" fn add_gid(
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
    unsafe extern "C" fn del_gid(
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
    unsafe extern "C" fn alloc_ucontext(
        uctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a context it allocated with `size_ib_ucontext` bytes for
            // one of `T`'s devices, and valid `udata`.
            let (dev, udata) = unsafe { (Self::dev((*uctx).device), UData::from_raw(udata)) };
            let data = T::alloc_ucontext(dev, udata)?;
            // SAFETY: The allocation is a `UserContextStorage<T>`; its data becomes initialised.
            unsafe { UserContextStorage::<T>::init(uctx, data) };
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: The core only deallocates contexts whose `alloc_ucontext` succeeded, once.
        let (dev, data) = unsafe {
            (
                Self::dev((*uctx).device),
                UserContextStorage::<T>::take(uctx),
            )
        };
        T::dealloc_ucontext(dev, data);
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn mmap(
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live context of one of `T`'s devices and a valid VMA.
            let (dev, ctx, vma) = unsafe {
                (
                    Self::dev((*uctx).device),
                    UserContext::<T>::from_raw(uctx),
                    Vma::from_raw(vma),
                )
            };
            T::mmap(dev, ctx, vma)?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a PD it allocated with `size_ib_pd` bytes for one of `T`'s
            // devices. `udata`, when not NULL, belongs to a uverbs call on a live context of the
            // same device.
            let (dev, ctx, udata) = unsafe {
                let ctx = bindings::rdma_udata_to_ucontext(udata);
                (
                    Self::dev((*pd).device),
                    (!ctx.is_null()).then(|| UserContext::<T>::from_raw(ctx)),
                    (!udata.is_null()).then(|| UData::from_raw(udata)),
                )
            };
            let data = T::alloc_pd(dev, ctx, udata)?;
            // SAFETY: The allocation is a `PdStorage<T>`; its data becomes initialised.
            unsafe { PdStorage::<T>::init(pd, data) };
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core only deallocates PDs whose `alloc_pd` succeeded, once.
        let (dev, data) = unsafe { (Self::dev((*pd).device), PdStorage::<T>::take(pd)) };
        T::dealloc_pd(dev, data);
        0
    }
}
