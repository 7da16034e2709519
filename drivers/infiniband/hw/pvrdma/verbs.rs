// SPDX-License-Identifier: GPL-2.0

//! The verbs: the RDMA core's callbacks (`rdma::Operations`), each handed to the object it
//! concerns (`device.rs` for the device and port, `context.rs`, `cq.rs`, `qp.rs`, `srq.rs`,
//! `ah.rs`, `mr.rs`), and the device's sysfs attributes.
//!
//! Layer: RDMA device.

use crate::{
    ah::Ah,
    context::{Pd, UserCtx},
    cq::Cq,
    device::IbDev,
    link,
    mr::Mr,
    qp::Qp,
    srq::Srq,
    stats,
};
use core::fmt::Write;
use kernel::{
    net::{device::Device as NetDevice, notifier::Event as NetEvent},
    prelude::*,
    rdma::{
        self, AccessFlags, AhAttr, CqInitAttr, DeviceAttr, Gid, GidAttr, LinkLayer, MrKeys, MrType,
        NewUserContext, NotifyFlags, PortAttr, PortImmutable, QpAttrMask, QpInitAttr, QpModifyAttr,
        QpQuery, RecvWrs, ResEntry, SendWrs, SrqAttr, SrqModifyAttr, SrqType, UData, UserContext,
        UserCqBuffer, WcSink,
    },
    str::Formatter,
};

/// The revision of the device's hardware interface (C's `PVRDMA_REV_ID`).
const REV_ID: u32 = 1;
/// The board ID (C's `PVRDMA_BOARD_ID`).
const BOARD_ID: u32 = 1;
/// The HCA type: C's, which names the device family and the version of the driver interface
/// (`DRV_VERSION`) this driver also speaks; inventory scripts (and `ibstat`'s "CA type") key on
/// it.
const HCA_TYPE: &str = "VMW_PVRDMA-1.0.1.0-k";

kernel::rdma_device_attributes! {
    static SYSFS_ATTRS: IbDev = {
        "hw_rev" => |_dev, out| writeln!(out, "{}", REV_ID),
        "hca_type" => |_dev, out| writeln!(out, "{}", HCA_TYPE),
        "board_id" => |_dev, out| writeln!(out, "{}", BOARD_ID),
    };
}

#[vtable]
impl rdma::Operations for IbDev {
    const DRIVER_ID: rdma::DriverId = rdma::DriverId::VMW_PVRDMA;
    const UVERBS_ABI_VERSION: u32 = 3;

    type UserContext = UserCtx;
    type Pd = Pd;
    type Cq = Cq;
    type Qp = Qp;
    type Srq = Srq;
    type Ah = Ah;
    type Mr = Mr;

    const DEVICE_GROUP: Option<&'static rdma::AttributeGroup<Self>> = Some(&SYSFS_ATTRS);
    const PORT_COUNTERS: &'static [rdma::CounterDesc] = stats::COUNTERS;

    fn report_port_event(dev: &rdma::RegisteredDevice<Self>, ndev: &NetDevice, event: NetEvent) {
        link::report_port_event(dev, ndev, event)
    }

    fn fill_res_qp(
        _dev: &rdma::Device<Self>,
        qp: &rdma::Qp<Self>,
        entry: &mut ResEntry<'_>,
    ) -> Result {
        qp.fill_res(entry)
    }

    fn fill_res_cq(
        _dev: &rdma::Device<Self>,
        cq: &rdma::Cq<Self>,
        entry: &mut ResEntry<'_>,
    ) -> Result {
        cq.fill_res(entry)
    }

    fn fill_res_srq(
        _dev: &rdma::Device<Self>,
        srq: &rdma::Srq<Self>,
        entry: &mut ResEntry<'_>,
    ) -> Result {
        srq.fill_res(entry)
    }

    fn fill_res_mr(
        _dev: &rdma::Device<Self>,
        mr: &rdma::Mr<Self>,
        entry: &mut ResEntry<'_>,
    ) -> Result {
        mr.fill_res(entry)
    }

    fn port_counters(dev: &rdma::Device<Self>, _port: u32, values: &mut [u64]) -> Result {
        // The device has one port; the counts are the device's.
        dev.hw.stats.read(values);
        Ok(())
    }

    fn query_device(
        dev: &rdma::Device<Self>,
        attr: &mut DeviceAttr,
        udata: Option<&mut UData>,
    ) -> Result {
        dev.query_device(attr, udata)
    }

    fn query_port(dev: &rdma::Device<Self>, port: u32, attr: &mut PortAttr) -> Result {
        dev.query_port(port, attr)
    }

    fn get_port_immutable(dev: &rdma::Device<Self>, port: u32, imm: &mut PortImmutable) -> Result {
        dev.port_immutable(port, imm)
    }

    fn get_link_layer(_dev: &rdma::Device<Self>, _port: u32) -> LinkLayer {
        LinkLayer::Ethernet
    }

    fn get_dev_fw_str(dev: &rdma::Device<Self>, out: &mut Formatter<'_>) {
        dev.write_fw_version(out)
    }

    fn query_gid(dev: &rdma::Device<Self>, port: u32, index: u32) -> Result<Gid> {
        dev.gid(port, index)
    }

    fn query_pkey(dev: &rdma::Device<Self>, port: u32, index: u16) -> Result<u16> {
        dev.pkey(port, index)
    }

    fn add_gid(dev: &rdma::Device<Self>, attr: &GidAttr) -> Result {
        dev.add_gid(attr)
    }

    fn del_gid(dev: &rdma::Device<Self>, attr: &GidAttr) -> Result {
        dev.del_gid(attr)
    }

    fn alloc_ucontext(
        dev: &rdma::Device<Self>,
        ctx: &mut NewUserContext<'_, Self>,
        udata: &mut UData,
    ) -> Result<UserCtx> {
        UserCtx::new(dev, ctx, udata)
    }

    fn dealloc_ucontext(dev: &rdma::Device<Self>, ctx: UserCtx) {
        ctx.destroy(dev)
    }

    fn disassociate_ucontext(_dev: &rdma::Device<Self>, _ctx: &UserContext<Self>) {
        // Nothing of the context outlives what the core already did: its objects are destroyed
        // in the device, its UAR mapping is zapped, and `dealloc_ucontext` returns the UAR page.
    }

    fn alloc_pd(
        dev: &rdma::Device<Self>,
        ctx: Option<&UserContext<Self>>,
        udata: Option<&mut UData>,
    ) -> Result<Pd> {
        Pd::new(dev, ctx, udata)
    }

    fn dealloc_pd(dev: &rdma::Device<Self>, pd: Pd) {
        pd.destroy(dev)
    }

    fn create_cq(
        dev: &rdma::Device<Self>,
        attr: &CqInitAttr,
        ctx: Option<&UserContext<Self>>,
        _udata: Option<&mut UData>,
    ) -> Result<(impl PinInit<Cq>, u32)> {
        // User CQs come through `create_user_cq`.
        if ctx.is_some() {
            return Err(EINVAL);
        }
        Cq::new(dev, attr, None)
    }

    fn create_user_cq(
        dev: &rdma::Device<Self>,
        attr: &CqInitAttr,
        ctx: &UserContext<Self>,
        udata: &mut UData,
        buffer: UserCqBuffer<'_>,
    ) -> Result<(impl PinInit<Cq>, u32)> {
        Cq::new(dev, attr, Some((ctx, udata, buffer)))
    }

    fn destroy_cq(dev: &rdma::Device<Self>, cq: &rdma::DestroyingCq<Self>) {
        cq.destroy(dev)
    }

    fn poll_cq(dev: &rdma::Device<Self>, cq: &rdma::Cq<Self>, wc: &mut WcSink<'_, Self>) -> Result {
        cq.poll(dev, wc)
    }

    fn req_notify_cq(
        dev: &rdma::Device<Self>,
        cq: &rdma::Cq<Self>,
        flags: NotifyFlags,
    ) -> Result<bool> {
        cq.req_notify(dev, flags)
    }

    fn create_qp(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        attr: &mut QpInitAttr<Self>,
        ctx: Option<&UserContext<Self>>,
        udata: Option<&mut UData>,
    ) -> Result<(impl PinInit<Qp>, u32)> {
        Qp::new(dev, pd, attr, ctx, udata)
    }

    fn modify_qp(
        dev: &rdma::Device<Self>,
        qp: &rdma::Qp<Self>,
        attr: &QpModifyAttr,
        mask: QpAttrMask,
        _udata: Option<&mut UData>,
    ) -> Result {
        qp.modify(dev, attr, mask)
    }

    fn query_qp(
        dev: &rdma::Device<Self>,
        qp: &rdma::Qp<Self>,
        mask: QpAttrMask,
    ) -> Result<QpQuery> {
        qp.query(dev, mask)
    }

    fn destroy_qp(dev: &rdma::Device<Self>, qp: &rdma::Qp<Self>) {
        qp.destroy(dev)
    }

    fn post_send(dev: &rdma::Device<Self>, qp: &rdma::Qp<Self>, wrs: SendWrs<'_, Self>) -> Result {
        qp.post_send(dev, wrs)
    }

    fn post_recv(dev: &rdma::Device<Self>, qp: &rdma::Qp<Self>, wrs: RecvWrs<'_>) -> Result {
        qp.post_recv(dev, wrs)
    }

    fn create_srq(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        srq_type: SrqType,
        attr: &mut SrqAttr,
        _ctx: Option<&UserContext<Self>>,
        udata: Option<&mut UData>,
    ) -> Result<impl PinInit<Srq>> {
        Srq::new(dev, pd, srq_type, attr, udata)
    }

    fn modify_srq(
        dev: &rdma::Device<Self>,
        srq: &rdma::Srq<Self>,
        attr: &SrqModifyAttr,
        mask: u32,
        _udata: Option<&mut UData>,
    ) -> Result {
        srq.modify(dev, attr, mask)
    }

    fn query_srq(dev: &rdma::Device<Self>, srq: &rdma::Srq<Self>) -> Result<SrqAttr> {
        srq.query(dev)
    }

    fn destroy_srq(dev: &rdma::Device<Self>, srq: &rdma::Srq<Self>) {
        srq.destroy(dev)
    }

    fn create_ah(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        attr: &AhAttr,
        _sleepable: bool,
        _udata: Option<&mut UData>,
    ) -> Result<Ah> {
        Ah::new(dev, pd, attr)
    }

    fn destroy_ah(dev: &rdma::Device<Self>, ah: Ah) {
        ah.destroy(dev)
    }

    fn get_dma_mr(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        access: AccessFlags,
    ) -> Result<(Mr, MrKeys)> {
        Mr::dma(dev, pd, access)
    }

    fn reg_user_mr(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        start: u64,
        length: u64,
        virt_addr: u64,
        access: AccessFlags,
        udata: Option<&mut UData>,
    ) -> Result<(Mr, MrKeys)> {
        // Only a user call has memory to pin; the core's kernel callers (RDS) register user
        // memory only with on-demand paging, which the device does not have.
        let udata = udata.ok_or(EOPNOTSUPP)?;
        Mr::reg_user(dev, pd, start, length, virt_addr, access, udata)
    }

    fn dereg_mr(dev: &rdma::Device<Self>, mr: Mr) {
        mr.destroy(dev)
    }

    fn alloc_mr(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        mr_type: MrType,
        max_num_sg: u32,
    ) -> Result<(Mr, MrKeys)> {
        Mr::fast_reg(dev, pd, mr_type, max_num_sg)
    }

    fn map_mr_sg_begin(mr: &rdma::Mr<Self>) {
        mr.map_sg_begin()
    }

    fn map_mr_sg_page(mr: &rdma::Mr<Self>, addr: u64) -> Result {
        mr.map_sg_page(addr)
    }
}
