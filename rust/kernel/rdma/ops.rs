// SPDX-License-Identifier: GPL-2.0

//! The operations of an RDMA provider (C's `struct ib_device_ops`).

use super::{
    ah::{AhAttr, AhStorage},
    attr::{DeviceAttr, GidAttr, PortAttr, PortImmutable},
    counters::CounterDesc,
    cq::{Cq, CqInitAttr, CqStorage, DestroyingCq},
    device::{Device, RegisteredDevice},
    mr::{AccessFlags, Mr, MrKeys, MrType},
    objects::{NewUserContext, Pd, PdStorage, UserContext, UserContextStorage},
    qp::{Qp, QpAttrMask, QpInitAttr, QpModifyAttr, QpQuery, QpStorage},
    restrack::ResEntry,
    srq::{Srq, SrqAttr, SrqModifyAttr, SrqStorage, SrqType},
    sysfs::AttributeGroup,
    table::TableIndex,
    udata::UData,
    umem::UserCqBuffer,
    wc::{NotifyFlags, WcSink},
    wr::{RecvWrs, SendWrs},
    DriverId, Gid, LinkLayer,
};
use crate::{
    bindings,
    error::{Result, VTABLE_DEFAULT_ERROR},
    module::this_module,
    net,
    prelude::*,
    str::Formatter,
};
use core::mem::size_of;

/// The body of the default creation callbacks that return an initialiser: a default body of
/// `impl Trait` type must name one, and `R`'s is the data itself. Like every default callback it
/// fails the build if called.
fn not_implemented<R>() -> Result<R> {
    crate::build_error!(VTABLE_DEFAULT_ERROR)
}

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
    type Pd: Send + Sync + Unpin;

    /// Data of a completion queue (pinned: see [`Operations::create_cq`]).
    type Cq: Send + Sync + TableIndex;

    /// Data of a queue pair (pinned: see [`Operations::create_qp`]).
    type Qp: Send + Sync + TableIndex;

    /// Data of a shared receive queue (pinned: see [`Operations::create_srq`]).
    type Srq: Send + Sync + TableIndex;

    /// Data of an address handle.
    type Ah: Send + Sync + Unpin;

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

    /// Writes the firmware version, a C string of at most `IB_FW_VERSION_NAME_MAX - 1` bytes:
    /// `out` covers that much, and a write that does not fit fails and is cut (C's
    /// `snprintf()`). The core reads it up to the first NUL, which follows what was written.
    fn get_dev_fw_str(_dev: &Device<Self>, _out: &mut Formatter<'_>) {
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

    /// The network device `ndev` of one of the device's ports had `event` (up, down or a change
    /// of its link: the core's netdevice notifier calls it with RTNL held; may sleep, cannot
    /// call what takes RTNL, which requires a [`net::device::RtnlUnlocked`]).
    ///
    /// Without it the core reports the port's state itself (`IB_EVENT_PORT_ACTIVE` or
    /// `IB_EVENT_PORT_ERR` when the network device's state changes); with it, the driver reports
    /// what it decides ([`RegisteredDevice::dispatch_port_event`]), and must not also report the
    /// same events from a notifier of its own. The core calls it only on a registered device.
    fn report_port_event(
        _dev: &RegisteredDevice<Self>,
        _ndev: &net::device::Device,
        _event: net::notifier::Event,
    ) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The hardware counters of each port, in the order [`Operations::port_counters`] fills
    /// them. Given to the core only with `port_counters`.
    const PORT_COUNTERS: &'static [CounterDesc] = &[];

    /// Writes the values of `port`'s counters into `values`, one per entry of
    /// [`Operations::PORT_COUNTERS`], in its order. The core reads them at most once every few
    /// milliseconds (sysfs `hw_counters/`, `rdma statistic`).
    fn port_counters(_dev: &Device<Self>, _port: u32, _values: &mut [u64]) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Adds the driver's own details of `qp` to its entry in the core's resource tracking
    /// (`rdma res show qp -dd`). The other `fill_res_*` callbacks do the same for their kind.
    fn fill_res_qp(_dev: &Device<Self>, _qp: &Qp<Self>, _entry: &mut ResEntry<'_>) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Adds the driver's details of `cq` (`rdma res show cq -dd`).
    fn fill_res_cq(_dev: &Device<Self>, _cq: &Cq<Self>, _entry: &mut ResEntry<'_>) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Adds the driver's details of `srq` (`rdma res show srq -dd`).
    fn fill_res_srq(_dev: &Device<Self>, _srq: &Srq<Self>, _entry: &mut ResEntry<'_>) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Adds the driver's details of `mr` (`rdma res show mr -dd`).
    fn fill_res_mr(_dev: &Device<Self>, _mr: &Mr<Self>, _entry: &mut ResEntry<'_>) -> Result {
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
    /// response. What the context's process can map is set up in `ctx` (e.g. with
    /// [`NewUserContext::map_bar_uncached`]): the abstraction maps it when user space asks with
    /// its offset and length, refuses any other `mmap()` of the device with `EINVAL`, and removes
    /// it before [`Operations::dealloc_ucontext`] (or at once if this fails).
    fn alloc_ucontext(
        _dev: &Device<Self>,
        _ctx: &mut NewUserContext<'_, Self>,
        _udata: &mut UData,
    ) -> Result<Self::UserContext> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys a user context (also when the device is unregistered while it is open).
    fn dealloc_ucontext(_dev: &Device<Self>, _ctx: Self::UserContext) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The device is being unregistered while `ctx` is still open. The core has destroyed the
    /// context's objects and zapped its mappings (every mapping is of an entry the driver set up
    /// in [`Operations::alloc_ucontext`], made with `rdma_user_mmap_io()`, which the core tracks
    /// for this); it sends the process `IB_EVENT_DEVICE_FATAL` and calls
    /// [`Operations::dealloc_ucontext`] next.
    ///
    /// Implementing it, even empty, lets the device be removed (and the module unloaded) while
    /// processes hold it open; without it, removal waits until every process has closed it.
    fn disassociate_ucontext(_dev: &Device<Self>, _ctx: &UserContext<Self>) {
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
    /// Returns the initialiser of its data and its actual number of entries. A driver that
    /// implements [`Operations::create_user_cq`] gets only the kernel's CQs here.
    ///
    /// The data is initialised in place, inside the core's allocation, where it stays until
    /// [`Operations::destroy_cq`] has returned: it may hold locks and other things that must not
    /// move, without an allocation of their own. The initialiser cannot fail: everything that
    /// can is done before it is returned (the device has the CQ by then).
    fn create_cq(
        _dev: &Device<Self>,
        _attr: &CqInitAttr,
        _ctx: Option<&UserContext<Self>>,
        _udata: Option<&mut UData>,
    ) -> Result<(impl PinInit<Self::Cq>, u32)> {
        not_implemented::<(Self::Cq, u32)>()
    }

    /// Creates a CQ for user context `ctx`, whose ring is in user memory: `buffer` pins it,
    /// from the command's buffer attributes or the range the driver's request (in `udata`)
    /// names. Returns the initialiser of its data and its actual number of entries (see
    /// [`Operations::create_cq`]).
    fn create_user_cq(
        _dev: &Device<Self>,
        _attr: &CqInitAttr,
        _ctx: &UserContext<Self>,
        _udata: &mut UData,
        _buffer: UserCqBuffer<'_>,
    ) -> Result<(impl PinInit<Self::Cq>, u32)> {
        not_implemented::<(Self::Cq, u32)>()
    }

    /// Destroys a CQ. The core ensures no QP uses it any more, and no handle reaches it (it left
    /// the device's table). Its data is dropped in place when this returns.
    ///
    /// The CQ comes as a [`DestroyingCq`], which cannot notify its consumer: for a kernel CQ,
    /// `ib_free_cq()` has stopped the consumer's polling context by now and frees the CQ after
    /// this.
    fn destroy_cq(_dev: &Device<Self>, _cq: &DestroyingCq<Self>) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Moves completions of a kernel CQ into `wc`, as many as fit and are there.
    ///
    /// Runs in any context: kernel consumers poll from softirqs (`IB_POLL_SOFTIRQ`) and with
    /// interrupts off. Must not sleep.
    fn poll_cq(_dev: &Device<Self>, _cq: &Cq<Self>, _wc: &mut WcSink<'_, Self>) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Arms a kernel CQ for the next (solicited) completion. With `report_missed_events`,
    /// returns whether completions are already waiting.
    ///
    /// Runs in any context, as [`Operations::poll_cq`]. Must not sleep.
    fn req_notify_cq(_dev: &Device<Self>, _cq: &Cq<Self>, _flags: NotifyFlags) -> Result<bool> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates a QP on `pd` (see [`Operations::create_cq`] for `ctx` and `udata`, and for the
    /// initialiser). Writes the queue sizes given into `attr`; returns the initialiser of the
    /// QP's data and its QP number.
    fn create_qp(
        _dev: &Device<Self>,
        _pd: &Pd<Self>,
        _attr: &mut QpInitAttr<Self>,
        _ctx: Option<&UserContext<Self>>,
        _udata: Option<&mut UData>,
    ) -> Result<(impl PinInit<Self::Qp>, u32)> {
        not_implemented::<(Self::Qp, u32)>()
    }

    /// Modifies the attributes of `qp` that `mask` names: those `attr` has (`Some`).
    fn modify_qp(
        _dev: &Device<Self>,
        _qp: &Qp<Self>,
        _attr: &QpModifyAttr,
        _mask: QpAttrMask,
        _udata: Option<&mut UData>,
    ) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports the attributes of `qp` (at least those `mask` names).
    fn query_qp(_dev: &Device<Self>, _qp: &Qp<Self>, _mask: QpAttrMask) -> Result<QpQuery> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys a QP, which no handle reaches any more; its data is dropped in place when this
    /// returns.
    fn destroy_qp(_dev: &Device<Self>, _qp: &Qp<Self>) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts send work requests to a kernel QP.
    ///
    /// The requests whose IDs the driver takes ([`SendWr::into_wr_id`], in the chain's order:
    /// [`SendWrs`] yields a request only once the one before was taken) are posted, the others
    /// are not: the consumer is told so whatever the driver returns. A driver returns an error
    /// when it stops before the end of the chain; the consumer gets it with the first request
    /// not taken as the one that failed. (An error after every ID was taken is ignored, and
    /// success with IDs left fails the post with `EINVAL`, each with a warning: driver bugs.)
    ///
    /// Runs in any context: kernel consumers post from softirqs (IPoIB's transmit), under
    /// spinlocks and with interrupts off. Must not sleep.
    ///
    /// [`SendWr::into_wr_id`]: super::SendWr::into_wr_id
    fn post_send(_dev: &Device<Self>, _qp: &Qp<Self>, _wrs: SendWrs<'_, Self>) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts receive work requests to a kernel QP, as [`Operations::post_send`] posts sends.
    ///
    /// Runs in any context, as [`Operations::post_send`]. Must not sleep.
    fn post_recv(_dev: &Device<Self>, _qp: &Qp<Self>, _wrs: RecvWrs<'_>) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates an SRQ on `pd` of kind `srq_type`; writes the sizes given into `attr`. Returns the
    /// initialiser of its data (see [`Operations::create_cq`]). Only user SRQs reach it: a kernel
    /// SRQ is refused with `EOPNOTSUPP` (its consumer would post through `post_srq_recv`, which
    /// the abstractions do not offer).
    fn create_srq(
        _dev: &Device<Self>,
        _pd: &Pd<Self>,
        _srq_type: SrqType,
        _attr: &mut SrqAttr,
        _ctx: Option<&UserContext<Self>>,
        _udata: Option<&mut UData>,
    ) -> Result<impl PinInit<Self::Srq>> {
        not_implemented::<Self::Srq>()
    }

    /// Modifies the attributes of `srq` that `mask` names (see [`srq_attr_mask`]): those `attr`
    /// has (`Some`). `mask` is the caller's, unchecked: it may have bits that name nothing.
    ///
    /// [`srq_attr_mask`]: super::srq_attr_mask
    fn modify_srq(
        _dev: &Device<Self>,
        _srq: &Srq<Self>,
        _attr: &SrqModifyAttr,
        _mask: u32,
        _udata: Option<&mut UData>,
    ) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports the attributes of `srq`.
    fn query_srq(_dev: &Device<Self>, _srq: &Srq<Self>) -> Result<SrqAttr> {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys an SRQ. The core ensures no QP uses it any more, and no handle reaches it; its
    /// data is dropped in place when this returns.
    fn destroy_srq(_dev: &Device<Self>, _srq: &Srq<Self>) {
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
    ///
    /// May run in atomic context: kernel consumers destroy AHs under spinlocks (IPoIB reaps
    /// them with interrupts off), so the AH's data must not need to sleep to be dropped either.
    fn destroy_ah(_dev: &Device<Self>, _ah: Self::Ah) {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates an MR covering all of memory (for kernel consumers) with `access` rights.
    fn get_dma_mr(
        _dev: &Device<Self>,
        _pd: &Pd<Self>,
        _access: AccessFlags,
    ) -> Result<(Self::Mr, MrKeys)> {
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
        _access: AccessFlags,
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

/// The operations table of driver `T`, for `ib_set_device_ops()`, owned by the module that
/// implements `T` (`T::OwnerModule`, which `#[vtable]` sets).
pub(super) fn build_ops<T: Operations>() -> bindings::ib_device_ops {
    const {
        assert!(
            pairs_complete::<T>(),
            "an RDMA driver creates objects it cannot destroy"
        )
    };
    let mut ops = Adapter::<T>::OPS;
    ops.owner = this_module::<T::OwnerModule>().as_ptr();
    if let Some(group) = T::DEVICE_GROUP {
        ops.device_group = group.as_raw();
    }
    ops
}

/// Whether driver `T` implements the callback that ends each kind of object it can create.
///
/// The core calls the destroy callback of an object it created without checking that there is
/// one (`rdma_destroy_ah_user()`, `ib_destroy_srq_user()`, a context's `dealloc_ucontext`), and
/// registration checks only the callbacks every driver must have: a driver with `create_ah` and
/// no `destroy_ah` would make the core call NULL.
const fn pairs_complete<T: Operations>() -> bool {
    T::HAS_CREATE_AH == T::HAS_DESTROY_AH
        && T::HAS_CREATE_SRQ == T::HAS_DESTROY_SRQ
        && T::HAS_ALLOC_UCONTEXT == T::HAS_DEALLOC_UCONTEXT
        && (!T::HAS_CREATE_USER_CQ || T::HAS_DESTROY_CQ)
}

/// Sets `ops.$op` to the trampoline of each `$op` the driver implements (`T::HAS_$OP`).
macro_rules! set_implemented {
    ($ops:ident, $($op:ident),* $(,)?) => {
        ::kernel::macros::paste! {
            $(
                if T::[<HAS_ $op:upper>] {
                    $ops.$op = Some(Self::$op);
                }
            )*
        }
    };
}

/// The trampolines from the C callbacks to [`Operations`], one file per kind of object under
/// `ops/`.
struct Adapter<T: Operations>(core::marker::PhantomData<T>);

mod ah;
mod context;
mod counters;
mod cq;
mod device;
mod mr;
mod post;
mod qp;
mod restrack;
mod srq;
mod tabled;
mod wc;

impl<T: Operations> Adapter<T> {
    /// The operations table. Built at compile time, so only the trampolines of implemented
    /// callbacks are ever instantiated.
    const OPS: bindings::ib_device_ops = {
        // SAFETY: All-zeroes is a valid `ib_device_ops`: no callbacks, no sizes.
        let mut ops: bindings::ib_device_ops = unsafe { core::mem::zeroed() };
        ops.driver_id = T::DRIVER_ID.as_raw();
        ops.uverbs_abi_ver = T::UVERBS_ABI_VERSION;
        // Each callback the driver implements (`HAS_*`), and only those.
        set_implemented!(
            ops,
            query_device,
            query_port,
            get_port_immutable,
            get_link_layer,
            get_dev_fw_str,
            query_gid,
            query_pkey,
            add_gid,
            del_gid,
            report_port_event,
            alloc_ucontext,
            dealloc_ucontext,
            disassociate_ucontext,
            alloc_pd,
            dealloc_pd,
            create_cq,
            create_user_cq,
            destroy_cq,
            poll_cq,
            req_notify_cq,
            create_qp,
            modify_qp,
            query_qp,
            destroy_qp,
            post_send,
            post_recv,
            create_srq,
            modify_srq,
            query_srq,
            destroy_srq,
            create_ah,
            destroy_ah,
            get_dma_mr,
            reg_user_mr,
            dereg_mr,
            alloc_mr,
        );
        if T::HAS_ALLOC_UCONTEXT {
            // What user space maps is what `alloc_ucontext` put in the context's mmap table.
            ops.mmap = Some(Self::mmap);
            ops.mmap_free = Some(Self::mmap_free);
        }
        if T::HAS_DESTROY_CQ {
            // A kernel CQ leaves the device's table before `ib_free_cq()` stops its polling
            // context, and is destroyed after (see `ops/cq.rs`).
            ops.pre_destroy_cq = Some(Self::pre_destroy_cq);
            ops.post_destroy_cq = Some(Self::post_destroy_cq);
        }
        if T::HAS_MAP_MR_SG_BEGIN && T::HAS_MAP_MR_SG_PAGE {
            ops.map_mr_sg = Some(Self::map_mr_sg);
        }
        if T::HAS_FILL_RES_QP {
            ops.fill_res_qp_entry = Some(Self::fill_res_qp_entry);
        }
        if T::HAS_FILL_RES_CQ {
            ops.fill_res_cq_entry = Some(Self::fill_res_cq_entry);
        }
        if T::HAS_FILL_RES_SRQ {
            ops.fill_res_srq_entry = Some(Self::fill_res_srq_entry);
        }
        if T::HAS_FILL_RES_MR {
            ops.fill_res_mr_entry = Some(Self::fill_res_mr_entry);
        }
        if T::HAS_PORT_COUNTERS {
            ops.alloc_hw_port_stats = Some(Self::alloc_hw_port_stats);
            ops.get_hw_stats = Some(Self::get_hw_stats);
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

    /// The user context and udata of a uverbs call (both `None` for a kernel caller).
    ///
    /// # Safety
    ///
    /// `udata` must be NULL or the udata of a uverbs call in progress, for `'a`.
    unsafe fn user<'a>(
        udata: *mut bindings::ib_udata,
    ) -> (Option<&'a UserContext<T>>, Option<&'a mut UData>) {
        // SAFETY: Guaranteed by the caller; the udata of a uverbs call is the `driver_udata` of
        // its attribute bundle (the core passes no other to a driver), and the call's context is
        // live and belongs to the device the call is on (driver `T`).
        unsafe {
            let ctx = bindings::rdma_udata_to_ucontext(udata);
            (
                (!ctx.is_null()).then(|| UserContext::<T>::from_raw(ctx)),
                (!udata.is_null()).then(|| UData::from_raw(udata)),
            )
        }
    }
}
