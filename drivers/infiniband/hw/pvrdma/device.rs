// SPDX-License-Identifier: GPL-2.0

//! The RDMA device's data (`IbDev`): the hardware, its checked capabilities, the GID table, the
//! UAR pages and the object counts, with the device-level queries. The objects (`context.rs`,
//! `cq.rs`, `qp.rs`, ...) build on it; `ib.rs` hands the RDMA core's callbacks to them.
//!
//! Layer: RDMA device.

use crate::{abi::*, counts::Counts, hw::Hw, uar::UarTable};
use core::fmt::Write;
use kernel::{
    new_mutex, new_spinlock,
    page::PAGE_SIZE,
    prelude::*,
    rdma::{self, core_cap, DeviceAttr, Gid, GidAttr, GidType, PortAttr, PortImmutable, UData},
    str::Formatter,
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
    pub(crate) uars: SpinLock<UarTable>,
    /// Objects in existence, kept within the device's limits.
    pub(crate) counts: Counts,
    /// Held around a QP's `CREATE_QP`, and from a QP's `DESTROY_QP` until its completions are
    /// dropped from its CQs (`crate::qp`). The device may give a destroyed QP's handle to the
    /// next QP it creates; a completion of the old QP still in a CQ both share would then name
    /// the new one, which never posted it, and be taken for a lie of the device.
    #[pin]
    pub(crate) qp_handles: Mutex<()>,
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
            qp_handles <- new_mutex!((), "pvrdma::IbDev::qp_handles"),
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
        // The core and rdma_cm read the state and the MTUs as enum values, and a device may
        // report none (MTUs of 0 while its link is down, which C passes on): values outside the
        // enums are clamped into them, an unknown state read as down.
        let mtus = mtu::MTU_256..=mtu::MTU_4096;
        if attrs.state > port_state::ACTIVE_DEFER
            || !mtus.contains(&attrs.max_mtu)
            || !mtus.contains(&attrs.active_mtu)
        {
            dev_info!(
                self.hw.dev(),
                "port attributes outside their enums (state {}, MTUs {} and {}): clamped\n",
                attrs.state,
                attrs.max_mtu,
                attrs.active_mtu
            );
            if attrs.state > port_state::ACTIVE_DEFER {
                attrs.state = port_state::DOWN;
            }
            attrs.max_mtu = attrs.max_mtu.clamp(mtu::MTU_256, mtu::MTU_4096);
            attrs.active_mtu = attrs.active_mtu.clamp(mtu::MTU_256, attrs.max_mtu);
        }
        Ok(attrs)
    }

    /// Refuses every port but the one the device has.
    pub(crate) fn check_port(port: u32) -> Result {
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
}

/// The device and port queries and the GID table (`rdma::Operations`' device-level callbacks).
impl IbDev {
    /// Fills in the device's attributes (see [`rdma::Operations::query_device`]).
    pub(crate) fn query_device(&self, attr: &mut DeviceAttr, udata: Option<&mut UData>) -> Result {
        // The device has no driver-specific query (C's check).
        if udata.is_some_and(|u| u.in_len() != 0 || u.out_len() != 0) {
            return Err(EINVAL);
        }
        let c = &self.caps;
        let v18 = self.is_v18();
        let (max_sge, max_sge_rd, atomic_ops, bmme) =
            (c.max_sge, c.max_sge_rd, c.atomic_ops, c.bmme_flags);
        let atomic = atomic_ops & (ATOMIC_OP_COMP_SWAP | ATOMIC_OP_FETCH_ADD) != 0;
        attr.set_fw_ver(c.fw_ver)
            // QEMU's model leaves the system image GUID 0, which rdma-core's checks take for
            // "none": a single-port device's image is the node, whose GUID is the usual value.
            .set_sys_image_guid(if c.sys_image_guid != 0 {
                c.sys_image_guid
            } else {
                c.node_guid
            })
            .set_max_mr_size(c.max_mr_size)
            // The page sizes memory regions may use. QEMU's model leaves the field 0, which
            // verbs users read as no page size at all; the driver builds every page directory
            // from pages of the kernel's size, so that one is always in the mask.
            .set_page_size_cap(c.page_size_cap | PAGE_SIZE as u64)
            .set_vendor_id(c.vendor_id)
            .set_vendor_part_id(self.part_id)
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

    /// Fills in the port's attributes (see [`rdma::Operations::query_port`]).
    pub(crate) fn query_port(&self, port: u32, attr: &mut PortAttr) -> Result {
        let a = self.query_port_attrs(port)?;
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

    /// Fills in what never changes about the port (see
    /// [`rdma::Operations::get_port_immutable`]).
    pub(crate) fn port_immutable(&self, port: u32, imm: &mut PortImmutable) -> Result {
        Self::check_port(port)?;
        let gid_types = self.caps.gid_types;
        let mut flags = 0;
        if gid_types & GID_TYPE_FLAG_ROCE_V1 != 0 {
            flags |= core_cap::IBA_ROCE;
        }
        if gid_types & GID_TYPE_FLAG_ROCE_V2 != 0 {
            flags |= core_cap::IBA_ROCE_UDP_ENCAP;
        }
        let a = self.query_port_attrs(port)?;
        imm.set_core_cap_flags(flags)
            .set_pkey_tbl_len(a.pkey_tbl_len.into())
            .set_gid_tbl_len(a.gid_tbl_len)
            .set_max_mad_size(rdma::MGMT_MAD_SIZE);
        Ok(())
    }

    /// Writes the firmware version as `major.minor.sub`.
    pub(crate) fn write_fw_version(&self, out: &mut Formatter<'_>) {
        let fw = self.caps.fw_ver;
        // The longest version, 22 bytes, fits the core's buffer: the write does not fail.
        let _ = write!(out, "{}.{}.{}", fw >> 32, (fw >> 16) & 0xffff, fw & 0xffff);
    }

    /// The GID at `index` of the port's table, as bound in the device.
    pub(crate) fn gid(&self, port: u32, index: u32) -> Result<Gid> {
        Self::check_port(port)?;
        self.gids.lock().get(index as usize).copied().ok_or(EINVAL)
    }

    /// Asks the device for the P_Key at `index`.
    pub(crate) fn pkey(&self, port: u32, index: u16) -> Result<u16> {
        let cmd = CmdQueryPkey {
            port_num: u8::try_from(port).map_err(|_| EINVAL)?,
            index: u8::try_from(index).map_err(|_| EINVAL)?,
            ..Default::default()
        };
        let resp: RespQueryPkey = self.hw.command(opcode::QUERY_PKEY, &cmd)?;
        Ok(resp.pkey)
    }

    /// Binds the GID the core added (see [`rdma::Operations::add_gid`]).
    pub(crate) fn add_gid(&self, attr: &GidAttr) -> Result {
        Self::check_port(attr.port())?;
        self.bind_gid(attr.index(), attr.gid(), attr.gid_type())
    }

    /// Unbinds the GID the core deleted (see [`rdma::Operations::del_gid`]).
    pub(crate) fn del_gid(&self, attr: &GidAttr) -> Result {
        Self::check_port(attr.port())?;
        self.unbind_gid(attr.index())
    }
}
