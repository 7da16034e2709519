// SPDX-License-Identifier: GPL-2.0

//! The RDMA device: what the RDMA core and user space (rdma-core's `vmw_pvrdma` provider) see.

use crate::{abi::*, ah, counts::Counts, cq, hw::Hw, mr, qp, srq, uar::UarTable};
use core::fmt::Write;
use kernel::{
    device::Bound,
    new_mutex, new_spinlock, pci,
    prelude::*,
    rdma::{
        self, core_cap, AhAttr, CqInitAttr, DeviceAttr, FwVersion, Gid, GidAttr, GidType,
        LinkLayer, MrKeys, MrType, NotifyFlags, PortAttr, PortImmutable, PostError, QpAttr,
        QpInitAttr, QpQuery, RecvWrs, SendWrs, SrqAttr, SrqType, UData, UserContext, Vma, WcSink,
    },
    sync::{Arc, Mutex, SpinLock},
};

/// The driver's data in the RDMA device.
#[pin_data]
pub(crate) struct IbDev {
    pub(crate) hw: Arc<Hw>,
    /// The capabilities the device reported, checked by `Hw::load_dsr`.
    pub(crate) caps: Caps,
    /// The PCI device ID, reported as the vendor part ID.
    part_id: u32,
    /// The GID table, as bound in the device with `CREATE_BIND`.
    #[pin]
    gids: Mutex<KVec<Gid>>,
    /// Which UAR pages user contexts own.
    #[pin]
    uars: SpinLock<UarTable>,
    /// Objects in existence, kept within the device's limits.
    pub(crate) counts: Counts,
}

impl IbDev {
    /// The data of the RDMA device of `hw`, whose capabilities are `caps`.
    pub(crate) fn new(hw: Arc<Hw>, caps: Caps) -> Result<impl PinInit<Self, Error>> {
        let gid_count = caps.gid_tbl_len as usize;
        let mut gids = KVec::with_capacity(gid_count, GFP_KERNEL)?;
        for _ in 0..gid_count {
            gids.push(Gid::ZERO, GFP_KERNEL)?;
        }
        // A user context's UAR page must exist in BAR 2, whatever the device claims.
        let uars = UarTable::new(caps.max_uar.min(hw.uar_pages()))?;
        let part_id = hw.pdev.device_id().into();
        Ok(try_pin_init!(Self {
            hw,
            caps,
            part_id,
            gids <- new_mutex!(gids, "pvrdma::IbDev::gids"),
            uars <- new_spinlock!(uars, "pvrdma::IbDev::uars"),
            counts: Counts::new(),
        }? Error))
    }

    /// Whether the device has version-18 capability fields.
    fn is_v18(&self) -> bool {
        let gid_types = self.caps.gid_types;
        self.hw.version >= VERSION_ROCEV2
            && (gid_types == GID_TYPE_FLAG_ROCE_V1 || gid_types == GID_TYPE_FLAG_ROCE_V2)
    }

    /// Asks the device about the port.
    fn query_port_attrs(&self, port: u32) -> Result<PortAttrs> {
        let port_num = u8::try_from(port).map_err(|_| EINVAL)?;
        let cmd = CmdQueryPort {
            port_num,
            ..Default::default()
        };
        let resp: RespQueryPort = self.hw.command(opcode::QUERY_PORT, &cmd)?;
        let mut attrs = resp.attrs;
        // The table sizes decide how many GIDs and P_Keys the core asks for, one command each,
        // at registration: they cannot exceed what the device said it has (checked then).
        attrs.gid_tbl_len = attrs.gid_tbl_len.min(self.caps.gid_tbl_len);
        attrs.pkey_tbl_len = attrs.pkey_tbl_len.min(self.caps.max_pkeys);
        if attrs.state > 5
            || !(1..=5).contains(&attrs.max_mtu)
            || !(1..=5).contains(&attrs.active_mtu)
        {
            pr_warn!(
                "{}: implausible port attributes from the device\n",
                self.hw.name()
            );
            return Err(EIO);
        }
        Ok(attrs)
    }

    fn check_port(port: u32) -> Result {
        if port != PORT {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Binds `gid` at `index` in the device.
    fn bind_gid(&self, index: u32, gid: Gid, gid_type: GidType) -> Result {
        let mut gids = self.gids.lock();
        let slot = gids.get_mut(index as usize).ok_or(EINVAL)?;
        let cmd = CmdCreateBind {
            // C's `ib_mtu_enum_to_int(IB_MTU_1024)`.
            mtu: 1024,
            vlan: 0xfff,
            index,
            new_gid: gid.0,
            gid_type: match gid_type {
                GidType::RoceV2 => GID_TYPE_FLAG_ROCE_V2,
                _ => GID_TYPE_FLAG_ROCE_V1,
            },
            ..Default::default()
        };
        let _: RespNoop = self.hw.command(opcode::CREATE_BIND, &cmd)?;
        *slot = gid;
        Ok(())
    }

    /// Unbinds the GID at `index` in the device.
    fn unbind_gid(&self, index: u32) -> Result {
        let mut gids = self.gids.lock();
        let slot = gids.get_mut(index as usize).ok_or(EINVAL)?;
        let cmd = CmdDestroyBind {
            index,
            dest_gid: slot.0,
            ..Default::default()
        };
        let _: RespNoop = self.hw.command(opcode::DESTROY_BIND, &cmd)?;
        *slot = Gid::ZERO;
        Ok(())
    }

    fn destroy_uc(&self, ctx_handle: u32) {
        let cmd = CmdDestroyUc {
            ctx_handle,
            ..Default::default()
        };
        self.hw
            .destroy_object::<_, RespNoop>(opcode::DESTROY_UC, &cmd, "user context", ctx_handle);
    }

    fn destroy_pd(&self, pd_handle: u32) {
        let cmd = CmdDestroyPd {
            pd_handle,
            ..Default::default()
        };
        self.hw
            .destroy_object::<_, RespNoop>(opcode::DESTROY_PD, &cmd, "PD", pd_handle);
        self.counts.pds.release();
    }
}

/// The revision of the device's hardware interface (C's `PVRDMA_REV_ID`).
const REV_ID: u32 = 1;
/// The board ID (C's `PVRDMA_BOARD_ID`).
const BOARD_ID: u32 = 1;

kernel::rdma_device_attributes! {
    static SYSFS_ATTRS: IbDev = {
        "hw_rev" => |_dev, out| writeln!(out, "{}", REV_ID),
        "hca_type" => |_dev, out| writeln!(out, "VMW_PVRDMA-rs"),
        "board_id" => |_dev, out| writeln!(out, "{}", BOARD_ID),
    };
}

/// A user context: its doorbell page and the device's handle.
pub(crate) struct UserCtx {
    uar_index: u32,
    pub(crate) ctx_handle: u32,
}

/// A protection domain: the device's handle.
pub(crate) struct Pd {
    pub(crate) handle: u32,
}

#[vtable]
impl rdma::Operations for IbDev {
    const DRIVER_ID: rdma::DriverId = rdma::DriverId::VMW_PVRDMA;
    const UVERBS_ABI_VERSION: u32 = 3;

    type UserContext = UserCtx;
    type Pd = Pd;
    type Cq = cq::Cq;
    type Qp = qp::Qp;
    type Srq = srq::Srq;
    type Ah = ah::Ah;
    type Mr = mr::Mr;

    const DEVICE_GROUP: Option<&'static rdma::AttributeGroup<Self>> = Some(&SYSFS_ATTRS);

    fn query_device(
        dev: &rdma::Device<Self>,
        attr: &mut DeviceAttr,
        udata: Option<&mut UData>,
    ) -> Result {
        // The device has no driver-specific query (C's check).
        if udata.is_some_and(|u| u.in_len() != 0 || u.out_len() != 0) {
            return Err(EINVAL);
        }
        let c = &dev.caps;
        let v18 = dev.is_v18();
        let (max_sge, max_sge_rd, atomic_ops, bmme) =
            (c.max_sge, c.max_sge_rd, c.atomic_ops, c.bmme_flags);
        let atomic = atomic_ops & (ATOMIC_OP_COMP_SWAP | ATOMIC_OP_FETCH_ADD) != 0;
        attr.set_fw_ver(c.fw_ver)
            .set_sys_image_guid(c.sys_image_guid)
            .set_max_mr_size(c.max_mr_size)
            .set_page_size_cap(c.page_size_cap)
            .set_vendor_id(c.vendor_id)
            .set_vendor_part_id(dev.part_id)
            .set_hw_ver(c.hw_ver)
            .set_max_qp(c.max_qp)
            .set_max_qp_wr(c.max_qp_wr)
            .set_device_cap_flags(c.device_cap_flags.into())
            .set_max_send_sge(max_sge)
            .set_max_recv_sge(max_sge)
            .set_max_sge_rd(if v18 { max_sge_rd } else { max_sge })
            .set_max_srq(c.max_srq)
            .set_max_srq_wr(c.max_srq_wr)
            .set_max_srq_sge(c.max_srq_sge)
            .set_max_cq(c.max_cq)
            .set_max_cqe(c.max_cqe)
            .set_max_mr(c.max_mr)
            .set_max_pd(c.max_pd)
            .set_max_qp_rd_atom(c.max_qp_rd_atom)
            .set_max_qp_init_rd_atom(c.max_qp_init_rd_atom)
            .set_atomic_hca(atomic)
            .set_masked_atomic_hca(atomic)
            .set_max_ah(c.max_ah)
            .set_max_pkeys(c.max_pkeys)
            .set_local_ca_ack_delay(c.local_ca_ack_delay);
        let mut flags = attr.device_cap_flags();
        if bmme & BMME_ALL == BMME_ALL {
            flags |= rdma::device_cap::MEM_MGT_EXTENSIONS;
            attr.set_max_fast_reg_page_list_len(if v18 {
                c.max_fast_reg_page_list_len
            } else {
                MAX_FAST_REG_PAGES
            });
        }
        flags |= rdma::device_cap::PORT_ACTIVE_EVENT | rdma::device_cap::RC_RNR_NAK_GEN;
        attr.set_device_cap_flags(flags);
        Ok(())
    }

    fn query_port(dev: &rdma::Device<Self>, port: u32, attr: &mut PortAttr) -> Result {
        let a = dev.query_port_attrs(port)?;
        attr.set_state(a.state)
            .set_max_mtu(a.max_mtu)
            .set_active_mtu(a.active_mtu)
            .set_gid_tbl_len(a.gid_tbl_len)
            .set_port_cap_flags(a.port_cap_flags | rdma::port_cap::CM_SUP)
            .set_max_msg_sz(a.max_msg_sz)
            .set_bad_pkey_cntr(a.bad_pkey_cntr)
            .set_qkey_viol_cntr(a.qkey_viol_cntr)
            .set_pkey_tbl_len(a.pkey_tbl_len)
            .set_lid(a.lid.into())
            .set_sm_lid(a.sm_lid.into())
            .set_lmc(a.lmc)
            .set_max_vl_num(a.max_vl_num)
            .set_sm_sl(a.sm_sl)
            .set_subnet_timeout(a.subnet_timeout)
            .set_init_type_reply(a.init_type_reply)
            .set_active_width(a.active_width)
            .set_active_speed(a.active_speed.into())
            .set_phys_state(a.phys_state)
            .set_ip_gids(true);
        Ok(())
    }

    fn get_port_immutable(dev: &rdma::Device<Self>, port: u32, imm: &mut PortImmutable) -> Result {
        IbDev::check_port(port)?;
        let gid_types = dev.caps.gid_types;
        let mut flags = 0;
        if gid_types & GID_TYPE_FLAG_ROCE_V1 != 0 {
            flags |= core_cap::IBA_ROCE;
        }
        if gid_types & GID_TYPE_FLAG_ROCE_V2 != 0 {
            flags |= core_cap::IBA_ROCE_UDP_ENCAP;
        }
        let a = dev.query_port_attrs(port)?;
        imm.set_core_cap_flags(flags)
            .set_pkey_tbl_len(a.pkey_tbl_len.into())
            .set_gid_tbl_len(a.gid_tbl_len)
            .set_max_mad_size(rdma::MGMT_MAD_SIZE);
        Ok(())
    }

    fn get_link_layer(_dev: &rdma::Device<Self>, _port: u32) -> LinkLayer {
        LinkLayer::Ethernet
    }

    fn get_dev_fw_str(dev: &rdma::Device<Self>, out: &mut FwVersion<'_>) {
        let fw = dev.caps.fw_ver;
        let _ = write!(out, "{}.{}.{}", fw >> 32, (fw >> 16) & 0xffff, fw & 0xffff);
    }

    fn query_gid(dev: &rdma::Device<Self>, port: u32, index: u32) -> Result<Gid> {
        IbDev::check_port(port)?;
        dev.gids.lock().get(index as usize).copied().ok_or(EINVAL)
    }

    fn query_pkey(dev: &rdma::Device<Self>, port: u32, index: u16) -> Result<u16> {
        let cmd = CmdQueryPkey {
            port_num: u8::try_from(port).map_err(|_| EINVAL)?,
            index: u8::try_from(index).map_err(|_| EINVAL)?,
            ..Default::default()
        };
        let resp: RespQueryPkey = dev.hw.command(opcode::QUERY_PKEY, &cmd)?;
        Ok(resp.pkey)
    }

    fn add_gid(dev: &rdma::Device<Self>, attr: &GidAttr) -> Result {
        IbDev::check_port(attr.port())?;
        dev.bind_gid(attr.index(), attr.gid(), attr.gid_type())
    }

    fn del_gid(dev: &rdma::Device<Self>, attr: &GidAttr) -> Result {
        IbDev::check_port(attr.port())?;
        dev.unbind_gid(attr.index())
    }

    fn alloc_ucontext(dev: &rdma::Device<Self>, udata: &mut UData) -> Result<UserCtx> {
        let uar_index = dev.uars.lock().alloc()?;
        let uar_pfn = dev.hw.uar_pfn(uar_index);
        let pfn = if dev.hw.version < VERSION_PPN64 {
            u32::try_from(uar_pfn).map_err(|_| ENOMEM)?.into()
        } else {
            uar_pfn
        };
        let cmd = CmdCreateUc {
            pfn,
            ..Default::default()
        };
        let resp: RespCreateUc = match dev.hw.command(opcode::CREATE_UC, &cmd) {
            Ok(resp) => resp,
            Err(e) => {
                dev.uars.lock().free(uar_index);
                return Err(e);
            }
        };
        let ctx = UserCtx {
            uar_index,
            ctx_handle: resp.ctx_handle,
        };
        let reply = UctxResp {
            qp_tab_size: dev.caps.max_qp,
            reserved: 0,
        };
        if let Err(e) = udata.write(&reply) {
            Self::dealloc_ucontext(dev, ctx);
            return Err(e);
        }
        Ok(ctx)
    }

    fn dealloc_ucontext(dev: &rdma::Device<Self>, ctx: UserCtx) {
        dev.destroy_uc(ctx.ctx_handle);
        // The page goes back even if the device refused: the context is gone either way.
        dev.uars.lock().free(ctx.uar_index);
    }

    fn mmap(dev: &rdma::Device<Self>, ctx: &UserContext<Self>, vma: &mut Vma) -> Result {
        // The only thing to map is the context's doorbell page, at offset 0.
        vma.expect(0, 1)?;
        let pdev = <&pci::Device<Bound>>::try_from(dev.parent())?;
        ctx.mmap_bar_uncached(vma, pdev, BAR_UAR, ctx.uar_index.into())
    }

    fn alloc_pd(
        dev: &rdma::Device<Self>,
        ctx: Option<&UserContext<Self>>,
        udata: Option<&mut UData>,
    ) -> Result<Pd> {
        let reservation = dev.counts.pds.take(dev.caps.max_pd)?;
        let cmd = CmdCreatePd {
            ctx_handle: ctx.map_or(0, |c| c.ctx_handle),
            ..Default::default()
        };
        let resp: RespCreatePd = dev.hw.command(opcode::CREATE_PD, &cmd)?;
        reservation.keep();
        let pd = Pd {
            handle: resp.pd_handle,
        };
        if let Some(udata) = udata {
            let reply = PdResp {
                pdn: pd.handle,
                reserved: 0,
            };
            if let Err(e) = udata.write(&reply) {
                dev.destroy_pd(pd.handle);
                return Err(e);
            }
        }
        Ok(pd)
    }

    fn dealloc_pd(dev: &rdma::Device<Self>, pd: Pd) {
        dev.destroy_pd(pd.handle);
    }

    fn create_cq(
        dev: &rdma::Device<Self>,
        attr: &CqInitAttr,
        ctx: Option<&UserContext<Self>>,
        udata: Option<&mut UData>,
    ) -> Result<(cq::Cq, u32)> {
        cq::create(dev, attr, ctx, udata)
    }

    fn destroy_cq(dev: &rdma::Device<Self>, cq: cq::Cq) {
        cq::destroy(dev, cq)
    }

    fn poll_cq(dev: &rdma::Device<Self>, cq: &rdma::Cq<Self>, wc: &mut WcSink<'_, Self>) -> Result {
        cq::poll(dev, cq, wc)
    }

    fn req_notify_cq(
        dev: &rdma::Device<Self>,
        cq: &rdma::Cq<Self>,
        flags: NotifyFlags,
    ) -> Result<bool> {
        cq::req_notify(dev, cq, flags)
    }

    fn create_qp(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        attr: &mut QpInitAttr<Self>,
        ctx: Option<&UserContext<Self>>,
        udata: Option<&mut UData>,
    ) -> Result<(qp::Qp, u32)> {
        qp::create(dev, pd, attr, ctx, udata)
    }

    fn modify_qp(
        dev: &rdma::Device<Self>,
        qp: &rdma::Qp<Self>,
        attr: &QpAttr,
        mask: u32,
        _udata: Option<&mut UData>,
    ) -> Result {
        qp::modify(dev, qp, attr, mask)
    }

    fn query_qp(dev: &rdma::Device<Self>, qp: &rdma::Qp<Self>, mask: u32) -> Result<QpQuery> {
        qp::query(dev, qp, mask)
    }

    fn destroy_qp(dev: &rdma::Device<Self>, qp: qp::Qp) {
        qp::destroy(dev, qp)
    }

    fn post_send(
        dev: &rdma::Device<Self>,
        qp: &rdma::Qp<Self>,
        wrs: SendWrs<'_, Self>,
    ) -> core::result::Result<(), PostError> {
        qp::post_send(dev, qp, wrs)
    }

    fn post_recv(
        dev: &rdma::Device<Self>,
        qp: &rdma::Qp<Self>,
        wrs: RecvWrs<'_>,
    ) -> core::result::Result<(), PostError> {
        qp::post_recv(dev, qp, wrs)
    }

    fn create_srq(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        srq_type: SrqType,
        attr: &mut SrqAttr,
        _ctx: Option<&UserContext<Self>>,
        udata: Option<&mut UData>,
    ) -> Result<srq::Srq> {
        srq::create(dev, pd, srq_type, attr, udata)
    }

    fn modify_srq(
        dev: &rdma::Device<Self>,
        srq: &rdma::Srq<Self>,
        attr: &SrqAttr,
        mask: u32,
        _udata: Option<&mut UData>,
    ) -> Result {
        srq::modify(dev, srq, attr, mask)
    }

    fn query_srq(dev: &rdma::Device<Self>, srq: &rdma::Srq<Self>) -> Result<SrqAttr> {
        srq::query(dev, srq)
    }

    fn destroy_srq(dev: &rdma::Device<Self>, srq: srq::Srq) {
        srq::destroy(dev, srq)
    }

    fn create_ah(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        attr: &AhAttr,
        _sleepable: bool,
        _udata: Option<&mut UData>,
    ) -> Result<ah::Ah> {
        ah::create(dev, pd, attr)
    }

    fn destroy_ah(dev: &rdma::Device<Self>, ah: ah::Ah) {
        ah::destroy(dev, ah)
    }

    fn get_dma_mr(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        access: u32,
    ) -> Result<(mr::Mr, MrKeys)> {
        mr::get_dma(dev, pd, access)
    }

    fn reg_user_mr(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        start: u64,
        length: u64,
        virt_addr: u64,
        access: u32,
        udata: Option<&mut UData>,
    ) -> Result<(mr::Mr, MrKeys)> {
        // Only a user call has memory to pin; the core's kernel callers (RDS) register user
        // memory only with on-demand paging, which the device does not have.
        let udata = udata.ok_or(EOPNOTSUPP)?;
        mr::reg_user(dev, pd, start, length, virt_addr, access, udata)
    }

    fn dereg_mr(dev: &rdma::Device<Self>, mr: mr::Mr) {
        mr::dereg(dev, mr)
    }

    fn alloc_mr(
        dev: &rdma::Device<Self>,
        pd: &rdma::Pd<Self>,
        mr_type: MrType,
        max_num_sg: u32,
    ) -> Result<(mr::Mr, MrKeys)> {
        mr::alloc(dev, pd, mr_type, max_num_sg)
    }

    fn map_mr_sg_begin(mr: &rdma::Mr<Self>) {
        mr::map_sg_begin(mr)
    }

    fn map_mr_sg_page(mr: &rdma::Mr<Self>, addr: u64) -> Result {
        mr::map_sg_page(mr, addr)
    }
}
