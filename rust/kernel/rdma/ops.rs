// SPDX-License-Identifier: GPL-2.0

//! The operations of an RDMA provider (C's `struct ib_device_ops`).

use super::{
    attr::{DeviceAttr, FwVersion, GidAttr, PortAttr, PortImmutable},
    cq::{CqInitAttr, NotifyFlags, WcSink},
    device::Device,
    mr::{Mr, MrKeys, MrStorage, MrType},
    objects::{
        AhStorage, Cq, CqStorage, Pd, PdStorage, Qp, QpStorage, Srq, SrqStorage, UserContext,
        UserContextStorage, Vma,
    },
    qp::{AhAttr, QpAttr, QpInitAttr, QpQuery},
    srq::{SrqAttr, SrqType},
    sysfs::AttributeGroup,
    table::TableIndex,
    udata::UData,
    wr::{PostError, RecvWrs, SendWrs},
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

    /// Data of a completion queue.
    type Cq: Send + Sync + TableIndex;

    /// Data of a queue pair.
    type Qp: Send + Sync + TableIndex;

    /// Data of a shared receive queue.
    type Srq: Send + Sync + TableIndex;

    /// Data of an address handle.
    type Ah: Send + Sync;

    /// Data of a memory region.
    type Mr: Send + Sync;

    /// Read-only sysfs attributes of the device (see [`rdma_device_attributes!`]).
    ///
    /// [`rdma_device_attributes!`]: crate::rdma_device_attributes
    const DEVICE_GROUP: Option<&'static AttributeGroup<Self>> = None;

    /// Reports the device's attributes. `udata` carries the (driver-specific) request of a user
    /// query; the core's own query (at registration) has none.
    fn query_device(
        _dev: &Device<Self>,
        _attr: &mut DeviceAttr,
        _udata: Option<&mut UData>,
    ) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports the attributes of `port`. `attr` comes zeroed.
    fn query_port(_dev: &Device<Self>, _port: u32, _attr: &mut PortAttr) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports the attributes of `port` that never change; called once, at registration.
    fn get_port_immutable(_dev: &Device<Self>, _port: u32, _imm: &mut PortImmutable) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The link layer of `port`.
    fn get_link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Writes the firmware version.
    fn get_dev_fw_str(_dev: &Device<Self>, _out: &mut FwVersion<'_>) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Returns entry `index` of `port`'s GID table.
    fn query_gid(_dev: &Device<Self>, _port: u32, _index: u32) -> Result<Gid> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Returns entry `index` of `port`'s P_Key table.
    fn query_pkey(_dev: &Device<Self>, _port: u32, _index: u16) -> Result<u16> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The RDMA core's RoCE GID table added a GID (at `attr.index()`).
    fn add_gid(_dev: &Device<Self>, _attr: &GidAttr) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The RDMA core's RoCE GID table removed a GID.
    fn del_gid(_dev: &Device<Self>, _attr: &GidAttr) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the data of a new user context; `udata` carries the driver-specific request and
    /// response.
    fn alloc_ucontext(_dev: &Device<Self>, _udata: &mut UData) -> Result<Self::UserContext> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys a user context (also when the device is unregistered while it is open).
    fn dealloc_ucontext(_dev: &Device<Self>, _ctx: Self::UserContext) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Maps something of `ctx` into user space (`vma`), e.g. with [`UserContext::mmap_io`].
    fn mmap(_dev: &Device<Self>, _ctx: &UserContext<Self>, _vma: &mut Vma) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the data of a new protection domain, for user context `ctx` (with its `udata`)
    /// or for a kernel user (both `None`).
    fn alloc_pd(
        _dev: &Device<Self>,
        _ctx: Option<&UserContext<Self>>,
        _udata: Option<&mut UData>,
    ) -> Result<Self::Pd> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys a protection domain.
    fn dealloc_pd(_dev: &Device<Self>, _pd: Self::Pd) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates a CQ, for user context `ctx` (with its `udata`) or for the kernel (both `None`).
    /// Returns its data and its actual number of entries.
    fn create_cq(
        _dev: &Device<Self>,
        _attr: &CqInitAttr,
        _ctx: Option<&UserContext<Self>>,
        _udata: Option<&mut UData>,
    ) -> Result<(Self::Cq, u32)> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys a CQ. The core ensures no QP uses it any more.
    fn destroy_cq(_dev: &Device<Self>, _cq: Self::Cq) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Moves completions of a kernel CQ into `wc`, as many as fit and are there.
    fn poll_cq(_dev: &Device<Self>, _cq: &Cq<Self>, _wc: &mut WcSink<'_, Self>) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Arms a kernel CQ for the next (solicited) completion. With `report_missed_events`,
    /// returns whether completions are already waiting.
    fn req_notify_cq(_dev: &Device<Self>, _cq: &Cq<Self>, _flags: NotifyFlags) -> Result<bool> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates a QP on `pd` (see [`Operations::create_cq`] for `ctx` and `udata`). Writes the
    /// queue sizes given into `attr`; returns the QP's data and its QP number.
    fn create_qp(
        _dev: &Device<Self>,
        _pd: &Pd<Self>,
        _attr: &mut QpInitAttr<Self>,
        _ctx: Option<&UserContext<Self>>,
        _udata: Option<&mut UData>,
    ) -> Result<(Self::Qp, u32)> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Modifies the attributes of `qp` that `mask` names (see [`qp_attr_mask`]).
    ///
    /// [`qp_attr_mask`]: super::qp_attr_mask
    fn modify_qp(
        _dev: &Device<Self>,
        _qp: &Qp<Self>,
        _attr: &QpAttr,
        _mask: u32,
        _udata: Option<&mut UData>,
    ) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports the attributes of `qp` (at least those `mask` names).
    fn query_qp(_dev: &Device<Self>, _qp: &Qp<Self>, _mask: u32) -> Result<QpQuery> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys a QP.
    fn destroy_qp(_dev: &Device<Self>, _qp: Self::Qp) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts send work requests to a kernel QP.
    fn post_send(
        _dev: &Device<Self>,
        _qp: &Qp<Self>,
        _wrs: SendWrs<'_, Self>,
    ) -> core::result::Result<(), PostError> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts receive work requests to a kernel QP.
    fn post_recv(
        _dev: &Device<Self>,
        _qp: &Qp<Self>,
        _wrs: RecvWrs<'_>,
    ) -> core::result::Result<(), PostError> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates an SRQ on `pd` of kind `srq_type`; writes the sizes given into `attr`.
    fn create_srq(
        _dev: &Device<Self>,
        _pd: &Pd<Self>,
        _srq_type: SrqType,
        _attr: &mut SrqAttr,
        _ctx: Option<&UserContext<Self>>,
        _udata: Option<&mut UData>,
    ) -> Result<Self::Srq> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Modifies the attributes of `srq` that `mask` names (see [`srq_attr_mask`]).
    ///
    /// [`srq_attr_mask`]: super::srq_attr_mask
    fn modify_srq(
        _dev: &Device<Self>,
        _srq: &Srq<Self>,
        _attr: &SrqAttr,
        _mask: u32,
        _udata: Option<&mut UData>,
    ) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports the attributes of `srq`.
    fn query_srq(_dev: &Device<Self>, _srq: &Srq<Self>) -> Result<SrqAttr> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys an SRQ. The core ensures no QP uses it any more.
    fn destroy_srq(_dev: &Device<Self>, _srq: Self::Srq) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates an address handle on `pd` for the path `attr`. `sleepable` says whether the
    /// callback may sleep (C's `RDMA_CREATE_AH_SLEEPABLE`).
    fn create_ah(
        _dev: &Device<Self>,
        _pd: &Pd<Self>,
        _attr: &AhAttr,
        _sleepable: bool,
        _udata: Option<&mut UData>,
    ) -> Result<Self::Ah> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys an address handle.
    fn destroy_ah(_dev: &Device<Self>, _ah: Self::Ah) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates an MR covering all of memory (for kernel consumers) with `access` rights.
    fn get_dma_mr(_dev: &Device<Self>, _pd: &Pd<Self>, _access: u32) -> Result<(Self::Mr, MrKeys)> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Registers `length` bytes of user memory at `start`, which the region will know as
    /// `virt_addr`, with `access` rights.
    #[allow(clippy::too_many_arguments)]
    fn reg_user_mr(
        _dev: &Device<Self>,
        _pd: &Pd<Self>,
        _start: u64,
        _length: u64,
        _virt_addr: u64,
        _access: u32,
        _udata: Option<&mut UData>,
    ) -> Result<(Self::Mr, MrKeys)> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Deregisters a memory region.
    fn dereg_mr(_dev: &Device<Self>, _mr: Self::Mr) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Allocates a region of kind `mr_type` for up to `max_num_sg` pages, mapped later with
    /// `map_mr_sg` (the core's `ib_map_mr_sg()`).
    fn alloc_mr(
        _dev: &Device<Self>,
        _pd: &Pd<Self>,
        _mr_type: MrType,
        _max_num_sg: u32,
    ) -> Result<(Self::Mr, MrKeys)> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Starts mapping a new page list into a region from `alloc_mr`: forget the old one.
    ///
    /// Implementing it (with [`Operations::map_mr_sg_page`]) gives the core `map_mr_sg`.
    fn map_mr_sg_begin(_mr: &Mr<Self>) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Appends the page at bus address `addr` to the list being mapped (`ENOMEM` when full).
    /// May be called in atomic context.
    fn map_mr_sg_page(_mr: &Mr<Self>, _addr: u64) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// Points `*bad_wr` at element `index` of the chain of work requests starting at `first`
/// (linked by `next`), or at NULL past its end.
///
/// # Safety
///
/// `first` must be NULL or a valid chain, `next` must return an element's link, and `bad_wr`
/// must be NULL or valid for writes.
unsafe fn report_bad_wr<W>(
    first: *const W,
    index: usize,
    bad_wr: *mut *const W,
    next: impl Fn(*const W) -> *const W,
) {
    let mut bad = first;
    for _ in 0..index {
        if bad.is_null() {
            break;
        }
        bad = next(bad);
    }
    if !bad_wr.is_null() {
        // SAFETY: Guaranteed by the caller.
        unsafe { *bad_wr = bad };
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
        if T::HAS_CREATE_CQ {
            ops.create_cq = Some(Self::create_cq);
        }
        if T::HAS_DESTROY_CQ {
            ops.destroy_cq = Some(Self::destroy_cq);
        }
        if T::HAS_POLL_CQ {
            ops.poll_cq = Some(Self::poll_cq);
        }
        if T::HAS_REQ_NOTIFY_CQ {
            ops.req_notify_cq = Some(Self::req_notify_cq);
        }
        if T::HAS_CREATE_QP {
            ops.create_qp = Some(Self::create_qp);
        }
        if T::HAS_MODIFY_QP {
            ops.modify_qp = Some(Self::modify_qp);
        }
        if T::HAS_QUERY_QP {
            ops.query_qp = Some(Self::query_qp);
        }
        if T::HAS_DESTROY_QP {
            ops.destroy_qp = Some(Self::destroy_qp);
        }
        if T::HAS_POST_SEND {
            ops.post_send = Some(Self::post_send);
        }
        if T::HAS_POST_RECV {
            ops.post_recv = Some(Self::post_recv);
        }
        if T::HAS_CREATE_SRQ {
            ops.create_srq = Some(Self::create_srq);
        }
        if T::HAS_MODIFY_SRQ {
            ops.modify_srq = Some(Self::modify_srq);
        }
        if T::HAS_QUERY_SRQ {
            ops.query_srq = Some(Self::query_srq);
        }
        if T::HAS_DESTROY_SRQ {
            ops.destroy_srq = Some(Self::destroy_srq);
        }
        if T::HAS_CREATE_AH {
            ops.create_ah = Some(Self::create_ah);
        }
        if T::HAS_DESTROY_AH {
            ops.destroy_ah = Some(Self::destroy_ah);
        }
        if T::HAS_GET_DMA_MR {
            ops.get_dma_mr = Some(Self::get_dma_mr);
        }
        if T::HAS_REG_USER_MR {
            ops.reg_user_mr = Some(Self::reg_user_mr);
        }
        if T::HAS_DEREG_MR {
            ops.dereg_mr = Some(Self::dereg_mr);
        }
        if T::HAS_ALLOC_MR {
            ops.alloc_mr = Some(Self::alloc_mr);
        }
        if T::HAS_MAP_MR_SG_BEGIN && T::HAS_MAP_MR_SG_PAGE {
            ops.map_mr_sg = Some(Self::map_mr_sg);
        }
        ops.size_ib_ucontext = size_of::<UserContextStorage<T>>();
        ops.size_ib_pd = size_of::<PdStorage<T>>();
        ops.size_ib_cq = size_of::<CqStorage<T>>();
        ops.size_ib_qp = size_of::<QpStorage<T>>();
        ops.size_ib_srq = size_of::<SrqStorage<T>>();
        ops.size_ib_ah = size_of::<AhStorage<T>>();
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
            // SAFETY: The core passes valid pointers for the duration of the call, except
            // `udata`, which is NULL when the core queries the device itself (registration).
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

    /// The user context and udata of a uverbs call (both `None` for a kernel caller).
    ///
    /// # Safety
    ///
    /// `udata` must be NULL or the udata of a uverbs call in progress, for `'a`.
    unsafe fn user<'a>(
        udata: *mut bindings::ib_udata,
    ) -> (Option<&'a UserContext<T>>, Option<&'a mut UData>) {
        // SAFETY: Guaranteed by the caller; a uverbs call's context is live and belongs to the
        // device the call is on (driver `T`).
        unsafe {
            let ctx = bindings::rdma_udata_to_ucontext(udata);
            (
                (!ctx.is_null()).then(|| UserContext::<T>::from_raw(ctx)),
                (!udata.is_null()).then(|| UData::from_raw(udata)),
            )
        }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn create_cq(
        ibcq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a CQ it allocated with `size_ib_cq` bytes for one of
            // `T`'s devices, valid attributes, and a bundle that is NULL for kernel callers.
            let (dev, attr, (ctx, udata)) = unsafe {
                (
                    Self::dev((*ibcq).device),
                    CqInitAttr::from_raw(attr),
                    Self::user(bindings::uverbs_attr_bundle_udata(attrs)),
                )
            };
            let (data, cqe) = T::create_cq(dev, attr, ctx, udata)?;
            let index = data.table_index();
            // SAFETY: The allocation is a `CqStorage<T>`; its data becomes initialised. The
            // number of entries is the core's to read from now on.
            unsafe {
                CqStorage::<T>::init(ibcq, data);
                (*ibcq).cqe = cqe.min(i32::MAX as u32) as i32;
            }
            // SAFETY: The CQ is live with initialised data until `destroy_cq` removes it.
            if let Err(e) = unsafe { dev.tables().cq.insert(index, ibcq) } {
                // SAFETY: Initialised just above; not in the table.
                T::destroy_cq(dev, unsafe { CqStorage::<T>::take(ibcq) });
                return Err(e);
            }
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn destroy_cq(
        ibcq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core only destroys CQs whose creation succeeded, once.
        let dev = unsafe { Self::dev((*ibcq).device) };
        // SAFETY: As above: the data is initialised until taken below.
        let index = unsafe { Cq::<T>::from_raw(ibcq) }.table_index();
        dev.tables().cq.remove(index, ibcq);
        // SAFETY: No longer reachable through the table; taken once.
        T::destroy_cq(dev, unsafe { CqStorage::<T>::take(ibcq) });
        0
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn poll_cq(
        ibcq: *mut bindings::ib_cq,
        num: c_int,
        wc: *mut bindings::ib_wc,
    ) -> c_int {
        from_result(|| {
            let cap = usize::try_from(num).map_err(|_| EINVAL)?;
            // SAFETY: The core passes a live CQ of one of `T`'s devices and room for `num`
            // completions.
            let (dev, cq, mut sink) = unsafe {
                let dev = Self::dev((*ibcq).device);
                (dev, Cq::<T>::from_raw(ibcq), WcSink::new(dev, wc, cap))
            };
            T::poll_cq(dev, cq, &mut sink)?;
            Ok(sink.len() as c_int)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn req_notify_cq(
        ibcq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live CQ of one of `T`'s devices.
            let (dev, cq) = unsafe { (Self::dev((*ibcq).device), Cq::<T>::from_raw(ibcq)) };
            Ok(c_int::from(T::req_notify_cq(
                dev,
                cq,
                NotifyFlags::from_raw(flags),
            )?))
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn create_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a QP it allocated with `size_ib_qp` bytes for one of `T`'s
            // devices, with its PD set (a live PD of the device), valid attributes whose CQs and
            // SRQ are the device's, and a udata that is NULL for kernel callers.
            let (dev, pd, attr, (ctx, udata)) = unsafe {
                (
                    Self::dev((*ibqp).device),
                    Pd::<T>::from_raw((*ibqp).pd),
                    QpInitAttr::<T>::from_raw(attr),
                    Self::user(udata),
                )
            };
            let (data, qp_num) = T::create_qp(dev, pd, attr, ctx, udata)?;
            let index = data.table_index();
            // SAFETY: The allocation is a `QpStorage<T>`; its data becomes initialised, and the
            // QP number is the core's to read from now on.
            unsafe {
                QpStorage::<T>::init(ibqp, data);
                (*ibqp).qp_num = qp_num;
            }
            // SAFETY: The QP is live with initialised data until `destroy_qp` removes it.
            if let Err(e) = unsafe { dev.tables().qp.insert(index, ibqp) } {
                // SAFETY: Initialised just above; not in the table.
                T::destroy_qp(dev, unsafe { QpStorage::<T>::take(ibqp) });
                return Err(e);
            }
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn modify_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: c_int,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live QP of one of `T`'s devices and valid attributes.
            let (dev, qp, attr, (_, udata)) = unsafe {
                (
                    Self::dev((*ibqp).device),
                    Qp::<T>::from_raw(ibqp),
                    QpAttr::from_raw(&*attr),
                    Self::user(udata),
                )
            };
            T::modify_qp(dev, qp, &attr, mask as u32, udata)?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn query_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: c_int,
        init_attr: *mut bindings::ib_qp_init_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live QP of one of `T`'s devices.
            let (dev, qp) = unsafe { (Self::dev((*ibqp).device), Qp::<T>::from_raw(ibqp)) };
            let q = T::query_qp(dev, qp, mask as u32)?;
            // SAFETY: The core passes both structs valid for writes, and the live QP for reads.
            unsafe {
                q.attr.write_raw(&mut *attr);
                let init = &mut *init_attr;
                // What the consumer created the QP with, as the core keeps it: its own event
                // handler (the core installs a wrapper as `event_handler`), context, CQs, SRQ,
                // type and port (which MODIFY_QP with IB_QP_PORT updates).
                let ib = &*ibqp;
                init.event_handler = ib.registered_event_handler;
                init.qp_context = ib.qp_context;
                init.send_cq = ib.send_cq;
                init.recv_cq = ib.recv_cq;
                init.srq = ib.srq;
                init.xrcd = core::ptr::null_mut();
                init.qp_type = ib.qp_type;
                init.create_flags = 0;
                init.port_num = ib.port;
                init.cap.max_send_wr = q.init_cap.max_send_wr;
                init.cap.max_recv_wr = q.init_cap.max_recv_wr;
                init.cap.max_send_sge = q.init_cap.max_send_sge;
                init.cap.max_recv_sge = q.init_cap.max_recv_sge;
                init.cap.max_inline_data = q.init_cap.max_inline_data;
                init.sq_sig_type = if q.sq_sig_all {
                    bindings::ib_sig_type_IB_SIGNAL_ALL_WR
                } else {
                    bindings::ib_sig_type_IB_SIGNAL_REQ_WR
                };
            }
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn destroy_qp(
        ibqp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core only destroys QPs whose creation succeeded, once.
        let dev = unsafe { Self::dev((*ibqp).device) };
        // SAFETY: As above: the data is initialised until taken below.
        let index = unsafe { Qp::<T>::from_raw(ibqp) }.table_index();
        dev.tables().qp.remove(index, ibqp);
        // SAFETY: No longer reachable through the table; taken once.
        T::destroy_qp(dev, unsafe { QpStorage::<T>::take(ibqp) });
        0
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn post_send(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> c_int {
        // SAFETY: The core passes a live QP of one of `T`'s devices and a valid chain.
        let (dev, qp) = unsafe { (Self::dev((*ibqp).device), Qp::<T>::from_raw(ibqp)) };
        // SAFETY: As above.
        let wrs = unsafe { SendWrs::new(wr, qp) };
        match T::post_send(dev, qp, wrs) {
            Ok(()) => 0,
            Err(PostError { error, index }) => {
                // SAFETY: `wr` is the valid chain of this post, `bad_wr` is valid for writes or
                // NULL, and `next` reads an element's link.
                unsafe { report_bad_wr(wr, index, bad_wr, |w| (*w).next) };
                error.to_errno()
            }
        }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn post_recv(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> c_int {
        // SAFETY: The core passes a live QP of one of `T`'s devices and a valid chain.
        let (dev, qp, wrs) = unsafe {
            (
                Self::dev((*ibqp).device),
                Qp::<T>::from_raw(ibqp),
                RecvWrs::new(wr),
            )
        };
        match T::post_recv(dev, qp, wrs) {
            Ok(()) => 0,
            Err(PostError { error, index }) => {
                // SAFETY: `wr` is the valid chain of this post, `bad_wr` is valid for writes or
                // NULL, and `next` reads an element's link.
                unsafe { report_bad_wr(wr, index, bad_wr, |w| (*w).next) };
                error.to_errno()
            }
        }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn create_srq(
        ibsrq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes an SRQ it allocated with `size_ib_srq` bytes for one of
            // `T`'s devices, with its PD set, valid attributes and a udata that is NULL for
            // kernel callers.
            let (dev, pd, init, (ctx, udata)) = unsafe {
                (
                    Self::dev((*ibsrq).device),
                    Pd::<T>::from_raw((*ibsrq).pd),
                    &mut *init,
                    Self::user(udata),
                )
            };
            let mut attr = SrqAttr::from_raw(&init.attr);
            let data = T::create_srq(
                dev,
                pd,
                SrqType::from_raw(init.srq_type),
                &mut attr,
                ctx,
                udata,
            )?;
            attr.write_raw(&mut init.attr);
            let index = data.table_index();
            // SAFETY: The allocation is an `SrqStorage<T>`; its data becomes initialised.
            unsafe { SrqStorage::<T>::init(ibsrq, data) };
            // SAFETY: The SRQ is live with initialised data until `destroy_srq` removes it.
            if let Err(e) = unsafe { dev.tables().srq.insert(index, ibsrq) } {
                // SAFETY: Initialised just above; not in the table.
                T::destroy_srq(dev, unsafe { SrqStorage::<T>::take(ibsrq) });
                return Err(e);
            }
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn modify_srq(
        ibsrq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live SRQ of one of `T`'s devices and valid attributes.
            let (dev, srq, attr, (_, udata)) = unsafe {
                (
                    Self::dev((*ibsrq).device),
                    Srq::<T>::from_raw(ibsrq),
                    SrqAttr::from_raw(&*attr),
                    Self::user(udata),
                )
            };
            T::modify_srq(dev, srq, &attr, mask, udata)?;
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn query_srq(
        ibsrq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live SRQ of one of `T`'s devices.
            let (dev, srq) = unsafe { (Self::dev((*ibsrq).device), Srq::<T>::from_raw(ibsrq)) };
            let a = T::query_srq(dev, srq)?;
            // SAFETY: The core passes `attr` valid for writes.
            a.write_raw(unsafe { &mut *attr });
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn destroy_srq(
        ibsrq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core only destroys SRQs whose creation succeeded, once.
        let dev = unsafe { Self::dev((*ibsrq).device) };
        // SAFETY: As above: the data is initialised until taken below.
        let index = unsafe { Srq::<T>::from_raw(ibsrq) }.table_index();
        dev.tables().srq.remove(index, ibsrq);
        // SAFETY: No longer reachable through the table; taken once.
        T::destroy_srq(dev, unsafe { SrqStorage::<T>::take(ibsrq) });
        0
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn create_ah(
        ibah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes an AH it allocated with `size_ib_ah` bytes for one of
            // `T`'s devices, with its PD set, and valid attributes.
            let (dev, pd, attr, flags, (_, udata)) = unsafe {
                (
                    Self::dev((*ibah).device),
                    Pd::<T>::from_raw((*ibah).pd),
                    AhAttr::from_raw(&*(*init).ah_attr),
                    (*init).flags,
                    Self::user(udata),
                )
            };
            let sleepable = flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0;
            let data = T::create_ah(dev, pd, &attr, sleepable, udata)?;
            // SAFETY: The allocation is an `AhStorage<T>`; its data becomes initialised.
            unsafe { AhStorage::<T>::init(ibah, data) };
            Ok(0)
        })
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn destroy_ah(ibah: *mut bindings::ib_ah, _flags: u32) -> c_int {
        // SAFETY: The core only destroys AHs whose creation succeeded, once.
        let (dev, data) = unsafe { (Self::dev((*ibah).device), AhStorage::<T>::take(ibah)) };
        T::destroy_ah(dev, data);
        0
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn get_dma_mr(
        ibpd: *mut bindings::ib_pd,
        access: c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: The core passes a live PD of one of `T`'s devices.
        let (dev, pd) = unsafe { (Self::dev((*ibpd).device), Pd::<T>::from_raw(ibpd)) };
        let slot = match MrStorage::<T>::alloc() {
            Ok(slot) => slot,
            Err(e) => return e.to_ptr(),
        };
        match T::get_dma_mr(dev, pd, access as u32) {
            Ok((data, keys)) => MrStorage::<T>::into_raw(slot, data, keys),
            Err(e) => e.to_ptr(),
        }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn reg_user_mr(
        ibpd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        virt_addr: u64,
        access: c_int,
        dmah: *mut bindings::ib_dmah,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // DMA handles (`alloc_dmah`) are not offered: there is none to honour.
        if !dmah.is_null() {
            return EOPNOTSUPP.to_ptr();
        }
        // SAFETY: The core passes a live PD of one of `T`'s devices and the udata of the uverbs
        // call.
        let (dev, pd, (_, udata)) = unsafe {
            (
                Self::dev((*ibpd).device),
                Pd::<T>::from_raw(ibpd),
                Self::user(udata),
            )
        };
        let slot = match MrStorage::<T>::alloc() {
            Ok(slot) => slot,
            Err(e) => return e.to_ptr(),
        };
        match T::reg_user_mr(dev, pd, start, length, virt_addr, access as u32, udata) {
            Ok((data, keys)) => MrStorage::<T>::into_raw(slot, data, keys),
            Err(e) => e.to_ptr(),
        }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn dereg_mr(
        ibmr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core only deregisters MRs this driver created, once; `device` is set by
        // the core after creation.
        let dev = unsafe { Self::dev((*ibmr).device) };
        // SAFETY: As above.
        let data = unsafe { MrStorage::<T>::from_raw(ibmr) };
        T::dereg_mr(dev, data);
        0
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn alloc_mr(
        ibpd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        // SAFETY: The core passes a live PD of one of `T`'s devices.
        let (dev, pd) = unsafe { (Self::dev((*ibpd).device), Pd::<T>::from_raw(ibpd)) };
        let slot = match MrStorage::<T>::alloc() {
            Ok(slot) => slot,
            Err(e) => return e.to_ptr(),
        };
        match T::alloc_mr(dev, pd, MrType::from_raw(mr_type), max_num_sg) {
            Ok((data, keys)) => MrStorage::<T>::into_raw(slot, data, keys),
            Err(e) => e.to_ptr(),
        }
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only the C side calls it, with the arguments it documents for this callback.
    unsafe extern "C" fn map_mr_sg(
        ibmr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: c_int,
        sg_offset: *mut crate::ffi::c_uint,
    ) -> c_int {
        // SAFETY: The core passes a live region of one of `T`'s devices (from `alloc_mr`).
        T::map_mr_sg_begin(unsafe { Mr::<T>::from_raw(ibmr) });
        // SAFETY: The core passes a valid scatterlist of `sg_nents` entries and offset; the
        // region is live for the call, and `set_page` only reaches it through `ibmr`.
        unsafe { bindings::ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, Some(Self::set_page)) }
    }

    /// The page callback of `ib_sg_to_pages()`.
    ///
    /// # Safety
    ///
    /// Only `ib_sg_to_pages()` calls it, from `map_mr_sg`, with the region being mapped.
    unsafe extern "C" fn set_page(ibmr: *mut bindings::ib_mr, addr: u64) -> c_int {
        // SAFETY: The region is live for the duration of `map_mr_sg`.
        match T::map_mr_sg_page(unsafe { Mr::<T>::from_raw(ibmr) }, addr) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}
